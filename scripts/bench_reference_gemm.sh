#!/usr/bin/env bash
# Times the CPU reference's fp32 GEMM (Eigen) with 1 and all threads and prints it next to the peak
# computed from lscpu (cores x MHz x 32 fp32 flop/cycle for two 256-bit FMA pipes, AVX2+FMA).
# Usage: scripts/bench_reference_gemm.sh [path/to/gemmar] [size]
set -euo pipefail
bin=${1:-build/validate/gemmar}
size=${2:-2048}
cores=$(nproc)
mhz=$(awk -F: '/^cpu MHz/ {print $2; exit}' /proc/cpuinfo)
peak=$(awk -v c="$cores" -v m="$mhz" 'BEGIN {printf "%.1f", c * m * 1e-3 * 32}')
echo "peak: ${cores} cores x ${mhz} MHz x 32 flop/cycle = ${peak} GFLOP/s; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for t in 1 "$cores"; do
  OMP_NUM_THREADS=$t OMP_WAIT_POLICY=passive "$bin" reference gemm-bench -m "$size" -n "$size" -k "$size"
done
