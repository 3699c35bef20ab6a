#!/usr/bin/env bash
# On the lent GPU, one call: two gemmar builds A and B alternating (REPS rounds), gemm-only and fused-sdma on each
# wire at M = 16384, 4096 and 6144 x 5120 x 1024, one summary line per run (scripts/e2e_summary.py: verdict, wrong
# elements, time, unfused baseline, phases). For a kernel change to the GEMM's epilogue or counts: the GEMM phase
# of fused-sdma against gemm-only's, and every run still bit-exact (wrong=0).
# Usage: scripts/device_ab_gemm_phase.sh GEMMAR_A GEMMAR_B OUTDIR   (REPS=2)
set -uo pipefail
A=${1:?gemmar A}
B=${2:?gemmar B}
OUT=${3:?output dir}
mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } | tee "$OUT/machine.txt"
here=$(dirname "$0")
for rep in $(seq 1 "${REPS:-2}"); do
  for bin in "$A" "$B"; do
    for shape in "-m 16384" "-m 4096" "-m 6144 -n 5120 -k 1024"; do
      for w in "--mode gemm-only" "--mode fused-sdma --gather-dtype bf16" \
        "--mode fused-sdma --gather-dtype fp8 --gather-transport sdma" \
        "--mode fused-sdma --gather-dtype fp8 --gather-transport lsa"; do
        # shellcheck disable=SC2086
        timeout 60 "$bin" run --backend gpu $shape $w --json > "$OUT/run.json" 2>> "$OUT/stderr.txt"
        echo "$rep $bin $shape rc=$? $(python3 "$here/e2e_summary.py" "$OUT/run.json" | cut -c1-230)"
      done
    done
  done
done | tee "$OUT/ab.txt"
