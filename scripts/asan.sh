#!/usr/bin/env bash
# The sanitizer job (docs/reliability.md): configure the "asan" preset (AddressSanitizer + UBSan, warnings as errors),
# build everything, run the WHOLE ctest suite. Exits non-zero on any build error, test failure or sanitizer
# report (UBSan is fatal: -fno-sanitize-recover=all). LeakSanitizer suppressions (tests/sanitizers/lsan.supp)
# cover third-party runtime code only (the OpenMP runtime's thread pool); see docs/reliability.md.
#   GEMMAR_ASAN_BUILD  build directory (default: the preset's build-asan)
#   GEMMAR_ASAN_JOBS   build and test parallelism (default nproc)
#   GEMMAR_MATRIX_STRIDE  the detection matrix's stride here (default 8: every 8th case of each fault class
#                         and every 8th clean run; ~8x ASan cost; the Release slow tier runs all of them)
# Tests labelled "asan_skip" are excluded (none at present; docs/reliability.md lists any).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${GEMMAR_ASAN_BUILD:-$root/build-asan}
jobs=${GEMMAR_ASAN_JOBS:-$(nproc)}
cmake --preset asan -B "$build" >/dev/null
cmake --build "$build" -j"$jobs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export GEMMAR_MATRIX_STRIDE=${GEMMAR_MATRIX_STRIDE:-8}
# The gemmar binary the CLI tests spawn inherits these, so its reports fail those tests too.
ctest --test-dir "$build" -j"$jobs" --output-on-failure --timeout 600 -LE asan_skip
echo "asan.sh: whole suite clean under ASan + UBSan"
