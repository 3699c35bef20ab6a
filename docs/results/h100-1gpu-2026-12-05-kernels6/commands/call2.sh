export LD_LIBRARY_PATH=$PWD/.dev/lib:$LD_LIBRARY_PATH
D=$OUT/call2; mkdir -p $D; date -u
B=.dev/bin/gemmar_gpu_bench; G=.dev/bin/gemmar
# 1. M off the tile
for a in "1000 7168 2048" "1000 5120 1024" "1000 5120 2048" "1000 7168 2048 ptpc"; do timeout 60 $B gemm $a 2>&1 | grep -E "GEMM_JSON|VENDOR|rror" | cut -c1-600; done
# 2. stalls / pipes / smem
timeout 200 scripts/device_gemm_profile.sh $B $D/profile 2>&1 | sed -n '/== stalls_ours/,/== quantize/p' | cut -c1-160
# 3. end to end at 16384: every config (blockscale), then the unfused baselines' phases
SECONDS=0; timeout 300 $G run --backend gpu --all-configs -m 16384 --json > $D/e2e16384.json 2> $D/e2e16384.err; echo "e2e rc=$? ${SECONDS}s"; python3 scripts/e2e_summary.py $D/e2e16384.json | cut -c1-330
for w in "--gather-dtype bf16" "--gather-dtype fp8 --gather-transport sdma"; do SECONDS=0; timeout 120 $G run --backend gpu -m 16384 --mode split-sdma --gemm-impl cublaslt $w --json > $D/base.json 2>>$D/e2e16384.err; echo "base rc=$? ${SECONDS}s"; python3 scripts/e2e_summary.py $D/base.json | cut -c1-330; done
SECONDS=0; timeout 60 $G run --backend gpu -m 16384 --mode gemm-only --gemm-impl cublaslt --json > $D/base.json 2>>$D/e2e16384.err; echo "gemm-only cublaslt rc=$? ${SECONDS}s"; python3 scripts/e2e_summary.py $D/base.json | cut -c1-330
tail -5 $D/e2e16384.err
date -u
