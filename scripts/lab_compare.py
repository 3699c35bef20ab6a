#!/usr/bin/python3
"""The lab check's summary (scripts/device_lab_check.sh): the testbed's lines by concern and its failures, and the
op end to end, this build beside main (main's record, and main's binaries on the same card where they ran).
Usage: lab_compare.py TESTBED_LOG [--e2e LABEL=FILE ...]   (LABEL: cand, base or record; FILE: gemmar run --json)"""
import collections
import json
import statistics
import sys


def testbed(path):
    lines = []
    for line in open(path, errors="replace"):
        if line.startswith("TESTBED_JSON ") or line.startswith("TESTBED_SUMMARY "):
            tag, _, body = line.partition(" ")
            lines.append((tag, json.loads(body)))
    by = collections.defaultdict(collections.Counter)
    fails = []
    for tag, j in lines:
        if tag != "TESTBED_JSON":
            print("summary:", json.dumps(j))
            continue
        c = by[j["concern"]]
        if not j.get("applies", True):
            c["not applicable"] += 1
        elif not j.get("ran"):
            c["not run: " + j.get("why", "?")] += 1
        elif j.get("checked"):
            c["checked"] += 1
        else:
            c["FAILED"] += 1
            fails.append(j)
    for concern, c in by.items():
        print("%-9s %s" % (concern, ", ".join("%s %d" % kv for kv in sorted(c.items()))))
    for j in fails:
        print("FAILED", json.dumps(j)[:400])
    print("gemm, the op's choice beside cuBLASLt (ratio = cuBLASLt us / ours us) and each lab variant against it:")
    product = {}
    for tag, j in lines:
        if tag == "TESTBED_JSON" and j["concern"] == "gemm" and j.get("ours_us"):
            key = (j["quant"], j["m"], j["k"])
            if j["subject"] == "product":
                product[key] = j["ours_us"]
                print("  %-10s m=%-6d k=%-5d ours %9.2f us  cuBLASLt %9.2f us  ratio %.3f" % (
                    j["quant"], j["m"], j["k"], j["ours_us"], j.get("vendor_us", -1), j.get("ratio", -1)))
            elif not j["product"] and key in product:
                print("    %-20s %9.2f us  %.3f of the op's time" % (j["subject"], j["ours_us"],
                                                                     j["ours_us"] / product[key]))
    for tag, j in lines:
        if tag == "TESTBED_JSON" and j["concern"] in ("widen", "pipeline") and j.get("vs_product"):
            where = j.get("grid", j.get("config", ""))
            print("  %-8s %-22s %-28s op's time / its: %.3f" % (j["concern"], j["subject"], where, j["vs_product"]))


def e2e(specs):
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    for spec in specs:
        label, _, path = spec.partition("=")
        try:
            doc = json.load(open(path))
        except (OSError, ValueError) as e:
            print("e2e %s: %s" % (path, e))
            continue
        for run in doc.get("runs", []):
            r = run.get("record", {})
            key = (run.get("config"), r.get("m"))
            rows[key][label].append((r.get("max_rank_time_us") or run.get("time_us") or 0,
                                     (r.get("phases_us") or {}).get("gemm", 0), r.get("wrong_elements"),
                                     run.get("verdict")))
    print("end to end: max rank time us (median of the runs), the GEMM phase, wrong elements, verdicts")
    print("  %-42s %6s | %-24s | %-24s | %-24s | cand/base cand/record" % ("config", "m", "record (main)",
                                                                           "base (main, this card)", "cand"))
    for key in sorted(rows, key=lambda k: (k[1] or 0, k[0] or "")):
        cells, med = [], {}
        for label in ("record", "base", "cand"):
            v = rows[key].get(label, [])
            if not v:
                cells.append("-")
                continue
            med[label] = statistics.median(x[0] for x in v)
            wrong = sum(x[2] or 0 for x in v)
            verdicts = ",".join(sorted(set(str(x[3]) for x in v)))
            cells.append("%8.1f g=%7.1f w=%d %s" % (med[label], statistics.median(x[1] for x in v), wrong, verdicts))
        ratio = lambda a, b: "%.3f" % (med[a] / med[b]) if a in med and b in med and med[b] else "-"
        print("  %-42s %6s | %-24s | %-24s | %-24s | %s %s" % (key[0], key[1], *cells, ratio("cand", "base"),
                                                              ratio("cand", "record")))


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and not args[0].startswith("--"):
        testbed(args.pop(0))
    if args and args[0] == "--e2e":
        e2e(args[1:])
