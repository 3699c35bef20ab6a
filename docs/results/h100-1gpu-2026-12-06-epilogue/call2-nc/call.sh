#!/usr/bin/env bash
# no clusters along M (bsnc: HEAD without them) with the NaN probe (nc0), + the running ring position and ld.shared
# scales (nc1), + the stmatrix-staged stores (nc3), against HEAD (cand) and epi3 (nc3 with the clusters from 12288);
# then every shape of issue 25 for nc1 and nc3, ptpc, 8 at once, data kernels, timing regimes, end to end (nc1)
python3 -c 'import lzma,glob,os
for f in glob.glob(".dev/*/*.xz"):
    open(f[:-3],"wb").write(lzma.open(f).read()); os.chmod(f[:-3],0o755); os.remove(f)'
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/nc; mkdir -p $D
pack() { (cd $OUT && tar czf nc.tgz nc); }
left() { (( SECONDS < $1 )); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
g() { echo "$1 $(timeout -s KILL 30 .dev/$1/gemmar_gpu_bench gemm $2 $3 $4 $5 2>>$D/err.txt | grep GEMM_JSON | python3 -c 'import json,sys; j=json.loads(sys.stdin.read().split(" ",1)[1]); print(j["quant"],j["m"],j["n"],j["k"],j["ours_us"],j["cublaslt_us"],j["ratio"],j["checked"])')"; }
for b in cand nc1 nc3; do for q in blockscale ptpc mxfp8; do for s in "4096 7168 2048" "1000 5120 1024"; do echo "$b $(timeout -s KILL 30 .dev/$b/gemmar_gpu_bench gemm-nan $s $q 2>&1 | tail -1 | cut -c1-260)"; done; done; done > $D/nan.txt
cut -c1-200 $D/nan.txt
for rep in 1 2; do for s in "16384 7168 2048" "16384 5120 2048" "12288 7168 2048" "8192 7168 2048" "4096 7168 2048" "1000 7168 2048"; do for b in cand bsnc nc0 nc1 nc3 epi3; do g $b $s blockscale; done; done; done > $D/gemm.txt
echo "t=$SECONDS"; pack
for rep in 1 2; do for s in "16384 5120 1024" "8192 5120 1024" "4096 5120 1024" "1000 5120 1024" "8192 5120 2048" "4096 5120 2048" "1000 5120 2048"; do for b in nc1 nc3; do g $b $s blockscale; done; done; done >> $D/gemm.txt
echo "t=$SECONDS"; pack
for s in "16384 7168 2048" "8192 7168 2048" "4096 7168 2048" "1000 7168 2048" "16384 5120 1024" "8192 5120 1024" "4096 5120 1024" "1000 5120 1024" "16384 5120 2048" "8192 5120 2048" "4096 5120 2048" "1000 5120 2048"; do for b in nc1 nc3; do g $b $s ptpc; done; done >> $D/gemm.txt
sort -k2,2 -k3,3n -k4,4n -k1,1 $D/gemm.txt | awk '{print $2, $3"x"$4"x"$5, $1, $6"/"$7"="$8, $9}'
echo "t=$SECONDS"; pack
for b in bsnc nc1 nc3 epi3; do timeout -s KILL 40 .dev/$b/gemmar_gpu_bench gemm-concurrent 16384 7168 2048 8 2>>$D/err.txt | grep CONCURRENT | sed "s/^/$b /" | cut -c1-330; done | tee $D/concurrent.txt
timeout -s KILL 40 .dev/nc1/gemmar_gpu_bench gemm-concurrent 4096 7168 2048 8 2>>$D/err.txt | grep CONCURRENT | sed "s/^/nc1 /" | cut -c1-330 | tee -a $D/concurrent.txt
timeout -s KILL 60 .dev/nc1/gemmar_gpu_bench data 131072 7168 64 2>>$D/err.txt | grep DATA_JSON | tee $D/data.txt | cut -c1-400
echo "t=$SECONDS"; pack
e2e() { left $1 || return; timeout 90 .dev/$2/gemmar run --backend gpu --all-configs "${@:4}" --json > $D/e2e_$3.json 2>>$D/err.txt; echo "== e2e $3 rc=$? t=$SECONDS"; python3 scripts/e2e_summary.py $D/e2e_$3.json | cut -c1-200; pack; }
e2e 250 nc1 bs16384 -m 16384
e2e 270 nc1 bs4096 -m 4096
e2e 290 nc1 ptpc16384 -m 16384 --quant ptpc
e2e 300 nc1 ptpc4096 -m 4096 --quant ptpc
e2e 310 nc1 bs6144 -m 6144 -n 5120 -k 1024
e2e 320 nc1 mxfp8_1000 -m 1000 -n 5120 -k 1024 --quant mxfp8
e2e 340 nc3 nc3_bs16384 -m 16384
regimes() {
  for s in "16384 7168 2048" "16384 5120 2048" "8192 7168 2048"; do for b in nc1 nc3; do
    GEMMAR_BENCH_ITERS=300 timeout -s KILL 60 .dev/$b/gemmar_gpu_bench gemm $s | grep GEMM_JSON | sed "s/^/$b ITERS300 /"
    GEMMAR_BENCH_BURST=1000 timeout -s KILL 60 .dev/$b/gemmar_gpu_bench gemm $s | grep GEMM_BURST_JSON | sed "s/^/$b /"
  done; done > $D/regimes.log 2>&1
  python3 - $D/regimes.log <<'PY'
import json, sys
for line in open(sys.argv[1]):
    pre, _, js = line.partition('{')
    j = json.loads('{' + js)
    print(pre.split()[0], pre.split()[1], '%dx%dx%d' % (j['m'], j['n'], j['k']), 'ours %.2f cublaslt %.2f ratio %.3f' % (j['ours_us'], j['cublaslt_us'], j['ratio']))
PY
}
left 380 && regimes
tail -3 $D/err.txt; date -u; echo "t=$SECONDS"
pack; rm -rf $D
