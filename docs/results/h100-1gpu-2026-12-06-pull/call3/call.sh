#!/usr/bin/env bash
# The build to merge: the pull on fewer blocks than the device's SMs stores through the TMA (int8, the default).
# First int8 against int8-st (main's register stores) and bulk-store (the TMA's at every grid) at 64 and 132
# blocks, 2 processes each; then its record (scripts/device_candidate_record.sh, REPS=2); then the 4096 fp8
# configs with int8-st beside the record's.
python3 -c 'import lzma,glob,os
for f in glob.glob(".dev/*/*.xz"):
    open(f[:-3],"wb").write(lzma.open(f).read()); os.chmod(f[:-3],0o755); os.remove(f)'
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/pull; mkdir -p $D
pack() { (cd $OUT && tar czf pull.tgz pull); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
B=.dev/cand/gemmar_gpu_bench
for rep in 1 2; do for b in 64 132; do for w in int8 int8-st bulk-store; do
  echo "$w $b $(GEMMAR_WIDEN_KERNEL=$w timeout -s KILL 60 $B data 131072 7168 $b 2>>$D/err.txt | grep DATA_JSON)"
done; done; done > $D/data.txt
python3 - $D/data.txt <<'PY'
import json,sys
keys=("memcpy_gbs","quantize_vs_copy","dequantize_vs_copy","pull_gbs","pull_vs_copy","pull_ceiling_gbs","copy_at_pull_grid_gbs","load_at_pull_grid_gbs","store_at_pull_grid_gbs")
for l in open(sys.argv[1]):
    if "{" not in l: print(l.strip()[:200]); continue
    j=json.loads(l[l.index("{"):])
    print("%-14s"%l[:l.index("DATA_JSON")].strip(), " ".join("%s=%s"%(k.replace("_gbs",""),j.get(k)) for k in keys))
PY
echo "t=$SECONDS"; pack
REPS=2 bash scripts/device_candidate_record.sh > $D/record.log 2>&1; grep -v "^GEMM_JSON" $D/record.log | cut -c1-250 | tail -75
if (( SECONDS < 420 )); then
  GEMMAR_WIDEN_KERNEL=int8-st timeout 60 .dev/cand/gemmar run --backend gpu --all-configs -m 4096 --json > $D/e2e_int8st_4096.json 2>>$D/err.txt
  echo "== e2e int8-st 4096 rc=$? t=$SECONDS"; python3 scripts/e2e_summary.py $D/e2e_int8st_4096.json | grep -i fp8 | cut -c1-250
  gzip -f $D/e2e_int8st_4096.json
fi
pack
