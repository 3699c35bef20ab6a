#!/usr/bin/env bash
# The final build (cand2: ptpc's epilogue scales in shared memory, the kernels' shared memory 4 KiB larger) against
# main (cand): blockscale at 3 shapes, 2 processes each, alternating builds; ptpc at every shape of issue 25 (cand2,
# one process); end to end: ptpc 16384 and 4096, blockscale 4096 (cand2)
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/final; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
g() { echo "$1 $(timeout -s KILL 30 .dev/$1/gemmar_gpu_bench gemm $2 $3 $4 $5 2>>$D/err.txt | grep GEMM_JSON | python3 -c 'import json,sys; j=json.loads(sys.stdin.read().split(" ",1)[1]); print(j["quant"],j["m"],j["n"],j["k"],j["ours_us"],j["cublaslt_us"],j["ratio"],j["checked"])')"; }
for rep in 1 2; do for s in "16384 7168 2048" "8192 7168 2048" "4096 7168 2048"; do for b in cand cand2; do g $b $s blockscale; done; done; done > $D/blockscale.txt
for nk in "7168 2048" "5120 1024" "5120 2048"; do for m in 1000 4096 8192 16384; do g cand2 $m $nk ptpc; done; done > $D/ptpc.txt
sort -k3,3n -k4,4n -k1,1 $D/blockscale.txt | awk '{print $2, $3"x"$4"x"$5, $1, $6"/"$7"="$8, $9}'
awk '{print $2, $3"x"$4"x"$5, $1, $6"/"$7"="$8, $9}' $D/ptpc.txt
e2e() { timeout 90 .dev/cand2/gemmar run --backend gpu --all-configs "${@:2}" --json > $D/e2e_$1.json 2>>$D/err.txt; echo "== e2e $1 rc=$?"; python3 scripts/e2e_summary.py $D/e2e_$1.json | cut -c1-200; }
e2e ptpc16384 -m 16384 --quant ptpc
e2e ptpc4096 -m 4096 --quant ptpc
e2e bs4096 -m 4096
tail -3 $D/err.txt; date -u
