#!/usr/bin/env bash
# The A/B of docs/results/h100-1gpu-2026-12-06-fma (its call A). Needs four builds
# carried under .dev/ (docs/kernels.md "Building"): .dev/base = 62b7577 (two-rounding promotion), .dev/fma = main,
# .dev/fence = main + branch one-fence-per-run's gemm_wgmma.cuh change, .dev/desc = branch desc-advance (each
# wgmma descriptor one 32-bit add from the warpgroup's first); .dev/lib as usual. Run with OUT set (the
# run tool's). One call in priority order (a stage starts only while time is left): the GEMM alone for base, fma
# and desc; the SASS; desc in the op (bit-exact); fused-sdma's GEMM phase with its copies made no-ops, fma against
# fence; the data kernels; fma end to end; a second fma process.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=${OUT:?}/callA; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
pack() { (cd $OUT && tar czf callA.tgz callA); }
left() { (( SECONDS < $1 )); }
S() { python3 scripts/e2e_summary.py "$@" | cut -c1-300; }
shapes() {  # tag bench quant reps
  REPS=$4 QUANTS=$3 DATA=0 CONCURRENT_MS="" MS=${MS:-4096 16384} NKS=${NKS:-7168x2048 5120x1024} timeout 90 scripts/device_gemm_shapes.sh $2 $D/$1 > $D/$1.summary 2>&1
  echo "== $1 t=$SECONDS"; sed -n '/SUMMARY/,$p' $D/$1.summary
}
shapes base-1 .dev/base/gemmar_gpu_bench blockscale 1
shapes fma-1 .dev/fma/gemmar_gpu_bench blockscale 1
shapes desc-1 .dev/desc/gemmar_gpu_bench blockscale 1
# SASS of the fma build's kernels (no disassembler on the build machine): where the ptpc spill sits, what the
# epilogue costs in instructions.
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
[ -x "$CUOBJ" ] && timeout 30 "$CUOBJ" -sass .dev/fma/gemmar_gpu_bench 2> $D/sass.err | gzip > $D/fma_sass.txt.gz
pack
one() {  # bin, then gemmar run's arguments: one config, its summary line
  local bin=$1; shift; timeout 40 .dev/$bin/gemmar run --backend gpu "$@" --json > $D/one.json 2>> $D/e2e.err
  echo "$bin $* rc=$? $(S $D/one.json | cut -c1-250)"
}
if left 150; then
  one desc -m 4096 --mode gemm-only
  one desc -m 4096 --mode fused-sdma --gather-dtype bf16
  one desc -m 6144 -n 5120 -k 1024 --mode gemm-only
fi | tee $D/desc_e2e.txt
pack
if left 160; then
  for bin in fma fence; do for a in "--mode gemm-only" "--mode fused-sdma --gather-dtype bf16 --inject silent-scatter"; do
    left 200 && one $bin -m 4096 $a
  done; done
fi | tee $D/silent_scatter.txt
pack
left 215 && { for b in 64 132; do timeout 30 .dev/fma/gemmar_gpu_bench data 131072 7168 $b; done > $D/data.log 2>&1; grep DATA_JSON $D/data.log | cut -c1-400; }
pack
e2e() { local tag=$1; shift; timeout 80 .dev/fma/gemmar run --backend gpu --all-configs "$@" --json > $D/e2e_$tag.json 2>> $D/e2e.err; echo "== e2e $tag rc=$? t=$SECONDS"; S $D/e2e_$tag.json; }
left 225 && e2e bs16384 -m 16384
pack
left 230 && shapes fma-2 .dev/fma/gemmar_gpu_bench blockscale 1
echo "t=$SECONDS"; tail -3 $D/e2e.err; date -u
pack; rm -rf $D
