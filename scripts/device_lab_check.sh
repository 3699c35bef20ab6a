#!/usr/bin/env bash
# On the GPU machine, one call (about 6 minutes on an H100; each stage only while time is left): the lab's testbed
# over every subject (gemmar_gpu_bench testbed: every GEMM, widen and pipeline subject checked against the CPU
# reference, then timed beside cuBLASLt / the op's own kernel), then the op as main ran it: `gemmar validate
# --backend gpu` (M = 4096 and 16384, every config, judged) and `gemmar run --backend gpu --all-configs` at M = 4096
# and 16384, beside main's numbers: the record of docs/results/h100-1gpu-2026-12-06-release (call 3, an H100) and,
# where main's binaries were carried, main run on the same card, alternating with this build. Then this build's
# GEMM and data kernels beside main's. Everything under $OUT; the comparison on stdout (scripts/lab_compare.py).
#
# Here:   cmake --preset cuda && cmake --build build-cuda -j --target gemmar gemmar_gpu_bench
#         scripts/device_pack.sh build-cuda .dev/cand
#         (optional, the same-card comparison) a build of main (git worktree add ../main-build main; cmake --preset
#         cuda there; cmake --build ... --target gemmar gemmar_gpu_bench), then scripts/device_pack.sh ../main-build/
#         build-cuda .dev/main
# Device: run scripts/device_lab_check.sh with carry [".dev"]         CAND=.dev/cand BASE=.dev/main (defaults)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_lib.sh
OUT=${OUT:?the output directory}
CAND=${CAND:-.dev/cand}
BASE=${BASE:-.dev/main}
RECORD=docs/results/h100-1gpu-2026-12-06-release/call3/record
unpack_dev
G=$CAND/gemmar
BENCH=$CAND/gemmar_gpu_bench
[[ -x $G && -x $BENCH ]] || { echo "no $G / $BENCH (scripts/device_pack.sh)"; exit 2; }
have_base=0
[[ -x $BASE/gemmar && -x $BASE/gemmar_gpu_bench ]] && have_base=1
machine_record "$OUT"
echo "cand: $CAND; base: $([[ $have_base == 1 ]] && echo "$BASE" || echo "none (main's record only)")"
E=$OUT/e2e
mkdir -p "$E"
DEVICE_RUN_TIMEOUT=90

# 1. The op end to end at M = 4096: this build, main where carried, this build again (alternating, the same card).
jrun_to "$G" "$E/cand_4096_1.json" --all-configs -m 4096
[[ $have_base == 1 ]] && jrun_to "$BASE/gemmar" "$E/base_4096_1.json" --all-configs -m 4096
# 2. The testbed: every subject of the lab (lab/README.md).
step 300 "$BENCH" testbed > "$OUT/testbed.log" 2>&1
echo "== testbed rc=$(tail -1 "$OUT/testbed.log") t=${SECONDS}s"
# 3. M = 16384, alternating, then 4096 again.
left 400 && jrun_to "$G" "$E/cand_16384_1.json" --all-configs -m 16384
left 410 && [[ $have_base == 1 ]] && jrun_to "$BASE/gemmar" "$E/base_16384_1.json" --all-configs -m 16384
left 420 && jrun_to "$G" "$E/cand_16384_2.json" --all-configs -m 16384
left 430 && jrun_to "$G" "$E/cand_4096_2.json" --all-configs -m 4096
left 440 && [[ $have_base == 1 ]] && jrun_to "$BASE/gemmar" "$E/base_4096_2.json" --all-configs -m 4096
# 4. validate as main ran it (the transport self-test, every config at 4096 and 16384, judged against the model).
if left 430; then
  step 120 "$G" validate --backend gpu --out "$OUT/validate" --no-report > "$OUT/validate.log" 2>&1
  echo "== validate $(tail -1 "$OUT/validate.log") t=${SECONDS}s"
  tar czf "$OUT/validate.tgz" -C "$OUT" validate 2>/dev/null && rm -rf "$OUT/validate"
fi
# 5. The GEMM beside cuBLASLt and the data kernels: this build and main's, in turn.
if left 500; then
  for bin in "$BENCH" $([[ $have_base == 1 ]] && echo "$BASE/gemmar_gpu_bench"); do
    for m in 4096 16384; do step 30 "$bin" gemm "$m" 7168 2048; done
    step 30 "$bin" data 131072 7168 64
  done > "$OUT/bench.log" 2>&1
fi
echo "== done t=${SECONDS}s"

specs=()
for f in "$RECORD/e2e_bs4096.json" "$RECORD/e2e_bs16384.json"; do specs+=("record=$f"); done
for f in "$E"/cand_*.json; do specs+=("cand=$f"); done
for f in "$E"/base_*.json; do [[ -e $f ]] && specs+=("base=$f"); done
/usr/bin/python3 scripts/lab_compare.py "$OUT/testbed.log" --e2e "${specs[@]}" | tee "$OUT/summary.txt"
echo "validate:"; grep -h "run(s)\|^All results\|^FAILED\|rc=" "$OUT/validate.log" 2>/dev/null | tail -4
echo "GEMM and data kernels (main's record: $RECORD/blockscale.summary, blockscale/data.log):"
grep -h "^\\$\|GEMM_JSON\|DATA_JSON" "$OUT/bench.log" 2>/dev/null |
  sed 's/"ours_kernel": "[^"]*", //; s/"cublaslt": "[^"]*", //' | cut -c1-260
for f in "$E"/*.json; do gzip -f "$f"; done
