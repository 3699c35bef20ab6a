#!/usr/bin/env bash
# The device-side full compare of `gemmar run --backend gpu` (kernels/check/output_compare.hpp, docs/reliability.md)
# on the lent GPU, most important first (a call cut short keeps what it finished):
#   1. the single-wrong-element fault: --inject flip-unsampled (one bit of one element of the last rank's
#      output, in a row the default --check-rows 256 sample never reads) must exit 1 with COLLECTIVE_MISMATCH
#      naming the rank, row and column; on fused-sdma bf16 and fp8/sdma, M = 4096
#   2. healthy runs at the default options, M = 4096 and 16384, fused-sdma bf16 and fp8/sdma: exit 0, every
#      element compared (checked_elements = M * N * W), and the compare kernel's time (full_compare_us) and bytes
#   3. the existing faults still caught with the full compare on (stale-output, silent-gather, no-release)
# Writes OUTDIR/{machine.txt, runs.log, summary.txt}.
# Usage: scripts/device_verify_run.sh GEMMAR OUTDIR
set -uo pipefail
cd "$(dirname "$0")/.."
G=${1:?gemmar (CUDA build)}
OUT=${2:?output dir}
mkdir -p "$OUT"
DEVICE_RUN_TIMEOUT=120
source scripts/device_lib.sh "$G" "$OUT"
{
  jrun "flip BF16 4096" -m 4096 "${BF16[@]}" --inject flip-unsampled
  jrun "flip FP8S 4096" -m 4096 "${FP8S[@]}" --inject flip-unsampled
  for m in 4096 16384; do
    jrun "healthy BF16 $m" -m "$m" "${BF16[@]}"
    jrun "healthy FP8S $m" -m "$m" "${FP8S[@]}"
  done
  for f in stale-output silent-gather no-release; do
    jrun "fault $f FP8S 4096" -m 4096 "${FP8S[@]}" --inject "$f"
  done
} > "$OUT/runs.log" 2>&1
# One line per run: tag, rc, verdict, codes, elements compared of M*N*W, compare time and bytes, the first wrong one.
python3 - "$OUT/runs.log" > "$OUT/summary.txt" <<'PY'
import json, sys
tag = None
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("# rc="):
        print(f"{tag}: rc={line[5:]}")
    elif line.startswith("# "):
        tag = line[2:]
    elif line.startswith("{"):
        try:
            d = json.loads(line)
        except ValueError:
            print(f"{tag}: unparsable output"); continue
        runs = d.get("runs", [d])
        for r in runs:
            rec = r.get("record", r)
            codes = sorted({f.get("code") for f in r.get("findings", []) if f.get("severity") == "error"})
            full = r.get("m", 0) * r.get("n", 0) * r.get("world_size", 0)
            print(f"{tag}: verdict={r.get('verdict')} errors={codes} checked={rec.get('checked_elements')} of {full}"
                  f" wrong={rec.get('wrong_elements')} full_compare_us={rec.get('full_compare_us')}"
                  f" bytes={rec.get('full_compare_bytes')} first={rec.get('first_wrong_element')}")
PY
cat "$OUT/summary.txt"
