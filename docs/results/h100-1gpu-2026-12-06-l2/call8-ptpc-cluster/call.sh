#!/usr/bin/env bash
# ptpc with clusters of two along M from 12288 rows (pc) against main (cand, no clusters for ptpc): the GEMM beside
# cuBLASLt's outer-vector GEMM, 2 processes each, alternating builds; ptpc end to end at 16384 with pc
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/ptpc; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
for rep in 1 2; do for s in "16384 7168 2048" "16384 5120 2048" "12288 7168 2048" "8192 7168 2048"; do for b in cand pc; do
  echo "$b $(timeout -s KILL 30 .dev/$b/gemmar_gpu_bench gemm $s ptpc 2>>$D/err.txt | grep GEMM_JSON | python3 -c 'import json,sys; j=json.loads(sys.stdin.read().split(" ",1)[1]); print(j["quant"],j["m"],j["n"],j["k"],j["ours_us"],j["cublaslt_us"],j["ratio"],j["checked"])')"
done; done; done | tee $D/gemm.txt
timeout 90 .dev/pc/gemmar run --backend gpu --all-configs -m 16384 --quant ptpc --json > $D/e2e_pc_ptpc16384.json 2>>$D/err.txt; echo "e2e rc=$?"
python3 scripts/e2e_summary.py $D/e2e_pc_ptpc16384.json | cut -c1-220
tail -3 $D/err.txt; date -u
