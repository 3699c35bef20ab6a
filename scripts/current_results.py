#!/usr/bin/python3
"""The current measured table of the docs, generated from the latest device record (never edited by hand).

Usage: current_results.py [--check | --write] [--root ROOT]

A record is a directory under ROOT/docs/results in the layout scripts/device_record.sh writes: `machine.txt` (its
first line the UTC date), `blockscale/shapes.log` and `ptpc/shapes.log` (GEMM_JSON lines: our GEMM beside
cuBLASLt, one line per process and shape), `blockscale/concurrent.log` (GEMM_CONCURRENT_JSON), `blockscale/data.log`
(DATA_JSON), and where present `regimes.log` (ITERS300 GEMM_JSON, GEMM_BURST_JSON), `gemm_nan.txt` (GEMM_NAN_JSON)
and `e2e_*.json[.gz]` (`gemmar run --backend gpu --all-configs --json`). The latest is the one whose machine.txt
date is latest. Every number printed is read from its files or is a median, range or count of them.

Without an option: print the tables. `--write`: put them between the markers in docs/kernels.md (the full table)
and README.md (one line), `<!-- current-results:NAME begin -->` ... `<!-- current-results:NAME end -->`.
`--check`: exit 1 naming each file whose text between its markers differs from what would be written.
Exit 2 on bad usage, a missing marker or no record.
"""
import argparse
import datetime
import glob
import gzip
import json
import os
import re
import statistics
import sys

SHAPES = [(7168, 2048), (5120, 1024), (5120, 2048)]
MS = [1000, 4096, 8192, 16384]
# The docs that carry a generated block: (file under ROOT, block name).
TARGETS = [("docs/kernels.md", "table"), ("README.md", "status")]


class Bad(Exception):
    pass


def tagged(path, tag):
    """The JSON objects of the lines of `path` that start with `tag` (and, for GEMM_JSON, not ITERS300)."""
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            if line.startswith(tag + " "):
                out.append(json.loads(line[len(tag) + 1:]))
    return out


def record_date(path):
    with open(path) as f:
        first = f.readline().strip()
    for fmt in ("%a %b %d %I:%M:%S %p UTC %Y", "%a %b %d %H:%M:%S UTC %Y"):
        try:
            return datetime.datetime.strptime(re.sub(r"\s+", " ", first), fmt)
        except ValueError:
            pass
    raise Bad("%s: its first line is no `date -u` output: %r" % (path, first))


def latest_record(root):
    found = []
    for shapes in glob.glob(os.path.join(root, "docs/results/**/blockscale/shapes.log"), recursive=True):
        rec = os.path.dirname(os.path.dirname(shapes))
        machine = os.path.join(rec, "machine.txt")
        if os.path.exists(machine) and os.path.exists(os.path.join(rec, "blockscale.summary")):
            found.append((record_date(machine), rec))
    if not found:
        raise Bad("no record under %s/docs/results (a directory with machine.txt, blockscale.summary and "
                  "blockscale/shapes.log)" % root)
    return max(found)


def device_name(rec):
    with open(os.path.join(rec, "machine.txt")) as f:
        lines = f.read().splitlines()
    return lines[2].split(",")[0].strip() if len(lines) > 2 else "?"


def gemm_alone(rec):
    """(quant, n, k, m) -> ratios (cuBLASLt us / ours us) over the record's processes."""
    r = {}
    for quant in ("blockscale", "ptpc"):
        for j in tagged(os.path.join(rec, quant, "shapes.log"), "GEMM_JSON"):
            if not j.get("checked"):
                raise Bad("%s/%s/shapes.log: a GEMM at m=%d failed its check" % (rec, quant, j["m"]))
            r.setdefault((j["quant"], j["n"], j["k"], j["m"]), []).append(j["ratio"])
    return r


def cell(ratios):
    if not ratios:
        return "-"
    med = "%.3f" % statistics.median(ratios)
    if len(ratios) == 1:
        return med
    return "%s (%.3f-%.3f)" % (med, min(ratios), max(ratios))


def e2e_runs(rec):
    sets = []
    for path in sorted(glob.glob(os.path.join(rec, "e2e_*.json")) + glob.glob(os.path.join(rec, "e2e_*.json.gz"))):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            try:
                doc = json.load(f)
            except ValueError as e:
                raise Bad("%s: %s" % (path, e))
        runs = [run for run in doc.get("runs", []) if run.get("record")]
        if runs:
            sets.append((os.path.basename(path), runs))
    return sets


def span(values, fmt="%.3f"):
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return fmt % lo if fmt % lo == fmt % hi else (fmt + "-" + fmt) % (lo, hi)


def e2e_rows(sets):
    rows = []
    for name, runs in sets:
        recs = [run["record"] for run in runs]
        first = recs[0]
        shape = "%s %d x %d x %d" % (first["quant"], first["m"], first["n"], first["k"])
        gemm_only = [r["phases_us"]["gemm"] for r in recs if r["mode"] == "gemm-only"]
        phase, vs_unfused = {}, {}
        for r in recs:
            if r["mode"] in ("fused-sdma", "fused-lsa"):
                if gemm_only and r.get("phases_us", {}).get("gemm"):
                    phase.setdefault(r["mode"], []).append(gemm_only[0] / r["phases_us"]["gemm"])
                if r.get("unfused_baseline_us") and r.get("max_rank_time_us"):
                    vs_unfused.setdefault(r["mode"], []).append(r["unfused_baseline_us"] / r["max_rank_time_us"])
        wrong = sum(int(r.get("wrong_elements", 0)) for r in recs)
        passed = sum(1 for run in runs if run.get("verdict") == "pass")
        rows.append("| %s | %d of %d | %d | %s | %s | %s | %s |" % (
            shape, passed, len(runs), wrong, span(phase.get("fused-sdma", [])), span(phase.get("fused-lsa", [])),
            span(vs_unfused.get("fused-sdma", [])), span(vs_unfused.get("fused-lsa", []))))
    return rows


def link(rec, root, from_dir):
    return os.path.relpath(rec, os.path.join(root, from_dir)) + "/"


def table(root):
    date, rec = latest_record(root)
    rel = os.path.relpath(rec, root)
    g = gemm_alone(rec)
    blockscale_procs = max((len(v) for k, v in g.items() if k[0] == "blockscale"), default=0)
    ptpc_procs = max((len(v) for k, v in g.items() if k[0] == "ptpc"), default=0)
    procs = lambda n: "%d process%s" % (n, "" if n == 1 else "es")
    out = ["The latest record, [%s](%s): %s, %s UTC, a device record (the GEMM alone: %s "
           "per blockscale shape, %s per ptpc shape; the median, and the range over processes in brackets)." % (
               rel, link(rec, root, "docs"), device_name(rec), date.strftime("%Y-%m-%d %H:%M"),
               procs(blockscale_procs), procs(ptpc_procs)), ""]
    out.append("| GEMM alone, cuBLASLt us / ours us (> 1: ours faster) | M = %s |" % " | ".join(str(m) for m in MS))
    out.append("|---|" + "---|" * len(MS))
    for quant in ("blockscale", "ptpc"):
        for n, k in SHAPES:
            out.append("| %s (%d, %d) | %s |" % (quant, n, k, " | ".join(cell(g.get((quant, n, k, m), [])) for m in MS)))
    out += ["", "| measure | value |", "|---|---|"]
    conc = tagged(os.path.join(rec, "blockscale", "concurrent.log"), "GEMM_CONCURRENT_JSON")
    if conc:
        out.append("| eight GEMMs at once on the device (the one-device gemm phase), cuBLASLt's eight / ours | %s |" %
                   ", ".join("%.3f at %d x %d x %d" % (j["ratio_concurrent"], j["m"], j["n"], j["k"]) for j in conc))
    regimes = os.path.join(rec, "regimes.log")
    if os.path.exists(regimes):
        iters, burst = [], []
        with open(regimes) as f:
            for line in f:
                if line.startswith("ITERS300 GEMM_JSON "):
                    iters.append(json.loads(line[len("ITERS300 GEMM_JSON "):]))
                elif line.startswith("GEMM_BURST_JSON "):
                    burst.append(json.loads(line[len("GEMM_BURST_JSON "):]))
        shape = lambda j: "%d x %d x %d" % (j["m"], j["n"], j["k"])
        out.append("| 300 launches of each, alternating (the power-capped clock), cuBLASLt / ours | %s |" %
                   ", ".join("%.3f at %s" % (j["ratio"], shape(j)) for j in iters))
        out.append("| %s launches of each back to back, cuBLASLt / ours | %s |" % (
            "/".join(sorted({str(j["launches"]) for j in burst})), ", ".join("%.3f at %s" % (j["ratio"], shape(j))
                                                                             for j in burst)))
    nan = tagged(os.path.join(rec, "gemm_nan.txt"), "GEMM_NAN_JSON")
    if nan:
        out.append("| a NaN in A and in B stored as the canonical bf16 NaN (`gemm-nan`) | %s |" %
                   ", ".join("%s %s" % (j["quant"], "ok" if j["ok"] else "FAILED") for j in nan))
    data = tagged(os.path.join(rec, "blockscale", "data.log"), "DATA_JSON")
    if data:
        d0 = data[0]
        pulls = ", ".join("%.3f at %d blocks" % (j["pull_vs_copy"], j["pull_blocks"]) for j in data)
        out.append("| the fp8 wire's kernels, GB/s over cudaMemcpy's (%d x %d) | quantize %.3f, dequantize %.3f, "
                   "the pull %s |" % (d0["rows"], d0["n"], d0["quantize_vs_copy"], d0["dequantize_vs_copy"], pulls))
    sets = e2e_runs(rec)
    if sets:
        out += ["", "End to end, `gemmar run --backend gpu --all-configs` (8 ranks on the device; GEMM phase: gemm-only's "
                "time over the fused mode's; vs unfused: cuBLASLt + split-sdma's time over the fused mode's):", "",
                "| config set | pass | wrong elements | fused-sdma GEMM phase | fused-lsa GEMM phase | fused-sdma vs "
                "unfused | fused-lsa vs unfused |", "|---|---|---|---|---|---|---|"]
        out += e2e_rows(sets)
    return out


def status(root):
    date, rec = latest_record(root)
    g = gemm_alone(rec)
    bs = [statistics.median(v) for k, v in g.items() if k[0] == "blockscale"]
    runs = [run for _, rs in e2e_runs(rec) for run in rs]
    wrong = sum(int(run["record"].get("wrong_elements", 0)) for run in runs)
    return ["Latest device record (%s, %s): our blockscale GEMM %sx as fast as cuBLASLt's at each of %d shapes "
            "(M 1000-16384); %d configs end to end, %d wrong elements ([the table](docs/kernels.md#current-measurements))." % (
                device_name(rec), date.strftime("%Y-%m-%d"), span(bs), len(bs), len(runs), wrong)]


def block_re(name):
    return re.compile(r"(<!-- current-results:%s begin[^>]*-->\n)(.*?)(<!-- current-results:%s end -->)" %
                      (name, name), re.S)


def render(root, name):
    return "\n".join(table(root) if name == "table" else status(root)) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    a = ap.parse_args(argv[1:])
    try:
        if not (a.check or a.write):
            for _, name in TARGETS:
                sys.stdout.write(render(a.root, name) + "\n")
            return 0
        stale = []
        for rel, name in TARGETS:
            path = os.path.join(a.root, rel)
            if not os.path.exists(path):
                raise Bad("%s: no such file" % path)
            with open(path) as f:
                text = f.read()
            m = block_re(name).search(text)
            if not m:
                raise Bad("%s: no `<!-- current-results:%s begin -->` ... `<!-- current-results:%s end -->` markers" %
                          (path, name, name))
            want = render(a.root, name)
            if m.group(2) != want:
                if a.check:
                    stale.append(path)
                else:
                    with open(path + ".tmp", "w") as f:
                        f.write(text[:m.start(2)] + want + text[m.end(2):])
                    os.replace(path + ".tmp", path)
        for path in stale:
            print("%s: the current-results table differs from the latest record; run scripts/current_results.py "
                  "--write" % path, file=sys.stderr)
        return 1 if stale else 0
    except (Bad, OSError, KeyError, ValueError) as e:
        print("current_results.py: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
