#!/usr/bin/env bash
# blockscale: the tile's B scales by one bulk copy into a shared-memory slot (bsn) against main b8a5cb5 (cand2: the
# producer loads each K block's B scale and stores it in the stage); 2 processes each, alternating builds; end to
# end with bsn at 16384 and 4096; eight at once at 16384, both
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/bscales; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
g() { echo "$1 $(timeout -s KILL 30 .dev/$1/gemmar_gpu_bench gemm $2 $3 $4 $5 2>>$D/err.txt | grep GEMM_JSON | python3 -c 'import json,sys; j=json.loads(sys.stdin.read().split(" ",1)[1]); print(j["quant"],j["m"],j["n"],j["k"],j["ours_us"],j["cublaslt_us"],j["ratio"],j["checked"])')"; }
for rep in 1 2; do for s in "16384 7168 2048" "16384 5120 2048" "8192 7168 2048" "4096 7168 2048" "4096 5120 1024" "1000 7168 2048"; do for b in cand2 bsn; do g $b $s blockscale; done; done; done > $D/gemm.txt
sort -k3,3n -k4,4n -k1,1 $D/gemm.txt | awk '{print $3"x"$4"x"$5, $1, $6"/"$7"="$8, $9}'
for b in cand2 bsn; do timeout -s KILL 40 .dev/$b/gemmar_gpu_bench gemm-concurrent 16384 7168 2048 8 2>>$D/err.txt | grep CONCURRENT | sed "s/^/$b /" | cut -c1-330; done | tee $D/concurrent.txt
e2e() { timeout 90 .dev/bsn/gemmar run --backend gpu --all-configs "${@:2}" --json > $D/e2e_$1.json 2>>$D/err.txt; echo "== e2e $1 rc=$?"; python3 scripts/e2e_summary.py $D/e2e_$1.json | cut -c1-200; }
e2e bs16384 -m 16384
e2e bs4096 -m 4096
tail -3 $D/err.txt; date -u
