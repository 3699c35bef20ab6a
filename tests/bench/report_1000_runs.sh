#!/bin/sh
# Benchmark (not a timed test): `gemmar report` on a sweep of N RESULT_JSON runs (default 1000) shaped like a
# real one: 11 configs x 4 values of M x repetitions, every run with per-rank times and per-rank relL2, measured
# phases on a third of them, a few failing runs with findings, torchrun rank prefixes and ANSI colour on the
# lines, plus a truncated line and a wrong-typed one (skipped and listed). Target: under 5 s wall and 200 MB
# peak RSS for 1000 runs (docs/report.md). Prints elapsed seconds, peak RSS and the widest figure.
#
#   tests/bench/report_1000_runs.sh [BUILD_DIR (build)] [RUNS (1000)]
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
runs=${2:-1000}
gemmar=$build/validate/gemmar
[ -x "$gemmar" ] || { echo "report_1000_runs: $gemmar not built" >&2; exit 3; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gemmar_bench_report.XXXXXX")
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 -I - "$runs" "$work/sweep.log" <<'PY'
import json, random, sys
n, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(20261202)
configs = [("gemm-only", "bf16", "sdma"), ("split-sdma", "bf16", "sdma"), ("fused-sdma", "bf16", "sdma"),
           ("fused-sdma", "fp8", "sdma"), ("fused-sdma", "fp8", "lsa"), ("split-lsa", "bf16", "lsa"),
           ("fused-lsa", "bf16", "sdma"), ("fused-lsa", "fp8", "sdma"), ("fused-lsa", "fp8", "lsa"),
           ("split-sdma", "fp8", "sdma"), ("split-sdma", "fp8", "lsa")]
ms = [2048, 4096, 8192, 16384]
floor = {"bf16": 0.00235, "fp8": 0.0249}
with open(path, "w") as out:
    out.write("W1202 torchrun: *****************************************\n")
    for i in range(n):
        mode, wire, tr = configs[i % len(configs)]
        m = ms[(i // len(configs)) % len(ms)]
        base = (40 + 70 * m / 1024) * (0.55 if mode == "gemm-only" else 1.0) * (0.9 if wire == "fp8" else 1.0)
        per_rank = [round(base * (1 + rng.gauss(0, 0.01)), 1) for _ in range(8)]
        fail = i % 97 == 13
        rel = 0.87 if fail else floor[wire] * (1 + rng.gauss(0, 0.01))
        rec = {"mode": mode, "world_size": 8, "m": m, "n": 7168, "k": 2048, "quant": "blockscale",
               "gather_dtype": wire, "gather_transport": tr, "timing": "graph",
               "max_rank_time_us": max(per_rank), "per_rank_time_us": per_rank, "rel_l2": rel,
               "validated": not fail, "per_rank_rel_l2": [rel * (1 + rng.gauss(0, 0.002)) for _ in range(8)],
               "verdict": "fail" if fail else "pass",
               "findings": [{"code": "SILENT_TRANSFER", "severity": "error",
                             "message": f"relL2 {rel:.3g}: the copy-engine puts moved nothing"}] if fail else []}
        if mode != "gemm-only" and tr == "lsa" and wire == "fp8":
            rec["pull_blocks"] = [32, 64, 128][i % 3]
        if i % 3 == 0:
            g = round(base * 0.4, 1)
            rec["phases_us"] = {"gemm": g, "reduce": round(base * 0.05, 1), "gather": round(base - g * 1.15, 1)}
        out.write(f"[default{i % 8}]:\x1b[32mRESULT_JSON {json.dumps(rec)}\x1b[0m\n")
        if i % 50 == 0:
            out.write(f"[default{i % 8}]: step {i}: some other log line {{not json}}\n")
    out.write('[default0]:RESULT_JSON {"mode": "fused-sdma", "world_size": 8, "m": 16384, "n": 7168, "k": 20\n')
    out.write('[default0]:RESULT_JSON {"mode": "fused-sdma", "world_size": "8", "m": 16384, "n": 7168, "k": 2048}\n')
    out.write("Traceback (most recent call last):\n  File \"bench.py\", line 1\nRuntimeError: NCCL timeout\n")
PY

/usr/bin/time -v "$gemmar" report "$work/sweep.log" --out "$work/out" >"$work/stdout" 2>"$work/time" || {
  cat "$work/stdout" "$work/time" >&2; exit 1; }
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time")
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time")
widest=$(/usr/bin/python3 -I -c '
import struct, sys, glob
w = []
for p in sorted(glob.glob(sys.argv[1] + "/*.png")):
    b = open(p, "rb").read(24)
    w.append((struct.unpack(">II", b[16:24]), p.rsplit("/", 1)[1]))
print(", ".join(f"{n} {a}x{b}" for (a, b), n in w))' "$work/out")
html=$(du -k "$work/out/index.html" "$work/out/runs.html" | awk '{printf "%s %s KB  ", $2, $1}' | sed "s|$work/out/||g")
echo "runs: $runs  wall: $wall  peak RSS: $((rss / 1024)) MB"
echo "figures: $widest"
echo "pages: $html"
head -1 "$work/stdout"
