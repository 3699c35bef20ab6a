#!/usr/bin/env bash
# On the GPU machine, one call (about 1-2 minutes on an H100): the mxfp8 GEMM on Hopper (issue 45). First the
# lab's testbed over the mxfp8 cases (gemmar_gpu_bench testbed gemm mxfp8: every gemm subject that takes mxfp8,
# the op's gemm_wgmma4_kernel<16, PerStep32>, the earlier gemm_wgmma_kernel<PerStep32> (family-wgmma) and the lab's
# wgmma4-mx-lag1 among them, checked
# against the CPU's GEMM and bit for bit against the op's output), then the timings in one process per GEMM, at
# 4096 x 7168 x 2048 and the W = 4 target N = 5120, K = 2048 (M = 4096 and 16384): mxfp8 as the op runs it, as it
# ran before issue 45 (family-wgmma) and as the lab's variant, each
# beside our blockscale GEMM (and cuBLASLt's) on the same shape (MXFP8_CEILING_JSON), and ptpc. Everything under
# $OUT; the table on stdout.
#
# Here:   cmake --preset cuda && cmake --build build-cuda -j --target gemmar gemmar_gpu_bench
#         scripts/device_pack.sh build-cuda .dev/cand
# Device: run scripts/device_mxfp8.sh with carry [".dev"]           CAND=.dev/cand (default)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_lib.sh
OUT=${OUT:?the output directory}
CAND=${CAND:-.dev/cand}
unpack_dev
BENCH=$CAND/gemmar_gpu_bench
[[ -x $BENCH ]] || { echo "no $BENCH (scripts/device_pack.sh)"; exit 2; }
machine_record "$OUT"

# 1. The testbed's mxfp8 cases: bit for bit against the op's kernel, the error against the CPU's GEMM.
step 150 "$BENCH" testbed gemm mxfp8 > "$OUT/testbed.log" 2>&1
echo "== testbed $(tail -1 "$OUT/testbed.log") t=${SECONDS}s"
# A failure's reason is the bench's last stderr line, before the rc line (2026-12-07 call 1 showed only "rc=3").
grep -v "^TESTBED_JSON" "$OUT/testbed.log" | tail -4 | cut -c1-300
grep -h "TESTBED_SUMMARY" "$OUT/testbed.log"
grep -h '"subject": "wgmma4-mx-\|"subject": "family-wgmma"\|"subject": "product"' "$OUT/testbed.log" | grep '"applies": true' |
  sed 's/"kernel": "[^"]*", //; s/"vendor": "[^"]*", //' | cut -c1-300

# 2. The timings: old (the op's choice) and new (the lab's variant) in one process each, each beside our
# blockscale GEMM of the same shape; ptpc alone beside cuBLASLt.
for shape in "4096 7168 2048" "4096 5120 2048" "16384 5120 2048"; do
  # shellcheck disable=SC2086
  for q in "mxfp8 product" "mxfp8 family-wgmma" "mxfp8 wgmma4-mx-lag1" "mxfp8 wgmma4-mx-producer-64" "ptpc product"; do
    left 170 && step 40 "$BENCH" gemm $shape $q
  done
done > "$OUT/bench.log" 2>&1
echo "== timings t=${SECONDS}s"

/usr/bin/python3 - "$OUT/bench.log" <<'PY' | tee "$OUT/summary.txt"
import json, sys
rows, cmd = [], None
for line in open(sys.argv[1]):
    if line.startswith("$ "):
        cmd = line.split()
    elif line.startswith("MXFP8_CEILING_JSON ") or line.startswith("GEMM_JSON "):
        tag, body = line.split(" ", 1)
        rows.append((cmd[-1] if cmd else "?", tag, json.loads(body)))
print("shape            subject               quant   ours_us  blockscale_us  vs_blockscale  cublaslt_us  checked")
ceil = {}
for subject, tag, j in rows:
    shape = f'{j["m"]}x{j["n"]}x{j["k"]}'
    if tag == "MXFP8_CEILING_JSON":
        ceil[(shape, subject)] = j
        continue
    c = ceil.get((shape, subject)) if j["quant"] == "mxfp8" else None
    bs = f'{c["blockscale_ours_us"]:.1f}' if c else "-"
    rel = f'{c["vs_blockscale_ours"]:.3f}' if c else "-"
    print(f'{shape:16} {subject:21} {j["quant"]:7} {j["ours_us"]:8.1f}  {bs:>13}  {rel:>13}  '
          f'{j["cublaslt_us"]:11.1f}  {j["checked"]}')
PY
echo "== done t=${SECONDS}s"
