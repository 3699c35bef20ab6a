#!/usr/bin/env bash
# The widen's access order: int8 (the flat order: the grid sweeps each source's codes) against rows (a warp per
# row, main's default), int8x10 (10 loads in flight), int8-stream (no-L1-allocate loads, evict-first stores), and
# each order's accesses without arithmetic (ceiling, rows-ceiling), at 64 and 132 blocks, 2 processes each; then
# the record of the build (scripts/device_candidate_record.sh, REPS=2), whose default widen is int8.
python3 -c 'import lzma,glob,os
for f in glob.glob(".dev/*/*.xz"):
    open(f[:-3],"wb").write(lzma.open(f).read()); os.chmod(f[:-3],0o755); os.remove(f)'
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/pull; mkdir -p $D
pack() { (cd $OUT && tar czf pull.tgz pull); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
B=.dev/cand/gemmar_gpu_bench
for rep in 1 2; do for b in 64 132; do for w in int8 rows int8x10 int8-stream ceiling rows-ceiling; do
  echo "$w $b $(GEMMAR_WIDEN_KERNEL=$w timeout -s KILL 60 $B data 131072 7168 $b 2>>$D/err.txt | grep DATA_JSON)"
done; done; done > $D/data.txt
for w in int8 rows; do echo "$w 64 n5120 $(GEMMAR_WIDEN_KERNEL=$w timeout -s KILL 60 $B data 131072 5120 64 2>>$D/err.txt | grep DATA_JSON)"; done >> $D/data.txt
python3 - $D/data.txt <<'PY'
import json,sys
keys=("memcpy_gbs","copy_kernel_gbs","quantize_vs_copy","dequantize_vs_copy","pull_gbs","pull_vs_copy","pull_ceiling_gbs","copy_at_pull_grid_gbs","pull_vs_copy_at_pull_grid")
for l in open(sys.argv[1]):
    if "{" not in l: print(l.strip()[:200]); continue
    j=json.loads(l[l.index("{"):])
    print(l[:l.index("DATA_JSON")].strip(), " ".join("%s=%s"%(k,j.get(k)) for k in keys))
PY
echo "t=$SECONDS"; pack
REPS=2 bash scripts/device_candidate_record.sh 2>&1 | tail -80
if (( SECONDS < 480 )); then
  GEMMAR_WIDEN_KERNEL=rows timeout 60 .dev/cand/gemmar run --backend gpu --all-configs -m 16384 --json > $D/e2e_rows16384.json 2>>$D/err.txt
  echo "== e2e rows 16384 rc=$? t=$SECONDS"; python3 scripts/e2e_summary.py $D/e2e_rows16384.json | grep -i fp8 | cut -c1-260
  gzip -f $D/e2e_rows16384.json
fi
pack
