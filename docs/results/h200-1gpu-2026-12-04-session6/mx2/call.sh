#!/usr/bin/env bash
# Session 6, call 7: mxfp8 with two accumulator sets (gemm_wgmma_kernel<Mx>, setmaxnreg), bit-exact runs.
export LD_LIBRARY_PATH=$PWD/.dev/lib:/usr/local/cuda/lib64
export GEMMAR_CACHE_DIR=/tmp/gemmar-cache
G=$PWD/.dev/bin/gemmar B=$PWD/.dev/bin/gemmar_gpu_bench
D=$OUT/mx2; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $D/machine.txt
s=$(date +%s)
{
  for rep in 1 2; do
    for a in "4096 7168 2048 mxfp8" "16384 7168 2048 mxfp8" "4096 5120 1024 mxfp8" "4096 7168 2048 blockscale"; do
      echo "\$ gemmar_gpu_bench gemm $a"; timeout 25 $B gemm $a; echo "rc=$?"
    done
  done
} > $D/gemm.log 2>&1
grep -E "^GEMM_JSON" $D/gemm.log | /usr/bin/python3 -c '
import sys, json
for l in sys.stdin:
    r = json.loads(l.split(" ", 1)[1])
    print(r.get("quant"), r["m"], r["n"], r["k"], "ours", r["ours_us"], r["ours_tflops"], "TFLOP/s vendor", r["cublaslt_us"], "rel_err", r["ours_rel_err"])'
{
  for a in "--quant mxfp8 --all-configs -m 4096" "--quant mxfp8 --all-configs -m 1000 -n 5120 -k 1024" "--quant mxfp8 --mode fused-sdma --gather-dtype fp8 --gather-transport sdma -m 4096 --guard --iterations 50 --straggle 50 --check-every 1000"; do
    echo "\$ gemmar run --backend gpu $a"; timeout 60 $G run --backend gpu $a 2>&1 | grep -v "^RESULT_JSON"; echo "rc=${PIPESTATUS[0]}"
  done
} > $D/runs.log 2>&1
echo "all $(( $(date +%s) - s )) s"
grep -E '^\$|^rc=|^run:' $D/runs.log | cut -c1-150
