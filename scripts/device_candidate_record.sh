#!/usr/bin/env bash
# On the lent GPU, one call: the record of a candidate build carried as .dev/cand (gemmar, gemmar_gpu_bench) with
# .dev/lib: the stores' NaN check (gemm-nan, each quant), the GEMM alone beside cuBLASLt for issue 25's shapes
# (blockscale REPS processes each, with the eight-at-once GEMMs and the data kernels; then ptpc, one process each),
# the two timing regimes beside the default one (300 alternating launches: the power-capped clock; back-to-back
# bursts: the same, with the GEMM's own operands warm in L2), then `gemmar run --backend gpu --all-configs` for the
# config sets of the record (bit-exact end to end), each stage only while time is left. Output: $OUT/candB.tgz.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
BENCH=.dev/cand/gemmar_gpu_bench
D=${OUT:?}/candB; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
pack() { (cd $OUT && tar czf candB.tgz candB); }
left() { (( SECONDS < $1 )); }
S() { python3 scripts/e2e_summary.py "$@" | cut -c1-300; }
shapes() {  # tag quant reps data concurrent-Ms
  REPS=$3 QUANTS=$2 DATA=$4 CONCURRENT_MS=$5 timeout 200 scripts/device_gemm_shapes.sh $BENCH $D/$1 > $D/$1.summary 2>&1
  echo "== $1 t=$SECONDS"; sed -n '/SUMMARY/,$p' $D/$1.summary
}
regimes() {  # the sustained regimes at the shapes where the default one is closest
  for s in "16384 7168 2048" "16384 5120 2048" "8192 7168 2048"; do
    GEMMAR_BENCH_ITERS=300 timeout -s KILL 60 $BENCH gemm $s | grep GEMM_JSON | sed 's/^/ITERS300 /'
    GEMMAR_BENCH_BURST=1000 timeout -s KILL 60 $BENCH gemm $s | grep GEMM_BURST_JSON
  done > $D/regimes.log 2>&1
  echo "== regimes t=$SECONDS"
  python3 - $D/regimes.log <<'PY'
import json, sys
for line in open(sys.argv[1]):
    tag, _, js = line.partition('{')
    j = json.loads('{' + js)
    print(tag.split()[0], '%dx%dx%d' % (j['m'], j['n'], j['k']), 'ours %.2f cublaslt %.2f ratio %.3f' % (j['ours_us'], j['cublaslt_us'], j['ratio']))
PY
}
e2e() { local tag=$1; shift; timeout 60 .dev/cand/gemmar run --backend gpu --all-configs "$@" --json > $D/e2e_$tag.json 2>> $D/e2e.err; echo "== e2e $tag rc=$? t=$SECONDS"; S $D/e2e_$tag.json; }
for q in blockscale ptpc mxfp8; do  # the stores' NaN canonicalisation (exit 1 and a wrong count when it fails)
  timeout 30 $BENCH gemm-nan 4096 7168 2048 $q 2>&1 | tail -1 | cut -c1-300
done | tee $D/gemm_nan.txt
shapes blockscale blockscale ${REPS:-1} 1 "4096 16384"; pack
left 200 && regimes; pack
left 230 && e2e bs4096 -m 4096; pack
left 250 && e2e bs6144_5120_1024 -m 6144 -n 5120 -k 1024; pack
left 270 && shapes ptpc ptpc 1 0 ""; pack
left 330 && e2e ptpc4096 -m 4096 --quant ptpc; pack
left 345 && e2e mxfp8_1000 -m 1000 -n 5120 -k 1024 --quant mxfp8; pack
left 360 && e2e bs16384 -m 16384; pack
echo "t=$SECONDS"; tail -3 $D/e2e.err; date -u
pack; rm -rf $D
