#!/usr/bin/python3
"""One line per run of a `gemmar run --json` document: config, verdict, wrong elements, relL2, the op's time,
the unfused baseline and the fused-vs-unfused ratio, and each phase's time (us). Usage: e2e_summary.py FILE..."""
import json
import sys


def lines(doc):
    for run in doc.get("runs", []):
        rec = run.get("record", {})
        phases = rec.get("phases_us") or rec.get("phases") or {}
        if isinstance(phases, list):
            phases = {p.get("name", "?"): p.get("us", p.get("time_us")) for p in phases}
        base = rec.get("unfused_baseline_us")
        t = rec.get("max_rank_time_us") or run.get("time_us")
        ratio = "%.3f" % (base / t) if base and t else "-"
        ph = " ".join("%s=%.1f" % (k, v) for k, v in phases.items() if isinstance(v, (int, float)))
        yield "%-40s %-5s wrong=%s relL2=%.3g t=%s base=%s unfused/fused=%s %s" % (
            run.get("config"), run.get("verdict"), rec.get("wrong_elements"), rec.get("rel_l2") or 0,
            "%.1f" % t if t else "-", "%.1f" % base if base else "-", ratio, ph)


for path in sys.argv[1:]:
    with open(path) as f:
        for line in lines(json.load(f)):
            print(line)
