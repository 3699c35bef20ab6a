#!/usr/bin/env bash
# Issue 15 on the lent H200: the CUDA gemmar (cmake --preset cuda, built on the dev machine, carried with its
# libboost_program_options) runs the transport self-test, every config through the captured graph with every
# iteration checked, the replay faults, and clean runs with stragglers. Usage (from .dev-races): run.sh OUTDIR
set -u
OUT=${1:-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
export GEMMAR_CACHE_DIR=$PWD/cache OMP_WAIT_POLICY=passive
mkdir -p "$GEMMAR_CACHE_DIR"
G=./gemmar
log() { echo "\$ gemmar $*"; timeout 60 $G "$@"; echo "rc=$?"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
{
  log selftest --backend gpu
  log selftest --backend gpu --inject silent-gather
  log selftest --backend gpu --inject silent-scatter
} > "$OUT/selftest.log" 2>&1
{
  log run --backend gpu --all-configs -m 4096 --check-rows 128
  GEMMAR_GPU_GRAPH=0 log run --backend gpu -m 4096 --mode split-sdma --check-rows 128
} > "$OUT/all_configs.log" 2>&1
log run --backend gpu --all-configs -m 4096 --check-rows 128 --straggle 50 --seed 99 > "$OUT/straggle.log" 2>&1
{
  log run --backend gpu --all-configs -m 4096 --check-rows 128 --iterations 4 --inject stale-replay
  log run --backend gpu --all-configs -m 4096 --check-rows 128 --iterations 4 --inject frozen-flag
  log run --backend gpu -m 4096 --check-rows 128 --iterations 6 --straggle 50 --inject stale-replay --mode split-sdma
} > "$OUT/faults.log" 2>&1
log run --backend gpu -m 16384 --mode fused-sdma --check-rows 256 > "$OUT/m16384.log" 2>&1
grep -h '^\$\|^rc=\|^selftest \(FAILED\|passed\)\|^  \|^run:\|^source' "$OUT"/*.log | cut -c1-200 | head -120
