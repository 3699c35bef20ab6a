#!/usr/bin/env bash
# H100: fused-sdma's GEMM phase at 6144 x 5120 x 1024 (blockscale, K = 1024), base (main) and cand (the count
# before the next slice's stores) alternating, three processes of cand, two of base.
python3 -c 'import lzma,glob,os
for f in glob.glob(".dev/*/*.xz"):
    open(f[:-3],"wb").write(lzma.open(f).read()); os.chmod(f[:-3],0o755); os.remove(f)'
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/k1024; mkdir -p $D
pack() { (cd $OUT && tar czf k1024.tgz k1024); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } > $D/machine.txt; cat $D/machine.txt
e2e() { local tag=$1 bin=$2; shift 2
  timeout -s KILL 60 .dev/$bin/gemmar run --backend gpu "$@" --json > $D/e2e_$tag.json 2>> $D/err.txt
  echo "== $tag rc=$? t=$SECONDS"
  python3 scripts/e2e_summary.py $D/e2e_$tag.json | grep "^gemm-only\|^fused-sdma" | grep -o "^[^ ]* *[a-z]*  wrong=[0-9]*\|gemm=[0-9.]*" | paste -sd' '; pack; }
S="--all-configs -m 6144 -n 5120 -k 1024"
for i in 1 2 3; do
  e2e bs6144_cand$i cand $S
  (( i < 3 )) && e2e bs6144_base$i base $S
done
e2e ptpc4096_cand3 cand --all-configs -m 4096 --quant ptpc
gzip -f $D/*.json; pack
