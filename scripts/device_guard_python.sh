#!/usr/bin/env bash
# The caller guard (issue 49; docs/guard.md "The guard from what the caller holds") on the lent GPU, in one call of
# about 4 minutes: scripts/device_guard_python.py's sections (the library against the torch fallback and the numpy
# judge; the guard's cost at M = 4096 and 16384 on the four wire pairs; every fault class caught per call; >= 1000
# clean calls on both of mori's targets and the fp8 gather's named recipes), then, when a CUDA gemmar is given,
# the in-pipeline guard of `gemmar run --guard` at M = 16384 on the bf16 wire (two runs with, two without).
# Needs torch (2.11 on the lent machine) and libgemmar_guard.so, built here by
#   cmake --preset cuda -DGEMMAR_TESTS=OFF && cmake --build --preset cuda --target gemmar_guard
# and carried as build-cuda/kernels/libgemmar_guard.so ($GEMMAR_GUARD_LIB names another).
# Writes OUTDIR/{machine.txt, guard_python.json, guard_python.log, pipeline/{machine.txt,pipeline.log,summary.txt}}.
# Usage: [COST_REPS=10 FAULT_CALLS=8 NAN_CALLS=320 CLEAN_CALLS=150 VARIANT_CALLS=100 SECTIONS="agree cost faults clean"]
#        scripts/device_guard_python.sh OUTDIR [GEMMAR]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?output dir}
G=${2:-}
mkdir -p "$OUT"
export GEMMAR_GUARD_LIB=${GEMMAR_GUARD_LIB:-$PWD/build-cuda/kernels/libgemmar_guard.so}
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  ls -la "$GEMMAR_GUARD_LIB"
} > "$OUT/machine.txt" 2>&1
start=$(date +%s)
timeout "${PY_TIMEOUT:-200}" python3 scripts/device_guard_python.py --out "$OUT" \
  --sections "${SECTIONS:-agree cost faults clean}" 2>&1 | tee "$OUT/guard_python.log"
echo "python sections: $(( $(date +%s) - start )) s, rc=${PIPESTATUS[0]}"
if [[ -n "$G" && -x "$G" ]]; then
  DEVICE_RUN_TIMEOUT=60
  source scripts/device_common.sh "$G" "$OUT/pipeline"
  {
    for rep in 1 2; do
      jrun "pipeline off BF16 16384 $rep" -m 16384 "${BF16[@]}" --iterations 21 --check-every 100
      jrun "pipeline on BF16 16384 $rep" -m 16384 "${BF16[@]}" --guard --iterations 21 --check-every 100
    done
  } > "$OUT/pipeline/pipeline.log" 2>&1
  # The record's max_rank_time_us per run and the guard's own phase, against the mean of the unguarded runs.
  python3 - "$OUT/pipeline/pipeline.log" <<'PY' | tee "$OUT/pipeline/summary.txt"
import json, sys
runs = {"off": [], "on": []}
tag = None
for line in open(sys.argv[1]):
    if line.startswith("# pipeline"):
        tag = line.split()[2]
    elif line.startswith("{") and tag:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        for run in r.get("runs", []):
            rec = run["record"]
            runs[tag].append((rec.get("max_rank_time_us"), (rec.get("phases_us") or {}).get("guard")))
off = [t for t, _ in runs["off"] if t]
base = sum(off) / len(off) if off else float("nan")
print("op alone, max_rank_time_us:", [t for t, _ in runs["off"]])
for t, g in runs["on"]:
    if t:
        print("with --guard: %.1f us (%+.2f%%), guard phase %s us (%.2f%% of the op)"
              % (t, 100 * (t / base - 1), g, 100 * (g or 0) / base))
PY
  echo "pipeline: $(( $(date +%s) - start )) s"
fi
