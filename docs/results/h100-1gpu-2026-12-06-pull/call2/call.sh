#!/usr/bin/env bash
# The pull's stores through the TMA: int8 (main) against bulk-store (the bf16 staged in shared memory and written
# by one bulk copy per warp round, 7 code loads per lane) and bulk-store14 (14), with int8's ceiling and the new
# one-direction probes (load_at_pull_grid_gbs, store_at_pull_grid_gbs), at 64 and 132 blocks, 2 processes each;
# then both bulk variants end to end on the fp8 wire (bit-exact check of the pull and the dequantize).
python3 -c 'import lzma,glob,os
for f in glob.glob(".dev/*/*.xz"):
    open(f[:-3],"wb").write(lzma.open(f).read()); os.chmod(f[:-3],0o755); os.remove(f)'
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/bulk; mkdir -p $D
pack() { (cd $OUT && tar czf bulk.tgz bulk); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
B=.dev/cand/gemmar_gpu_bench
for rep in 1 2; do for b in 64 132; do for w in int8 bulk-store bulk-store14; do
  echo "$w $b $(GEMMAR_WIDEN_KERNEL=$w timeout -s KILL 60 $B data 131072 7168 $b 2>>$D/err.txt | grep DATA_JSON)"
done; done; done > $D/data.txt
python3 - $D/data.txt <<'PY'
import json,sys
keys=("memcpy_gbs","dequantize_vs_copy","pull_gbs","pull_vs_copy","pull_ceiling_gbs","copy_at_pull_grid_gbs","load_at_pull_grid_gbs","store_at_pull_grid_gbs")
for l in open(sys.argv[1]):
    if "{" not in l: print(l.strip()[:200]); continue
    j=json.loads(l[l.index("{"):])
    print("%-16s"%l[:l.index("DATA_JSON")].strip(), " ".join("%s=%s"%(k.replace("_gbs",""),j.get(k)) for k in keys))
PY
echo "t=$SECONDS"; pack
for w in bulk-store bulk-store14; do for mode in split-sdma fused-lsa; do for t in sdma lsa; do
  GEMMAR_WIDEN_KERNEL=$w timeout 60 .dev/cand/gemmar run --backend gpu -m 4096 --mode $mode --gather-dtype fp8 --gather-transport $t --json > $D/e2e_${w}_${mode}_$t.json 2>>$D/err.txt
  echo "== $w rc=$? t=$SECONDS $(python3 scripts/e2e_summary.py $D/e2e_${w}_${mode}_$t.json | cut -c1-230)"
done; done; done
gzip -f $D/*.json; pack
