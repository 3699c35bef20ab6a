export LD_LIBRARY_PATH=$PWD/.dev/lib:$LD_LIBRARY_PATH
D=$OUT/rec; mkdir -p $D; date -u
B=.dev/bin/gemmar_gpu_bench; G=.dev/bin/gemmar
S() { python3 scripts/e2e_summary.py "$@" | cut -c1-300; }
REPS=3 timeout 420 scripts/device_gemm_shapes.sh $B $D/shapes 2>&1 | cut -c1-330
for m in 4096 16384; do timeout 90 $B gemm $m 7168 2048 mxfp8 2>&1 | grep -E "MXFP8_CEILING_JSON|rror"; done > $D/mxfp8.log; cat $D/mxfp8.log
e2e() { local tag=$1; shift; timeout 150 $G run --backend gpu --all-configs "$@" --json > $D/e2e_$tag.json 2>> $D/e2e.err; echo "== e2e $tag rc=$?"; S $D/e2e_$tag.json; }
e2e bs16384 -m 16384
e2e bs4096 -m 4096
e2e bs6144_5120_1024 -m 6144 -n 5120 -k 1024
e2e ptpc4096 -m 4096 --quant ptpc
e2e mxfp8_4096 -m 4096 --quant mxfp8
e2e ptpc1000 -m 1000 -n 5120 -k 1024 --quant ptpc
e2e mxfp8_1000 -m 1000 -n 5120 -k 1024 --quant mxfp8
for a in "--mode gemm-only" "--mode split-sdma --gather-dtype bf16" "--mode split-sdma --gather-dtype fp8 --gather-transport sdma" "--mode split-sdma --gather-dtype fp8 --gather-transport lsa"; do timeout 60 $G run --backend gpu -m 16384 --gemm-impl cublaslt $a --json > $D/base.json 2>>$D/e2e.err; S $D/base.json; done
tail -3 $D/e2e.err; date -u
cd $OUT && tar czf rec.tgz rec && rm -rf rec
