#!/usr/bin/env bash
# Usage (on the device machine, from the checkout, with .dev/bin and .dev/lib carried; OUT set): scripts/device_quant_wgmma_run.sh
# Session 5: ptpc and mxfp8 on the tensor cores (issue 25): the GEMM beside the vendor, then every config bit-exact.
export LD_LIBRARY_PATH=$PWD/.dev/lib:/usr/local/cuda/lib64
export GEMMAR_CACHE_DIR=/tmp/gemmar-cache
G=$PWD/.dev/bin/gemmar B=$PWD/.dev/bin/gemmar_gpu_bench
s=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $OUT/machine.txt
{
  for m in 4096 16384; do for q in ptpc mxfp8; do
    echo "\$ gemmar_gpu_bench gemm $m 7168 2048 $q"; timeout 25 $B gemm $m 7168 2048 $q; echo "rc=$?"
  done; done
  for q in ptpc mxfp8; do
    echo "\$ gemmar_gpu_bench gemm 4096 5120 1024 $q"; timeout 20 $B gemm 4096 5120 1024 $q; echo "rc=$?"
  done
} > $OUT/gemm.log 2>&1
echo "gemm $(( $(date +%s) - s )) s"
grep -E "^GEMM_JSON|^MXFP8|^rc=|^\\$" $OUT/gemm.log | cut -c1-400
{
  for a in "--quant ptpc --all-configs -m 4096" "--quant mxfp8 --all-configs -m 4096" "--quant mxfp8 --all-configs -m 1000 -n 5120 -k 1024"; do
    echo "\$ gemmar run --backend gpu $a"; timeout 30 $G run --backend gpu $a 2>&1 | grep -v "^RESULT_JSON"; echo "rc=${PIPESTATUS[0]}"
  done
} > $OUT/runs.log 2>&1
echo "runs $(( $(date +%s) - s )) s"
grep -E '^\$|^rc=|^run:' $OUT/runs.log | cut -c1-160
