#!/usr/bin/env bash
# Issue 45 on the lent GPU, in one call (< 4 minutes): mori's fp8 scatter (--scatter-dtype fp8) in gemmar's
# fused-sdma pipeline (kernels/collective/scatter_fp8.cu through kernels/pipeline/legs_gemm.cu's ScatterWire),
# most important first, so a call cut short keeps what it finished:
#   1. bit-exact: every wire pair (scatter bf16|fp8 x gather bf16 | fp8/sdma | fp8/lsa) at mori's two targets,
#      W = 8 blockscale N = 7168 and W = 4 mxfp8 N = 5120 (K = 2048, M = 4096): `gemmar run --backend gpu`, whose
#      own check compares every element of every rank against the collective recomputed from the device's partials
#      (kernels/check/output_compare.cu) and the sampled rows against the CPU emulation (reference/emulation.cpp)
#   2. the put loop by chunks with the fp8 scatter: the op's chunk rule and --chunk-bands' short tail (W = 8,
#      M = 12288: 12 bands a destination; bench 4 puts, op 6, --chunk-bands 5: 5 + 5 + 2)
#   3. timing: fp8 against bf16 scatter (bf16 gather), alternating in this one call, at M = 16384 for both targets
#   4. the lab's pipeline testbed (its fp8-scatter cases among them: lab/testbed_plan.cpp), while time is left
# Writes $OUT/{machine.txt, *.json (one `gemmar run --json` per run, its stderr in .err), summary.txt, testbed.log}.
# Here: cmake --build build-cuda --target gemmar gemmar_gpu_bench && scripts/device_pack.sh build-cuda .dev/cand
# Device: run scripts/device_fp8_scatter.sh with carry [".dev"]        CAND=.dev/cand (default)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_lib.sh
OUT=${OUT:?the output directory}
CAND=${CAND:-.dev/cand}
unpack_dev
G=$CAND/gemmar
BENCH=$CAND/gemmar_gpu_bench
[[ -x $G ]] || { echo "no $G (scripts/device_pack.sh)"; exit 2; }
machine_record "$OUT"
DEVICE_RUN_TIMEOUT=90
W8=(-m 4096 -n 7168 -k 2048 --world 8 --quant blockscale)
W4=(-m 4096 -n 5120 -k 2048 --world 4 --quant mxfp8)
GATHERS=("--gather-dtype bf16" "--gather-dtype fp8 --gather-transport sdma" "--gather-dtype fp8 --gather-transport lsa")
fails=0
for target in W8 W4; do
  declare -n t=$target
  for scatter in bf16 fp8; do
    for gi in 0 1 2; do
      # shellcheck disable=SC2206
      gather=(${GATHERS[$gi]})
      tag="exact-$target-s$scatter-g$gi"
      jrun_to "$G" "$OUT/$tag.json" "${t[@]}" --mode fused-sdma --scatter-dtype "$scatter" "${gather[@]}" \
        --iterations 3 || fails=$((fails + 1))
    done
  done
done
C12=(-m 12288 -n 7168 -k 2048 --world 8 --quant blockscale --mode fused-sdma --scatter-dtype fp8 --iterations 3)
jrun_to "$G" "$OUT/chunks-bench.json" "${C12[@]}" || fails=$((fails + 1))
jrun_to "$G" "$OUT/chunks-op.json" "${C12[@]}" --chunk-rule op || fails=$((fails + 1))
jrun_to "$G" "$OUT/chunks-bands5.json" "${C12[@]}" --chunk-bands 5 --gather-dtype fp8 --gather-transport lsa ||
  fails=$((fails + 1))
for rep in 1 2; do
  for scatter in bf16 fp8; do
    left 200 || break
    jrun_to "$G" "$OUT/time-W8-s$scatter-$rep.json" -m 16384 -n 7168 -k 2048 --world 8 --quant blockscale \
      --mode fused-sdma --scatter-dtype "$scatter" --iterations 11 --check-every 100
    left 200 || break
    jrun_to "$G" "$OUT/time-W4-s$scatter-$rep.json" -m 16384 -n 5120 -k 2048 --world 4 --quant mxfp8 \
      --mode fused-sdma --scatter-dtype "$scatter" --iterations 11 --check-every 100
  done
done
if [[ -x $BENCH ]] && left 170; then
  step 60 "$BENCH" testbed pipeline > "$OUT/testbed.log" 2>&1
fi
{
  echo "# one line per run: config, verdict, wrong elements, relL2, the op's time (us), phases"
  for f in "$OUT"/*.json; do
    echo "== $(basename "$f" .json)"
    python3 scripts/e2e_summary.py "$f" 2>&1 || head -c 400 "$f.err"
  done
  grep -h "TESTBED_SUMMARY" "$OUT/testbed.log" 2>/dev/null
  echo "runs that failed (exit != 0): $fails; ${SECONDS}s"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
