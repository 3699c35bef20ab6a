#!/usr/bin/env bash
# Where same-device puts run (copy-overlap), then fused-sdma's GEMM phase with the puts on the copy engine
# (GEMMAR_PUT_COPY=copy-engine, the candidate default) and as memcpy (main's), 4096 ptpc and blockscale.
# (The build of this call: main at 0051b32 + the copy-overlap probe + a GEMMAR_PUT_COPY option, not kept:
# copy-engine = cudaMemcpyBatchAsync with cudaMemcpyFlagPreferOverlapWithCompute, memcpy = cudaMemcpyAsync.)
python3 -c 'import lzma,glob,os
for f in glob.glob(".dev/*/*.xz"):
    open(f[:-3],"wb").write(lzma.open(f).read()); os.chmod(f[:-3],0o755); os.remove(f)'
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/put1; mkdir -p $D
pack() { (cd $OUT && tar czf put1.tgz put1); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
B=.dev/cand/gemmar_gpu_bench; G=.dev/cand/gemmar
for mib in 7 64; do timeout -s KILL 60 $B copy-overlap $mib 2>&1; done | tee $D/copy_overlap.txt | cut -c1-250
pack
e2e() { local tag=$1 put=$2; shift 2
  GEMMAR_PUT_COPY=$put timeout -s KILL 100 $G run --backend gpu "$@" --json > $D/e2e_$tag.json 2>> $D/err.txt
  echo "== $tag rc=$? t=$SECONDS launch=$(grep -o '"launch": "[^"]*"' $D/e2e_$tag.json | sort | uniq -c | tr '\n' ' ')"
  python3 scripts/e2e_summary.py $D/e2e_$tag.json | cut -c1-260; gzip -f $D/e2e_$tag.json; pack; }
e2e ptpc4096_ce copy-engine --all-configs -m 4096 --quant ptpc
e2e ptpc4096_mc memcpy --all-configs -m 4096 --quant ptpc
e2e bs4096_ce copy-engine --all-configs -m 4096
e2e bs4096_mc memcpy --all-configs -m 4096
(( SECONDS < 330 )) && e2e ptpc4096_silent_mc memcpy --mode fused-sdma -m 4096 --quant ptpc --inject silent-scatter
(( SECONDS < 360 )) && e2e bs16384_ce copy-engine --all-configs -m 16384
(( SECONDS < 450 )) && e2e bs16384_mc memcpy --all-configs -m 16384
echo "t=$SECONDS"; tail -5 $D/err.txt; pack
