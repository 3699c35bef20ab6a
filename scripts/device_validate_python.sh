#!/usr/bin/env bash
# `gemmar validate --backend python` on the lent GPU (issue 51, docs/python.md): the torch implementation
# (python/gemmar_torch_impl.py, W = 8 ranks on one device) through python/gemmar_runner.py, in one call of at most BUDGET
# seconds (default 225), most important first (a call cut short keeps what it finished):
#   1. clean, M = 4096: `gemmar validate --backend python --impl python/gemmar_torch_impl.py:TorchGemmAr -m 4096` at
#      N=7168 K=2048 W=8 over every config it supports (gemm-only; split-sdma bf16, fp8/sdma, fp8/lsa; split-lsa;
#      fused-sdma bf16, fp8/sdma, fp8/lsa, each also with mori's fp8 scatter: 11 of validate's 14 candidates), the
#      self-test first, every run's tensors dumped and verified bit for bit, its graph-replay time judged (profile
#      h200-1gpu, a ceiling profile: SLOWER_THAN_MODEL is a warning there). Expected: exit 0.
#   2. faulty, judged: `gemmar run --backend python --impl ...:skip_gather -m 4096 --mode split-sdma` (rank 3 never
#      receives slice 5). Expected: exit 1 with COLLECTIVE_MISMATCH, RANK_DISAGREEMENT, SILENT_TRANSFER naming
#      rank 3 and slice 5.
#   3. faulty, validated: the same implementation through validate: its self-test must stop it (exit 1), naming
#      rank 3's view of slice 5.
#   3b. faulty scatter: `gemmar run ... --impl ...:scatter_not_narrowed -m 4096 --mode fused-sdma --scatter-dtype fp8`
#      (the fp8 scatter asked, the bf16 partials reduced). Expected: exit 1 with COLLECTIVE_MISMATCH, WIRE_NOT_USED.
#   4. clean, M = 16384 (M_LARGE): step 1 at the reference M, given what is left of BUDGET; killed at the budget,
#      its finished runs stay in runs.log.
# gemmar needs no kernels here: a CUDA build (scripts/device_pack.sh build-cuda .dev/cand) or a CPU one both do;
# the binary is the first argument (default .dev/cand/gemmar; xz-packed binaries and libraries under .dev are
# unpacked first, scripts/device_lib.sh unpack_dev). The validate output is built outside OUTDIR (its dumps reach
# ~4 GB a run at M = 16384 before each is verified and removed); its small files are copied.
# Writes OUTDIR/{machine.txt, clean_4096.log, clean_4096/ (results.json, runs.log, runner/*.log, report/),
# fault_run.log, fault_validate.log, fault_scatter.log, clean_16384.log, clean_16384/, summary.txt}.
# Usage: [BUDGET=225 PYTHON=python3 M=4096 M_LARGE=16384 IMPL=python/gemmar_torch_impl.py EXTRA="-n 1024 ..."] \
#          scripts/device_validate_python.sh [GEMMAR [OUTDIR]]      (OUTDIR default $OUT)
#   IMPL: a file with TorchGemmAr, skip_gather and scatter_not_narrowed (tests/data/python/fake_gemm_ar.py's FakeGemmAr stands in on a CPU:
#   IMPL_CLEAN=FakeGemmAr PYTHON=/usr/bin/python3 EXTRA="-n 1024 -k 256 --world 4" M=512 M_LARGE=1024);
#   EXTRA: options added to every gemmar call; M_LARGE=0 skips step 4.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_lib.sh
unpack_dev
G=${1:-.dev/cand/gemmar}
OUT=${2:-${OUT:?output dir (second argument or $OUT)}}
[[ -x $G ]] || { echo "device_validate_python.sh: no gemmar at $G (scripts/device_pack.sh)"; exit 2; }
PY=${PYTHON:-python3}
M=${M:-4096}
M_LARGE=${M_LARGE:-16384}
BUDGET=${BUDGET:-225}
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The runner, the implementations and the report package from this checkout, wherever the binary's data lies.
export GEMMAR_PYTHON_DIR=$PWD/python GEMMAR_REPORTS_DIR=$PWD/reports
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv
  "$PY" -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
  nproc; df -h "$WORK" | tail -1; } > "$OUT/machine.txt" 2>&1
report=--no-report
/usr/bin/python3 -c "import matplotlib" 2>/dev/null && report=""
IMPL=${IMPL:-python/gemmar_torch_impl.py}
CLEAN=${IMPL_CLEAN:-TorchGemmAr}
read -r -a EXTRA_ARGS <<< "${EXTRA:-}"
# clean M SECONDS: step 1 (or 4) into OUT/clean_M.log and OUT/clean_M/.
clean() {
  local m=$1 limit=$2 t0=$SECONDS
  echo "\$ gemmar validate --backend python --impl $IMPL:$CLEAN -m $m ${EXTRA:-}" > "$OUT/clean_$m.log"
  timeout -k 10 "$limit" "$G" validate --backend python --impl "$IMPL:$CLEAN" --python "$PY" -m "$m" \
    --out "$WORK/clean_$m" $report "${EXTRA_ARGS[@]}" >> "$OUT/clean_$m.log" 2>&1
  echo "rc=$? seconds=$((SECONDS - t0))" >> "$OUT/clean_$m.log"
  mkdir -p "$OUT/clean_$m"
  for f in results.json runs.log runner report; do
    [ -e "$WORK/clean_$m/$f" ] && cp -r "$WORK/clean_$m/$f" "$OUT/clean_$m/"
  done
  rm -rf "$WORK/clean_$m/dumps"
}
clean "$M" 150
t1=$SECONDS
{ echo "\$ gemmar run --backend python --impl $IMPL:skip_gather -m $M --mode split-sdma --json ${EXTRA:-}"
  timeout -k 10 60 "$G" run --backend python --impl "$IMPL:skip_gather" --python "$PY" -m "$M" --mode split-sdma \
    --json "${EXTRA_ARGS[@]}"
  echo "rc=$? seconds=$((SECONDS - t1))"; } > "$OUT/fault_run.log" 2>&1
t2=$SECONDS
{ echo "\$ gemmar validate --backend python --impl $IMPL:skip_gather -m $M --no-report ${EXTRA:-}"
  timeout -k 10 60 "$G" validate --backend python --impl "$IMPL:skip_gather" --python "$PY" -m "$M" \
    --out "$WORK/fault" --no-report "${EXTRA_ARGS[@]}"
  echo "rc=$? seconds=$((SECONDS - t2))"; } > "$OUT/fault_validate.log" 2>&1
t3=$SECONDS
{ echo "\$ gemmar run --backend python --impl $IMPL:scatter_not_narrowed -m $M --mode fused-sdma --scatter-dtype fp8 --json ${EXTRA:-}"
  timeout -k 10 60 "$G" run --backend python --impl "$IMPL:scatter_not_narrowed" --python "$PY" -m "$M" \
    --mode fused-sdma --scatter-dtype fp8 --json "${EXTRA_ARGS[@]}"
  echo "rc=$? seconds=$((SECONDS - t3))"; } > "$OUT/fault_scatter.log" 2>&1
left=$((BUDGET - SECONDS - 15))
if [[ $M_LARGE != 0 ]] && ((left >= 30)); then clean "$M_LARGE" "$left"; fi
# One line per run: config, M, verdict, error codes, elements compared of M*N*W, wrong, relL2, time; then the faults.
/usr/bin/python3 - "$OUT" "$M" "$M_LARGE" > "$OUT/summary.txt" 2>&1 <<'PY'
import json, os, re, sys
out, m_small, m_large = sys.argv[1], sys.argv[2], sys.argv[3]
def rc(path):
    try:
        m = re.findall(r"^rc=(-?\d+) seconds=(\d+)", open(path).read(), re.M)
    except OSError:
        return ("not run", "0")
    return m[-1] if m else ("?", "?")
def codes(run, severity):
    return sorted(f["code"] for f in run.get("findings", []) if f.get("severity") == severity)
def clean(m, expected):
    code, secs = rc(os.path.join(out, "clean_%s.log" % m))
    print(f"clean validate M={m}: rc={code} (expected {expected}) in {secs} s")
    try:
        res = json.load(open(os.path.join(out, "clean_%s" % m, "results.json")))
        st = res.get("selftest", {})
        print("  self-test:", "pass" if st.get("pass") else "FAIL",
              [c["config"] + (": " + c["message"] if c.get("message") else "") for c in st.get("configs", [])])
        print("  declined:", res.get("python", {}).get("declined"))
    except (OSError, ValueError) as e:
        print("  no results.json (cut short?):", e)
    try:
        lines = [json.loads(l.split(" ", 1)[1]) for l in open(os.path.join(out, "clean_%s" % m, "runs.log"))
                 if l.startswith("RESULT_JSON ")]
    except (OSError, ValueError) as e:
        print("  no runs.log:", e)
        return
    passed = sum(r.get("verdict") == "pass" for r in lines)
    print(f"  runs: {len(lines)}, passed {passed}")
    for r in lines:
        full = r.get("m", 0) * r.get("n", 0) * r.get("world_size", 0)
        print(f"  {r.get('mode')}/{r.get('gather_dtype')}/{r.get('gather_transport')} scatter={r.get('scatter_dtype')}"
              f" M={r.get('m')} {r.get('verdict')} errors={codes(r, 'error')} warnings={codes(r, 'warning')}"
              f" checked={r.get('checked_elements')} of {full} wrong={r.get('wrong_elements')}"
              f" rel_l2={r.get('rel_l2')} time_us={r.get('max_rank_time_us')} timing={r.get('timing')}"
              f" nondeterministic={r.get('nondeterministic_iterations', [])}")
clean(m_small, 0)
def fault_run(log, what, expected):
    code, secs = rc(os.path.join(out, log))
    print(f"fault {what}, gemmar run: rc={code} (expected 1: {expected}) in {secs} s")
    text = open(os.path.join(out, log)).read()
    start = text.find("{")
    try:
        doc = json.JSONDecoder().raw_decode(text[start:])[0]
        for run in doc.get("runs", []):
            r = run.get("record", {})
            print(f"  errors={codes(run, 'error')} first={r.get('first_wrong_element')} rel_l2={r.get('rel_l2')}"
                  f" per_slice_rel_l2={r.get('per_slice_rel_l2')}")
    except ValueError as e:
        print("  no JSON:", e)
fault_run("fault_run.log", "skip-gather", "COLLECTIVE_MISMATCH, RANK_DISAGREEMENT, SILENT_TRANSFER at rank 3, slice 5")
code, secs = rc(os.path.join(out, "fault_validate.log"))
print(f"fault skip-gather, gemmar validate: rc={code} (expected 1, stopped by the self-test) in {secs} s")
for line in open(os.path.join(out, "fault_validate.log")):
    if "self_test failed" in line or line.startswith("FAILED"):
        print("  " + line.strip())
fault_run("fault_scatter.log", "scatter-not-narrowed", "COLLECTIVE_MISMATCH, WIRE_NOT_USED")
if m_large != "0":
    clean(m_large, "0, or 124 when cut at the budget")
PY
cat "$OUT/summary.txt"
