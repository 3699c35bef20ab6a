#!/usr/bin/env bash
# On the lent GPU, one call: the record of a candidate build carried as .dev/cand (gemmar, gemmar_gpu_bench) with
# .dev/lib: the GEMM alone beside cuBLASLt for issue 25's shapes (blockscale, then ptpc; one process each), then
# `gemmar run --backend gpu --all-configs` for the config sets of the record (bit-exact end to end), each stage
# only while time is left. Output: $OUT/candB.tgz.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=${OUT:?}/candB; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
pack() { (cd $OUT && tar czf candB.tgz candB); }
left() { (( SECONDS < $1 )); }
S() { python3 scripts/e2e_summary.py "$@" | cut -c1-300; }
shapes() {  # tag quant
  REPS=1 QUANTS=$2 DATA=0 CONCURRENT_MS="${CMS:-}" timeout 160 scripts/device_gemm_shapes.sh .dev/cand/gemmar_gpu_bench $D/$1 > $D/$1.summary 2>&1
  echo "== $1 t=$SECONDS"; sed -n '/SUMMARY/,$p' $D/$1.summary
}
e2e() { local tag=$1; shift; timeout 60 .dev/cand/gemmar run --backend gpu --all-configs "$@" --json > $D/e2e_$tag.json 2>> $D/e2e.err; echo "== e2e $tag rc=$? t=$SECONDS"; S $D/e2e_$tag.json; }
CMS=16384 shapes blockscale blockscale; pack
left 170 && e2e bs4096 -m 4096; pack
left 190 && e2e bs6144_5120_1024 -m 6144 -n 5120 -k 1024; pack
left 200 && shapes ptpc ptpc; pack
left 260 && e2e ptpc4096 -m 4096 --quant ptpc; pack
left 280 && e2e mxfp8_1000 -m 1000 -n 5120 -k 1024 --quant mxfp8; pack
left 290 && e2e bs16384 -m 16384; pack
echo "t=$SECONDS"; tail -3 $D/e2e.err; date -u
pack; rm -rf $D
