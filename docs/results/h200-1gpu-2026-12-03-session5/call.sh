#!/usr/bin/env bash
# Session 4: the merged main's device checks: issue 20's full compare, then issue 25's ptpc/mxfp8.
export LD_LIBRARY_PATH=$PWD/.dev/lib:/usr/local/cuda/lib64
export GEMMAR_CACHE_DIR=/tmp/gemmar-cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/machine.txt
timeout 200 scripts/device_verify_run.sh $PWD/.dev/bin/gemmar $OUT/verify > /tmp/verify.log 2>&1; echo "verify rc=$?"; tail -5 /tmp/verify.log
tail -30 $OUT/verify/summary.txt 2>/dev/null
timeout 190 scripts/device_quant_run.sh $PWD/.dev/bin/gemmar $PWD/.dev/bin/gemmar_gpu_bench $OUT/quant > /tmp/quant.log 2>&1; echo "quant rc=$?"; tail -5 /tmp/quant.log
tail -30 $OUT/quant/summary.txt 2>/dev/null
