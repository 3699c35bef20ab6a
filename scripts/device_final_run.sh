#!/usr/bin/env bash
# On a GPU machine: the main job on the GPU (`gemmar validate --backend gpu`: every mode and wire at M=4096 and
# 16384, checked against reference and model), then the faults whose GPU semantics changed (no-release now
# follows the emulation's band pattern; silent-gather spares CU gathers) and the pull grids the model flags.
# Usage: scripts/device_final_run.sh GEMMAR OUTDIR
set -uo pipefail
G=${1:?path of the CUDA-enabled gemmar}
OUT=${2:?output directory}
mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv; } > "$OUT/machine.txt" 2>&1
run() { echo "\$ gemmar $*"; timeout 400 "$G" "$@"; echo "rc=$?"; }
run validate --backend gpu --out "$OUT/validate" --no-report > "$OUT/validate.log" 2>&1
{
  for f in no-release silent-gather stale-output; do
    run run --backend gpu -m 4096 --mode fused-sdma --gather-dtype bf16 --inject "$f"
    run run --backend gpu -m 4096 --mode fused-sdma --gather-dtype fp8 --gather-transport sdma --inject "$f"
  done
  for b in 8 16; do
    run run --backend gpu -m 16384 --mode fused-sdma --gather-dtype fp8 --gather-transport lsa --inject pull-blocks=$b
  done
} > "$OUT/faults.log" 2>&1
grep -h "^rc=\|^\\$" "$OUT"/*.log | paste - - | cut -c1-160
tail -3 "$OUT/validate.log"
