#!/usr/bin/env bash
# On the lent GPU, in one call, most important first (a call cut short keeps what it finished):
#   1. `gemmar validate --backend gpu`: the transport self-test, then every mode and wire at M = 4096 and 16384
#      with our GEMM, every iteration checked bit for bit, judged against the hardware's model; each fused run
#      also timed against the vendor GEMM + the split all-reduce (unfused baseline)
#   2. every fault class injected (fused-sdma, bf16 and fp8/sdma wires, M = 4096) and the pull grids the model
#      flags (4 and 8 blocks per rank: the 8 ranks' pull kernels then hold fewer blocks than the 132 SMs; the
#      h200-1gpu optimum band is [12, 1024], `gemmar model sweep --profile h200-1gpu`): each must fail with its code
#   3. the portable mma.sync GEMM (GEMMAR_GEMM_KERNEL=mma, the AMD path's twin) end to end on every config
#   4. `gemmar validate --gemm-impl cublaslt` at M = 16384 (the split modes on the vendor GEMM)
#   5. the bench (scripts/device_kernels_check.sh): conversions self-test, copy and cuBLASLt ceilings, data kernels
#      vs copy, our GEMM beside cuBLASLt at M = 4096, 8192, 16384, SASS mix
# Usage: scripts/device_kernels_final.sh GEMMAR BENCH OUTDIR
set -uo pipefail
cd "$(dirname "$0")/.."
G=${1:?gemmar}
BENCH=${2:?gemmar_gpu_bench}
OUT=${3:?output dir}
mkdir -p "$OUT"
DEVICE_RUN_TIMEOUT=240
source scripts/device_common.sh "$G" "$OUT"
start=$(date +%s)
run validate --backend gpu --out "$OUT/validate" --no-report > "$OUT/validate.log" 2>&1
echo "validate: $(( $(date +%s) - start )) s"
{
  inject_faults silent-puts silent-scatter silent-gather stale-output no-release perturb-rank=3 wire-bypassed \
    fnuz-as-fn stale-replay frozen-flag
  inject_pull_grids 4 8
} > "$OUT/faults.log" 2>&1
echo "faults: $(( $(date +%s) - start )) s"
GEMMAR_GEMM_KERNEL=mma run run --backend gpu --all-configs -m 4096 --iterations 3 --check-rows 128 \
  > "$OUT/mma_kernel.log" 2>&1
echo "mma: $(( $(date +%s) - start )) s"
run validate --backend gpu --gemm-impl cublaslt --m-list 16384 --skip-selftest --out "$OUT/validate-cublaslt" \
  --no-report > "$OUT/validate_cublaslt.log" 2>&1
echo "cublaslt: $(( $(date +%s) - start )) s"
scripts/device_kernels_check.sh "$BENCH" "$OUT" 4096 8192 16384 > "$OUT/check.log" 2>&1
echo "bench: $(( $(date +%s) - start )) s"
rm -f "$OUT/sass.txt.gz"
tar czf "$OUT/validate_dirs.tgz" -C "$OUT" validate validate-cublaslt 2>/dev/null && rm -rf "$OUT/validate" "$OUT/validate-cublaslt"
echo "== faults"; grep -h "^rc=\|^\\$\|^run:1" "$OUT/faults.log" | paste - - - | cut -c1-230
echo "== mma kernel"; grep -h "^run:\|^rc=\|run(s)" "$OUT/mma_kernel.log" | cut -c1-200
echo "== validate"; tail -30 "$OUT/validate.log" | cut -c1-220
echo "== validate cublaslt"; tail -6 "$OUT/validate_cublaslt.log" | cut -c1-220
echo "== bench"; tail -8 "$OUT/check.log" | cut -c1-300
