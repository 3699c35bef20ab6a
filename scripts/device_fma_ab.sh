#!/usr/bin/env bash
# Prepared 2026-12-05, not yet run (no device could be started from 22:47 to 01:25 UTC). Needs three builds
# carried under .dev/ (docs/kernels.md "Building"): .dev/base = 62b7577 (two-rounding promotion), .dev/fma = main,
# .dev/fence = main + branch one-fence-per-run's gemm_wgmma.cuh change; .dev/lib as usual. Run with OUT set (the
# run tool's). One call in priority order (a stage starts only while time is left): the GEMM alone, promotion by one FMA (fma, ce27f73) against the two-rounding promotion (base, 62b7577);
# fma end to end (bit-exact); fused-sdma's GEMM phase with its copies made no-ops, for fma and for the
# one-fence-per-run counts (fence); ptpc; data kernels; more end to end; the A/B of fence against fma.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=${OUT:?}/callA; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
pack() { (cd $OUT && tar czf callA.tgz callA); }
left() { (( SECONDS < $1 )); }
S() { python3 scripts/e2e_summary.py "$@" | cut -c1-300; }
shapes() {  # tag bench quant reps
  REPS=$4 QUANTS=$3 DATA=0 CONCURRENT_MS="" timeout 120 scripts/device_gemm_shapes.sh $2 $D/$1 > $D/$1.summary 2>&1
  echo "== $1 t=$SECONDS"; sed -n '/SUMMARY/,$p' $D/$1.summary
}
shapes base-1 .dev/base/gemmar_gpu_bench blockscale 1
shapes fma-1 .dev/fma/gemmar_gpu_bench blockscale 1
left 200 && shapes fma-2 .dev/fma/gemmar_gpu_bench blockscale 1
pack
e2e() { local tag=$1; shift; timeout 100 .dev/fma/gemmar run --backend gpu --all-configs "$@" --json > $D/e2e_$tag.json 2>> $D/e2e.err; echo "== e2e $tag rc=$? t=$SECONDS"; S $D/e2e_$tag.json; }
left 260 && e2e bs16384 -m 16384
pack
if left 300; then
for shape in "-m 4096" "-m 6144 -n 5120 -k 1024"; do for bin in fma fence; do
  for a in "--mode gemm-only" "--mode fused-sdma --gather-dtype bf16" "--mode fused-sdma --gather-dtype bf16 --inject silent-scatter"; do
    left 380 || continue; timeout 40 .dev/$bin/gemmar run --backend gpu $shape $a --json > $D/one.json 2>> $D/e2e.err
    echo "$bin $shape $a rc=$? $(S $D/one.json | cut -c1-250)"
  done; done; done | tee $D/silent_scatter.txt
fi
pack
left 330 && shapes fma-ptpc .dev/fma/gemmar_gpu_bench ptpc 1
left 350 && { for b in 64 132; do timeout 40 .dev/fma/gemmar_gpu_bench data 131072 7168 $b; done > $D/data.log 2>&1; grep DATA_JSON $D/data.log; }
pack
left 340 && e2e bs4096 -m 4096
left 355 && e2e ptpc4096 -m 4096 --quant ptpc
left 365 && e2e mxfp8_1000 -m 1000 -n 5120 -k 1024 --quant mxfp8
pack
echo "t=$SECONDS"; tail -3 $D/e2e.err; date -u
pack; rm -rf $D
