#!/usr/bin/env bash
# the merged build (fin: the NaN probe; clusters along M only where GEMMs share the device): NaN check, every shape
# of issue 25 (blockscale 2 processes, ptpc 1), eight at once (ptpc also with nc1, whose ptpc never clusters),
# end to end, timing regimes
python3 -c 'import lzma,glob,os
for f in glob.glob(".dev/*/*.xz"):
    open(f[:-3],"wb").write(lzma.open(f).read()); os.chmod(f[:-3],0o755); os.remove(f)'
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/fin; mkdir -p $D
pack() { (cd $OUT && tar czf fin.tgz fin); }
left() { (( SECONDS < $1 )); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
g() { echo "$1 $(timeout -s KILL 30 .dev/$1/gemmar_gpu_bench gemm $2 $3 $4 $5 2>>$D/err.txt | grep GEMM_JSON | python3 -c 'import json,sys; j=json.loads(sys.stdin.read().split(" ",1)[1]); print(j["quant"],j["m"],j["n"],j["k"],j["ours_us"],j["cublaslt_us"],j["ratio"],j["checked"])')"; }
for q in blockscale ptpc mxfp8; do timeout -s KILL 30 .dev/fin/gemmar_gpu_bench gemm-nan 4096 7168 2048 $q 2>&1 | tail -1 | cut -c1-260; done > $D/nan.txt
cut -c1-200 $D/nan.txt
SHAPES="16384 7168 2048|8192 7168 2048|4096 7168 2048|1000 7168 2048|16384 5120 1024|8192 5120 1024|4096 5120 1024|1000 5120 1024|16384 5120 2048|8192 5120 2048|4096 5120 2048|1000 5120 2048"
IFS='|' read -ra SH <<< "$SHAPES"
for rep in 1 2; do for s in "${SH[@]}"; do g fin $s blockscale; done; done > $D/gemm.txt
for s in "${SH[@]}"; do g fin $s ptpc; done >> $D/gemm.txt
sort -k2,2 -k3,3n -k4,4n -k1,1 $D/gemm.txt | awk '{print $2, $3"x"$4"x"$5, $1, $6"/"$7"="$8, $9}'
echo "t=$SECONDS"; pack
cc() { timeout -s KILL 60 .dev/$1/gemmar_gpu_bench gemm-concurrent $2 7168 2048 8 $3 2>>$D/err.txt | grep CONCURRENT | sed "s/^/$1 /" | cut -c1-400; }
{ cc fin 16384 blockscale; cc fin 4096 blockscale; cc fin 16384 ptpc; cc nc1 16384 ptpc; } | tee $D/concurrent.txt
echo "t=$SECONDS"; pack
e2e() { left $1 || return; timeout 90 .dev/fin/gemmar run --backend gpu --all-configs "${@:3}" --json > $D/e2e_$2.json 2>>$D/err.txt; echo "== e2e $2 rc=$? t=$SECONDS"; python3 scripts/e2e_summary.py $D/e2e_$2.json | cut -c1-220; pack; }
e2e 200 bs16384 -m 16384
e2e 215 bs4096 -m 4096
e2e 230 ptpc16384 -m 16384 --quant ptpc
e2e 245 bs6144 -m 6144 -n 5120 -k 1024
e2e 255 mxfp8_1000 -m 1000 -n 5120 -k 1024 --quant mxfp8
left 300 && for s in "16384 7168 2048" "16384 5120 2048" "8192 7168 2048"; do
  GEMMAR_BENCH_ITERS=300 timeout -s KILL 60 .dev/fin/gemmar_gpu_bench gemm $s | grep GEMM_JSON | sed 's/^/ITERS300 /'
  GEMMAR_BENCH_BURST=1000 timeout -s KILL 60 .dev/fin/gemmar_gpu_bench gemm $s | grep GEMM_BURST_JSON
done > $D/regimes.log 2>&1 && python3 - $D/regimes.log <<'PY'
import json, sys
for line in open(sys.argv[1]):
    pre, _, js = line.partition('{')
    j = json.loads('{' + js)
    print(pre.split()[0], '%dx%dx%d' % (j['m'], j['n'], j['k']), 'ours %.2f cublaslt %.2f ratio %.3f' % (j['ours_us'], j['cublaslt_us'], j['ratio']))
PY
tail -3 $D/err.txt; date -u; echo "t=$SECONDS"
pack; rm -rf $D
