#!/usr/bin/env bash
# On the lent GPU: our GEMM variants (GEMMAR_GEMM_KERNEL) beside cuBLASLt at M x 7168 x 2048, each invocation of
# `gemmar_gpu_bench gemm` timing ours and cuBLASLt in the same process on the same operands (median of 20),
# then end-to-end runs with the default kernel (bit-exact collective check), and the SASS mix.
# Usage: scripts/device_gemm_variants.sh BENCH OUTDIR "VARIANTS" [M...]
set -uo pipefail
BENCH=${1:?gemmar_gpu_bench}
OUT=${2:?output dir}
VARIANTS=${3:-wgmma2}
shift 3
MS=${*:-4096 8192 16384}
mkdir -p "$OUT"
LOG="$OUT/gemm.log"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total,power.draw --format=csv; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
step() { echo "\$ $*"; timeout -s KILL "${T:-150}" "$@"; rc=$?; echo "rc=$rc"; return $rc; }
{
  for v in $VARIANTS; do
    for m in $MS; do  # a variant that hangs (killed) is not run at the other sizes
      echo "variant=$v"; GEMMAR_GEMM_KERNEL=$v T=60 step "$BENCH" gemm "$m" 7168 2048; [[ $? == 137 ]] && break
    done
  done
  for run in ${GEMMAR_RUNS:-"gemm-only bf16 sdma 4096" "fused-lsa bf16 sdma 4096" "fused-sdma fp8 lsa 4096" "split-sdma fp8 sdma 16384"}; do
    echo "run kernel=${RUNK:-default}"; GEMMAR_GEMM_KERNEL=${RUNK:-} step "$BENCH" run $run 7168 2048 8 5 64 gemmar
  done
} 2>&1 | tee "$LOG"
{
  cuobjdump -sass "$BENCH" > "$OUT/sass.txt" 2>&1
  for f in $(grep -o 'Function : [A-Za-z0-9_]*gemm[A-Za-z0-9_]*' "$OUT/sass.txt" | awk '{print $3}' | sort -u); do
    awk -v f="$f" '/Function : /{on = ($3 == f)} on' "$OUT/sass.txt" > "$OUT/sass_one.txt"
    echo "$f: QGMMA $(grep -c QGMMA "$OUT/sass_one.txt") HMMA $(grep -c HMMA "$OUT/sass_one.txt") LDL/STL $(grep -cE 'LDL|STL' "$OUT/sass_one.txt") UTMALDG $(grep -c UTMALDG "$OUT/sass_one.txt") SYNCS $(grep -c SYNCS "$OUT/sass_one.txt") WARPGROUP $(grep -c WARPGROUP "$OUT/sass_one.txt")"
  done
  rm -f "$OUT/sass_one.txt"
  gzip -f "$OUT/sass.txt"
} > "$OUT/sass_mix.txt" 2>&1
cat "$OUT/sass_mix.txt"
echo SUMMARY
grep -h "^variant=\|GEMM_JSON" "$LOG" | sed 's/"ours_kernel": "[^"]*", //; s/"cublaslt": "[^"]*", //' | paste -d' ' - - | cut -c1-330
grep -h -o '"mode": "[^"]*".*"m": [0-9]*\|"max_rank_time_us": [0-9.]*\|"validated": [a-z]*\|"bitexact_mismatches": [0-9]*\|"partial_rel_err": [0-9.e-]*\|"unwritten_outputs": [0-9]*' "$LOG" | paste - - - - - - | sed 's/"gather_dtype"//' | cut -c1-300
