#!/usr/bin/env bash
# gemmar verify on the H200 (issue 16): the op in torch on one device dumped with gemmar_dump.py and verified;
# gemmar run --backend gpu --dump DIR verified. Logs to $OUT.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} OMP_WAIT_POLICY=passive GEMMAR_CACHE_DIR=$PWD/cache PYTHONUNBUFFERED=1
G=$PWD/gemmar
D=/tmp/dumps
mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; python3 -c 'import torch; print("torch", torch.__version__)'; df -h /tmp | tail -1; } > $OUT/machine.txt 2>&1
step() { local name=$1; shift; local f=$OUT/log.txt; [ "$name" = verify_json ] && f=$OUT/verify.json; echo "=== $name: \$ $*" >> $OUT/log.txt; local t0=$(date +%s.%N); timeout 150 "$@" >> $f 2>&1; local rc=$?; echo "=== $name rc=$rc wall=$(awk "BEGIN{print $(date +%s.%N) - $t0}") s" >> $OUT/log.txt; echo "$name rc=$rc"; }
step torch_bf16 python3 torch_gemm_ar.py $D/torch-bf16 -m 16384
step verify_torch_bf16 $G verify $D/torch-bf16
du -sh $D/torch-bf16 >> $OUT/log.txt; ls -la $D/torch-bf16 >> $OUT/log.txt
rm -rf $D/torch-bf16
step gpu_run_16384 $G run --backend gpu -m 16384 --check-rows 256 --dump $D/gpu-16384
step verify_gpu_16384 $G verify $D/gpu-16384
step torch_fp8 python3 torch_gemm_ar.py $D/torch-fp8 -m 4096 --gather-dtype fp8
step verify_torch_fp8 $G verify $D/torch-fp8 --check-rows 0
step torch_faults python3 torch_gemm_ar.py $D/torch-skip -m 4096 --fault skip-gather
step torch_faults python3 torch_gemm_ar.py $D/torch-bypass -m 4096 --gather-dtype fp8 --fault wire-bypassed --no-wire
step verify_torch_faults $G verify $D/torch-skip $D/torch-bypass
step gpu_run_4096_fp8 $G run --backend gpu -m 4096 --mode fused-sdma --gather-dtype fp8 --gather-transport lsa --check-rows 0 --dump $D/gpu-4096-fp8
step verify_gpu_4096_fp8 $G verify $D/gpu-4096-fp8 --check-rows 0
step verify_json $G verify $D/gpu-4096-fp8 $D/torch-fp8 --json
