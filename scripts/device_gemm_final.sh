#!/usr/bin/env bash
# On the lent GPU, one call: every GEMM variant beside cuBLASLt (same process, same operands, median of 20) at
# each M, then the best variant (highest mean ratio, error checked) again at each M as the record, and the SASS
# mix. End to end with it: GEMMAR_GEMM_KERNEL=BEST `gemmar validate --backend gpu` (device_kernels_final.sh).
# Usage: scripts/device_gemm_final.sh BENCH OUTDIR "VARIANTS" [M...]
set -uo pipefail
BENCH=${1:?gemmar_gpu_bench}
OUT=${2:?output dir}
VARIANTS=${3:?variants}
shift 3
MS=${*:-4096 8192 16384}
mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total,power.draw --format=csv; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
step() { echo "\$ $*"; timeout -s KILL "${T:-150}" "$@"; rc=$?; echo "rc=$rc"; return $rc; }
LOG="$OUT/variants.log"
for v in $VARIANTS; do
  for m in $MS; do
    echo "variant=$v"; GEMMAR_GEMM_KERNEL=$v T=${VT:-60} step "$BENCH" gemm "$m" 7168 2048; [[ $? == 137 ]] && break
  done
done 2>&1 | tee "$LOG"
BEST=$(python3 - "$LOG" <<'PY'
import json, sys, collections
v = None; r = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith('variant='): v = line.strip().split('=', 1)[1]
    if line.startswith('GEMM_JSON') and v:
        j = json.loads(line.split(' ', 1)[1])
        r[v].append(j['ratio'] if j['checked'] else 0.0)
ok = {k: sum(x) / 3 for k, x in r.items() if len(x) == 3}
print(max(ok, key=ok.get) if ok else 'wgmma')
PY
)
echo "BEST=$BEST" | tee "$OUT/best.txt"
FLOG="$OUT/final.log"
{
  echo "# final: GEMMAR_GEMM_KERNEL=$BEST"
  for m in $MS; do GEMMAR_GEMM_KERNEL=$BEST step "$BENCH" gemm "$m" 7168 2048; done
} 2>&1 | tee "$FLOG"
{
  cuobjdump -sass "$BENCH" > "$OUT/sass.txt" 2>&1
  for f in $(grep -o 'Function : [A-Za-z0-9_]*gemm_wgmma[A-Za-z0-9_]*' "$OUT/sass.txt" | awk '{print $3}' | sort -u); do
    awk -v f="$f" '/Function : /{on = ($3 == f)} on' "$OUT/sass.txt" > "$OUT/sass_one.txt"
    echo "$f: QGMMA $(grep -c QGMMA "$OUT/sass_one.txt") LDL/STL $(grep -cE 'LDL|STL' "$OUT/sass_one.txt") UTMALDG $(grep -c UTMALDG "$OUT/sass_one.txt") WARPGROUP.DEPBAR $(grep -c 'WARPGROUP.DEPBAR' "$OUT/sass_one.txt") WARPGROUP.ARRIVE $(grep -c 'WARPGROUP.ARRIVE' "$OUT/sass_one.txt") FMUL $(grep -c ' FMUL' "$OUT/sass_one.txt") FADD $(grep -c ' FADD' "$OUT/sass_one.txt") instr $(grep -c '/\*[0-9a-f]*\*/' "$OUT/sass_one.txt")"
  done
  rm -f "$OUT/sass_one.txt"
  gzip -f "$OUT/sass.txt"
} > "$OUT/sass_mix.txt" 2>&1
cat "$OUT/sass_mix.txt" | sed 's/_ZN6gemmar7kernels3dev[0-9A-Za-z_]*kernels_cu_[0-9a-f_]*//'
echo SUMMARY
grep -h "^variant=\|GEMM_JSON" "$LOG" | sed 's/"ours_kernel": "[^"]*", //; s/"cublaslt": "[^"]*", //; s/"n": 7168, "k": 2048, //; s/_rel_err//g' | paste -d' ' - - | cut -c1-260
echo "FINAL ($BEST)"
grep -h "GEMM_JSON" "$FLOG" | sed 's/"ours_kernel": "[^"]*", //; s/"cublaslt": "[^"]*", //' | cut -c1-300
