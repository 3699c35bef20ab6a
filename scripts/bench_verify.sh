#!/usr/bin/env bash
# Measures `gemmar verify` on a full-size dump: 8 ranks at M=16384 N=7168 K=2048, partials included, bf16 wire
# (docs/verify.md "Measured"). The dump: `gemmar run --backend cpu --check-rows 0 --dump` at M=16384/TIMES (the CPU
# emulation computes every partial), tiled TIMES-fold along M by scripts/bench_verify_tile.py (on the bf16 wire
# every view of a row is the reduce of that row's partials, whoever owns it, so the tiled dump verifies).
# Then: `gemmar verify` with default options (every element checked, relL2 on 256 sampled rows), twice, wall / CPU /
# max RSS from /usr/bin/time (wall is CPU time only on an idle machine: say what the load was); and
# `gemmar reference gemm-bench`, whose GFLOP/s bound `--check-rows 0` (the fp32 reference GEMM over every row:
# W * 2 * M * N * K flops). Prints one line per measurement. Usage:
#     scripts/bench_verify.sh [BUILD_DIR (build-ci)] [WORK_DIR (mktemp)] [TIMES (8)]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-ci}
WORK=${2:-$(mktemp -d)}
TIMES=${3:-8}
GEMMAR="$BUILD/validate/gemmar"
M=16384 N=7168 K=2048 W=8
MB=$((M / TIMES))
export GEMMAR_CACHE_DIR=${GEMMAR_CACHE_DIR:-$WORK/cache}
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
if [[ ! -f "$WORK/base/rank0.safetensors" ]]; then
  /usr/bin/time -f "dump M=$MB: %e s wall, %U+%S s CPU, %M KiB max RSS" \
    "$GEMMAR" run --backend cpu -m "$MB" -n $N -k $K --world $W --check-rows 0 --iterations 1 \
    --dump "$WORK/base" > /dev/null
fi
[[ -f "$WORK/full/rank0.safetensors" ]] || python3 scripts/bench_verify_tile.py "$WORK/base" "$WORK/full" "$TIMES"
du -sh "$WORK/full"
# The first run derives the reference floors of the shape (cached in GEMMAR_CACHE_DIR, once per shape); the second
# is what every later verify of that shape costs.
for pass in "first (derives the floors)" "second (floors cached)"; do
  /usr/bin/time -f "verify M=$M default options, $pass: %e s wall, %U+%S s CPU, %M KiB max RSS" \
    "$GEMMAR" verify "$WORK/full" > "$WORK/verify.txt" || { cat "$WORK/verify.txt"; exit 1; }
  grep -E "^  (read|collective|rank agreement|NaN)" "$WORK/verify.txt"
done
"$GEMMAR" reference gemm-bench -m 1024 -n $N -k $K --json > "$WORK/gemm.json"
python3 - "$WORK/gemm.json" $W $M $N $K <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
w, m, n, k = map(int, sys.argv[2:])
gf = j.get("gflops") or j.get("gflop_per_s")
print("fp32 reference GEMM:", json.dumps(j))
if gf:
    print(f"--check-rows 0 bound: {w * 2.0 * m * n * k / (gf * 1e9):.0f} s at {gf:.1f} GFLOP/s")
PY
