#!/usr/bin/env bash
# Build with warnings as errors and run the CPU test suite (default tier, then the slow tier), build, unpack and run
# the .deb (scripts/package_check.sh), then compile the kernels' device code for gfx942 (clang-19) and sm_90a (nvcc,
# when present). Under CI (CI=true) or with
# GEMMAR_FULL_CI=1 it also runs every fuzz target for a bounded time (scripts/fuzz.sh, GEMMAR_FUZZ_SECONDS,
# default 20 here) and the suite, both tiers, under AddressSanitizer + UBSan (scripts/asan.sh: all but the
# "asan_skip" tests, the detection matrix strided; GEMMAR_ASAN=0 skips it). GEMMAR_CCACHE=0 builds without ccache
# (see build_ci below). What CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
# Every step prints "== step NAME: N s" when it ends, and the run ends with "== total: N s" and one line per
# step (also when a step fails: that step is marked FAILED), so a CI log shows where the time went.
run_start=$SECONDS
step_name=""
step_times=()
step() {  # step NAME COMMAND [ARGS...]
  step_name=$1
  local t0=$SECONDS
  shift
  "$@"
  step_times+=("$step_name: $((SECONDS - t0)) s")
  echo "== step $step_name: $((SECONDS - t0)) s"
  step_name=""
}
summary() {
  local rc=$?
  [[ -n $step_name ]] && step_times+=("$step_name: FAILED")
  echo "== total: $((SECONDS - run_start)) s (exit $rc)"
  local t
  for t in "${step_times[@]}"; do echo "==   $t"; done
}
trap summary EXIT
full=0
[[ "${GEMMAR_FULL_CI:-0}" == 1 || "${CI:-}" == true ]] && full=1
fuzz=$full
asan=$full
[[ "${GEMMAR_ASAN:-1}" == 0 ]] && asan=0
# The sanitizer build and the fuzz targets are clang-19's (one build serves both): the same extra packages.
if ((fuzz || asan)); then export GEMMAR_FUZZ_DEPS=1; fi
export GEMMAR_FORMAT_DEPS=${GEMMAR_FORMAT_DEPS:-1}
export GEMMAR_CCACHE_DEPS=${GEMMAR_CCACHE_DEPS:-1}
step install_deps scripts/install_deps.sh
# Every C++/CUDA source in .clang-format's layout (GEMMAR_FORMAT_DEPS=0 skips installing clang-format-14; the
# check then runs only where it is installed).
if command -v clang-format-14 >/dev/null; then step format_check scripts/format.sh --check; fi
# Tests run two at a time on two cores, each with OpenMP threads: a passive wait keeps oversubscribed
# OpenMP regions from spinning against each other.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# The ci and package builds compile the same libraries with the same flags but gemmar_reference's -march: ccache
# (GEMMAR_CCACHE, default 1 where ccache is installed; its cache in build-ccache/) hands the package build the ci
# build's objects. It applies to these two builds only, on their first configure (CMake reads
# CMAKE_CXX_COMPILER_LAUNCHER from the environment then), and never to the sanitizer build. The cache's place and
# base directory are exported for every step: the compiler runs at build time, not at configure time.
with_ccache=()
if [[ "${GEMMAR_CCACHE:-1}" != 0 ]] && command -v ccache >/dev/null; then
  export CCACHE_DIR="$PWD/build-ccache" CCACHE_BASEDIR="$PWD"
  with_ccache=(env CMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
build_ci() { "${with_ccache[@]}" cmake --preset ci >/dev/null && cmake --build --preset ci -j"$(nproc)"; }
step build_ci build_ci
# The default suite (everything but the "slow" label: a few minutes on 2 cores), then the slow tier
# (the detection matrix over ~1000 emulated runs, the reference-shape floors, the CLI floors).
step ctest_default ctest --preset ci -j"$(nproc)" --timeout 600 -LE slow
step ctest_slow ctest --preset ci -j"$(nproc)" --timeout 900 -L slow
# The .deb (portable -march, no tests) built, unpacked with dpkg-deb -x and run from a temp dir: --version and
# validate with its report (scripts/package_check.sh).
step package_check "${with_ccache[@]}" scripts/package_check.sh
# The CPU reference compiled for AVX-512 under -Werror on any x86-64 (compile only: an AVX2 machine cannot run
# it), so a warning that only -march=native on an AVX-512 CPU raises cannot come back unseen.
# GCC raises different warnings at -O2 (avx512-asan, with the sanitizers) than at -O3, hence the second build
# (the sanitizer job's own build is clang's). Where this machine's -march=native has AVX-512 (F, BW, DQ and VL),
# the ci build above (-O3) already compiles gemmar_reference with those instructions under -Werror: the avx512
# preset would compile the same code again, so it is skipped and says so.
build_avx512() {  # preset
  cmake --preset "$1" >/dev/null
  cmake --build --preset "$1" -j"$(nproc)"
  echo "$1: gemmar_reference compiles under -Werror with -mavx512f -mavx512bw -mavx512dq -mavx512vl"
}
native_avx512=0
if (($("${CXX:-c++}" -march=native -dM -E -x c++ /dev/null 2>/dev/null |
       grep -cE '^#define __AVX512(F|BW|DQ|VL)__ ' || true) == 4)); then
  native_avx512=1
fi
for preset in avx512 avx512-asan; do
  if ((native_avx512)) && [[ $preset == avx512 ]]; then
    echo "$preset: skipped, -march=native has AVX-512 here: the ci build compiles gemmar_reference with it under -Werror"
    continue
  fi
  step "$preset" build_avx512 "$preset"
done
if [[ "${GEMMAR_DEVICE_COMPILE:-1}" != 0 ]]; then
  step device_compile env GEMMAR_REQUIRE_HIP="${GEMMAR_REQUIRE_HIP:-1}" scripts/ci_device_compile.sh
fi
# The sanitizer job first: its build (clang-19, build-asan) holds the fuzz targets too, which the fuzz step reuses.
if ((asan)); then
  step asan scripts/asan.sh
fi
if ((fuzz)); then
  step fuzz env GEMMAR_FUZZ_SECONDS="${GEMMAR_FUZZ_SECONDS:-20}" scripts/fuzz.sh
fi
