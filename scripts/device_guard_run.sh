#!/usr/bin/env bash
# The per-call guard (docs/guard.md) on the lent GPU, in one call, most important first (a call cut short keeps
# what it finished):
#   1. detection matrix by the guard alone: every fault class that corrupts the output, injected with --guard at
#      M = 4096 on the configs it applies to; each must raise its GUARD_* code on every call it applies to
#      (replay faults: every call but iteration 0, which follows two warm-up launches on the same inputs)
#   2. 0 false alarms in >= 1000 clean straggled replays (--straggle 50, two wires, M = 4096) and 200 at 16384
#   3. overhead: the op with and without --guard at M = 4096 and 16384 (fused-sdma bf16 and fp8/sdma, fused-lsa
#      fp8/lsa), the guard's own phase ("guard") and the totals, with the default sample (one row in 32) and with
#      every row (--guard-sample 1); each pair twice, interleaved (the op's own run-to-run spread); goal <= 2% at
#      16384
#   4. python/gemmar_guard.py's self-test on the device, when torch is importable
#   (PARTS "passes": each pass of the guard alone, the lab's guard subjects through BENCH, by default the
#   gemmar_gpu_bench beside GEMMAR)
# Writes OUTDIR/{machine.txt, matrix.log, clean.log, overhead.log, python.log, summary.txt}; summary.txt is what
# goes into docs/guard.md's measured section and docs/results/.
# The overhead runs first (what the guard costs: docs/guard.md), then the matrix, then the clean replays.
# Usage: [CLEAN_ITERS=n CLEAN_ITERS_16K=n SKIP_PYTHON=1 PARTS="overhead matrix clean python [passes]"
#         OVERHEAD_CONFIGS="BF16 FP8S FP8L" OVERHEAD_M="4096 16384" OVERHEAD_FULL=1 (0: no every-row runs)]
#        scripts/device_guard_run.sh GEMMAR OUTDIR
# PARTS picks the sections (default all), so a lease's 10-minute command limit can take them in two calls into
# one OUTDIR; the summary reads whatever logs OUTDIR holds.
set -uo pipefail
cd "$(dirname "$0")/.."
G=${1:?gemmar (CUDA build)}
OUT=${2:?output dir}
mkdir -p "$OUT"
DEVICE_RUN_TIMEOUT=300
# Clean straggled replays per config (CLEAN_ITERS at M = 4096, two wires; CLEAN_ITERS_16K at 16384, fp8/lsa).
CLEAN_ITERS=${CLEAN_ITERS:-1000}
CLEAN_ITERS_16K=${CLEAN_ITERS_16K:-200}
source scripts/device_lib.sh "$G" "$OUT"
start=$(date +%s)
PARTS=${PARTS:-overhead matrix clean python}
want() { [[ " $PARTS " == *" $1 "* ]]; }
want overhead && {
  for m in ${OVERHEAD_M:-4096 16384}; do
    for cfg in ${OVERHEAD_CONFIGS:-BF16 FP8S FP8L}; do
      declare -n c=$cfg
      for rep in 1 2; do
        jrun "overhead off $cfg $m $rep" -m "$m" "${c[@]}" --iterations 21 --check-every 100
        jrun "overhead on $cfg $m $rep" -m "$m" "${c[@]}" --guard --iterations 21 --check-every 100
      done
      [[ "${OVERHEAD_FULL:-1}" == 1 ]] && jrun "overhead full $cfg $m 1" -m "$m" "${c[@]}" --guard --guard-sample 1 --iterations 21 --check-every 100
    done
  done
  # Each pass of the guard alone (the lab's guard subjects, lab/README.md: the passes left out leave zero sums, so
  # timing only; the op's run beside each), with PARTS holding "passes".
  want passes && for part in partial output wire gemm; do
    step 200 "${BENCH:-$(dirname "$G")/gemmar_gpu_bench}" pipeline "guard-$part" 16384 fused-sdma/fp8/sdma blockscale guard
  done
} > "$OUT/overhead.log" 2>&1
echo "overhead: $(( $(date +%s) - start )) s"
want matrix && {
  for f in silent-puts silent-scatter silent-gather stale-output no-release perturb-rank=3 stale-replay frozen-flag; do
    for cfg in BF16 FP8S FP8L LSA; do
      declare -n c=$cfg
      jrun "matrix $f $cfg" -m 4096 "${c[@]}" --guard --inject "$f" --iterations 6 --check-every 100
    done
  done
  jrun "matrix wire-bypassed FP8S" -m 4096 "${FP8S[@]}" --guard --inject wire-bypassed --iterations 6 --check-every 100
  jrun "matrix wire-bypassed FP8L" -m 4096 "${FP8L[@]}" --guard --inject wire-bypassed --iterations 6 --check-every 100
  # Every row read (--guard-sample 1): the same kernels over the identity row list.
  for f in silent-scatter no-release perturb-rank=3 frozen-flag; do
    jrun "full $f FP8S" -m 4096 "${FP8S[@]}" --guard --guard-sample 1 --inject "$f" --iterations 6 --check-every 100
  done
} > "$OUT/matrix.log" 2>&1
echo "matrix: $(( $(date +%s) - start )) s"
want clean && {
  jrun "clean FP8S 4096" -m 4096 "${FP8S[@]}" --guard --iterations "$CLEAN_ITERS" --straggle 50 --check-every 1000
  jrun "clean BF16 4096" -m 4096 "${BF16[@]}" --guard --iterations "$CLEAN_ITERS" --straggle 50 --check-every 1000
  jrun "clean FP8L 16384" -m 16384 "${FP8L[@]}" --guard --iterations "$CLEAN_ITERS_16K" --straggle 50 --check-every 1000
} > "$OUT/clean.log" 2>&1
echo "clean: $(( $(date +%s) - start )) s"
if ! want python || [[ "${SKIP_PYTHON:-0}" == 1 ]]; then
  [[ -f "$OUT/python.log" ]] || echo "python guard not run (SKIP_PYTHON=1 or PARTS)" > "$OUT/python.log"
elif python3 -c "import torch" 2>/dev/null; then
  { timeout 300 python3 python/gemmar_guard.py --selftest --device cuda; echo "rc=$?"
    timeout 200 python3 python/gemmar_guard.py --bench --device cuda; echo "rc=$?"; } > "$OUT/python.log" 2>&1
else
  echo "torch not importable: python guard not run" > "$OUT/python.log"
fi
echo "python: $(( $(date +%s) - start )) s"
python3 - "$OUT" > "$OUT/summary.txt" <<'EOF'
import json, sys, os
out = sys.argv[1]
def runs(name):
    tag = None
    if not os.path.exists(os.path.join(out, name)):
        return
    for line in open(os.path.join(out, name), errors="replace"):
        line = line.strip()
        if line.startswith("# rc="):
            continue
        if line.startswith("# "):
            tag = line[2:]
        elif line.startswith("{"):
            try:
                doc = json.loads(line)
            except ValueError:
                print(f"{tag}: unreadable JSON")
                continue
            for r in doc.get("runs", []):
                yield tag, r
# Which code each fault must raise, and whether iteration 0 is exempt (replay faults).
expect = {"silent-puts": "GUARD_REDUCE", "silent-scatter": "GUARD_REDUCE", "silent-gather": "GUARD_GATHER",
          "stale-output": "GUARD_REDUCE", "no-release": "GUARD_GATHER", "perturb-rank=3": "GUARD_GEMM",
          "stale-replay": "GUARD_REDUCE", "frozen-flag": "GUARD_GATHER", "wire-bypassed": "GUARD_WIRE"}
# Where a fault does not act (docs/guard.md): split-lsa has no puts; an lsa gather is CU loads, not a copy engine.
def applies(fault, cfg):
    if cfg == "LSA" and fault in ("silent-puts", "silent-scatter", "silent-gather", "no-release"):
        return False
    if cfg == "FP8L" and fault in ("silent-gather", "no-release"):
        return False
    return True
print("== detection matrix (guard alone): fault config -> guard calls, flagged calls, codes (calls), verdict")
misses = 0
for tag, r in runs("matrix.log"):
    _, fault, cfg = tag.split()
    g = r["record"].get("guard", {})
    calls, flagged = g.get("calls", 0), g.get("flagged_calls", 0)
    codes = {k: v["calls"] for k, v in g.get("codes", {}).items()}
    # Replay faults leave iteration 0 intact: it follows two warm-up launches on the same inputs.
    need = (calls - 1 if fault in ("stale-replay", "frozen-flag") else calls) if applies(fault, cfg) else 0
    ok = calls > 0 and (flagged >= need if need else flagged == 0)
    misses += not ok
    print(f"{fault:15s} {r['config']:34s} sample={g.get('sample')} rows/call={g.get('rows_per_call')} "
          f"calls={calls} flagged={flagged} {codes} (CPU emulation's code: "
          f"{expect[fault] if applies(fault, cfg) else 'none, the fault does not act here'}) "
          f"{'OK' if ok else 'MISS'}")
print(f"matrix: {misses} miss(es)")
print("== clean straggled replays: config M -> calls, flagged (must be 0)")
total = alarms = 0
for tag, r in runs("clean.log"):
    g = r["record"].get("guard", {})
    total += g.get("calls", 0)
    alarms += g.get("flagged_calls", 0)
    print(f"{r['config']:34s} m={r['record']['m']} calls={g.get('calls')} flagged={g.get('flagged_calls')} "
          f"{ {k: v['message'][:200] for k, v in g.get('codes', {}).items()} }")
print(f"clean: {alarms} false alarm(s) in {total} replays")
print("== overhead: config M guard -> max_rank_time_us, guard phase us")
tab = {}
for line in open(os.path.join(out, "overhead.log"), errors="replace") if os.path.exists(os.path.join(out, "overhead.log")) else []:
    if line.startswith("TESTBED_JSON "):
        j = json.loads(line.split(" ", 1)[1])
        print(f"pass {j['subject']:14s} {j['config']:34s} m={j['m']} checked={j['checked']} "
              f"guard_phase={j.get('phases_us', {}).get('guard')} (all passes: {j.get('product_phases_us', {}).get('guard')})")
for tag, r in runs("overhead.log"):
    _, onoff, cfg, m, rep = tag.split()
    rec = r["record"]
    t = rec.get("max_rank_time_us")
    gp = rec.get("phases_us", {}).get("guard")
    tab.setdefault((cfg, m, onoff), []).append((t, gp))
    print(f"{r['config']:34s} m={m} guard={onoff:4s} rep={rep} time={t} guard_phase={gp} "
          f"rows_per_call={rec.get('guard', {}).get('rows_per_call')}")
for (cfg, m, onoff), vals in sorted(tab.items()):
    off = [t for t, _ in tab.get((cfg, m, "off"), []) if t]
    if onoff == "off" or not off:
        continue
    base = sum(off) / len(off)
    for t, gp in vals:
        if t:
            print(f"overhead {cfg} m={m} guard={onoff}: {100 * (t / base - 1):+.2f}% total against the mean of "
                  f"{len(off)} unguarded runs ({', '.join(f'{x:.1f}' for x in off)} us); guard phase {gp} us "
                  f"({100 * (gp or 0) / base:.2f}% of the unguarded op)")
EOF
echo "== summary"; cat "$OUT/summary.txt"; echo "== python (failures and totals)"; grep -v '^ok  ' "$OUT/python.log" | tail -12
