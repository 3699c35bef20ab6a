#!/usr/bin/env bash
# Issue 25, ptpc and mxfp8 on the GPU (the lent H200), most important first (a call cut short keeps what it
# finished):
#   1. `gemmar run --backend gpu --quant Q --all-configs -m 4096` for Q in ptpc mxfp8: exit 0 means every mode
#      (gemm-only, split-*, fused-*) on both wires passed: output within the quant's relL2 band of the fp32
#      reference, and the collective re-emulated over the GPU's own partials equal bit for bit (wrong_elements 0)
#   2. the same at M = 1000 (not a multiple of the tile: padded to world * 256, padding rows zero)
#   3. the GEMM alone beside the vendor's, same process and operands, M = 4096 and 16384 at N = 7168, K = 2048:
#      ptpc against cuBLASLt's outer-vector scaling; mxfp8 (no vendor MX GEMM on Hopper) against its ceiling,
#      the blockscale GEMM of the same shape (ours and cuBLASLt's)
# Writes OUTDIR/{machine.txt, runs.log, gemm.log, summary.txt}; summary.txt is what to record in docs/results/.
# Usage: scripts/device_quant_run.sh [GEMMAR [BENCH [OUTDIR]]]
#   defaults: .dev/bin/gemmar, .dev/bin/gemmar_gpu_bench, $OUT or /tmp/quant25; libraries from .dev/lib
set -uo pipefail
cd "$(dirname "$0")/.."
G=${1:-.dev/bin/gemmar}
BENCH=${2:-.dev/bin/gemmar_gpu_bench}
DIR=${3:-${OUT:-/tmp/quant25}}
[[ -d .dev/lib ]] && export LD_LIBRARY_PATH="$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$DIR"
DEVICE_RUN_TIMEOUT=280
source scripts/device_common.sh "$G" "$DIR"
start=$(date +%s)
{
  for q in ptpc mxfp8; do
    run run --backend gpu --quant "$q" --all-configs -m 4096
  done
  for q in ptpc mxfp8; do
    run run --backend gpu --quant "$q" --all-configs -m 1000
  done
} > "$DIR/runs.log" 2>&1
echo "runs: $(( $(date +%s) - start )) s"
{
  for m in 4096 16384; do
    for q in ptpc mxfp8; do
      echo "\$ gemmar_gpu_bench gemm $m 7168 2048 $q"
      timeout 280 "$BENCH" gemm "$m" 7168 2048 "$q"
      echo "rc=$?"
    done
  done
} > "$DIR/gemm.log" 2>&1
echo "gemm: $(( $(date +%s) - start )) s"
{
  echo "== gemmar run --quant Q --all-configs (rc 0 = every config bit-exact and within its band)"
  grep -E '^\$ gemmar|^rc=' "$DIR/runs.log" | paste - -
  echo "== configs that did not pass (from the tables above the rc lines)"
  grep -E 'FAIL|WRONG|exit|error' "$DIR/runs.log" | head -40
  echo "== GEMM alone: ours vs vendor (ptpc: cuBLASLt outer-vector) / mxfp8 vs its blockscale ceiling"
  grep -E '^GEMM_JSON|^MXFP8_CEILING_JSON|^VENDOR_UNAVAILABLE|^rc=|gemmar_gpu_bench:' "$DIR/gemm.log"
} > "$DIR/summary.txt"
cat "$DIR/summary.txt"
