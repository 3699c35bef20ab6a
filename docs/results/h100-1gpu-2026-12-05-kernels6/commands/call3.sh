export LD_LIBRARY_PATH=$PWD/.dev/lib:$LD_LIBRARY_PATH
D=$OUT/call3; mkdir -p $D; date -u
B=.dev/bin/gemmar_gpu_bench; G=.dev/bin/gemmar; NCU=/usr/local/cuda/bin/ncu
S() { python3 scripts/e2e_summary.py "$@" | cut -c1-300; }
for a in "1000 7168 2048" "1000 5120 1024" "1000 5120 2048" "1000 7168 2048 ptpc" "16384 7168 2048"; do timeout 60 $B gemm $a 2>&1 | grep -E "GEMM_JSON|VENDOR|rror" | sed 's/"ours_kernel": "[^"]*", //; s/"cublaslt": "[^"]*", //' | cut -c1-420; done
timeout 60 $B gemm-concurrent 16384 7168 2048 8 2>&1 | grep GEMM_CONC
SECONDS=0; timeout 300 $G run --backend gpu --all-configs -m 16384 --json > $D/e2e16384.json 2> $D/e2e.err; echo "e2e rc=$? ${SECONDS}s"; S $D/e2e16384.json
for w in "--gather-dtype bf16" "--gather-dtype fp8 --gather-transport sdma" "--gather-dtype fp8 --gather-transport lsa"; do timeout 120 $G run --backend gpu -m 16384 --mode split-sdma --gemm-impl cublaslt $w --json > $D/base.json 2>>$D/e2e.err; S $D/base.json; done
timeout 60 $G run --backend gpu -m 16384 --mode gemm-only --gemm-impl cublaslt --json > $D/base.json 2>>$D/e2e.err; S $D/base.json
timeout 120 $NCU --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum' -k regex:gemm_wgmma --launch-skip 2 --launch-count 1 $B gemm 16384 7168 2048 > $D/stalls_ours.txt 2>&1
grep -E "^    [a-z]" $D/stalls_ours.txt | awk '$NF != "0" && $NF != "0.00"' | sort -k3 -g -r | head -16
tail -3 $D/e2e.err; date -u
