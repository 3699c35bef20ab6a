#!/usr/bin/env bash
# ptpc: the epilogue's scales staged in shared memory by the producer (ps), the same with clusters along M from
# 12288 rows (psc), against main (cand); ptpc end to end with psc (16384) and ps (4096, 6144 x 5120 x 1024)
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/ptpcs; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
for rep in 1 2; do for s in "16384 7168 2048" "16384 5120 2048" "12288 7168 2048" "8192 7168 2048" "4096 7168 2048" "4096 5120 1024" "1000 7168 2048"; do for b in cand ps psc; do
  echo "$b $(timeout -s KILL 30 .dev/$b/gemmar_gpu_bench gemm $s ptpc 2>>$D/err.txt | grep GEMM_JSON | python3 -c 'import json,sys; j=json.loads(sys.stdin.read().split(" ",1)[1]); print(j["quant"],j["m"],j["n"],j["k"],j["ours_us"],j["cublaslt_us"],j["ratio"],j["checked"])')"
done; done; done > $D/gemm.txt
sort -k3,3n -k4,4n -k1,1 $D/gemm.txt | awk '{print $3"x"$4"x"$5, $1, $6"/"$7"="$8, $9}'
e2e() { timeout 90 .dev/$1/gemmar run --backend gpu --all-configs --quant ptpc "${@:3}" --json > $D/e2e_$2.json 2>>$D/err.txt; echo "== e2e $2 rc=$?"; python3 scripts/e2e_summary.py $D/e2e_$2.json | cut -c1-200; }
e2e psc psc_16384 -m 16384
e2e ps ps_4096 -m 4096
e2e ps ps_6144_5120_1024 -m 6144 -n 5120 -k 1024
tail -3 $D/err.txt; date -u
