#!/usr/bin/python3
"""gemmar report: phase-breakdown figures (PNG) and an index.html from gemmar / benchmark results.

Run by `gemmar report RESULTS... --out DIR` (validate/cmd_report.cpp) with Debian's /usr/bin/python3 and
python3-matplotlib; stdlib + numpy + matplotlib only. The input schema is documented in docs/report.md.

Exit codes are distinct from Python's own (1 = uncaught exception, 2 = argparse) so the C++ side can map
them without guessing: 10 = bad results file (gemmar exit 2), 11 = matplotlib/numpy missing (gemmar exit 3).
Every error is one line on stderr naming the file and the line or field.
"""

import argparse
import html
import json
import math
import os
import sys

EXIT_BAD_INPUT = 10
EXIT_ENVIRONMENT = 11

PHASE_ORDER = ["gemm", "scatter", "drain", "reduce", "quantize", "gather", "dequantize", "pull", "allreduce"]
# One fixed colour per phase so the same phase looks the same in every figure and every report.
PHASE_COLORS = {
    "gemm": "#4c72b0", "scatter": "#dd8452", "drain": "#c9a26b", "reduce": "#55a868", "quantize": "#8172b3",
    "gather": "#c44e52", "dequantize": "#937860", "pull": "#da8bc3", "allreduce": "#8c8c8c",
}
OTHER_COLOR = "#cccccc"
MODE_ORDER = ["gemm-only", "split-sdma", "fused-sdma", "split-lsa", "fused-lsa"]
# The benchmark's own pass windows (SPEC 1.2), drawn beside the predicted floors.
BENCH_WINDOW = {"bf16": (None, 3e-3), "fp8": (5e-3, 4e-2)}


class BadInput(Exception):
    """A results file that cannot be read: the message names the file and the line or field."""


def fail_input(msg):
    raise BadInput(msg)


# ----------------------------------------------------------------------------------------------------------
# Reading. Field names may drift between producers, so every getter takes a list of accepted spellings and
# checks the type of what it finds; a wrong type is an error naming the field, a missing optional is None.

def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def get_field(obj, names, kind, where, required=False):
    for name in names:
        if name in obj and obj[name] is not None:
            v = obj[name]
            if kind == "num":
                if not is_num(v):
                    fail_input(f"{where}: field '{name}': expected a number, got {json.dumps(v)[:40]}")
                return float(v)
            if kind == "int":
                if is_num(v) and float(v).is_integer():
                    return int(v)
                fail_input(f"{where}: field '{name}': expected an integer, got {json.dumps(v)[:40]}")
            if kind == "str":
                if not isinstance(v, str):
                    fail_input(f"{where}: field '{name}': expected a string, got {json.dumps(v)[:40]}")
                return v
            if kind == "bool":
                if isinstance(v, bool):
                    return v
                if is_num(v) and v in (0, 1):
                    return bool(v)
                fail_input(f"{where}: field '{name}': expected true/false, got {json.dumps(v)[:40]}")
            if kind == "numlist":
                if not isinstance(v, list) or not all(is_num(x) for x in v):
                    fail_input(f"{where}: field '{name}': expected a list of numbers")
                return [float(x) for x in v]
            if kind == "obj":
                if not isinstance(v, dict):
                    fail_input(f"{where}: field '{name}': expected an object")
                return v
            if kind == "list":
                if not isinstance(v, list):
                    fail_input(f"{where}: field '{name}': expected a list")
                return v
            raise AssertionError(kind)
    if required:
        fail_input(f"{where}: missing required field '{names[0]}'")
    return None


def read_phases(v, where, field):
    """Phases as {name: us} from either {"gemm": 441.9, ...} or [{"name": "gemm", "us": 441.9, ...}, ...]."""
    if v is None:
        return None
    out = {}
    if isinstance(v, dict):
        for name, us in v.items():
            if us is None:
                continue  # a phase the config does not have (the measured data file writes null)
            if not is_num(us):
                fail_input(f"{where}: field '{field}.{name}': expected a number, got {json.dumps(us)[:40]}")
            out[str(name)] = float(us)
        return out
    if isinstance(v, list):
        for i, p in enumerate(v):
            if not isinstance(p, dict):
                fail_input(f"{where}: field '{field}[{i}]': expected an object with name and us")
            name = get_field(p, ["name", "phase"], "str", f"{where}: {field}[{i}]", required=True)
            us = get_field(p, ["us", "time_us", "total_us"], "num", f"{where}: {field}[{i}]", required=True)
            out[name] = out.get(name, 0.0) + us
        return out
    fail_input(f"{where}: field '{field}': expected an object or a list of phases")


def read_model(m, where):
    if m is None:
        return None
    if not isinstance(m, dict):
        fail_input(f"{where}: field 'model': expected an object")
    return {
        "total_us": get_field(m, ["total_us", "total"], "num", f"{where}: model"),
        "lower_bound_us": get_field(m, ["lower_bound_us", "lower_bound"], "num", f"{where}: model"),
        "phases": read_phases(m.get("phases"), where, "model.phases") or {},
        "bounds": {p.get("name"): p.get("bound") for p in m.get("phases", []) if isinstance(p, dict)}
        if isinstance(m.get("phases"), list) else {},
    }


def read_floors(f, where, field):
    if f is None:
        return None
    if not isinstance(f, dict):
        fail_input(f"{where}: field '{field}': expected an object like {{\"bf16\": x, \"fp8\": y}}")
    out = {}
    for key, v in f.items():
        if v is None:
            continue
        if is_num(v):
            out[key] = float(v)
        elif key in ("bf16", "fp8"):
            fail_input(f"{where}: field '{field}.{key}': expected a number, got {json.dumps(v)[:40]}")
    return out


def read_findings(v, where):
    if v is None:
        return []
    if not isinstance(v, list):
        fail_input(f"{where}: field 'findings': expected a list")
    out = []
    for i, f in enumerate(v):
        if isinstance(f, str):
            out.append({"code": f, "severity": "", "message": ""})
            continue
        if not isinstance(f, dict):
            fail_input(f"{where}: field 'findings[{i}]': expected an object with code and message")
        w = f"{where}: findings[{i}]"
        out.append({"code": get_field(f, ["code"], "str", w, required=True),
                    "severity": get_field(f, ["severity"], "str", w) or "",
                    "message": get_field(f, ["message", "sentence"], "str", w) or ""})
    return out


def read_verdict(v, where):
    """Verdict as 'pass'/'fail'/None from a string, a bool or an object {"verdict"|"pass", "findings"}."""
    if v is None:
        return None, []
    if isinstance(v, bool):
        return ("pass" if v else "fail"), []
    if isinstance(v, str):
        if v not in ("pass", "fail"):
            fail_input(f"{where}: field 'verdict': expected \"pass\" or \"fail\", got {json.dumps(v)[:40]}")
        return v, []
    if isinstance(v, dict):
        inner, _ = read_verdict(v.get("verdict", v.get("pass")), where)
        return inner, read_findings(v.get("findings"), where)
    fail_input(f"{where}: field 'verdict': expected \"pass\"/\"fail\" or an object")


def normalize_run(rec, where, verdict=None, findings=None, context=None):
    """One run (a RESULT_JSON object, or a check/validate run's "record") in the report's own form."""
    if not isinstance(rec, dict):
        fail_input(f"{where}: expected a JSON object for a run")
    run = {"source": where, "floor_band": None}
    run["mode"] = get_field(rec, ["mode"], "str", where, required=True)
    run["m"] = get_field(rec, ["m", "M"], "int", where, required=True)
    run["n"] = get_field(rec, ["n", "N"], "int", where, required=True)
    run["k"] = get_field(rec, ["k", "K"], "int", where, required=True)
    run["world"] = get_field(rec, ["world_size", "world"], "int", where, required=True)
    run["quant"] = get_field(rec, ["quant"], "str", where) or "blockscale"
    run["wire"] = get_field(rec, ["gather_dtype", "wire"], "str", where) or "bf16"
    run["transport"] = get_field(rec, ["gather_transport", "transport"], "str", where) or "sdma"
    if run["mode"] == "split-lsa":
        run["wire"], run["transport"] = "bf16", "lsa"  # split-lsa's 2-stage all-reduce has no other wire
    run["pull_blocks"] = get_field(rec, ["pull_blocks"], "int", where)
    run["fuse_quantize"] = get_field(rec, ["fuse_quantize"], "bool", where)
    run["max_us"] = get_field(rec, ["max_rank_time_us", "total_us"], "num", where)
    run["per_rank_us"] = get_field(rec, ["per_rank_time_us"], "numlist", where) or []
    run["rel_l2"] = get_field(rec, ["rel_l2"], "num", where)
    run["validated"] = get_field(rec, ["validated"], "bool", where)
    run["per_rank_rel_l2"] = get_field(rec, ["per_rank_rel_l2"], "numlist", where) or []
    run["phases"] = read_phases(rec.get("phases_us"), where, "phases_us") or {}
    run["profile"] = get_field(rec, ["profile"], "str", where)
    run["backend"] = get_field(rec, ["backend"], "str", where)
    run["timing"] = get_field(rec, ["timing"], "str", where)
    v, f = read_verdict(rec.get("verdict"), where)
    f = f + read_findings(rec.get("findings"), where)
    if verdict is not None:
        v = verdict
    if findings:
        f = findings
    run["verdict"] = v
    run["findings"] = f
    run["model"] = read_model(rec.get("model"), where)
    run["floors"] = read_floors(rec.get("floor", rec.get("floors")), where, "floor")
    if context:
        if run["model"] is None and context.get("model") is not None:
            run["model"] = read_model(context.get("model"), where + " context")
        if run["floors"] is None:
            run["floors"] = read_floors(context.get("floors", context.get("floor")), where + " context",
                                        "context.floors")
        if run["profile"] is None and isinstance(context.get("profile"), str):
            run["profile"] = context["profile"]
        cm = context.get("model")
        if run["profile"] is None and isinstance(cm, dict) and isinstance(cm.get("profile"), str):
            run["profile"] = cm["profile"]
        # The band the verdict engine judged relL2 against (what "as the floor says" meant for this run).
        num = context.get("numerics")
        if isinstance(num, dict):
            lo = get_field(num, ["lower"], "num", where + " context.numerics")
            hi = get_field(num, ["upper"], "num", where + " context.numerics")
            if lo is not None and hi is not None:
                run["floor_band"] = (lo, hi)
            elif hi is not None:
                run["floor_band"] = (None, hi)
            exp = get_field(num, ["expected_floor"], "num", where + " context.numerics")
            if exp is not None:
                run["floors"] = dict(run["floors"] or {})
                run["floors"].setdefault(run["wire"], exp)
    if run["max_us"] is None and run["per_rank_us"]:
        run["max_us"] = max(run["per_rank_us"])
    return run


def config_label(run):
    if run["mode"] == "gemm-only":
        return "gemm-only"
    return f"{run['mode']} {run['wire']}/{run['transport']}"


def read_check_runs(doc, path, key="runs"):
    runs_json = doc.get(key)
    if not isinstance(runs_json, list):
        fail_input(f"{path}: field '{key}': expected a list of runs")
    runs = []
    for i, r in enumerate(runs_json):
        where = f"{path}: {key}[{i}]"
        if not isinstance(r, dict):
            fail_input(f"{where}: expected an object")
        verdict, _ = read_verdict(r.get("verdict"), where)
        findings = read_findings(r.get("findings"), where)
        context = r.get("context") if isinstance(r.get("context"), dict) else {}
        rec = r.get("record")
        if rec is None:  # a producer that flattened the record into the run itself
            rec = r
        run = normalize_run(rec, where, verdict, findings, context)
        src = r.get("source")
        if isinstance(src, str) and src:
            run["source"] = src
        run["origin"] = where
        runs.append(run)
    return runs


def read_model_doc(doc, path):
    m = read_model(doc, path)
    shape = doc.get("shape") if isinstance(doc.get("shape"), dict) else {}
    cfg = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    m["source"] = path
    m["profile"] = doc.get("profile")
    m["shape"] = shape
    m["config"] = cfg
    if not m["phases"]:
        fail_input(f"{path}: field 'phases': a model document needs at least one phase")
    return m


def read_sweep_doc(doc, path):
    pts = doc.get("points")
    if not isinstance(pts, list) or not pts:
        fail_input(f"{path}: field 'points': expected a non-empty list of {{value, total_us}}")
    points = []
    for i, p in enumerate(pts):
        if not isinstance(p, dict):
            fail_input(f"{path}: points[{i}]: expected an object")
        points.append((get_field(p, ["value", "pull_blocks", "blocks"], "num", f"{path}: points[{i}]", True),
                       get_field(p, ["total_us"], "num", f"{path}: points[{i}]", True)))
    points.sort()
    opt = doc.get("optimum") if isinstance(doc.get("optimum"), dict) else {}
    sweep = {"source": path, "points": points, "param": doc.get("param", "pull-blocks"),
             "optimum": get_field(opt, ["value"], "num", f"{path}: optimum"), "band": None,
             "shape": doc.get("shape") if isinstance(doc.get("shape"), dict) else {},
             "config": doc.get("config") if isinstance(doc.get("config"), dict) else {},
             "profile": doc.get("profile")}
    band = opt.get("band")
    if band is not None:
        if not (isinstance(band, list) and len(band) == 2 and all(is_num(b) for b in band)):
            fail_input(f"{path}: field 'optimum.band': expected [lo, hi]")
        sweep["band"] = (float(band[0]), float(band[1]))
    return sweep


class Inputs:
    def __init__(self):
        self.runs = []
        self.models = []
        self.sweeps = []
        self.profiles = []  # (source, profile object or name)
        self.machines = []
        self.files = []  # (path, kind, count)


def classify_doc(doc, path, inputs, line=None):
    where = f"{path}:{line}" if line is not None else path
    if not isinstance(doc, dict):
        fail_input(f"{where}: expected a JSON object")
    if "runs" in doc or "model_sweeps" in doc:
        runs = read_check_runs(doc, path) if "runs" in doc else []
        inputs.runs.extend(runs)
        sweeps = doc.get("model_sweeps") or []
        if not isinstance(sweeps, list):
            fail_input(f"{path}: field 'model_sweeps': expected a list")
        for i, s in enumerate(sweeps):
            if not isinstance(s, dict):
                fail_input(f"{path}: model_sweeps[{i}]: expected an object")
            inputs.sweeps.append(read_sweep_doc(s, f"{path}: model_sweeps[{i}]"))
        if doc.get("profile") is not None:
            inputs.profiles.append((path, doc["profile"]))
        if doc.get("machine") is not None:
            inputs.machines.append((path, doc["machine"]))
        kind = "validate results" if ("model_sweeps" in doc or "machine" in doc) else "check --json"
        return kind, len(runs) + len(sweeps)
    if "points" in doc:
        inputs.sweeps.append(read_sweep_doc(doc, where))
        return "model sweep --json", 1
    if "mode" in doc or "world_size" in doc:
        inputs.runs.append(normalize_run(doc, where))
        return "run record", 1
    if "phases" in doc and ("total_us" in doc or "lower_bound_us" in doc):
        m = read_model_doc(doc, where)
        inputs.models.append(m)
        if m["profile"] is not None:
            inputs.profiles.append((where, m["profile"]))
        return "model --json", 1
    fail_input(f"{where}: not a gemmar results document (expected RESULT_JSON lines, a run record, "
               f"{{\"runs\": ...}}, a model or a model sweep)")


def read_file(path, inputs):
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as e:
        fail_input(f"{path}: cannot read: {e.strerror}")
    stripped = text.strip()
    if not stripped:
        fail_input(f"{path}: empty file (expected RESULT_JSON lines or a gemmar JSON document)")
    # A whole-file JSON document first (check/validate/model output), else a log read line by line.
    if stripped[0] == "{":
        try:
            doc = json.loads(stripped)
        except json.JSONDecodeError as e:
            doc = None
            whole_err = e
        else:
            kind, n = classify_doc(doc, path, inputs)
            inputs.files.append((path, kind, n))
            return
    else:
        whole_err = None
    count = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        payload = None
        if "RESULT_JSON" in s:
            payload = s[s.index("RESULT_JSON") + len("RESULT_JSON"):].strip()
        elif s.startswith("{"):
            payload = s
        if payload is None:
            continue  # ordinary log line
        try:
            doc = json.loads(payload)
        except json.JSONDecodeError as e:
            if whole_err is not None and count == 0 and lineno == 1 and "RESULT_JSON" not in s:
                # A pretty-printed document that does not parse: report where the document broke.
                fail_input(f"{path}:{whole_err.lineno}: invalid JSON: {whole_err.msg} (column {whole_err.colno})")
            fail_input(f"{path}:{lineno}: invalid JSON: {e.msg} (column {e.colno})")
        if "RESULT_JSON" in s:
            inputs.runs.append(normalize_run(doc, f"{path}:{lineno}"))  # always one run of the benchmark
        else:
            classify_doc(doc, path, inputs, line=lineno)
        count += 1
    if count == 0:
        fail_input(f"{path}: no RESULT_JSON lines or gemmar JSON documents found")
    inputs.files.append((path, "log (RESULT_JSON lines)", count))


# ----------------------------------------------------------------------------------------------------------
# Figures.

def setup_matplotlib():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as e:
        sys.stderr.write(f"gemmar report: {sys.executable} cannot import {e.name or 'matplotlib'} "
                         f"(install python3-matplotlib, or point GEMMAR_PYTHON at an interpreter that has it)\n")
        sys.exit(EXIT_ENVIRONMENT)
    # Fixed rc: the same inputs give the same bytes on every machine (no user matplotlibrc leaks in).
    matplotlib.rcdefaults()
    matplotlib.rcParams.update({
        "font.size": 10, "font.family": "DejaVu Sans", "axes.titlesize": 11, "axes.labelsize": 10,
        "legend.fontsize": 8, "xtick.labelsize": 8, "ytick.labelsize": 9,
        "figure.figsize": (10, 6), "figure.dpi": 100, "savefig.dpi": 100,
        "axes.grid": True, "grid.alpha": 0.3, "path.simplify": False,
        "svg.hashsalt": "gemmar", "axes.axisbelow": True,
    })
    return matplotlib


def save(fig, outdir, name):
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, name), format="png", metadata={"Software": None})
    import matplotlib.pyplot as plt
    plt.close(fig)


def ordered_phases(names):
    known = [p for p in PHASE_ORDER if p in names]
    return known + sorted(n for n in names if n not in PHASE_ORDER)


def config_sort_key(run):
    mode = MODE_ORDER.index(run["mode"]) if run["mode"] in MODE_ORDER else len(MODE_ORDER)
    # The SPEC's order of the gather legs: bf16, then fp8 over the copy engine, then the CU pull.
    transport = {"sdma": 0, "lsa": 1}.get(run["transport"], 2)
    return (mode, run["wire"], transport, run["mode"])


def fig_phases_by_mode(inputs, outdir, notes):
    """Stacked phase bars, measured beside model, one pair per mode and wire (largest M of each)."""
    import matplotlib.pyplot as plt
    groups = {}
    for run in inputs.runs:
        if not run["phases"] and not (run["model"] and run["model"]["phases"]):
            continue
        key = config_label(run)
        best = groups.get(key)
        # The largest M of each config, and among equal M the one with measured phases.
        if best is None or (run["m"], bool(run["phases"])) > (best["m"], bool(best["phases"])):
            groups[key] = run
    model_only = []
    for m in inputs.models:
        cfg = m["config"]
        label = None
        if cfg.get("mode"):
            pseudo = {"mode": cfg.get("mode"), "wire": cfg.get("gather_dtype", cfg.get("wire", "bf16")),
                      "transport": cfg.get("gather_transport", cfg.get("transport", "sdma"))}
            if pseudo["mode"] == "split-lsa":
                pseudo["wire"], pseudo["transport"] = "bf16", "lsa"
            label = config_label(pseudo)
        if label is None or label not in groups:
            model_only.append((label or os.path.basename(m["source"]), m))
    if not groups and not model_only:
        return "no run carries measured phases (phases_us) or model phases, and no model document was given"
    bars = []  # (group label, bar label, phases dict, hatch)
    no_measured, no_model = [], []
    for key, run in sorted(groups.items(), key=lambda kv: config_sort_key(kv[1])):
        glabel = f"{key}\nM={run['m']}"
        if run["phases"]:
            bars.append((glabel, "measured (fail)" if run["verdict"] == "fail" else "measured", run["phases"], None))
        else:
            no_measured.append(key)
        if run["model"] and run["model"]["phases"]:
            bars.append((glabel, "model", run["model"]["phases"], "//"))
        else:
            no_model.append(key)
    for label, m in model_only:
        m_val = m["shape"].get("m") if isinstance(m["shape"], dict) else None
        bars.append((f"{label}\nM={m_val}" if m_val else label, "model", m["phases"], "//"))
    if no_measured:
        notes.append("phases_by_mode.png: no measured phases (phases_us) for " + ", ".join(no_measured)
                     + "; only the model bar is drawn")
    if no_model:
        notes.append("phases_by_mode.png: no model prediction for " + ", ".join(no_model)
                     + "; only the measured bar is drawn")
    all_names = set()
    for _, _, ph, _ in bars:
        all_names.update(ph)
    names = ordered_phases(all_names)
    fig, ax = plt.subplots(figsize=(max(8.0, 2.5 + 0.9 * len(bars)), 6.0))
    xs, xt, xl = [], [], []
    x = 0.0
    prev_group = None
    for glabel, blabel, _, _ in bars:
        if prev_group is not None and glabel != prev_group:
            x += 0.6  # a gap between configs, none between measured and model of one config
        xs.append(x)
        xt.append(x)
        xl.append(blabel)
        prev_group = glabel
        x += 1.0
    drawn = set()
    for xi, (_, blabel, ph, hatch) in zip(xs, bars):
        bottom = 0.0
        for name in names:
            us = ph.get(name)
            if not us:
                continue
            color = PHASE_COLORS.get(name, OTHER_COLOR)
            ax.bar(xi, us, bottom=bottom, width=0.8, color=color, edgecolor="black", linewidth=0.4,
                   hatch=hatch, label=name if name not in drawn else None)
            drawn.add(name)
            bottom += us
        ax.text(xi, bottom, f"{bottom:.0f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(xt)
    ax.set_xticklabels([b[1] for b in bars], fontsize=8)
    # The config name once per group, centred under its measured/model pair.
    groups_x = {}
    for xi, (glabel, _, _, _) in zip(xs, bars):
        groups_x.setdefault(glabel, []).append(xi)
    for glabel, gx in groups_x.items():
        ax.annotate(glabel.replace(" ", "\n", 1), xy=(sum(gx) / len(gx), 0), xycoords=("data", "axes fraction"), xytext=(0, -22),
                    textcoords="offset points", ha="center", va="top", fontsize=8)
    ax.set_ylabel("time (us), phases stacked")
    ax.set_title("Phase breakdown per mode and wire: measured (solid) beside model (hatched)")
    handles, labels = ax.get_legend_handles_labels()
    order = [labels.index(n) for n in names if n in labels]
    ax.legend([handles[i] for i in order], [labels[i] for i in order], loc="upper left",
              bbox_to_anchor=(1.0, 1.0))
    ax.margins(y=0.08)
    save(fig, outdir, "phases_by_mode.png")
    return None


def fig_total_vs_m(inputs, outdir, notes):
    import matplotlib.pyplot as plt
    series = {}
    for run in inputs.runs:
        if run["max_us"] is None or not math.isfinite(run["max_us"]):
            continue
        series.setdefault(config_label(run), []).append(run)
    ms = sorted({r["m"] for rs in series.values() for r in rs})
    failed = [r for rs in series.values() for r in rs if r["verdict"] == "fail"]
    if not series:
        return "no run carries a time (max_rank_time_us or per_rank_time_us)"
    if len(ms) < 2:
        return f"every timed run is at the same M ({ms[0]}); a curve against M needs at least two values of M"
    fig, ax = plt.subplots()
    cmap = plt.get_cmap("tab10")
    for i, (label, rs) in enumerate(sorted(series.items(), key=lambda kv: config_sort_key(kv[1][0]))):
        by_m = {}
        for r in rs:  # several runs at one M (e.g. a pull-grid sweep): the best one, as the benchmark quotes
            if r["verdict"] == "fail":
                continue  # a failed run's time is not the config's time (a silent copy is faster)
            if r["m"] not in by_m or r["max_us"] < by_m[r["m"]]["max_us"]:
                by_m[r["m"]] = r
        xs = sorted(by_m)
        color = cmap(i % 10)
        fr = [r for r in rs if r["verdict"] == "fail"]
        if fr:
            ax.plot([r["m"] for r in fr], [r["max_us"] for r in fr], "X", color=color, markersize=10,
                    markeredgecolor="black", label=f"{label} failed run")
        if not xs:
            continue
        ax.plot(xs, [by_m[m]["max_us"] for m in xs], "o-", color=color, label=f"{label} measured")
        mx = [m for m in xs if by_m[m]["model"] and by_m[m]["model"]["total_us"] is not None]
        if mx:
            ax.plot(mx, [by_m[m]["model"]["total_us"] for m in mx], "s--", color=color, alpha=0.7,
                    markerfacecolor="none", label=f"{label} model")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ms)
    ax.set_xticklabels([str(m) for m in ms])
    ax.set_xlabel("M (rows)")
    ax.set_ylabel("total time, max over ranks (us)")
    ax.set_title("Total time per mode against M (solid: measured, best passing run; dashed: model)")
    if failed:
        notes.append(f"total_vs_m.png: {len(failed)} failed run(s) are marked X and kept off the curves")
    ax.legend(loc="upper left")
    save(fig, outdir, "total_vs_m.png")
    return None


def sweep_matches(sweep, run):
    shape = sweep["shape"]
    if shape.get("m") is not None and shape.get("m") != run["m"]:
        return False
    cfg = sweep["config"]
    for k_cfg, k_run in (("mode", "mode"), ("gather_dtype", "wire"), ("gather_transport", "transport")):
        if cfg.get(k_cfg) is not None and cfg.get(k_cfg) != run[k_run]:
            return False
    return True


def fig_pull_grid(inputs, outdir, notes):
    import matplotlib.pyplot as plt
    if not inputs.sweeps:
        return "no pull-grid sweep (gemmar model sweep --json, or model_sweeps in results.json) was given"
    sweep = inputs.sweeps[0]
    if len(inputs.sweeps) > 1:
        notes.append(f"pull_grid.png: {len(inputs.sweeps)} sweeps given; drawn: {sweep['source']}")
    measured = [r for r in inputs.runs if r["wire"] == "fp8" and r["transport"] == "lsa"
                and r["max_us"] is not None and math.isfinite(r["max_us"]) and sweep_matches(sweep, r)]
    if measured and not sweep["shape"].get("m"):
        # Without a shape on the sweep, keep the runs of the most common M so points are comparable.
        counts = {}
        for r in measured:
            counts[r["m"]] = counts.get(r["m"], 0) + 1
        m_keep = max(sorted(counts), key=lambda m: counts[m])
        measured = [r for r in measured if r["m"] == m_keep]
    fig, ax = plt.subplots()
    xs = [p[0] for p in sweep["points"]]
    ys = [p[1] for p in sweep["points"]]
    if sweep["band"]:
        lo, hi = sweep["band"]
        ax.axvspan(lo if lo != hi else lo * 0.97, hi if lo != hi else hi * 1.03, color="#55a868", alpha=0.2,
                   label=f"model optimum band [{lo:g}, {hi:g}] (within 1% of best)")
    ax.plot(xs, ys, "-", color="#4c72b0", marker=".", label="model")
    if sweep["optimum"] is not None:
        ax.axvline(sweep["optimum"], color="#55a868", linestyle=":", label=f"model optimum {sweep['optimum']:g}")
    with_grid = [r for r in measured if r["pull_blocks"] is not None]
    default_grid = [r for r in measured if r["pull_blocks"] is None]
    if with_grid:
        ax.plot([r["pull_blocks"] for r in with_grid], [r["max_us"] for r in with_grid], "o", color="#c44e52",
                markersize=7, label="measured (fp8/lsa runs)")
        failed = [r for r in with_grid if r["verdict"] == "fail"]
        if failed:
            ax.plot([r["pull_blocks"] for r in failed], [r["max_us"] for r in failed], "x", color="black",
                    markersize=10, label="measured, verdict fail")
    if default_grid:
        notes.append(f"pull_grid.png: {len(default_grid)} fp8/lsa run(s) carry no pull_blocks field and are "
                     f"not placed on the grid axis")
    if not with_grid:
        notes.append("pull_grid.png: no measured fp8/lsa run with a pull_blocks value matches the sweep; "
                     "only the model curve is drawn")
    ax.set_xscale("log", base=2)
    ticks = sorted(set(xs) | {float(r["pull_blocks"]) for r in with_grid})
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:g}" for t in ticks], rotation=45 if len(ticks) > 10 else 0)
    ax.set_xlabel("pull grid (blocks per rank, MORI_GEMM_AR_PULL_BLOCKS)")
    ax.set_ylabel("total time (us)")
    shape = sweep["shape"]
    title = "Pull-grid sweep: model curve, measured points, optimum band"
    if shape.get("m"):
        title += f" (M={shape.get('m')})"
    ax.set_title(title)
    ax.legend(loc="upper center")
    save(fig, outdir, "pull_grid.png")
    return None


def short_label(i, run):
    return f"{i}: {config_label(run)} M={run['m']}"


def fig_rel_l2(inputs, outdir, notes):
    import matplotlib.pyplot as plt
    runs = [r for r in inputs.runs if r["rel_l2"] is not None or r["validated"] is False]
    if not runs:
        return "no run carries rel_l2"
    missing_floor = [r for r in runs if not (r["floors"] and r["wire"] in r["floors"])]
    fig, ax = plt.subplots(figsize=(max(8.0, 2.0 + 0.55 * len(runs)), 6.0))
    finite = [r["rel_l2"] for r in runs if r["rel_l2"] is not None and math.isfinite(r["rel_l2"])
              and r["rel_l2"] > 0]
    floors = [r["floors"][r["wire"]] for r in runs if r["floors"] and r["floors"].get(r["wire"], 0) > 0]
    bands = [b for r in runs if r["floor_band"] for b in r["floor_band"] if b and b > 0]
    vals = finite + floors + bands + [3e-3, 4e-2, 5e-3]
    top = max(vals) * 3.0
    bottom = min(vals) / 3.0
    labelled = set()

    def once(label):
        if label in labelled:
            return None
        labelled.add(label)
        return label

    for i, r in enumerate(runs):
        lo_win, hi_win = BENCH_WINDOW.get(r["wire"], (None, None))
        if hi_win is not None:
            ax.fill_between([i - 0.4, i + 0.4], [lo_win or bottom] * 2, [hi_win] * 2, color="#55a868",
                            alpha=0.12, linewidth=0, label=once("benchmark pass window (SPEC 1.2)"))
        f = r["floors"].get(r["wire"]) if r["floors"] else None
        if r["floor_band"]:
            blo, bhi = r["floor_band"]
            ax.fill_between([i - 0.35, i + 0.35], [blo or bottom] * 2, [bhi] * 2, color="#4c72b0", alpha=0.3,
                            linewidth=0, label=once("verdict's floor band (context.numerics)"))
        if f:
            se = r["floors"].get(r["wire"] + "_stderr")
            if se and not r["floor_band"]:
                ax.fill_between([i - 0.35, i + 0.35], [max(f - 3 * se, bottom)] * 2, [f + 3 * se] * 2,
                                color="#4c72b0", alpha=0.35, linewidth=0, label=once("predicted floor +-3 stderr"))
            ax.hlines(f, i - 0.35, i + 0.35, color="#4c72b0", linewidth=2, label=once("predicted floor"))
        bad = r["verdict"] == "fail" or r["validated"] is False
        v = r["rel_l2"]
        if v is None or not math.isfinite(v) or v <= 0:
            ax.plot(i, top / 1.5, marker="X", color="#c44e52", markersize=10, linestyle="none",
                    label=once("failed run"))
            ax.annotate("NaN" if v is not None and math.isnan(v) else ("none" if v is None else f"{v:g}"),
                        (i, top / 1.5), textcoords="offset points", xytext=(0, 8), ha="center", fontsize=8)
            continue
        ax.plot(i, v, marker="X" if bad else "o", color="#c44e52" if bad else "black", markersize=9 if bad else 6,
                linestyle="none", label=once("failed run" if bad else "measured rel_l2"))
        if r["per_rank_rel_l2"]:
            pr = [x for x in r["per_rank_rel_l2"] if math.isfinite(x) and x > 0]
            ax.plot([i] * len(pr), pr, marker="_", color="#7f7f7f", markersize=10, linestyle="none",
                    label=once("per-rank rel_l2"))
    ax.set_yscale("log")
    ax.set_ylim(bottom, top)
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels([short_label(i, r) for i, r in enumerate(runs)], rotation=35, ha="right", fontsize=7)
    ax.set_xlim(-0.6, len(runs) - 0.4)
    ax.set_ylabel("relL2 against the fp32 reference (log)")
    ax.set_title("relL2 per run against the predicted floor of its wire (X = failed)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if missing_floor:
        notes.append("rel_l2_vs_floor.png: no predicted floor for run(s) "
                     + ", ".join(str(runs.index(r)) for r in missing_floor) + " (no floor/context.floors field)")
    save(fig, outdir, "rel_l2_vs_floor.png")
    return None


def fig_rank_spread(inputs, outdir, notes):
    import matplotlib.pyplot as plt
    runs = [r for r in inputs.runs if len(r["per_rank_us"]) >= 2]
    if not runs:
        return "no run carries per_rank_time_us for two or more ranks"
    fig, ax = plt.subplots(figsize=(max(8.0, 2.0 + 0.55 * len(runs)), 6.0))
    # Deviation from the run's median rank, in percent: absolute times differ by 10x across runs and
    # would flatten the spread that this figure exists to show.
    for i, r in enumerate(runs):
        t = r["per_rank_us"]
        med = sorted(t)[len(t) // 2]
        if not (med > 0 and math.isfinite(med)):
            continue
        d = [(x - med) / med * 100.0 for x in t]
        ax.vlines(i, min(d), max(d), color="#8c8c8c", linewidth=1)
        ax.plot([i] * len(d), d, "o", color="#4c72b0", markersize=4, alpha=0.8,
                label="per-rank time" if i == 0 else None)
        slowest = t.index(max(t))
        ax.plot(i, d[slowest], "^", color="#c44e52", markersize=8, label="slowest rank" if i == 0 else None)
        ax.annotate(f"r{slowest}\n{t[slowest]:.0f}us", (i, d[slowest]), textcoords="offset points",
                    xytext=(0, 6), ha="center", fontsize=7)
    ax.axhline(0.0, color="black", linewidth=0.6)
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels([short_label(i, r) for i, r in enumerate(runs)], rotation=35, ha="right", fontsize=7)
    ax.set_xlim(-0.6, len(runs) - 0.4)
    ax.margins(y=0.15)
    ax.set_ylabel("per-rank time against the run's median rank (%)")
    ax.set_title("Per-rank time spread (annotated: slowest rank and its time)")
    ax.legend(loc="upper left")
    save(fig, outdir, "rank_spread.png")
    return None


FIGURES = [
    ("phases_by_mode.png", "Phase breakdown per mode and wire, measured beside model", fig_phases_by_mode),
    ("total_vs_m.png", "Total time per mode against M", fig_total_vs_m),
    ("pull_grid.png", "Pull-grid sweep: model curve, measured points, optimum band", fig_pull_grid),
    ("rel_l2_vs_floor.png", "relL2 per run against the predicted floor", fig_rel_l2),
    ("rank_spread.png", "Per-rank time spread", fig_rank_spread),
]


# ----------------------------------------------------------------------------------------------------------
# HTML.

CSS = """
body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:2em auto;max-width:1200px;color:#222;
padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}th,td{border:1px solid #ccc;padding:.25em .5em;
text-align:left;vertical-align:top}th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#176b2c;font-weight:bold}.fail{color:#b00020;font-weight:bold}.unknown{color:#777}
.sev-error{color:#b00020}.sev-warning{color:#8a6d00}.missing{background:#fff6e0;border:1px solid #e6c36a;
padding:.5em 1em}figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}
pre{background:#f7f7f7;padding:.6em;overflow:auto;font-size:.8em}code{font-size:.9em}
"""


def esc(v):
    return html.escape("" if v is None else str(v))


def fmt(v, digits=4):
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if v != 0 and (abs(v) < 1e-2 or abs(v) >= 1e6):
            return f"{v:.{digits - 1}e}"
        return f"{v:.{digits}g}" if abs(v) < 1e4 else f"{v:.1f}"
    return str(v)


def share_floors(inputs, notes):
    """The floors depend only on shape, quant and data, so a run without them (a plain benchmark line) takes
    those another input predicted for the same shape and quant."""
    known = {}
    for r in inputs.runs:
        if r["floors"]:
            known.setdefault((r["m"], r["n"], r["k"], r["world"], r["quant"]), r)
    borrowed = 0
    for r in inputs.runs:
        if not r["floors"]:
            donor = known.get((r["m"], r["n"], r["k"], r["world"], r["quant"]))
            if donor is not None:
                r["floors"] = dict(donor["floors"])
                r["floors_from"] = donor["source"]
                borrowed += 1
    if borrowed:
        notes.append(f"rel_l2_vs_floor.png: {borrowed} run(s) without their own floors use the floors predicted for "
                     f"the same shape and quant by another input")


def write_html(inputs, outdir, figures, skipped, notes):
    p = []
    p.append("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>gemmar report</title>")
    p.append(f"<style>{CSS}</style></head><body>")
    n_fail = sum(1 for r in inputs.runs if r["verdict"] == "fail")
    n_pass = sum(1 for r in inputs.runs if r["verdict"] == "pass")
    p.append("<h1>gemmar report: fused fp8 GEMM + all-reduce</h1>")
    p.append(f"<p>{len(inputs.runs)} run(s): <span class=\"pass\">{n_pass} pass</span>, "
             f"<span class=\"fail\">{n_fail} fail</span>, {len(inputs.runs) - n_pass - n_fail} without a verdict; "
             f"{len(inputs.models)} model document(s), {len(inputs.sweeps)} sweep(s).</p>")

    p.append("<h2>Inputs</h2><table><tr><th>file</th><th>detected as</th><th>items</th></tr>")
    for path, kind, n in inputs.files:
        p.append(f"<tr><td><code>{esc(path)}</code></td><td>{esc(kind)}</td><td class=\"num\">{n}</td></tr>")
    p.append("</table>")

    p.append("<h2>Verdicts</h2>")
    if inputs.runs:
        p.append("<table><tr><th>#</th><th>source</th><th>config</th><th>M</th><th>verdict</th>"
                 "<th>findings</th></tr>")
        for i, r in enumerate(inputs.runs):
            v = r["verdict"] or "none"
            cls = {"pass": "pass", "fail": "fail"}.get(v, "unknown")
            if r["findings"]:
                items = "".join(
                    f"<li><code>{esc(f['code'])}</code>"
                    + (f" <span class=\"sev-{esc(f['severity'].lower())}\">({esc(f['severity'])})</span>"
                       if f["severity"] else "")
                    + (f": {esc(f['message'])}" if f["message"] else "") + "</li>" for f in r["findings"])
                finds = f"<ul>{items}</ul>"
            else:
                finds = "none" if r["verdict"] is not None else "no verdict in the input (run gemmar check)"
            p.append(f"<tr><td>{i}</td><td><code>{esc(r['source'])}</code></td><td>{esc(config_label(r))}</td>"
                     f"<td class=\"num\">{r['m']}</td><td class=\"{cls}\">{esc(v)}</td><td>{finds}</td></tr>")
        p.append("</table>")
    else:
        p.append("<p class=\"missing\">No runs in the inputs: only model data is shown.</p>")

    p.append("<h2>Run configurations</h2>")
    if inputs.runs:
        cols = [("mode", "mode"), ("quant", "quant"), ("wire", "gather_dtype"), ("transport", "gather_transport"),
                ("pull_blocks", "pull_blocks"), ("fuse_quantize", "fuse_quantize"), ("m", "m"), ("n", "n"),
                ("k", "k"), ("world", "world_size"), ("max_us", "max_rank_time_us"), ("rel_l2", "rel_l2"),
                ("validated", "validated"), ("profile", "profile"), ("backend", "backend"), ("timing", "timing")]
        p.append("<table><tr><th>#</th>" + "".join(f"<th>{esc(h)}</th>" for _, h in cols)
                 + "<th>model total (us)</th><th>model lower bound (us)</th><th>floor (its wire)</th></tr>")
        for i, r in enumerate(inputs.runs):
            cells = "".join(f"<td>{esc(fmt(r[key]))}</td>" for key, _ in cols)
            mt = r["model"]["total_us"] if r["model"] else None
            lb = r["model"]["lower_bound_us"] if r["model"] else None
            fl = r["floors"].get(r["wire"]) if r["floors"] else None
            p.append(f"<tr><td>{i}</td>{cells}<td class=\"num\">{esc(fmt(mt))}</td>"
                     f"<td class=\"num\">{esc(fmt(lb))}</td><td class=\"num\">{esc(fmt(fl))}</td></tr>")
        p.append("</table>")

    p.append("<h2>Model profile used</h2>")
    names = sorted({r["profile"] for r in inputs.runs if r["profile"]}
                   | {m["profile"] for m in inputs.models if isinstance(m["profile"], str)}
                   | {s["profile"] for s in inputs.sweeps if isinstance(s["profile"], str)})
    if names:
        p.append("<p>Profile(s) named by the inputs: " + ", ".join(f"<code>{esc(n)}</code>" for n in names) + "</p>")
    for src, prof in inputs.profiles:
        if isinstance(prof, (dict, list)):
            p.append(f"<p>From <code>{esc(src)}</code>:</p><pre>{esc(json.dumps(prof, indent=2, sort_keys=True))}"
                     f"</pre>")
    if not names and not any(isinstance(pr, (dict, list)) for _, pr in inputs.profiles):
        p.append("<p class=\"missing\">No input names the model profile it was judged against.</p>")
    for src, mach in inputs.machines:
        p.append(f"<p>Machine (from <code>{esc(src)}</code>):</p>"
                 f"<pre>{esc(json.dumps(mach, indent=2, sort_keys=True))}</pre>")
    if inputs.models:
        p.append("<h3>Model documents</h3><table><tr><th>source</th><th>config</th><th>shape</th>"
                 "<th>total (us)</th><th>lower bound (us)</th><th>phases (us)</th></tr>")
        for m in inputs.models:
            ph = ", ".join(f"{esc(k)} {fmt(v)}" for k, v in m["phases"].items())
            p.append(f"<tr><td><code>{esc(m['source'])}</code></td><td>{esc(json.dumps(m['config']))}</td>"
                     f"<td>{esc(json.dumps(m['shape']))}</td><td class=\"num\">{esc(fmt(m['total_us']))}</td>"
                     f"<td class=\"num\">{esc(fmt(m['lower_bound_us']))}</td><td>{ph}</td></tr>")
        p.append("</table>")

    p.append("<h2>Figures</h2><ul>")
    for name, title in figures:
        p.append(f"<li><a href=\"{esc(name)}\">{esc(name)}</a>: {esc(title)}</li>")
    p.append("</ul>")
    if skipped or notes:
        p.append("<div class=\"missing\"><p><b>Not drawn or incomplete, and why:</b></p><ul>")
        for name, reason in skipped:
            p.append(f"<li><code>{esc(name)}</code> not drawn: {esc(reason)}</li>")
        for n in notes:
            p.append(f"<li>{esc(n)}</li>")
        p.append("</ul></div>")
    for name, title in figures:
        p.append(f"<figure><img src=\"{esc(name)}\" alt=\"{esc(title)}\"><figcaption>{esc(title)}</figcaption>"
                 f"</figure>")
    p.append("</body></html>\n")
    with open(os.path.join(outdir, "index.html"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(p))


def render(paths, outdir):
    inputs = Inputs()
    for path in paths:
        read_file(path, inputs)
    if not inputs.runs and not inputs.models and not inputs.sweeps:
        fail_input(f"{paths[0]}: the inputs hold no runs, models or sweeps")
    setup_matplotlib()
    os.makedirs(outdir, exist_ok=True)
    figures, skipped, notes = [], [], []
    share_floors(inputs, notes)
    for name, title, fn in FIGURES:
        reason = fn(inputs, outdir, notes)
        if reason is None:
            figures.append((name, title))
        else:
            skipped.append((name, reason))
    write_html(inputs, outdir, figures, skipped, notes)
    manifest = {
        "figures": [name for name, _ in figures],
        "skipped": [{"figure": n, "reason": r} for n, r in skipped],
        "notes": notes,
        "inputs": [{"file": p, "kind": k, "items": n} for p, k, n in inputs.files],
        "runs": len(inputs.runs),
        "fail": sum(1 for r in inputs.runs if r["verdict"] == "fail"),
    }
    with open(os.path.join(outdir, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return manifest


def main(argv):
    ap = argparse.ArgumentParser(description="gemmar report: figures + index.html from results files")
    ap.add_argument("results", nargs="+", help="gemmar run/benchmark logs, check --json, model --json, results.json")
    ap.add_argument("--out", required=True, help="directory to write (created; files inside are overwritten)")
    args = ap.parse_args(argv)
    try:
        manifest = render(args.results, args.out)
    except BadInput as e:
        sys.stderr.write(f"{e}\n")
        return EXIT_BAD_INPUT
    sys.stderr.write(f"wrote {len(manifest['figures'])} figure(s) and index.html to {args.out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
