#!/usr/bin/env bash
# On the lent GPU, one call: where each kernel's time goes, from Nsight Compute (ncu): our GEMM and cuBLASLt's
# at one shape (the same process, `gemmar_gpu_bench gemm`), and the data kernels (quantize, dequantize, pull).
# Each kernel's third launch is profiled with the sections below; the text reports and a metric digest are kept.
# Usage: scripts/device_gemm_profile.sh BENCH OUTDIR [M N K]   (NCU=path of ncu, default /usr/local/cuda/bin/ncu)
set -uo pipefail
BENCH=${1:?gemmar_gpu_bench}
OUT=${2:?output dir}
M=${3:-16384} N=${4:-7168} K=${5:-2048}
NCU=${NCU:-/usr/local/cuda/bin/ncu}
mkdir -p "$OUT"
SECTIONS=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
  --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats)
# Every kernel the bench launches, by name (one cheap metric): which one is cuBLASLt's.
timeout -s KILL 120 "$NCU" --metrics gpu__time_duration.sum --csv "$BENCH" gemm "$M" "$N" "$K" > "$OUT/kernels.csv" 2>&1
python3 - "$OUT/kernels.csv" > "$OUT/kernel_names.txt" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
hdr = rows[0]; ki = hdr.index('Kernel Name'); vi = hdr.index('Metric Value')
c = collections.Counter(); t = collections.defaultdict(list)
for r in rows[1:]:
    c[r[ki]] += 1; t[r[ki]].append(float(r[vi].replace(',', '')))
for name, n in c.most_common():
    print(n, sorted(t[name])[len(t[name]) // 2], name)
PY
cat "$OUT/kernel_names.txt" | cut -c1-300
VENDOR=$(grep -v "gemm_wgmma\|gemm_blockscale" "$OUT/kernel_names.txt" | sort -k2 -g -r | head -1 | cut -d' ' -f3- | cut -c1-40)
echo "vendor kernel: $VENDOR"
prof() {  # tag, kernel-name regex, launches of it to skip, command...
  local tag=$1 re=$2 skip=$3
  shift 3
  timeout -s KILL 240 "$NCU" "${SECTIONS[@]}" -k "regex:$re" --launch-skip "$skip" --launch-count 1 "$@" > "$OUT/$tag.txt" 2>&1
  echo "== $tag (rc=$?)"
  grep -E "^  [A-Za-z_0-9:<>, ]+\(|Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Achieved Occupancy|Registers Per Thread|Issue Slots Busy|Issued Ipc Active|No Eligible|Warp Cycles Per Issued|Executed Ipc Elapsed|L2 Hit Rate|Mem Busy|Max Bandwidth|Shared Memory Configuration|Dynamic Shared|Block Limit|Theoretical Occupancy|Stall" "$OUT/$tag.txt" | head -60
}
prof gemm_ours "gemm_wgmma" 2 "$BENCH" gemm "$M" "$N" "$K"
[[ -n $VENDOR ]] && prof gemm_cublaslt "$(printf '%s' "$VENDOR" | sed 's/[^A-Za-z0-9_]/./g')" 2 "$BENCH" gemm "$M" "$N" "$K"
# Why a warp did not issue (per issued instruction), the instruction count, the tensor pipe and the shared-memory
# banks, for both GEMMs: separate ncu calls, so a metric one ncu version lacks loses only its own line.
metrics() {  # tag, kernel-name regex, metric list
  local tag=$1 re=$2 list=$3
  timeout -s KILL 240 "$NCU" --metrics "$list" -k "regex:$re" --launch-skip 2 --launch-count 1 \
    "$BENCH" gemm "$M" "$N" "$K" > "$OUT/$tag.txt" 2>&1
  echo "== $tag (rc=$?)"
  grep -E "^    [a-z]" "$OUT/$tag.txt" | awk '$NF != "0" && $NF != "0.00"' | sort -k3 -g -r | head -40
}
for who in ours cublaslt; do
  re="gemm_wgmma"
  [[ $who == cublaslt ]] && re="$(printf '%s' "$VENDOR" | sed 's/[^A-Za-z0-9_]/./g')"
  [[ -z $re ]] && continue
  metrics "stalls_$who" "$re" 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
  metrics "pipes_$who" "$re" 'smsp__inst_executed.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_lsu.sum,smsp__inst_executed_pipe_uniform.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second'
  metrics "smem_$who" "$re" 'regex:^l1tex__data_bank_(reads|writes)\.avg\.pct_of_peak_sustained_elapsed$,regex:^sm__pipe_(tensor|shared).*pct_of_peak_sustained_(active|elapsed)$'
done
prof quantize "quantize_kernel" 2 "$BENCH" data 131072 "$N" 64
# the widen's launches: 22 dequantize (2 untimed + 20), then the pull's (its TMA-store kernel on a pull grid)
prof widen_pull64 "widen_" 24 "$BENCH" data 131072 "$N" 64
exit 0
