#!/usr/bin/env bash
# Regenerates docs/model.md's leave-one-out table (between the two "loo-table" markers) from the calibration
# points: fits the mi355x profile on all of them, then once per point without it (build/gemmar_calibrate).
#   scripts/model_loo_table.sh [BUILD_DIR]          (default build-ci)
# With WRITE_PROFILE=1 it also writes the fitted values (not the per-mode bands, which are held) into
# model/profiles/mi355x.json.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-ci}
tool="$build/model/gemmar_calibrate"
[ -x "$tool" ] || { echo "model_loo_table.sh: $tool not built (cmake --build --preset ci --target gemmar_calibrate)" >&2; exit 3; }
args=(--data tests/data)
[ "${WRITE_PROFILE:-0}" = 1 ] && args+=(--write-profile model/profiles/mi355x.json)
table=$(mktemp)
trap 'rm -f "$table" "$table.md"' EXIT
"$tool" "${args[@]}" > "$table"
python3 - "$table" docs/model.md <<'PY'
import os, sys
table, doc = open(sys.argv[1]).read(), sys.argv[2]
text = open(doc).read()
begin, end = "<!-- loo-table begin -->\n", "<!-- loo-table end -->\n"
if begin not in text or end not in text:
    sys.exit(f"model_loo_table.sh: {doc}: the loo-table markers are missing")
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
tmp = doc + ".tmp"
open(tmp, "w").write(head + begin + table + end + tail)
os.replace(tmp, doc)
PY
echo "docs/model.md: leave-one-out table regenerated" >&2
