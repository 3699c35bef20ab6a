#!/usr/bin/env bash
# The sanitizer job (docs/reliability.md): configure the "asan" preset (clang++-19, AddressSanitizer + UBSan, warnings
# as errors, the libFuzzer targets beside the suite so that scripts/fuzz.sh reuses this build), build everything, run the ctest suite (default and slow tiers) but the tests labelled "asan_skip" (see below).
# Exits non-zero on any build error, test failure or sanitizer
# report (UBSan is fatal: -fno-sanitize-recover=all). LeakSanitizer suppressions (tests/sanitizers/lsan.supp)
# cover third-party runtime code only (the OpenMP runtime's thread pool); see docs/reliability.md.
#   GEMMAR_ASAN_BUILD  build directory (default: the preset's build-asan)
#   GEMMAR_ASAN_JOBS   build and test parallelism (default nproc)
#   GEMMAR_MATRIX_STRIDE  the detection matrix's stride here (default 17: every 17th clean run, 61 runs; 17 is
#                         prime to the count of configs (< 61), so every config runs; the Release slow tier runs all of them)
#   GEMMAR_FAULT_MATRIX_STRIDE  the same for the fault classes (default 32: every 32nd case of each class, so
#                         every class at least once; a fault case checks every row, ~17 s each under ASan)
# Tests labelled "asan_skip" (tests/CMakeLists.txt GEMMAR_ASAN_SKIP, listed in docs/reliability.md) are excluded:
# they re-run under ASan only code the fixture or the default tier already runs there; the Release tiers run them.
# Prints the build's and the tests' seconds ("asan.sh: build N s", "asan.sh: tests N s").
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${GEMMAR_ASAN_BUILD:-$root/build-asan}
jobs=${GEMMAR_ASAN_JOBS:-$(nproc)}
command -v clang++-19 >/dev/null || { echo "asan.sh: clang++-19 missing (GEMMAR_FUZZ_DEPS=1 scripts/install_deps.sh)" >&2; exit 3; }
t0=$SECONDS
cmake --preset asan -B "$build" >/dev/null
cmake --build "$build" -j"$jobs"
echo "asan.sh: build $((SECONDS - t0)) s"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export GEMMAR_MATRIX_STRIDE=${GEMMAR_MATRIX_STRIDE:-17}
export GEMMAR_FAULT_MATRIX_STRIDE=${GEMMAR_FAULT_MATRIX_STRIDE:-32}
# The gemmar binary the CLI tests spawn inherits these, so its reports fail those tests too.
t0=$SECONDS
ctest --test-dir "$build" -j"$jobs" --output-on-failure --timeout 600 -LE asan_skip
echo "asan.sh: tests $((SECONDS - t0)) s"
echo "asan.sh: suite clean under ASan + UBSan; left out (asan_skip, run in the Release slow tier):" \
  "$(ctest --test-dir "$build" -N -L asan_skip -FA '.*' | sed -n 's/^ *Test *#[0-9]*: //p' | paste -sd' ')"
