#!/usr/bin/env bash
# Issue 45 on the lent GPU, in one call (< 4 minutes): mori's fp8 scatter (--scatter-dtype fp8) in gemmar's
# fused-sdma pipeline (kernels/collective/scatter_fp8.cu through kernels/pipeline/legs_gemm.cu's ScatterWire),
# most important first, so a call cut short keeps what it finished:
#   1. bit-exact: every wire pair (scatter bf16|fp8 x gather bf16 | fp8/sdma | fp8/lsa) at mori's two targets,
#      W = 8 blockscale N = 7168 and W = 4 mxfp8 N = 5120 (K = 2048, M = 4096): `gemmar run --backend gpu`, whose
#      own check compares every element of every rank against the collective recomputed from the device's partials
#      (kernels/check/output_compare.cu) and the sampled rows against the CPU emulation (reference/emulation.cpp)
#   2. timing: fp8 against bf16 scatter (bf16 gather), alternating in this one call, at M = 16384 for both targets
#   3. the put loop by chunks with the fp8 scatter: the op's chunk rule and --chunk-bands' short tail (W = 8,
#      M = 12288: 12 bands a destination; bench 4 puts, op 6, --chunk-bands 5: 5 + 5 + 2)
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
for rep in 1 2; do
  for scatter in bf16 fp8; do
    left 150 || break
    jrun_to "$G" "$OUT/time-W8-s$scatter-$rep.json" -m 16384 -n 7168 -k 2048 --world 8 --quant blockscale \
      --mode fused-sdma --scatter-dtype "$scatter" --iterations 11 --check-every 100
    left 150 || break
    jrun_to "$G" "$OUT/time-W4-s$scatter-$rep.json" -m 16384 -n 5120 -k 2048 --world 4 --quant mxfp8 \
      --mode fused-sdma --scatter-dtype "$scatter" --iterations 11 --check-every 100
  done
done
if left 190; then
  C12=(-m 12288 -n 7168 -k 2048 --world 8 --quant blockscale --mode fused-sdma --scatter-dtype fp8 --iterations 3)
  jrun_to "$G" "$OUT/chunks-bench.json" "${C12[@]}" || fails=$((fails + 1))
  jrun_to "$G" "$OUT/chunks-op.json" "${C12[@]}" --chunk-rule op || fails=$((fails + 1))
  jrun_to "$G" "$OUT/chunks-bands5.json" "${C12[@]}" --chunk-bands 5 --gather-dtype fp8 --gather-transport lsa ||
    fails=$((fails + 1))
fi
if [[ -x $BENCH ]] && left 185; then
  step 50 "$BENCH" testbed pipeline > "$OUT/testbed.log" 2>&1
fi
/usr/bin/python3 - "$OUT" "$fails" "$SECONDS" > "$OUT/summary.txt" <<'PY'
import glob, json, os, statistics, sys
out, fails, secs = sys.argv[1], sys.argv[2], sys.argv[3]
print("# run: verdict, wrong elements (every element of every rank on the device + the CPU rows), relL2, time us, "
      "findings")
bad, times = [], {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    tag = os.path.basename(path)[:-5]
    try:
        runs = json.load(open(path)).get("runs", [])
    except (OSError, ValueError):
        runs = []
    if not runs:
        err = open(path + ".err").read()[-300:] if os.path.exists(path + ".err") else ""
        print("%-26s NO RESULT %s" % (tag, err.strip().replace("\n", " | ")))
        if not tag.startswith("time-"):
            bad.append(tag)
        continue
    for run in runs:
        rec = run.get("record", {})
        t = rec.get("max_rank_time_us")
        codes = ",".join(f.get("code", "?") for f in rec.get("findings", []))
        print("%-26s %-5s wrong=%s disagree=%s nonfinite=%s relL2=%.4g t=%s %s" % (
            tag, run.get("verdict"), rec.get("wrong_elements"), rec.get("disagreeing_elements"),
            rec.get("nonfinite_elements"), rec.get("rel_l2") or 0, "%.1f" % t if t else "-", codes))
        if not tag.startswith("time-") and (rec.get("wrong_elements") != 0 or rec.get("disagreeing_elements") not in (0, None)):
            bad.append(tag)
        if tag.startswith("time-") and t:
            times.setdefault(tag.rsplit("-", 1)[0], []).append(t)
for target in ("W8", "W4"):
    b, f = times.get("time-%s-sbf16" % target), times.get("time-%s-sfp8" % target)
    if b and f:
        print("TIME %s M=16384: bf16 scatter %.1f us, fp8 scatter %.1f us (medians of %d, %d runs), fp8/bf16 %.3f" % (
            target, statistics.median(b), statistics.median(f), len(b), len(f),
            statistics.median(f) / statistics.median(b)))
tb = os.path.join(out, "testbed.log")
if os.path.exists(tb):
    for line in open(tb):
        if "TESTBED_SUMMARY" in line:
            print(line.strip())
print("BIT-EXACT: %s" % ("all checked runs 0 wrong elements" if not bad else "FAILED: " + " ".join(bad)))
print("runs with a non-zero exit (a timing finding counts too): %s; %ss" % (fails, secs))
PY
cat "$OUT/summary.txt"
