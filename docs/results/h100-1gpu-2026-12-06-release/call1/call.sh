#!/usr/bin/env bash
# H100: fused-sdma's GEMM phase at ptpc 4096 with the copy streams at the least priority (low) beside equal,
# two processes each, alternating; then, if low holds >= 0.90 in both, the full record with low exported.
python3 -c 'import lzma,glob,os
for f in glob.glob(".dev/*/*.xz"):
    open(f[:-3],"wb").write(lzma.open(f).read()); os.chmod(f[:-3],0o755); os.remove(f)'
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/prio3; mkdir -p $D
pack() { (cd $OUT && tar czf prio3.tgz prio3); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
ratio() { python3 - "$1" <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); g={}
for r in d["runs"]:
    ph=r["record"].get("phases_us") or {}
    g[r["config"]]=ph.get("gemm")
go=[v for k,v in g.items() if k.startswith("gemm-only")][0]
fs=[v for k,v in g.items() if k.startswith("fused-sdma")]
print("%.3f" % (go/max(fs)))
PY
}
e2e() { local tag=$1 prio=$2; shift 2
  GEMMAR_PUT_PRIORITY=$prio timeout -s KILL 100 .dev/cand/gemmar run --backend gpu "$@" --json > $D/e2e_$tag.json 2>> $D/err.txt
  echo "== $tag ($prio) rc=$? t=$SECONDS"
  python3 scripts/e2e_summary.py $D/e2e_$tag.json | grep -v "^split-lsa\|^fused-lsa" | sed 's/relL2=[^ ]* //' | cut -c1-200; pack; }
A="--all-configs -m 4096 --quant ptpc"
e2e ptpc4096_eq1 equal $A;  r1=$(ratio $D/e2e_ptpc4096_eq1.json)
e2e ptpc4096_low1 low $A;   l1=$(ratio $D/e2e_ptpc4096_low1.json)
e2e ptpc4096_eq2 equal $A;  r2=$(ratio $D/e2e_ptpc4096_eq2.json)
e2e ptpc4096_low2 low $A;   l2=$(ratio $D/e2e_ptpc4096_low2.json)
e2e ptpc_silent_low low --mode fused-sdma -m 4096 --quant ptpc --inject silent-scatter
e2e bs16384_low low --all-configs -m 16384
echo "RATIOS equal $r1 $r2 low $l1 $l2"
for f in $D/*.json; do gzip -f $f; done; pack
if python3 -c "import sys; sys.exit(0 if min($l1,$l2) >= 0.90 else 1)"; then
  echo "== record with low, t=$SECONDS"
  export GEMMAR_PUT_PRIORITY=low
  REPS=2 timeout -s KILL $((585 - SECONDS)) bash scripts/device_candidate_record.sh > $D/record.log 2>&1
  echo "record rc=$? t=$SECONDS"; tail -40 $D/record.log | cut -c1-220
fi
pack
