#!/usr/bin/env bash
# On the lent GPU: the kernels issue's measurements in one call, with a prebuilt gemmar_gpu_bench (build-cuda)
# or one built here by nvcc. Usage: scripts/device_kernels_check.sh BENCH OUTDIR [M...]
#   selftest (fp8 wire conversions, exhaustive), ceilings (copy + cuBLASLt at each M), data kernels vs copy,
#   our GEMM beside cuBLASLt at each M, SASS instruction mix. End to end (checked and judged) is `gemmar run
#   --backend gpu` / `gemmar validate --backend gpu` (scripts/device_kernels_final.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
BENCH=${1:?gemmar_gpu_bench}
OUT=${2:?output dir}
shift 2
MS=${*:-4096 8192 16384}
mkdir -p "$OUT"
LOG="$OUT/bench.log"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
step() { echo "\$ $*"; timeout 300 "$@"; echo "rc=$?"; }
{
  step "$BENCH" selftest
  step "$BENCH" ceilings 2 $MS
  step "$BENCH" data 131072 7168 64
  step "$BENCH" data 131072 7168 132
  for m in $MS; do step "$BENCH" gemm "$m" 7168 2048; done
} 2>&1 | tee "$LOG"
{
  echo "SASS instruction mix of our GEMM kernels (cuobjdump -sass $BENCH):"
  cuobjdump -sass "$BENCH" > "$OUT/sass.txt" 2>&1
  for f in $(grep -o 'Function : [A-Za-z0-9_]*gemm[A-Za-z0-9_]*' "$OUT/sass.txt" | awk '{print $3}' | sort -u); do
    awk -v f="$f" '/Function : /{on = ($3 == f)} on' "$OUT/sass.txt" > "$OUT/sass_one.txt"
    echo "$f: QGMMA $(grep -c QGMMA "$OUT/sass_one.txt") HMMA $(grep -c HMMA "$OUT/sass_one.txt") LDL/STL $(grep -cE 'LDL|STL' "$OUT/sass_one.txt") UTMALDG $(grep -c UTMALDG "$OUT/sass_one.txt")"
  done
  rm -f "$OUT/sass_one.txt"
  gzip -f "$OUT/sass.txt"
} | tee "$OUT/sass_mix.txt"
echo SUMMARY
grep -h "SELFTEST_JSON\|CEILINGS_JSON\|DATA_JSON\|GEMM_JSON" "$LOG"
