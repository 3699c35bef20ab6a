#!/usr/bin/env bash
# On a GPU machine: the CUDA build of gemmar (GEMMAR_CUDA=ON) runs every mode and wire through the one run
# driver (`gemmar run --backend gpu`: poisoned outputs, bit-exact check against the collective re-emulated over
# the GPU's own partials, relL2 against the fp32 reference and the predicted floor, the model's verdict), then
# each injected fault, then a measured pull-grid sweep. Usage: scripts/device_gemmar_run.sh GEMMAR OUTDIR
set -uo pipefail
G=${1:?path of the CUDA-enabled gemmar}
OUT=${2:?output directory}
mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv; } > "$OUT/machine.txt" 2>&1
run() { echo "\$ gemmar $*"; timeout 300 "$G" "$@"; echo "rc=$?"; }
run run --backend gpu --all-configs --m-list 4096,16384 --check-rows 256 > "$OUT/all_configs.log" 2>&1
{
  for f in silent-puts silent-scatter silent-gather stale-output no-release perturb-rank=3; do
    run run --backend gpu -m 4096 --mode fused-sdma --gather-dtype bf16 --inject "$f"
    run run --backend gpu -m 4096 --mode fused-sdma --gather-dtype fp8 --gather-transport sdma --inject "$f"
  done
  for b in 16 512; do
    run run --backend gpu -m 16384 --mode fused-sdma --gather-dtype fp8 --gather-transport lsa --inject pull-blocks=$b
  done
} > "$OUT/faults.log" 2>&1
{
  for b in 8 16 32 48 64 96 128 256 512; do
    run run --backend gpu -m 16384 --mode fused-sdma --gather-dtype fp8 --gather-transport lsa --pull-blocks $b
  done
} > "$OUT/pull_sweep.log" 2>&1
grep -h "^rc=\|^\\$" "$OUT"/*.log | paste - - | awk '{print $NF, $0}' | cut -c1-160
