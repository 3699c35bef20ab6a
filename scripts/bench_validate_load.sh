#!/usr/bin/env bash
# Times `gemmar validate` on the embedded default (CPU emulation, 11 configs, M = 2048, N = 2048, K = 512, W = 8,
# with its report), idle and beside one busy process (a nice-0 shell loop keeping one core busy, as another user's
# job would), REPEATS times each; beside the busy process also with OMP_NUM_THREADS set to every core, which is what
# gemmar did before it fitted its threads to the free cores (issue 47). Prints wall, user and system seconds and the
# load average before each run: other work on the machine inflates the wall time, so quote runs taken at low load.
# The floors come from the disk cache after a first warm-up run, as they do for a user.
# Usage: scripts/bench_validate_load.sh [path/to/gemmar] [REPEATS]
set -euo pipefail
bin=${1:-build/validate/gemmar}
repeats=${2:-3}
tmp=$(mktemp -d)
busy=
cleanup() {
  [[ -n $busy ]] && kill "$busy" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
echo "$(nproc) cores, $(awk -F: '/^model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//'); $(date -u)"
echo "gemmar: $("$bin" --version | head -2 | tr '\n' ' ')"
"$bin" validate --out "$tmp/warm" > /dev/null 2>&1  # derives the floors once if the cache is cold

# One timed validate: label, then env assignments for it.
timed() {
  local label=$1 i=$2
  shift 2
  local load
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  env "$@" /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$bin" validate --out "$tmp/run-$label-$i" \
    > "$tmp/log" 2> "$tmp/err" || { cat "$tmp/log" "$tmp/err"; exit 1; }
  read -r wall user sys < "$tmp/time"
  printf '%-28s run %d: %6.2f s wall, %6.2f s user, %5.2f s sys (load before: %s) %s\n' \
    "$label" "$i" "$wall" "$user" "$sys" "$load" "$(tail -1 "$tmp/log" | cut -d: -f1)"
}

for i in $(seq "$repeats"); do timed idle "$i"; done
(while :; do :; done) &
busy=$!
sleep 1
for i in $(seq "$repeats"); do timed "beside-1-busy" "$i"; done
for i in $(seq "$repeats"); do timed "beside-1-busy-all-cores" "$i" OMP_NUM_THREADS="$(nproc)"; done
