#!/usr/bin/env bash
# Issue 25, fused-sdma's GEMM as one launch (GEMMAR_FUSED_SDMA_GEMM=persistent, the puts waiting on the tile
# counters) against the eight chunk launches (chunks), on the lent H200, most important first:
#   1. each fused-sdma wire at M = 4096 and 16384, both launches alternating (persistent, chunks, persistent,
#      chunks: one line each with the record's max rank time, GEMM phase, fused vs unfused and verdict), and
#      gemm-only's GEMM phase at the same M beside them (the issue's 90% goal)
#   2. the faults that act on the puts (silent-puts, silent-scatter, stale-replay, no-release) with the persistent
#      launch: each must still fail with its code
# Writes OUTDIR/{machine.txt, ab.jsonl, faults.log, summary.txt}.
# Usage: scripts/device_fused_sdma_run.sh [GEMMAR [OUTDIR]]  (defaults .dev/bin/gemmar, $OUT or /tmp/fsdma)
set -uo pipefail
cd "$(dirname "$0")/.."
G=${1:-.dev/bin/gemmar}
DIR=${2:-${OUT:-/tmp/fsdma}}
[[ -d .dev/lib ]] && export LD_LIBRARY_PATH="$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$DIR"
DEVICE_RUN_TIMEOUT=120
source scripts/device_common.sh "$G" "$DIR"
start=$(date +%s)
summ() {  # tag, then `gemmar run --json`'s document on stdin: one summary line
  /usr/bin/python3 -c '
import json, sys
doc = json.loads(sys.stdin.read() or "{}")
for run in doc.get("runs", []):
    r = run["record"]
    p = r.get("phases_us", {})
    print("%-26s max_rank %8.1f us  gemm %8.1f us  drain %6.1f us  fused/unfused %.3f  wrong %s  %s" % (
        sys.argv[1], r.get("max_rank_time_us", 0), p.get("gemm", 0), p.get("drain", 0),
        r.get("fused_vs_unfused", 0), r.get("wrong_elements"), run.get("verdict")))
' "$1"
}
for m in 4096 16384; do
  for cfg in "bf16:${BF16[*]}" "fp8s:${FP8S[*]}"; do
    for launch in persistent chunks persistent chunks; do
      rec=$(GEMMAR_FUSED_SDMA_GEMM=$launch timeout 120 "$G" run --backend gpu --json -m "$m" ${cfg#*:} | tr -d '\n')
      echo "$rec" >> "$DIR/ab.jsonl"
      echo "$rec" | summ "M=$m ${cfg%%:*} $launch"
    done
  done
  rec=$(timeout 120 "$G" run --backend gpu --json -m "$m" --mode gemm-only | tr -d '\n')
  echo "$rec" >> "$DIR/ab.jsonl"
  echo "$rec" | summ "M=$m gemm-only"
done | tee "$DIR/summary.txt"
echo "a/b $(($(date +%s) - start)) s" | tee -a "$DIR/summary.txt"
{
  for f in silent-puts silent-scatter stale-replay no-release; do
    run run --backend gpu -m 4096 "${BF16[@]}" --inject "$f"
    run run --backend gpu -m 4096 "${FP8S[@]}" --inject "$f"
  done
} > "$DIR/faults.log" 2>&1
grep -E '^\$|^rc=|^run:' "$DIR/faults.log" | cut -c1-170 | tee -a "$DIR/summary.txt"
echo "total $(($(date +%s) - start)) s" | tee -a "$DIR/summary.txt"
