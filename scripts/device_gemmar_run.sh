#!/usr/bin/env bash
# On a GPU machine: the CUDA build of gemmar (GEMMAR_CUDA=ON) runs every mode and wire through the one run
# driver (`gemmar run --backend gpu`: poisoned outputs, bit-exact check against the collective re-emulated over
# the GPU's own partials, relL2 against the fp32 reference and the predicted floor, the model's verdict), then
# each injected fault, then a measured pull-grid sweep. Usage: scripts/device_gemmar_run.sh GEMMAR OUTDIR
set -uo pipefail
DEVICE_RUN_TIMEOUT=300
source "$(dirname "$0")/device_common.sh"
run run --backend gpu --all-configs --m-list 4096,16384 --check-rows 256 > "$OUT/all_configs.log" 2>&1
{
  inject_faults silent-puts silent-scatter silent-gather stale-output no-release perturb-rank=3
  inject_pull_grids 16 512
} > "$OUT/faults.log" 2>&1
{
  for b in 8 16 32 48 64 96 128 256 512; do
    run run --backend gpu -m 16384 --mode fused-sdma --gather-dtype fp8 --gather-transport lsa --pull-blocks $b
  done
} > "$OUT/pull_sweep.log" 2>&1
grep -h "^rc=\|^\\$" "$OUT"/*.log | paste - - | awk '{print $NF, $0}' | cut -c1-160
