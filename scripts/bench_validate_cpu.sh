#!/usr/bin/env bash
# Times `gemmar validate` on the CPU emulation at its embedded default (11 configs, M = 2048, N = 2048,
# K = 512, W = 8, every row checked on 4 iterations), with and without the report, REPEATS times each, and
# prints wall, user and system seconds beside the machine's load (other work on the machine inflates the wall
# time: quote a run taken at low load). The floors come from the disk cache (GEMMAR_CACHE_DIR) after the first
# run, as they do for a user.
# Usage: scripts/bench_validate_cpu.sh [path/to/gemmar] [REPEATS]
set -euo pipefail
bin=${1:-build/validate/gemmar}
repeats=${2:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "$(nproc) cores, $(awk -F: '/^model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//'); $(date -u)"
"$bin" validate --out "$tmp/warm" --no-report > /dev/null  # derives the floors once if the cache is cold
for mode in --no-report report; do
  for i in $(seq "$repeats"); do
    out="$tmp/run-$mode-$i"
    load=$(cut -d' ' -f1 /proc/loadavg)
    args=(validate --out "$out")
    [[ $mode == --no-report ]] && args+=(--no-report)
    /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$bin" "${args[@]}" > "$tmp/log" || { cat "$tmp/log"; exit 1; }
    read -r wall user sys < "$tmp/time"
    printf '%-12s run %d: %6.2f s wall, %6.2f s user, %5.2f s sys (load before: %s) %s\n' \
      "${mode#--}" "$i" "$wall" "$user" "$sys" "$load" "$(tail -1 "$tmp/log" | cut -d: -f1)"
  done
done
