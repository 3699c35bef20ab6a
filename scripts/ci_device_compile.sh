#!/usr/bin/env bash
# Compiles every kernel source to device code without a GPU: gfx942 ISA with clang-19 (-x hip, device only,
# no device libraries: stops at assembly, since -nogpulib leaves the ockl builtins unresolved at link), gfx950
# where the clang knows it, and sm_90a SASS with nvcc. Checks that the fp8 matrix instructions were emitted
# (v_mfma_f32_32x32x16_fp8_fp8 on AMD, the e4m3 mma.sync on NVIDIA). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
# Every device source of the op (kernels/CMakeLists.txt's GEMMAR_KERNEL_SOURCES and GEMMAR_GUARD_LIB_SOURCES) and of the lab (lab/CMakeLists.txt's
# GEMMAR_LAB_SOURCES), read from the two lists so that a source added there is compiled here.
mapfile -t SOURCES < <(sed -n 's|^ *\${CMAKE_CURRENT_SOURCE_DIR}/\([^ )]*\.cu\).*|kernels/\1|p' kernels/CMakeLists.txt
                       sed -n 's|^ *\${CMAKE_CURRENT_SOURCE_DIR}/\([^ )]*\.cu\).*|lab/\1|p' lab/CMakeLists.txt)
[[ ${#SOURCES[@]} -gt 10 ]] || { echo "no device sources found in kernels/ and lab/CMakeLists.txt" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CLANG=${CLANG:-$(command -v clang++-19 || command -v clang++ || true)}
NVCC=${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)}
HIP_INC=${HIP_INC:-/usr/include}
fail=0
pids=()
compile_hip() {  # arch source
  "$CLANG" -x hip --offload-arch="$1" --cuda-device-only -nogpulib -std=c++17 -O2 -Wall -Wextra -Werror \
    -D__HIP_PLATFORM_AMD__ -I. -I"$HIP_INC" -S "$2" -o "$TMP/$(basename "$2").$1.s"
}
if [[ -n "$CLANG" && -f "$HIP_INC/hip/hip_runtime.h" ]]; then
  for s in "${SOURCES[@]}"; do compile_hip gfx942 "$s" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || fail=1; done
  pids=()
  if [[ $fail -eq 0 ]]; then
    grep -q v_mfma_f32_32x32x16_fp8_fp8 "$TMP/blockscale.cu.gfx942.s" || { echo "gfx942: no fp8 MFMA emitted" >&2; fail=1; }
    echo "gfx942: ok ($(grep -c v_mfma_f32_32x32x16_fp8_fp8 "$TMP/blockscale.cu.gfx942.s") fp8 MFMA)"
  fi
  if "$CLANG" -x hip --offload-arch=gfx950 --cuda-device-only -nogpulib -E - </dev/null >/dev/null 2>&1; then
    for s in "${SOURCES[@]}"; do compile_hip gfx950 "$s" || fail=1; done
    [[ $fail -eq 0 ]] && echo "gfx950: ok"
  else
    echo "gfx950: skipped ($CLANG does not know gfx950; needs clang >= 20 / ROCm 6.4)"
  fi
else
  echo "HIP device compile: skipped (no clang or no HIP headers under $HIP_INC)" >&2
  [[ "${GEMMAR_REQUIRE_HIP:-0}" == 1 ]] && fail=1
fi
if [[ -n "$NVCC" ]]; then
  for s in "${SOURCES[@]}"; do
    "$NVCC" -std=c++17 -I. -gencode=arch=compute_90a,code=sm_90a -Werror all-warnings -c "$s" \
      -o "$TMP/$(basename "$s").sm90a.o" > "$TMP/$(basename "$s").sm90a.log" 2>&1 & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail=1; done
  cat "$TMP"/*.sm90a.log
  # ptxas serializing the wgmma of a kernel (C7512: out of registers; C7514: a group in flight across a loop's
  # back edge) is only an "info", but it costs a Hopper GEMM most of its rate: a failure here.
  if grep -h "C751[0-9]" "$TMP"/*.sm90a.log >&2; then
    echo "sm_90a: ptxas serialized wgmma instructions (above)" >&2
    fail=1
  fi
  if [[ $fail -eq 0 ]]; then
    "$NVCC" -std=c++17 -I. -gencode=arch=compute_90a,code=sm_90a -ptx kernels/gemm/blockscale.cu -o "$TMP/k.ptx"
    grep -q "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32" "$TMP/k.ptx" || { echo "sm_90a: no e4m3 mma" >&2; fail=1; }
    echo "sm_90a: ok"
  fi
else
  echo "CUDA device compile: skipped (no nvcc)" >&2
  [[ "${GEMMAR_REQUIRE_CUDA:-0}" == 1 ]] && fail=1
fi
exit $fail
