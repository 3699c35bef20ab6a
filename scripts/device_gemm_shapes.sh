#!/usr/bin/env bash
# On the lent GPU, one call: our GEMM beside cuBLASLt (same process, same operands, median of 20 each) for every
# shape issue 25 lists, REPS processes each, then the medians over processes; W GEMMs at once (the one-device
# gemm phase) beside W cuBLASLt GEMMs; the data kernels against the copy ceiling.
# Usage: scripts/device_gemm_shapes.sh BENCH OUTDIR   (REPS=3, QUANTS="blockscale ptpc", MS="1000 4096 8192 16384",
#        NKS="7168x2048 5120x1024 5120x2048", CONCURRENT_MS="4096 16384" (empty: none), DATA=1)
set -uo pipefail
BENCH=${1:?gemmar_gpu_bench}
OUT=${2:?output dir}
mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total,power.limit --format=csv; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
step() { echo "\$ $*"; timeout -s KILL "${T:-120}" "$@"; echo "rc=$?"; }
LOG="$OUT/shapes.log"
for rep in $(seq 1 "${REPS:-3}"); do
  for q in ${QUANTS:-blockscale ptpc}; do
    for nk in ${NKS:-7168x2048 5120x1024 5120x2048}; do
      for m in ${MS:-1000 4096 8192 16384}; do
        step "$BENCH" gemm "$m" "${nk%x*}" "${nk#*x}" "$q"
      done
    done
  done
done > "$LOG" 2>&1
for m in ${CONCURRENT_MS-4096 16384}; do step "$BENCH" gemm-concurrent "$m" 7168 2048 8; done > "$OUT/concurrent.log" 2>&1
if [[ ${DATA:-1} == 1 ]]; then
  for b in 64 132; do step "$BENCH" data 131072 7168 "$b"; done > "$OUT/data.log" 2>&1
fi
echo "SUMMARY (medians over processes; ratio = cuBLASLt us / ours us, > 1 = ours faster)"
python3 - "$LOG" <<'PY'
import json, sys, collections, statistics as st
r = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith('GEMM_JSON'):
        j = json.loads(line.split(' ', 1)[1])
        r[(j['quant'], j['n'], j['k'], j['m'])].append(j)
print('quant n k m | ours_us cublaslt_us ratio (min-max) | checked | runs')
for key in sorted(r):
    js = r[key]
    ratios = [j['ratio'] for j in js]
    print(*key, '| %.2f %.2f %.3f (%.3f-%.3f) | %s | %d' % (st.median(j['ours_us'] for j in js),
          st.median(j['cublaslt_us'] for j in js), st.median(ratios), min(ratios), max(ratios),
          all(j['checked'] for j in js), len(js)), 'vendor_m=%d' % js[0].get('cublaslt_m', key[3]))
PY
grep -h "rc=[^0]" "$LOG" | sort | uniq -c
grep -h "GEMM_CONCURRENT_JSON\|rc=" "$OUT/concurrent.log"
[[ -f $OUT/data.log ]] && grep -h "DATA_JSON\|rc=" "$OUT/data.log" | cut -c1-400
exit 0
