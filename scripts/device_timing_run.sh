#!/usr/bin/env bash
# Issue 23 on the lent H200, in one call (a call cut short keeps what it finished):
#   1. `gemmar validate --backend gpu` with the default GEMM (wgmma4): h200-1gpu is a ceiling profile, so a
#      healthy machine must exit 0, SLOWER_THAN_MODEL as warnings (w) with each phase's efficiency
#   2. the same with the slower GEMM (GEMMAR_GEMM_KERNEL=wgmma) against step 1's results.json as --baseline:
#      must exit 1 with REGRESSION on the runs whose GEMM slowed beyond the 2% run-to-run spread
#   3. the default GEMM again against step 1's baseline: how often a healthy rerun crosses the 2% spread
#      (should exit 0; a REGRESSION here means the profile's run_to_run_spread is too tight)
# Outputs: OUTDIR/{machine.txt, validate.log, validate_wgmma.log, validate_rerun.log} and the three --out
# directories (results.json, runs.log) packed into validate_dirs.tgz.
# Usage: scripts/device_timing_run.sh GEMMAR OUTDIR
set -uo pipefail
cd "$(dirname "$0")/.."
G=${1:?gemmar}
OUT=${2:?output dir}
mkdir -p "$OUT"
DEVICE_RUN_TIMEOUT=240
source scripts/device_common.sh "$G" "$OUT"
start=$(date +%s)
run validate --backend gpu --out "$OUT/validate" --no-report > "$OUT/validate.log" 2>&1
echo "validate: $(( $(date +%s) - start )) s"
GEMMAR_GEMM_KERNEL=wgmma run validate --backend gpu --skip-selftest --baseline "$OUT/validate/results.json" \
  --out "$OUT/validate-wgmma" --no-report > "$OUT/validate_wgmma.log" 2>&1
echo "wgmma vs baseline: $(( $(date +%s) - start )) s"
run validate --backend gpu --skip-selftest --baseline "$OUT/validate/results.json" --out "$OUT/validate-rerun" \
  --no-report > "$OUT/validate_rerun.log" 2>&1
echo "rerun vs baseline: $(( $(date +%s) - start )) s"
tar czf "$OUT/validate_dirs.tgz" -C "$OUT" validate validate-wgmma validate-rerun 2>/dev/null &&
  rm -rf "$OUT/validate" "$OUT/validate-wgmma" "$OUT/validate-rerun"
for f in validate validate_wgmma validate_rerun; do
  echo "== $f (expect rc=0, rc=1 with REGRESSION, rc=0)"
  grep -h "^rc=\|run(s)\|^All results\|^FAILED" "$OUT/$f.log" | cut -c1-200
  grep -h "^run:" "$OUT/$f.log" | awk '{print $NF}' | tr ',' '\n' | sort | uniq -c | sort -rn | head -8
  grep -h "^    error " "$OUT/$f.log" | cut -c1-200 | head -6
done
