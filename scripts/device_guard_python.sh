#!/usr/bin/env bash
# The caller guard (issue 49; docs/guard.md "The guard from what the caller holds") on the lent GPU, in one call of
# under 4 minutes: scripts/device_guard_python.py's sections (the library against the torch fallback and the numpy
# judge; the guard's cost beside the torch op at M = 4096 and 16384 on the four wire pairs; every fault class caught
# per call; >= 1000 clean calls on both of mori's targets and the fp8 gather's named recipes), then, when a CUDA
# gemmar is given, the in-pipeline guard of `gemmar run --guard` at M = 16384 on the bf16 wire (two runs with, two
# without).
#
# The library: $GEMMAR_GUARD_LIB (default build-cuda/kernels/libgemmar_guard.so, built here by
#   cmake --preset cuda && cmake --build build-cuda --target gemmar_guard
# and carried as that path) when it loads; else built on the device with its nvcc into build-device/ (one source,
# about 10 s; the same flags as the CMake target). Neither: the sections run the torch fallback, and say so.
# torch (2.11 on the lent machine) is the device's own; nothing is fetched.
#
# Writes OUTDIR/{machine.txt, library.txt, guard_python.json, guard_python.log, summary.txt} and, with GEMMAR,
# OUTDIR/pipeline/{machine.txt, pipeline.log, summary.txt}. summary.txt is printed at the end.
# With GEMMAR_GPU_BENCH (a CUDA gemmar_gpu_bench, e.g. .dev/cand/gemmar_gpu_bench): first the lab testbed's guard
# concern (`gemmar_gpu_bench testbed guard`: the library's kernels by block kind, beside the lab's variants) into
# OUTDIR/testbed_guard.txt, killed at TESTBED_TIMEOUT (120 s), one line per (subject, case) appended to summary.txt.
# Usage: [COST_REPS=10 FAULT_CALLS=8 NAN_CALLS=320 CLEAN_CALLS=150 VARIANT_CALLS=100 BUDGET_S=160 PY_TIMEOUT=200
#         SECTIONS="agree cost faults clean" GEMMAR_GPU_BENCH= TESTBED_TIMEOUT=120]
#         scripts/device_guard_python.sh OUTDIR [GEMMAR]
# PY_TIMEOUT kills the python sections; BUDGET_S is their own time: the NaN and clean loops stop at it and record
# how far they got (the clean calls go round every configuration), so the call ends in time whatever the device.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?output dir}
G=${2:-}
mkdir -p "$OUT"
start=$(date +%s)
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total,power.limit --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  command -v nvcc && nvcc --version | tail -1
} > "$OUT/machine.txt" 2>&1

# loads LIB: whether the library opens in this process image and has the wrapper's ABI.
loads() {
  [[ -f $1 ]] && python3 - "$1" <<'PY' 2>&1
import ctypes, sys
sys.path.insert(0, "python")
import gemmar_guard_caller as gc
lib = ctypes.CDLL(sys.argv[1])
got = lib.gg_abi_version()
print(f"{sys.argv[1]}: ABI {got}")
sys.exit(0 if got == gc.ABI_VERSION else 1)
PY
}
LIB=${GEMMAR_GUARD_LIB:-$PWD/build-cuda/kernels/libgemmar_guard.so}
{
  if loads "$LIB"; then
    echo "library: carried, $LIB"
  else
    echo "library: $LIB absent or not loadable here; building it with this machine's nvcc"
    mkdir -p build-device
    LIB=$PWD/build-device/libgemmar_guard.so
    # The flags of kernels/CMakeLists.txt's gemmar_guard target (sm_90a, hidden visibility, the static runtime).
    if command -v nvcc > /dev/null &&
      timeout 120 nvcc -O3 -DNDEBUG -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
        -gencode=arch=compute_90a,code=compute_90a -Xcompiler=-fPIC -Xcompiler=-fvisibility=hidden -I. -shared \
        -cudart static kernels/check/caller_guard.cu -o "$LIB" && loads "$LIB"; then
      echo "library: built here, $LIB ($(( $(date +%s) - start )) s)"
    else
      echo "library: none (no nvcc, or the build failed): the sections run the torch fallback"
      LIB=$PWD/build-device/absent/libgemmar_guard.so
    fi
  fi
} 2>&1 | tee "$OUT/library.txt"
LIB=$(sed -n 's/^library: \(carried\|built here\), \([^ ]*\).*/\2/p' "$OUT/library.txt" | tail -1)
export GEMMAR_GUARD_LIB=${LIB:-$PWD/build-device/absent/libgemmar_guard.so}

# The library's kernels alone (the lab testbed's guard concern: by block kind, beside the lab's variants), when a
# CUDA gemmar_gpu_bench is given: $GEMMAR_GPU_BENCH, carried by scripts/device_pack.sh (.xz, unpacked here).
BENCH=${GEMMAR_GPU_BENCH:-}
if [[ -n $BENCH ]]; then
  # One empty argument: a bare `source` would hand device_lib.sh this script's OUTDIR and GEMMAR as its own two.
  [[ -f $BENCH.xz && ! -x $BENCH ]] && { source scripts/device_lib.sh ""; unpack_dev; }
  if [[ -x $BENCH ]]; then
    timeout -s KILL "${TESTBED_TIMEOUT:-120}" "$BENCH" testbed guard > "$OUT/testbed_guard.txt" 2>&1
    echo "testbed guard: rc=$?, $(( $(date +%s) - start )) s" >> "$OUT/testbed_guard.txt"
  else
    echo "testbed guard: skipped, $BENCH is not an executable" > "$OUT/testbed_guard.txt"
  fi
fi

timeout -s KILL "${PY_TIMEOUT:-200}" python3 scripts/device_guard_python.py --out "$OUT" \
  --sections "${SECTIONS:-agree cost faults clean}" --budget-s "${BUDGET_S:-160}" > "$OUT/guard_python.log" 2>&1
rc=$?
echo "python sections: $(( $(date +%s) - start )) s, rc=$rc" | tee -a "$OUT/guard_python.log"
# The short text is rewritten with the JSON after every section; a run killed mid-write gets it again from the JSON.
if ((rc != 0)); then
  python3 scripts/device_guard_python.py --out "$OUT" --summary-only > /dev/null 2>&1 ||
    echo "no summary: guard_python.json missing or unreadable (see guard_python.log)" > "$OUT/summary.txt"
fi

if [[ -n "$G" ]]; then
  DEVICE_RUN_TIMEOUT=60
  TOP=$OUT
  # With its two arguments device_lib.sh sets G and OUT (here OUT/pipeline) and writes OUT/machine.txt; unpack_dev
  # unpacks what scripts/device_pack.sh carried (.dev/**/*.xz).
  source scripts/device_lib.sh "$G" "$TOP/pipeline"
  OUT=$TOP
  unpack_dev
fi
if [[ -n "$G" && ! -x "$G" ]]; then
  echo "in-pipeline guard: skipped, $G is not an executable" | tee -a "$OUT/summary.txt"
elif [[ -n "$G" ]]; then
  {
    for rep in 1 2; do
      jrun "pipeline off BF16 16384 $rep" -m 16384 "${BF16[@]}" --iterations 21 --check-every 100
      jrun "pipeline on BF16 16384 $rep" -m 16384 "${BF16[@]}" --guard --iterations 21 --check-every 100
    done
  } > "$OUT/pipeline/pipeline.log" 2>&1
  # The record's max_rank_time_us per run and the guard's own phase, against the mean of the unguarded runs.
  python3 - "$OUT/pipeline/pipeline.log" <<'PY' > "$OUT/pipeline/summary.txt"
import json, sys
runs = {"off": [], "on": []}
tag = None
for line in open(sys.argv[1]):
    if line.startswith("# pipeline"):
        tag = line.split()[2]
    elif line.startswith("{") and tag:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        for run in r.get("runs", []):
            rec = run["record"]
            runs[tag].append((rec.get("max_rank_time_us"), (rec.get("phases_us") or {}).get("guard")))
off = [t for t, _ in runs["off"] if t]
base = sum(off) / len(off) if off else float("nan")
print("in-pipeline guard (gemmar run --guard, fused-sdma bf16, M=16384): op alone, max_rank_time_us:",
      [t for t, _ in runs["off"]])
for t, g in runs["on"]:
    if t:
        print("  with --guard: %.1f us (%+.2f%%), guard phase %s us (%.2f%% of the op)"
              % (t, 100 * (t / base - 1), g, 100 * (g or 0) / base))
PY
  cat "$OUT/pipeline/summary.txt" >> "$OUT/summary.txt"
  echo "pipeline: $(( $(date +%s) - start )) s" >> "$OUT/summary.txt"
fi
if [[ -f $OUT/testbed_guard.txt ]]; then
  # One line per (subject, case) of the testbed: its checks, then its times beside the product's.
  python3 - "$OUT/testbed_guard.txt" <<'PY' >> "$OUT/summary.txt"
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("TESTBED_JSON "):
        j = json.loads(line[len("TESTBED_JSON "):])
        kinds = " ".join(f"{k} {v:.1f}" for k, v in (j.get("sums_kinds_us") or {}).items())
        cold = " ".join(f"{k} {v:.1f}" for k, v in (j.get("sums_kinds_cold_us") or {}).items())
        times = (f"sums {j['sums_us']:.1f} us ({kinds}), judge {j['judge_us']:.1f} us, a call per rank "
                 f"{j['call_per_rank_us']:.1f} us ({j.get('vs_product') or float('nan'):.2f}x the product); "
                 f"L2 cold: sums {j.get('sums_cold_us', float('nan')):.1f} us ({cold}), a call per rank "
                 f"{j.get('call_per_rank_cold_us', float('nan')):.1f} us "
                 f"({j.get('vs_product_cold') or float('nan'):.2f}x)") if "sums_us" in j else "not timed"
        print(f"testbed {j['subject']} {j['case']} M={j['m']}: ok {j.get('ok')}; {times}")
    elif line.startswith("TESTBED_SUMMARY") or line.startswith("testbed guard:"):
        print(line.rstrip())
PY
fi
cat "$OUT/library.txt" "$OUT/summary.txt"
echo "total: $(( $(date +%s) - start )) s"
exit "$rc"
