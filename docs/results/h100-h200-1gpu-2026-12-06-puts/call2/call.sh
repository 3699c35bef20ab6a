#!/usr/bin/env bash
# base = main's kernels with the new GEMMAR_PUT_PRIORITY (equal = main exactly); cand = base + the GEMM's release
# warp. Where same-device copies run (copy-overlap); fused-sdma's GEMM phase A/B at ptpc 4096; the candidate's
# end-to-end config sets of the record; its ptpc and blockscale GEMMs alone beside cuBLASLt (1 process).
python3 -c 'import lzma,glob,os
for f in glob.glob(".dev/*/*.xz"):
    open(f[:-3],"wb").write(lzma.open(f).read()); os.chmod(f[:-3],0o755); os.remove(f)'
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
D=$OUT/prio2; mkdir -p $D
pack() { (cd $OUT && tar czf prio2.tgz prio2); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total,power.limit --format=csv; } | tee $D/machine.txt
timeout -s KILL 60 .dev/cand/gemmar_gpu_bench copy-overlap 7 2>&1 | tee $D/copy_overlap.txt | cut -c1-250
pack
e2e() { local tag=$1 bin=$2 prio=$3; shift 3
  GEMMAR_PUT_PRIORITY=$prio timeout -s KILL 100 .dev/$bin/gemmar run --backend gpu "$@" --json > $D/e2e_$tag.json 2>> $D/err.txt
  echo "== $tag ($bin $prio) rc=$? t=$SECONDS $(grep -o '"launch": *"[^"]*"' $D/e2e_$tag.json | sort | uniq -c | tr '\n' ' ')"
  python3 scripts/e2e_summary.py $D/e2e_$tag.json | grep -v "^split-lsa\|^fused-lsa" | sed 's/relL2=[^ ]* //' | cut -c1-200; gzip -f $D/e2e_$tag.json; pack; }
A="--all-configs -m 4096"
e2e ptpc4096_base_eq base equal $A --quant ptpc
e2e ptpc4096_cand_low cand low $A --quant ptpc
e2e ptpc4096_base_low base low $A --quant ptpc
e2e ptpc4096_cand_eq cand equal $A --quant ptpc
e2e ptpc_silent_base_eq base equal --mode fused-sdma -m 4096 --quant ptpc --inject silent-scatter
e2e ptpc_silent_cand_eq cand equal --mode fused-sdma -m 4096 --quant ptpc --inject silent-scatter
GEMMAR_GPU_GRAPH=0 e2e ptpc4096_cand_low_eager cand low $A --quant ptpc
e2e frp4096_base_eq base equal --mode fused-sdma -m 4096 --fuse-reduce-push
e2e frp4096_cand_low cand low --mode fused-sdma -m 4096 --fuse-reduce-push
e2e bs4096_cand_low cand low $A
e2e bs6144_cand_low cand low --all-configs -m 6144 -n 5120 -k 1024
e2e bs6144_base_eq base equal --all-configs -m 6144 -n 5120 -k 1024
e2e mxfp8_1000_cand_low cand low --all-configs -m 1000 -n 5120 -k 1024 --quant mxfp8
(( SECONDS < 150 )) && e2e bs16384_cand_low cand low --all-configs -m 16384
(( SECONDS < 175 )) && e2e ptpc16384_cand_low cand low --all-configs -m 16384 --quant ptpc
if (( SECONDS < 120 )); then
  REPS=1 QUANTS="ptpc blockscale" MS="4096 8192 16384" NKS="7168x2048" CONCURRENT_MS="" DATA=0 timeout -s KILL 100 scripts/device_gemm_shapes.sh .dev/cand/gemmar_gpu_bench $D/shapes > $D/shapes.summary 2>&1
  echo "== shapes t=$SECONDS"; sed -n '/SUMMARY/,$p' $D/shapes.summary
fi
echo "t=$SECONDS"; tail -5 $D/err.txt; pack
