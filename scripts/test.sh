#!/usr/bin/env bash
# Build with warnings as errors and run the CPU test suite, then compile the kernels' device code for gfx942
# (clang-19) and sm_90a (nvcc, when present). What CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake --preset ci >/dev/null
cmake --build --preset ci -j"$(nproc)"
ctest --preset ci -j"$(nproc)" --timeout 300
if [[ -x scripts/ci_device_compile.sh ]]; then
  scripts/ci_device_compile.sh
fi
