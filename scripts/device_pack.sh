#!/usr/bin/env bash
# Here, before a device call: a CUDA build's binaries into DEST (xz-packed: gemmar, gemmar_gpu_bench) and the shared
# libraries the GPU machine lacks (boost program_options, re2, gomp) into .dev/lib, for `run` with carry [".dev"];
# scripts/device_lib.sh's unpack_dev unpacks them there.
# Usage: scripts/device_pack.sh BUILD DEST        e.g. scripts/device_pack.sh build-cuda .dev/cand
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?a CUDA build tree (cmake --preset cuda)}
DEST=${2:?where the binaries go, e.g. .dev/cand}
mkdir -p "$DEST" .dev/lib
# The bench is under lab/ since the lab split (kernels/ before it: a build of an older main).
bench=$BUILD/lab/gemmar_gpu_bench
[[ -x $bench ]] || bench=$BUILD/kernels/gemmar_gpu_bench
for b in "$BUILD/validate/gemmar" "$bench"; do
  [[ -x $b ]] || { echo "device_pack.sh: $b not built (cmake --build $BUILD --target gemmar gemmar_gpu_bench)" >&2; exit 2; }
  xz -T2 -6 -c "$b" > "$DEST/$(basename "$b").xz"
done
for lib in libboost_program_options libre2 libgomp; do
  path=$(ldd "$BUILD/validate/gemmar" | awk -v l="$lib" 'index($1, l) == 1 {print $3}')
  [[ -n $path ]] && cp -L "$path" .dev/lib/
done
du -sh .dev
