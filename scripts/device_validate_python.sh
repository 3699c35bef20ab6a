#!/usr/bin/env bash
# `gemmar validate --backend python` on the lent GPU (issue 51, docs/python.md): the torch implementation
# (python/torch_gemm_ar.py, W = 8 ranks on one device) through python/gemmar_runner.py, in one call, most important
# first (a call cut short keeps what it finished):
#   1. clean: `gemmar validate --backend python --impl python/torch_gemm_ar.py:TorchGemmAr` at its defaults (N=7168
#      K=2048 W=8, M = 4096 and 16384, every config it supports: gemm-only, split-sdma bf16 / fp8-sdma / fp8-lsa,
#      split-lsa), the self-test first, every run's tensors dumped and verified bit for bit, its graph-replay time
#      judged (on the h200-1gpu profile, a ceiling profile: SLOWER_THAN_MODEL is a warning there). Expected: exit 0.
#   2. faulty, judged: `gemmar run --backend python --impl ...:skip_gather -m 4096 --mode split-sdma` (rank 3 never
#      receives slice 5). Expected: exit 1 with COLLECTIVE_MISMATCH, RANK_DISAGREEMENT, SILENT_TRANSFER naming
#      rank 3 and slice 5.
#   3. faulty, validated: the same implementation through validate: its self-test must stop it (exit 1), naming
#      rank 3's view of slice 5.
# gemmar needs no kernels here: the CUDA build or the CPU build both do. The validate output is built outside
# OUTDIR (its dumps reach ~4 GB a run at M = 16384 before each is verified and removed); its small files are copied.
# Writes OUTDIR/{machine.txt, clean.log, clean/ (results.json, runs.log, runner/*.log, report/), fault_run.log,
# fault_validate.log, summary.txt}.
# Usage: [PYTHON=python3 M_LIST=4096,16384 IMPL=python/torch_gemm_ar.py EXTRA="-n 1024 ..."] \
#          scripts/device_validate_python.sh GEMMAR OUTDIR
#   IMPL: a file with TorchGemmAr and skip_gather (tests/data/python/fake_gemm_ar.py's FakeGemmAr stands in on a CPU:
#   IMPL_CLEAN=FakeGemmAr PYTHON=/usr/bin/python3 EXTRA="-n 1024 -k 256 --world 4" M_LIST=512 FAULT_M=512);
#   EXTRA: options added to every gemmar call.
set -uo pipefail
cd "$(dirname "$0")/.."
G=${1:?gemmar (any build)}
OUT=${2:?output dir}
PY=${PYTHON:-python3}
M_LIST=${M_LIST:-4096,16384}
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The runner and the implementations from this checkout, wherever the carried build's data links point.
export GEMMAR_PYTHON_DIR=$PWD/python
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv
  "$PY" -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
  nproc; df -h "$WORK" | tail -1; } > "$OUT/machine.txt" 2>&1
report=--no-report
/usr/bin/python3 -c "import matplotlib" 2>/dev/null && report=""
IMPL=${IMPL:-python/torch_gemm_ar.py}
CLEAN=${IMPL_CLEAN:-TorchGemmAr}
FAULT_M=${FAULT_M:-4096}
read -r -a EXTRA_ARGS <<< "${EXTRA:-}"
t0=$(date +%s)
echo "\$ gemmar validate --backend python --impl $IMPL:$CLEAN --m-list $M_LIST ${EXTRA:-}" > "$OUT/clean.log"
timeout 300 "$G" validate --backend python --impl "$IMPL:$CLEAN" --python "$PY" --m-list "$M_LIST" \
  --out "$WORK/clean" $report "${EXTRA_ARGS[@]}" >> "$OUT/clean.log" 2>&1
echo "rc=$? seconds=$(($(date +%s) - t0))" >> "$OUT/clean.log"
mkdir -p "$OUT/clean"
for f in results.json runs.log runner report; do [ -e "$WORK/clean/$f" ] && cp -r "$WORK/clean/$f" "$OUT/clean/"; done
t1=$(date +%s)
{ echo "\$ gemmar run --backend python --impl $IMPL:skip_gather -m $FAULT_M --mode split-sdma --json ${EXTRA:-}"
  timeout 90 "$G" run --backend python --impl "$IMPL:skip_gather" --python "$PY" -m "$FAULT_M" --mode split-sdma \
    --json "${EXTRA_ARGS[@]}"
  echo "rc=$? seconds=$(($(date +%s) - t1))"; } > "$OUT/fault_run.log" 2>&1
t2=$(date +%s)
{ echo "\$ gemmar validate --backend python --impl $IMPL:skip_gather -m $FAULT_M --no-report ${EXTRA:-}"
  timeout 90 "$G" validate --backend python --impl "$IMPL:skip_gather" --python "$PY" -m "$FAULT_M" \
    --out "$WORK/fault" --no-report "${EXTRA_ARGS[@]}"
  echo "rc=$? seconds=$(($(date +%s) - t2))"; } > "$OUT/fault_validate.log" 2>&1
# One line per run: config, M, verdict, error codes, elements compared of M*N*W, wrong, relL2, time; then the faults.
/usr/bin/python3 - "$OUT" > "$OUT/summary.txt" 2>&1 <<'PY'
import json, os, re, sys
out = sys.argv[1]
def rc(path):
    m = re.findall(r"^rc=(-?\d+) seconds=(\d+)", open(path).read(), re.M)
    return m[-1] if m else ("?", "?")
def errors(run):
    return sorted(f["code"] for f in run.get("findings", []) if f.get("severity") == "error")
def warnings(run):
    return sorted(f["code"] for f in run.get("findings", []) if f.get("severity") == "warning")
code, secs = rc(os.path.join(out, "clean.log"))
print(f"clean validate: rc={code} (expected 0) in {secs} s")
try:
    res = json.load(open(os.path.join(out, "clean", "results.json")))
    print("  self-test:", "pass" if res.get("selftest", {}).get("pass") else "FAIL",
          [c["config"] + (": " + c["message"] if c["message"] else "") for c in res.get("selftest", {}).get("configs", [])])
    print("  declined:", res.get("python", {}).get("declined"))
    for run in res.get("runs", []):
        r = run.get("record", {})
        full = r.get("m", 0) * r.get("n", 0) * r.get("world_size", 0)
        print(f"  {run.get('source')} {run.get('context', {}).get('config', r.get('mode'))} M={r.get('m')}"
              f" {run.get('verdict')} errors={errors(run)} warnings={warnings(run)} checked={r.get('checked_elements')}"
              f" of {full} wrong={r.get('wrong_elements')} rel_l2={r.get('rel_l2')} time_us={r.get('max_rank_time_us')}"
              f" timing={r.get('timing')} nondeterministic={r.get('nondeterministic_iterations', [])}")
except (OSError, ValueError) as e:
    print("  no results.json:", e)
code, secs = rc(os.path.join(out, "fault_run.log"))
print(f"fault skip-gather, gemmar run: rc={code} (expected 1) in {secs} s")
text = open(os.path.join(out, "fault_run.log")).read()
start = text.find("{")
try:
    doc = json.JSONDecoder().raw_decode(text[start:])[0]
    for run in doc.get("runs", []):
        r = run.get("record", {})
        print(f"  errors={errors(run)} first={r.get('first_wrong_element')} per_slice_rel_l2={r.get('per_slice_rel_l2')}")
except ValueError as e:
    print("  no JSON:", e)
code, secs = rc(os.path.join(out, "fault_validate.log"))
print(f"fault skip-gather, gemmar validate: rc={code} (expected 1, stopped by the self-test) in {secs} s")
for line in open(os.path.join(out, "fault_validate.log")):
    if "self_test failed" in line or line.startswith("FAILED"):
        print("  " + line.strip())
PY
cat "$OUT/summary.txt"
