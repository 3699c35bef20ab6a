#!/usr/bin/env bash
# On the lent GPU, after the kernels change (docs/kernels.md), in one call: the bench's measurements
# (scripts/device_kernels_check.sh: conversions selftest, ceilings with cuBLASLt, data kernels vs copy, our GEMM
# beside cuBLASLt at M = 4096, 8192, 16384, SASS mix), then `gemmar validate --backend gpu` (our GEMM; every
# fused run also timed against cuBLASLt + the split all-reduce), the same with --gemm-impl cublaslt at
# M = 16384, and the fault injections. Usage: scripts/device_kernels_final.sh GEMMAR BENCH OUTDIR
set -uo pipefail
cd "$(dirname "$0")/.."
G=${1:?gemmar}
BENCH=${2:?gemmar_gpu_bench}
OUT=${3:?output dir}
mkdir -p "$OUT"
scripts/device_kernels_check.sh "$BENCH" "$OUT" 4096 8192 16384 > "$OUT/check.log" 2>&1
rm -f "$OUT/sass.txt.gz"
DEVICE_RUN_TIMEOUT=420
source scripts/device_common.sh "$G" "$OUT"
run validate --backend gpu --out "$OUT/validate" --no-report > "$OUT/validate.log" 2>&1
run validate --backend gpu --gemm-impl cublaslt --m-list 16384 --out "$OUT/validate-cublaslt" --no-report \
  > "$OUT/validate_cublaslt.log" 2>&1
{
  inject_faults silent-puts silent-scatter silent-gather stale-output no-release perturb-rank=3 wire-bypassed fnuz-as-fn
  inject_pull_grids 8 16
} > "$OUT/faults.log" 2>&1
tar czf "$OUT/validate_dirs.tgz" -C "$OUT" validate validate-cublaslt 2>/dev/null && rm -rf "$OUT/validate" "$OUT/validate-cublaslt"
grep -h "^rc=\|^\\$" "$OUT/faults.log" | paste - - | cut -c1-160
tail -4 "$OUT/validate.log" "$OUT/validate_cublaslt.log"
tail -12 "$OUT/check.log"
