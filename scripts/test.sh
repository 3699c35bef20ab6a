#!/usr/bin/env bash
# Build with warnings as errors and run the CPU test suite (default tier, then the slow tier), build, unpack and run
# the .deb (scripts/package_check.sh), then compile the kernels' device code for gfx942 (clang-19) and sm_90a (nvcc,
# when present). Under CI (CI=true) or with
# GEMMAR_FULL_CI=1 it also runs every fuzz target for a bounded time (scripts/fuzz.sh, GEMMAR_FUZZ_SECONDS,
# default 20 here) and the whole suite under AddressSanitizer + UBSan (scripts/asan.sh; GEMMAR_ASAN=0 skips
# it). What CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
[[ "${GEMMAR_FULL_CI:-0}" == 1 || "${CI:-}" == true ]] && full=1
fuzz=$full
asan=$full
[[ "${GEMMAR_ASAN:-1}" == 0 ]] && asan=0
if ((fuzz)); then export GEMMAR_FUZZ_DEPS=1; fi
export GEMMAR_FORMAT_DEPS=${GEMMAR_FORMAT_DEPS:-1}
scripts/install_deps.sh
# Every C++/CUDA source in .clang-format's layout (GEMMAR_FORMAT_DEPS=0 skips installing clang-format-14; the
# check then runs only where it is installed).
if command -v clang-format-14 >/dev/null; then scripts/format.sh --check; fi
# Tests run two at a time on two cores, each with OpenMP threads: a passive wait keeps oversubscribed
# OpenMP regions from spinning against each other.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
cmake --preset ci >/dev/null
cmake --build --preset ci -j"$(nproc)"
# The default suite (everything but the "slow" label: a few minutes on 2 cores), then the slow tier
# (the detection matrix over ~1000 emulated runs, the reference-shape floors, the CLI floors).
ctest --preset ci -j"$(nproc)" --timeout 600 -LE slow
ctest --preset ci -j"$(nproc)" --timeout 900 -L slow
# The .deb (portable -march, no tests) built, unpacked with dpkg-deb -x and run from a temp dir: --version and
# validate with its report (scripts/package_check.sh).
scripts/package_check.sh
# The CPU reference compiled for AVX-512 under -Werror on any x86-64 (compile only: an AVX2 machine cannot run
# it), so a warning that only -march=native on an AVX-512 CPU raises cannot come back unseen.
# GCC raises different warnings at the sanitizer job's -O1/-O2 than at -O3, hence the second build.
for preset in avx512 avx512-asan; do
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j"$(nproc)"
  echo "$preset: gemmar_reference compiles under -Werror with -mavx512f -mavx512bw -mavx512dq -mavx512vl"
done
if [[ "${GEMMAR_DEVICE_COMPILE:-1}" != 0 ]]; then
  GEMMAR_REQUIRE_HIP=${GEMMAR_REQUIRE_HIP:-1} scripts/ci_device_compile.sh
fi
if ((fuzz)); then
  GEMMAR_FUZZ_SECONDS=${GEMMAR_FUZZ_SECONDS:-20} scripts/fuzz.sh
fi
if ((asan)); then
  scripts/asan.sh
fi
