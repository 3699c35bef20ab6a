#!/usr/bin/env bash
export LD_LIBRARY_PATH=$PWD/.dev/lib:/usr/local/cuda/lib64
export GEMMAR_CACHE_DIR=/tmp/gemmar-cache
G=$PWD/.dev/bin/gemmar B=$PWD/.dev/bin/gemmar_gpu_bench
D=$OUT/ptpc_ldg; mkdir -p $D; date -u > $D/machine.txt
for m in 4096 16384; do $B gemm $m 7168 2048 ptpc; done > $D/gemm.log 2>&1
grep ^GEMM_JSON $D/gemm.log | cut -c1-40,200-420
$G run --backend gpu --quant ptpc --all-configs -m 4096 2>&1 | grep -v RESULT_JSON | tee $D/runs.log | tail -13
