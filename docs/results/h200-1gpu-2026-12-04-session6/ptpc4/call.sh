#!/usr/bin/env bash
# Session 6, call 2: ptpc on gemm_wgmma4_kernel (K = 2048) beside cuBLASLt; blockscale unchanged; bit-exact runs.
export LD_LIBRARY_PATH=$PWD/.dev/lib:/usr/local/cuda/lib64
export GEMMAR_CACHE_DIR=/tmp/gemmar-cache
G=$PWD/.dev/bin/gemmar B=$PWD/.dev/bin/gemmar_gpu_bench
s=$(date +%s)
mkdir -p $OUT/ptpc4
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $OUT/ptpc4/machine.txt
{
  for rep in 1 2; do
    for a in "4096 7168 2048 ptpc" "16384 7168 2048 ptpc" "8192 7168 2048 ptpc" "4096 7168 2048 blockscale" "16384 7168 2048 blockscale" "4096 5120 1024 ptpc"; do
      echo "\$ gemmar_gpu_bench gemm $a"; timeout 25 $B gemm $a; echo "rc=$?"
    done
  done
} > $OUT/ptpc4/gemm.log 2>&1
echo "gemm $(( $(date +%s) - s )) s"
grep -E "^GEMM_JSON" $OUT/ptpc4/gemm.log | /usr/bin/python3 -c '
import sys, json
for l in sys.stdin:
    r = json.loads(l.split(" ", 1)[1])
    print(r.get("quant"), r["m"], r["n"], r["k"], "ours", r["ours_us"], "vendor", r["cublaslt_us"], "ratio", r["ratio"], r["ours_kernel"][:60])'
{
  for a in "--quant ptpc --all-configs -m 4096" "--quant ptpc --all-configs -m 1000" "--all-configs -m 4096"; do
    echo "\$ gemmar run --backend gpu $a"; timeout 60 $G run --backend gpu $a 2>&1 | grep -v "^RESULT_JSON"; echo "rc=${PIPESTATUS[0]}"
  done
} > $OUT/ptpc4/runs.log 2>&1
echo "runs $(( $(date +%s) - s )) s"
grep -E '^\$|^rc=|^run:' $OUT/ptpc4/runs.log | cut -c1-150
