#!/usr/bin/env bash
# On the GPU machine, one call: the record of a build, most important first, each stage only while time is left (a
# call cut short keeps what it finished), into $OUT:
#   1. gemm-nan for each quant (the stores' NaN canonicalisation; exit 1 and a wrong count when it fails)
#   2. the GEMM alone beside cuBLASLt (same process, same operands, in alternation) for issue 25's shapes, REPS
#      processes each, with W GEMMs at once and the data kernels against the copy ceiling; medians per shape
#   The record ($OUT/record) is in the layout scripts/current_results.py reads to generate the docs' current table.
#   3. the sustained regimes where the default one is closest: 300 alternating launches (the power-capped clock) and
#      back-to-back bursts (the GEMM's operands warm in L2)
#   4. `gemmar run --backend gpu --all-configs` for the record's config sets (bit for bit end to end)
#   5. FAULTS=1: every fault class injected, and the pull grids the model flags; each must fail with its code
#   6. SASS=1 (where cuobjdump exists): the instruction mix of the GEMM kernels
# Usage (device): scripts/device_record.sh  [CAND=.dev/cand REPS=2 QUANTS="blockscale ptpc" MS="1000 4096 8192 16384"
#                 NKS="7168x2048 5120x1024 5120x2048" CONCURRENT_MS="4096 16384" FAULTS=0 SASS=0 BUDGET=560]
# A build is packed here by scripts/device_pack.sh (CAND); the lab check (scripts/device_lab_check.sh) compares two.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_lib.sh
OUT=${OUT:?the output directory}
CAND=${CAND:-.dev/cand}
BUDGET=${BUDGET:-560}
unpack_dev
G=$CAND/gemmar
BENCH=$CAND/gemmar_gpu_bench
[[ -x $G && -x $BENCH ]] || { echo "no $G / $BENCH (scripts/device_pack.sh)"; exit 2; }
D=$OUT/record
machine_record "$D"
for q in blockscale ptpc mxfp8; do
  step 30 "$BENCH" gemm-nan 4096 7168 2048 "$q" | tail -2 | cut -c1-300
done | tee "$D/gemm_nan.txt"
# 2. the GEMM's shapes, REPS processes each, one folder per quant (the layout scripts/current_results.py reads)
for q in ${QUANTS:-blockscale ptpc}; do mkdir -p "$D/$q" && cp "$D/machine.txt" "$D/$q/"; done
for rep in $(seq 1 "${REPS:-2}"); do
  for q in ${QUANTS:-blockscale ptpc}; do
    for nk in ${NKS:-7168x2048 5120x1024 5120x2048}; do
      for m in ${MS:-1000 4096 8192 16384}; do
        left $((BUDGET - 300)) && step 60 "$BENCH" gemm "$m" "${nk%x*}" "${nk#*x}" "$q" >> "$D/$q/shapes.log" 2>&1
      done
    done
  done
done
mkdir -p "$D/blockscale"
for m in ${CONCURRENT_MS-4096 16384}; do left $((BUDGET - 280)) && step 60 "$BENCH" gemm-concurrent "$m" 7168 2048 8; done \
  > "$D/blockscale/concurrent.log" 2>&1
for b in 64 132; do left $((BUDGET - 270)) && step 60 "$BENCH" data 131072 7168 "$b"; done > "$D/blockscale/data.log" 2>&1
echo "== shapes t=${SECONDS}s"
cat "$D"/*/shapes.log > "$D/shapes.all"
/usr/bin/python3 - "$D/shapes.all" <<'PY' | tee "$D/shapes.summary"
import collections, json, statistics as st, sys
r = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith("GEMM_JSON"):
        j = json.loads(line.split(" ", 1)[1])
        r[(j["quant"], j["n"], j["k"], j["m"])].append(j)
print("quant n k m | ours_us cublaslt_us ratio (min-max) | checked | runs   (ratio = cuBLASLt us / ours us)")
for key in sorted(r):
    js = r[key]
    ratios = [j["ratio"] for j in js]
    print(*key, "| %.2f %.2f %.3f (%.3f-%.3f) | %s | %d" % (st.median(j["ours_us"] for j in js),
          st.median(j["cublaslt_us"] for j in js), st.median(ratios), min(ratios), max(ratios),
          all(j["checked"] for j in js), len(js)))
PY
rm -f "$D/shapes.all"
grep -h "GEMM_CONCURRENT_JSON\|DATA_JSON" "$D/blockscale/concurrent.log" "$D/blockscale/data.log" | cut -c1-400
# 3. the sustained regimes
if left $((BUDGET - 220)); then
  for s in "16384 7168 2048" "16384 5120 2048" "8192 7168 2048"; do
    GEMMAR_BENCH_ITERS=300 timeout -s KILL 60 "$BENCH" gemm $s | grep GEMM_JSON | sed 's/^/ITERS300 /'
    GEMMAR_BENCH_BURST=1000 timeout -s KILL 60 "$BENCH" gemm $s | grep GEMM_BURST_JSON
  done > "$D/regimes.log" 2>&1
  echo "== regimes t=${SECONDS}s"
fi
# 4. end to end, the record's config sets
DEVICE_RUN_TIMEOUT=60
e2e() {
  local tag=$1
  shift
  left $((BUDGET - 40)) || return 0
  jrun_to "$G" "$D/e2e_$tag.json" --all-configs "$@"
  /usr/bin/python3 scripts/e2e_summary.py "$D/e2e_$tag.json" | cut -c1-220
}
e2e bs4096 -m 4096
e2e bs16384 -m 16384
e2e bs6144_5120_1024 -m 6144 -n 5120 -k 1024
e2e ptpc4096 -m 4096 --quant ptpc
e2e mxfp8_1000 -m 1000 -n 5120 -k 1024 --quant mxfp8
# 5. the faults
if [[ ${FAULTS:-0} == 1 ]] && left $((BUDGET - 60)); then
  {
    inject_faults silent-puts silent-scatter silent-gather stale-output no-release perturb-rank=3 wire-bypassed \
      fnuz-as-fn stale-replay frozen-flag
    inject_pull_grids 4 8
  } > "$D/faults.log" 2>&1
  echo "== faults t=${SECONDS}s (each must fail with its code)"
  grep -h "^rc=\|^\\$\|^run:1" "$D/faults.log" | paste - - - | cut -c1-230
fi
# 6. the GEMM kernels' instruction mix
if [[ ${SASS:-0} == 1 ]] && command -v cuobjdump > /dev/null; then
  cuobjdump -sass "$BENCH" > "$D/sass.txt" 2>&1
  for f in $(grep -o 'Function : [A-Za-z0-9_]*gemm[A-Za-z0-9_]*' "$D/sass.txt" | awk '{print $3}' | sort -u); do
    awk -v f="$f" '/Function : /{on = ($3 == f)} on' "$D/sass.txt" > "$D/sass_one.txt"
    echo "$f: QGMMA $(grep -c QGMMA "$D/sass_one.txt") HMMA $(grep -c HMMA "$D/sass_one.txt") LDL/STL" \
      "$(grep -cE 'LDL|STL' "$D/sass_one.txt") UTMALDG $(grep -c UTMALDG "$D/sass_one.txt")"
  done > "$D/sass_mix.txt"
  rm -f "$D/sass_one.txt"
  gzip -f "$D/sass.txt"
fi
for f in "$D"/*.json; do [[ -e $f ]] && gzip -f "$f"; done
echo "t=${SECONDS}s"
