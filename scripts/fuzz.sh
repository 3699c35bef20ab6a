#!/usr/bin/env bash
# The CI fuzz job (docs/reliability.md): configure the "asan" preset (clang++-19, ASan + UBSan, the libFuzzer targets
# beside the test suite: scripts/asan.sh's build, reused when it is already there), build the fuzz targets, run each on its seed corpus (tests/fuzz/corpus/<target>/) for GEMMAR_FUZZ_SECONDS (default 30)
# seconds, and exit non-zero if any target crashed, leaked, hit a sanitizer report, timed out or ran out of
# memory. Installs nothing: scripts/install_deps.sh with GEMMAR_FUZZ_DEPS=1 does.
#   GEMMAR_FUZZ_SECONDS  seconds per target (default 30)
#   GEMMAR_FUZZ_SEED     libFuzzer -seed (default 1: CI explores the same mutation sequence each run; 0 = random)
#   GEMMAR_FUZZ_BUILD    build directory (default: the preset's build-asan)
#   GEMMAR_FUZZ_TARGETS  space-separated subset (default: all)
#   GEMMAR_FUZZ_JOBS     build parallelism (default nproc)
#   GEMMAR_FUZZ_PARALLEL targets fuzzed at once (default GEMMAR_FUZZ_JOBS)
# Crash inputs are kept in $GEMMAR_FUZZ_BUILD/findings/<target>/ (reproduce: build-asan/tests/fuzz/fuzz_X FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${GEMMAR_FUZZ_SECONDS:-30}
seed=${GEMMAR_FUZZ_SEED:-1}
build=${GEMMAR_FUZZ_BUILD:-$root/build-asan}
jobs=${GEMMAR_FUZZ_JOBS:-$(nproc)}
targets=${GEMMAR_FUZZ_TARGETS:-"log_line trace profile results phase_map safetensors"}

command -v clang++-19 >/dev/null || { echo "fuzz.sh: clang++-19 missing (GEMMAR_FUZZ_DEPS=1 scripts/install_deps.sh)" >&2; exit 3; }
t0=$SECONDS
cmake --preset asan -B "$build" >/dev/null
cmake --build "$build" -j"$jobs" --target gemmar_fuzz
echo "fuzz.sh: build $((SECONDS - t0)) s"
t0=$SECONDS

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# One target per core at a time (GEMMAR_FUZZ_PARALLEL, default the build's jobs): libFuzzer runs one process,
# so on 2 cores two targets fuzz side by side, each still for the full ${seconds}s.
parallel=${GEMMAR_FUZZ_PARALLEL:-$jobs}
fuzz_one() {  # target: its report goes to $build/fuzz-$t.summary, its status is the fuzzer's
  local t=$1
  local exe="$build/tests/fuzz/fuzz_$t"
  local seeds="$root/tests/fuzz/corpus/$t"
  local work="$build/fuzz-work/$t"      # the growing corpus: new inputs land here, the checked-in seeds stay as they are
  local findings="$build/findings/$t"
  mkdir -p "$work" "$findings"
  echo "== fuzz_$t: ${seconds}s on $(ls "$seeds" | wc -l) seeds" >"$build/fuzz-$t.summary"
  # -max_len bounds the input (16 KiB covers every real log line and profile); -timeout flags a hang (an input
  # taking >10 s); -rss_limit_mb an allocation blow-up. Exit status != 0 on any of them.
  if ! "$exe" "$work" "$seeds" -seed="$seed" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$findings/" -print_final_stats=1 >"$build/fuzz-$t.log" 2>&1; then
    echo "fuzz_$t FAILED: see $build/fuzz-$t.log and $findings/" >>"$build/fuzz-$t.summary"
    grep -E "ERROR|SUMMARY|Test unit written|deadly|timeout|out-of-memory" "$build/fuzz-$t.log" | head -20 \
      >>"$build/fuzz-$t.summary" || true
    return 1
  fi
  { grep -E "^stat::number_of_executed_units|^#[0-9]+ *DONE" "$build/fuzz-$t.log" | tr '\n' ' '; echo; } \
    >>"$build/fuzz-$t.summary"
}
failed=()
batch=()
finish_batch() {
  local i
  for i in "${!batch[@]}"; do
    local t=${batch[$i]}
    if wait "${pids[$i]}"; then cat "$build/fuzz-$t.summary"; else cat "$build/fuzz-$t.summary" >&2; failed+=("$t"); fi
  done
  batch=()
  pids=()
}
pids=()
for t in $targets; do
  fuzz_one "$t" &
  pids+=($!)
  batch+=("$t")
  ((${#batch[@]} < parallel)) || finish_batch
done
finish_batch
if ((${#failed[@]})); then
  echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: all targets clean ($((SECONDS - t0)) s of fuzzing)"
