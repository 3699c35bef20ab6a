#!/usr/bin/env bash
# On the lent GPU, issue 20: gemmar's kernels follow mori's fp8 wire (scale = amax * fl32(1/448), inv =
# fl32(448/amax); with --fuse-quantize the amax of the reduce's fp32 accumulator), bit for bit with the CPU emulation,
# and `gemmar verify` checks every element of a GPU dump. Most important first:
#   1. the fp8 wire conversions self-test (exhaustive; BENCH optional)
#   2. fp8 wires end to end, every row read back (--check-rows 0): sdma, lsa, fuse-quantize, at M=4096
#   3. a GPU dump of each, verified (every element; the recipe must be named "mori ..." or the fp32-accumulator amax)
#   4. no-release on the fp8/sdma and bf16 wires: must fail with RANK_DISAGREEMENT among its codes
# Success: rc=0 and "0 wrong elements" for every run of 2 and 3, wire recipe named, rc=1 with RANK_DISAGREEMENT in 4.
# Usage: scripts/device_verify_wire.sh GEMMAR OUTDIR [BENCH]
set -uo pipefail
cd "$(dirname "$0")/.."
G=${1:?gemmar}
OUT=${2:?output dir}
BENCH=${3:-}
DEVICE_RUN_TIMEOUT=240
source scripts/device_common.sh "$G" "$OUT"
[[ -n "$BENCH" ]] && { echo "\$ $BENCH selftest"; timeout 300 "$BENCH" selftest; echo "rc=$?"; } > "$OUT/selftest.log" 2>&1
{
  for wire in "--gather-transport sdma" "--gather-transport lsa" "--gather-transport sdma --fuse-quantize"; do
    tag=$(echo "$wire" | tr -d ' -')
    run run --backend gpu -m 4096 --mode fused-sdma --gather-dtype fp8 $wire --check-rows 0 --iterations 1 \
      --dump "$OUT/dump-$tag"
    run verify "$OUT/dump-$tag"
    rm -rf "$OUT/dump-$tag"
  done
  for w in bf16 fp8; do
    run run --backend gpu -m 4096 --mode fused-sdma --gather-dtype "$w" --gather-transport sdma --check-rows 0 \
      --inject no-release
  done
} > "$OUT/wire.log" 2>&1
grep -E "^\\$|rc=|wrong elements|fp8 wire recipe|RANK_DISAGREEMENT|verdict" "$OUT/wire.log" | head -60
