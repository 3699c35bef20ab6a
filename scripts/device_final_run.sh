#!/usr/bin/env bash
# On a GPU machine: the main job on the GPU (`gemmar validate --backend gpu`: every mode and wire at M=4096 and
# 16384, checked against reference and model), then the faults whose GPU semantics changed (no-release now
# follows the emulation's band pattern; silent-gather spares CU gathers) and the pull grids the model flags.
# Usage: scripts/device_final_run.sh GEMMAR OUTDIR
set -uo pipefail
DEVICE_RUN_TIMEOUT=400
source "$(dirname "$0")/device_common.sh"
run validate --backend gpu --out "$OUT/validate" --no-report > "$OUT/validate.log" 2>&1
{
  inject_faults no-release silent-gather stale-output
  inject_pull_grids 8 16
} > "$OUT/faults.log" 2>&1
grep -h "^rc=\|^\\$" "$OUT"/*.log | paste - - | cut -c1-160
tail -3 "$OUT/validate.log"
