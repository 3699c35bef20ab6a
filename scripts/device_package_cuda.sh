#!/usr/bin/env bash
# On the lent GPU: the gemmar-cuda package (docs/building.md, "GPU builds") unpacked and run, as a user would after
# installing it. Usage: scripts/device_package_cuda.sh DEB OUTDIR
#   DEB: build-cuda/gemmar-cuda_<version>_amd64.deb, made on the repo machine by
#        cmake --preset cuda -DGEMMAR_MARCH=x86-64-v3 -DGEMMAR_TESTS=OFF && cmake --build --preset cuda -j \
#          --target gemmar gemmar_gpu_bench && (cd build-cuda && cpack -G DEB)
#   The Debian libraries the package declares, where the device lacks them, go on LD_LIBRARY_PATH (as for the
#   other device runs). Success: --version --json says gpu.backend "cuda" with architectures ["90a"] and its
#   data_dir is the unpacked usr/share/gemmar; the transport self-test passes and no run has a correctness finding
#   (timing findings alone may make validate exit 1); the report is drawn where python3-matplotlib exists.
set -uo pipefail
cd "$(dirname "$0")/.."
DEB=${1:?gemmar-cuda .deb}
OUT=${2:?output dir}
mkdir -p "$OUT"
ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT
if command -v dpkg-deb >/dev/null; then
  dpkg-deb -x "$DEB" "$ROOT"
else  # a .deb is an ar archive; its data.tar.* holds the files
  (cd "$ROOT" && ar x "$(realpath "$DEB")" && tar -xf data.tar.*) || { echo "cannot unpack $DEB (no dpkg-deb, no ar)"; exit 3; }
fi
G=$ROOT/usr/bin/gemmar
source scripts/device_lib.sh
machine_record "$OUT" > /dev/null
gstep() { echo "\$ gemmar $*"; env -u GEMMAR_REPORTS_DIR timeout 600 "$G" "$@"; echo "rc=$?"; }
report=--no-report
/usr/bin/python3 -c "import matplotlib" 2>/dev/null && report=""
{
  gstep --version
  gstep --version --json
  gstep validate --backend gpu -m 4096 --out "$OUT/validate" $report
} 2>&1 | tee "$OUT/package_cuda.log"
