# Sourced by scripts/device_*_run.sh (on a GPU machine, arguments GEMMAR OUTDIR): the machine record, the
# logged `gemmar` call, and the fault injections both runs make.
G=${1:?path of the CUDA-enabled gemmar}
OUT=${2:?output directory}
mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv; } > "$OUT/machine.txt" 2>&1
# DEVICE_RUN_TIMEOUT: seconds per gemmar call (the caller sets it before sourcing).
run() { echo "\$ gemmar $*"; timeout "${DEVICE_RUN_TIMEOUT:-300}" "$G" "$@"; echo "rc=$?"; }
# One `gemmar run --backend gpu --json` per call, its JSON on one line after a "# tag" line and before "# rc=N".
jrun() {
  local tag=$1
  shift
  echo "# $tag"
  timeout "${DEVICE_RUN_TIMEOUT:-300}" "$G" run --backend gpu --json "$@" | tr -d '\n'
  local rc=${PIPESTATUS[0]}
  echo
  echo "# rc=$rc"
}
# The configurations the device scripts run, by name (as arrays: "${FP8S[@]}").
BF16=(--mode fused-sdma --gather-dtype bf16)
FP8S=(--mode fused-sdma --gather-dtype fp8 --gather-transport sdma)
FP8L=(--mode fused-lsa --gather-dtype fp8 --gather-transport lsa)
LSA=(--mode split-lsa)
# Each fault on the fused-sdma bf16 wire and on its fp8/sdma wire, at M=4096.
inject_faults() {
  local f
  for f in "$@"; do
    run run --backend gpu -m 4096 --mode fused-sdma --gather-dtype bf16 --inject "$f"
    run run --backend gpu -m 4096 --mode fused-sdma --gather-dtype fp8 --gather-transport sdma --inject "$f"
  done
}
# Each pull grid on the fused-sdma fp8/lsa wire at M=16384.
inject_pull_grids() {
  local b
  for b in "$@"; do
    run run --backend gpu -m 16384 --mode fused-sdma --gather-dtype fp8 --gather-transport lsa --inject pull-blocks="$b"
  done
}
