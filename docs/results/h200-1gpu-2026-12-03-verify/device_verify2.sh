#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} OMP_WAIT_POLICY=passive GEMMAR_CACHE_DIR=$PWD/cache PYTHONUNBUFFERED=1
G=$PWD/gemmar; D=/tmp/dumps; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $OUT/machine2.txt 2>&1
step() { local name=$1; shift; echo "=== $name: \$ $*" >> $OUT/log2.txt; local t0=$(date +%s.%N); timeout 100 "$@" >> $OUT/log2.txt 2>&1; local rc=$?; echo "=== $name rc=$rc wall=$(awk "BEGIN{print $(date +%s.%N) - $t0}") s" >> $OUT/log2.txt; echo "$name rc=$rc"; }
step torch_fp8_fixed python3 torch_gemm_ar.py $D/torch-fp8 -m 4096 --gather-dtype fp8
step verify_torch_fp8_fixed $G verify $D/torch-fp8 --check-rows 0
$G verify $D/torch-fp8 --json > $OUT/verify2.json 2>&1
