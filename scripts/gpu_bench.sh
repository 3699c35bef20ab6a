#!/usr/bin/env bash
# Builds gemmar_gpu_bench with nvcc/g++ directly (no CMake dependencies needed on the device machine; Eigen's
# headers may be carried in .deps/eigen3) and runs what docs/results/h200-1gpu-*.md reports: the ceilings,
# our GEMM against cuBLASLt at M x 7168 x 2048, and every mode and wire with 8 ranks on one GPU at each M.
# Usage: scripts/gpu_bench.sh OUTDIR [M...]   (default M: 4096 16384); GEMMAR_BUILD_ONLY=1 stops after the build
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/gemmar-gpu}; shift || true
MS=${*:-4096 16384}
mkdir -p "$OUT"
B=${GEMMAR_GPU_BUILD:-/tmp/gemmar-gpu-build}
mkdir -p "$B"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
EIGEN=${EIGEN_INC:-$([[ -d .deps/eigen3 ]] && echo .deps/eigen3 || echo /usr/include/eigen3)}
ARCH=${GEMMAR_CUDA_ARCH:-90a}
set -e
for f in kernels/kernels.cu kernels/gemm_ar.cu kernels/vendor_gemm.cu; do
  "$NVCC" -std=c++17 -O3 -I. -gencode=arch=compute_${ARCH},code=sm_${ARCH} -Xptxas -v -lineinfo -c "$f" \
    -o "$B/$(basename "$f").o" 2> "$B/$(basename "$f").ptxas" &
done
CXXS=(common/*.cpp reference/*.cpp kernels/bench_main.cpp)
for f in "${CXXS[@]}"; do
  g++ -std=c++20 -O3 -march=native -fopenmp -I. -I"$EIGEN" -I/usr/local/cuda/include -c "$f" -o "$B/$(basename "$f").o" &
done
wait
"$NVCC" -o "$B/gemmar_gpu_bench" "$B"/*.o -lcublasLt -Xcompiler -fopenmp
set +e
[[ "${GEMMAR_BUILD_ONLY:-0}" == 1 ]] && { echo "built $B/gemmar_gpu_bench"; exit 0; }
grep -A2 gemm_blockscale "$B/kernels.cu.ptxas" | grep -E "registers|spill" | tee "$OUT/ptxas.txt"
BENCH="$B/gemmar_gpu_bench"
LOG="$OUT/results.log"
: > "$LOG"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv | tee -a "$LOG"
timeout 120 "$BENCH" ceilings 2 2>&1 | tee -a "$LOG"
for m in $MS; do timeout 120 "$BENCH" gemm "$m" 7168 2048 2>&1 | tee -a "$LOG"; done
CONFIGS="gemm-only:bf16:sdma split-sdma:bf16:sdma split-sdma:fp8:sdma split-sdma:fp8:lsa fused-sdma:bf16:sdma
fused-sdma:fp8:sdma fused-sdma:fp8:lsa split-lsa:bf16:lsa fused-lsa:bf16:sdma fused-lsa:fp8:sdma fused-lsa:fp8:lsa"
for m in $MS; do
  for c in $CONFIGS; do
    IFS=: read -r mode wire tr <<< "$c"
    timeout 180 "$BENCH" run "$mode" "$wire" "$tr" "$m" 7168 2048 8 11 64 2>&1 | tee -a "$LOG"
  done
done
echo "SUMMARY"
grep -h -o '"mode": "[^"]*".*"gather_transport": "[^"]*", "m": [0-9]*\|"max_rank_time_us": [0-9.]*\|"rel_l2": [0-9.e-]*\|"validated": [a-z]*\|"bitexact_mismatches": [0-9]*' "$LOG" | paste - - - - - | sed 's/"gather_dtype"//' 
grep -h "GEMM_JSON\|CEILINGS_JSON" "$LOG"
