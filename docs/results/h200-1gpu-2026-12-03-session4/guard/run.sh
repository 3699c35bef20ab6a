#!/usr/bin/env bash
# Issue 21, second round (guard2): the guard's overhead with the rewritten streaming kernels, each pass alone,
# the detection matrix and clean straggled replays, in one device call. Run from the repository root.
set -u
D=$PWD/.dev/guard2
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64 GEMMAR_CACHE_DIR=/tmp/gemmar-cache
chmod +x "$D"/bin/* "$D"/scripts/*.sh
mkdir -p "$OUT/guard"
cp "$D/run.sh" "$OUT/guard/run.sh"
CLEAN_ITERS=300 CLEAN_ITERS_16K=100 SKIP_PYTHON=1 timeout 220 bash "$D/scripts/device_guard_run.sh" "$D/bin/gemmar" "$OUT/guard"
echo "script rc=$?"
