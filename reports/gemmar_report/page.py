"""index.html (one row per config and shape, failures, skipped records, figures), phases.html (per config and
shape, the table of each phase: measured, model, ceiling, bandwidths) and runs.html (every run and every skipped
record). Self-contained: inline CSS, no scripts, no external URLs, images and timelines referenced relatively. Every
page fits 1400 px: long cells wrap instead of widening their table.
"""
import html
import json
import math
import os


MAX_FAILURES_SHOWN = 20
MAX_SKIPPED_SHOWN = 30

CSS = """
body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:1.5em auto;max-width:1340px;color:#222;
padding:0 1em}
h1{font-size:1.45em;margin-bottom:.3em}h2{font-size:1.15em;border-bottom:1px solid #ddd;padding-bottom:.2em;
margin-top:1.6em}
table{border-collapse:collapse;font-size:.82em;margin:.5em 0}th,td{border:1px solid #ccc;padding:.25em .45em;
text-align:left;vertical-align:top}th{background:#f3f3f3;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.cfg{overflow-wrap:break-word}
td code{overflow-wrap:anywhere}
.pass{color:#176b2c;font-weight:bold}.fail{color:#b00020;font-weight:bold}.unknown{color:#777}
.sev-error{color:#b00020}.sev-warning{color:#8a6d00}
.missing{background:#fff6e0;border:1px solid #e6c36a;padding:.4em 1em;margin:.6em 0}
.missing ul{margin:.2em 0;padding-left:1.2em}
.summary{font-size:1.05em}.dim{color:#666}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{color:#555;font-size:.9em}
pre{background:#f7f7f7;padding:.6em;overflow:auto;font-size:.8em;max-height:20em}code{font-size:.9em}
ul.codes{margin:0;padding-left:1.1em}ul.codes li{overflow-wrap:anywhere}ul.codes code{overflow-wrap:normal}details{margin:.5em 0}summary{cursor:pointer}
table.phases{margin-bottom:1.2em}table.phases td.name{font-weight:bold}tr.derived td{background:#fafafa}
.keys{margin:.2em 0 .4em 0}
"""


def esc(v):
    return html.escape("" if v is None else str(v))


def fmt(v, digits=4):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v != 0 and (abs(v) < 1e-2 or abs(v) >= 1e6):
            return f"{v:.{digits - 1}e}"
        return f"{v:.{digits}g}" if abs(v) < 1e4 else f"{v:.1f}"
    return str(v)


def finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fmt_stats(s, digits=4):
    if not s or not s.get("n"):
        nf = (s or {}).get("nonfinite")
        return f"NaN x{nf}" if nf else ""
    text = fmt(s["median"], digits)
    if s["n"] > 1:  # the range on a line of its own: the column stays narrow
        text += f"<br><span class=\"dim\">[{esc(fmt(s['min'], 3))} &ndash; {esc(fmt(s['max'], 3))}]</span>"
    if s.get("nonfinite"):
        text += f" <span class=\"fail\">+{s['nonfinite']} NaN</span>"
    return text


def verdict_cell(v):
    cls = {"pass": "pass", "fail": "fail"}.get(v, "unknown")
    return f"<td class=\"{cls}\">{esc(v or 'none')}</td>"


def findings_list(findings):
    if not findings:
        return ""
    items = []
    for f in findings:
        sev = f.get("severity") or ""
        items.append(f"<li><code>{esc(f['code'])}</code>"
                     + (f" <span class=\"sev-{esc(sev.lower())}\">({esc(sev)})</span>" if sev else "")
                     + (f": {esc(f['message'])}" if f.get("message") else "") + "</li>")
    return "<ul class=\"codes\">" + "".join(items) + "</ul>"


def head(title):
    return ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"]


def inputs_table(doc):
    p = ["<table><tr><th>file</th><th>detected as</th><th>runs</th><th>skipped records</th><th>models</th>"
         "<th>sweeps</th></tr>"]
    for f in doc["inputs"]:
        dup = f" <span class=\"dim\">(+{f['duplicates']} repeated lines)</span>" if f.get("duplicates") else ""
        sk = f"<span class=\"fail\">{f['skipped']}</span>" if f["skipped"] else "0"
        p.append(f"<tr><td><code>{esc(f['file'])}</code></td><td>{esc(f['kind'])}</td>"
                 f"<td class=\"num\">{f['runs']}{dup}</td>"
                 f"<td class=\"num\">{sk}</td>"
                 f"<td class=\"num\">{f['models']}</td><td class=\"num\">{f['sweeps']}</td></tr>")
    p.append("</table>")
    return p


def skipped_table(skipped):
    p = ["<table><tr><th>where</th><th>why it was skipped</th></tr>"]
    for s in skipped:
        p.append(f"<tr><td class=\"cfg\"><code>{esc(s['source'])}</code></td><td>{esc(s['reason'])}</td></tr>")
    p.append("</table>")
    return p


def cfg(label):
    """A config label or a source path that may wrap after each "/" (never inside a word)."""
    return esc(label).replace("/", "/<wbr>")


def machine_short(machine):
    """"NVIDIA H200 (8 ranks on 1 device)" -> "NVIDIA H200" (the profile says the rest)."""
    return machine.split(" (")[0] if machine else "not named"


def speedup_cell(sp):
    if not sp:
        return ""
    parts = []
    if sp.get("measured"):
        m = sp["measured"]
        parts.append(f"{m['x']:.2f}x <span class=\"dim\">({m['margin_pct']:+.1f}%)</span>")
    if sp.get("in_run"):
        parts.append(f"in-run {sp['in_run']['x']:.2f}x")
    if sp.get("model"):
        parts.append(f"<span class=\"dim\">model {sp['model']['x']:.2f}x</span>")
    return "<br>".join(parts)


def groups_table(doc):
    p = ["<table><tr><th>#</th><th>config</th><th>machine (profile)</th><th>M</th><th>N, K, W</th><th>runs</th>"
         "<th>pass / fail</th><th>time (us): median [min &ndash; max]</th><th>model (us)</th>"
         "<th>vs split</th><th>relL2: median [min &ndash; max]</th><th>floor</th><th>findings (runs)</th>"
         "<th>more</th></tr>"]
    for g in doc["groups"]:
        sh = g["shape"]
        model = g["model"]["total_us"] if g["model"] else None
        codes = "".join(f"<li><code>{esc(c['code'])}</code>"
                        + (f" <span class=\"sev-{esc(c['severity'])}\">{esc(c['severity'])}</span>"
                           if c["severity"] else "") + f" &times;{c['count']}</li>" for c in g["findings"])
        if codes:
            codes = "<ul class=\"codes\">" + codes + "</ul>"
        fail = f"<span class=\"fail\">{g['fail']}</span>" if g["fail"] else "0"
        passed = f"<span class=\"pass\">{g['pass']}</span>" if g["pass"] else "0"
        verdicts = f"{passed} / {fail}"
        if g["no_verdict"] == g["runs"]:
            verdicts = "<span class=\"dim\">no verdict</span>"
        elif g["no_verdict"]:
            verdicts += f" <span class=\"dim\">(+{g['no_verdict']} without)</span>"
        first = g["members"][0]
        p.append(f"<tr><td>{g['index']}</td><td class=\"cfg\">{cfg(g['config'])}</td>"
                 f"<td class=\"cfg\">{esc(machine_short(g['machine']))} ({esc(g['profile'])})</td>"
                 f"<td class=\"num\">{sh['m']}</td><td class=\"num\">{sh['n']}, {sh['k']}, {sh['world']}</td>"
                 f"<td class=\"num\">{g['runs']}</td><td class=\"num\">{verdicts}</td>"
                 f"<td class=\"num\">{fmt_stats(g['time_us'])}</td><td class=\"num\">{esc(fmt(model))}</td>"
                 f"<td class=\"num\">{speedup_cell(g.get('speedup'))}</td>"
                 f"<td class=\"num\">{fmt_stats(g['rel_l2'])}</td><td class=\"num\">{esc(fmt(g['floor']))}</td>"
                 f"<td>{codes}</td><td><a href=\"phases.html#g{g['index']}\">phases</a> "
                 f"<a href=\"{esc(doc['runs'][first]['timeline'])}\">timeline</a></td></tr>")
    p.append("</table>")
    return p


def placements_section(doc):
    pl = doc.get("placements", [])
    if not pl:
        return []
    p = ["<h2>Machines and profiles</h2><p class=\"dim\">Runs are grouped by machine and profile as well as by "
         "config and shape: runs of two machines never share a median. The model of each group is computed from its "
         "runs' own records (shape, config, chunks, wire) under its profile.</p>"
         "<table><tr><th>machine</th><th>named by</th><th>profile</th><th>chosen by</th><th>runs</th></tr>"]
    for x in pl:
        p.append(f"<tr><td class=\"cfg\">{esc(x['machine'] or 'not named by any input')}</td>"
                 f"<td class=\"cfg\">{esc(x['machine_from'])}</td><td><code>{esc(x['profile'])}</code></td>"
                 f"<td>{esc(x['profile_from'])}</td><td class=\"num\">{x['runs']}</td></tr>")
    p.append("</table>")
    return p


def profile_section(doc):
    p = ["<h2>Model profile and model documents</h2>"]
    if doc["profiles"]:
        p.append("<p>Profile(s) named by the inputs: "
                 + ", ".join(f"<code>{esc(n)}</code>" for n in doc["profiles"]) + "</p>")
    for po in doc.get("profile_objects", []):
        p.append(f"<details><summary>Profile from <code>{esc(po['source'])}</code></summary>"
                 f"<pre>{esc(json.dumps(po['value'], indent=2, sort_keys=True))}</pre></details>")
    if not doc["profiles"] and not doc.get("profile_objects"):
        p.append("<p class=\"missing\">No input names the model profile it was judged against.</p>")
    for m in doc.get("machines", []):
        p.append(f"<details><summary>Machine (from <code>{esc(m['source'])}</code>)</summary>"
                 f"<pre>{esc(json.dumps(m['value'], indent=2, sort_keys=True))}</pre></details>")
    if doc["models"]:
        p.append("<table><tr><th>model document</th><th>config</th><th>M</th><th>total (us)</th>"
                 "<th>lower bound (us)</th><th>phases (us)</th><th>drawn as</th></tr>")
        for m in doc["models"]:
            md = m["model"]
            ph = ", ".join(f"{esc(n)} {esc(fmt(us))}" for n, us in md["phases"])
            if m["used_by_groups"]:
                used = f"the model of {m['used_by_groups']} config group(s)"
            elif m.get("covers_groups"):
                used = (f"not drawn: gemmar's model of the runs' records (the same model) is drawn for "
                        f"{m['covers_groups']} group(s)")
            elif doc["runs"]:
                used = "not drawn: no run of this config, shape and profile"
            else:
                used = "a model-only bar (no runs in the inputs)"
            p.append(f"<tr><td><code>{esc(m['source'])}</code></td><td class=\"cfg\">{esc(m['config'])}</td>"
                     f"<td class=\"num\">{esc(m['shape']['m'] if m['shape'] else '')}</td>"
                     f"<td class=\"num\">{esc(fmt(md['total_us']))}</td>"
                     f"<td class=\"num\">{esc(fmt(md['lower_bound_us']))}</td><td>{ph}</td><td>{used}</td></tr>")
        p.append("</table>")
    return p


def timelines_section(doc):
    if not doc["runs"]:
        return []
    traced = [r for r in doc["runs"] if r.get("trace")]
    p = ["<h2>Timelines</h2><p>Every run has a timeline in <code>timeline/</code>, a Chrome-trace / Perfetto file "
         "(Trace Event Format): one track per rank (its kernels per stream from a <code>--trace</code>, else its "
         "measured total), the measured phases end to end with what they leave unattributed, and the model's phases "
         "on their own track, a fused scatter's puts on a track of their own under the GEMM. Open one in Perfetto "
         "(ui.perfetto.dev, Open trace file) or chrome://tracing. Each config's first run: the summary table's "
         "<i>timeline</i> link; every run: <a href=\"runs.html\">runs.html</a>.</p>"]
    if traced:
        p.append("<ul>" + "".join(
            f"<li><a href=\"{esc(r['timeline'])}\">run {r['index']}</a> ({esc(r['config'])} M={r['m']}): the kernels "
            f"of iteration {r['trace']['iteration']} of {r['trace']['iterations']} of <code>{esc(r['trace']['file'])}"
            f"</code> on {len(r['trace']['devices'])} device(s)</li>" for r in traced[:20]) + "</ul>")
    return p


def write_index(doc, outdir, drawn, not_drawn, notes):
    s = doc["summary"]
    p = head("gemmar report")
    p.append("<h1>gemmar report: fused fp8 GEMM + all-reduce</h1>")
    p.append(f"<p class=\"summary\"><b>{s['runs']}</b> run(s) in <b>{s['groups']}</b> config group(s): "
             f"<span class=\"pass\">{s['pass']} pass</span>, <span class=\"fail\">{s['fail']} fail</span>, "
             f"{s['no_verdict']} without a verdict"
             + (f"; <span class=\"fail\">{s['skipped']} record(s) skipped</span>" if s["skipped"] else "")
             + f"; {s['models']} model(s), {s['sweeps']} sweep(s). "
             f"Where the time went, phase by phase: <a href=\"phases.html\">phases.html</a>; every run in detail "
             f"and its timeline: <a href=\"runs.html\">runs.html</a>.</p>")
    if s["runs"] and s["no_verdict"] == s["runs"]:
        p.append("<p class=\"missing\">No run in the inputs carries a verdict: give <code>gemmar check --json</code>'s "
                 "output (verdicts, findings, floors and model totals) instead of, or beside, the raw log.</p>")
    if not_drawn or notes:
        p.append("<div class=\"missing\"><b>Not drawn or incomplete, and why:</b><ul>")
        for name, reason in not_drawn:
            p.append(f"<li><code>{esc(name)}</code> not drawn: {esc(reason)}</li>")
        for n in notes:
            p.append(f"<li>{esc(n)}</li>")
        p.append("</ul></div>")

    p.append("<h2>Summary by config</h2>")
    if doc["groups"]:
        p.append("<p class=\"dim\">One row per config, machine and shape. Time is the max over ranks per run; a "
                 "group's time includes its failed runs (the figures use passing runs only). vs split: split-sdma's "
                 "median over this config's at the same machine and shape (mori's margin in brackets), the unfused "
                 "baseline the runs measured themselves (in-run), and the model's.</p>")
        p += groups_table(doc)
    else:
        p.append("<p class=\"missing\">No runs in the inputs: only model data is shown.</p>")

    failing = [r for r in doc["runs"] if r["verdict"] == "fail"]
    if failing:
        p.append(f"<h2>Failed runs ({len(failing)})</h2><table><tr><th>#</th><th>source</th><th>config</th>"
                 "<th>M</th><th>findings</th></tr>")
        for r in failing[:MAX_FAILURES_SHOWN]:
            p.append(f"<tr><td>{r['index']}</td><td class=\"cfg\"><code>{cfg(r['source'])}</code></td>"
                     f"<td class=\"cfg\">{esc(r['config'])}</td><td class=\"num\">{r['m']}</td>"
                     f"<td>{findings_list(r['findings'])}</td></tr>")
        p.append("</table>")
        if len(failing) > MAX_FAILURES_SHOWN:
            p.append(f"<p>{len(failing) - MAX_FAILURES_SHOWN} more failed run(s) in "
                     f"<a href=\"runs.html\">runs.html</a>.</p>")

    if doc["skipped"]:
        p.append(f"<h2>Skipped records ({len(doc['skipped'])})</h2><p>These lines or entries could not be read as "
                 "runs; the rest of their files is in the report.</p>")
        p += skipped_table(doc["skipped"][:MAX_SKIPPED_SHOWN])
        if len(doc["skipped"]) > MAX_SKIPPED_SHOWN:
            p.append(f"<p>{len(doc['skipped']) - MAX_SKIPPED_SHOWN} more in <a href=\"runs.html#skipped\">"
                     f"runs.html</a>.</p>")

    p.append("<h2>Figures</h2>")
    if not drawn:
        p.append("<p class=\"missing\">No figure could be drawn from these inputs (reasons above).</p>")
    for name, title in drawn:
        p.append(f"<figure><img src=\"{esc(name)}\" alt=\"{esc(title)}\"><figcaption>{esc(name)}: {esc(title)}"
                 f"</figcaption></figure>")

    p += timelines_section(doc)
    p += placements_section(doc)
    p += profile_section(doc)
    p.append("<h2>Inputs</h2>")
    p += inputs_table(doc)
    p.append("<p class=\"dim\">Drawn from <a href=\"report.json\">report.json</a>, the inputs as "
             "<code>gemmar report</code> normalised them.</p>")
    p.append("</body></html>\n")
    with open(os.path.join(outdir, "index.html"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(p))


def write_runs(doc, outdir):
    p = head("gemmar report: every run")
    p.append(f"<h1>Every run ({len(doc['runs'])})</h1><p><a href=\"index.html\">Back to the summary</a>; each run's "
             "timeline is a Trace Event Format file (open it in Perfetto, ui.perfetto.dev, or chrome://tracing).</p>")
    if doc["runs"]:
        p.append("<table><tr><th>#</th><th>source</th><th>config</th><th>machine (profile)</th><th>M</th>"
                 "<th>N, K, W</th><th>time (us)</th><th>model (us)</th><th>relL2</th><th>floor</th>"
                 "<th>valid&shy;ated</th><th>verdict</th><th>findings</th><th>backend / timing</th>"
                 "<th>time&shy;line</th></tr>")
        for r in doc["runs"]:
            model = r["model"]["total_us"] if r["model"] else None
            extra = " / ".join(x for x in (r["backend"], r["timing"]) if x)
            traced = " (trace)" if r.get("trace") else ""
            p.append(f"<tr><td>{r['index']}</td><td class=\"cfg\"><code>{cfg(r['source'])}</code></td>"
                     f"<td class=\"cfg\">{cfg(r['config'])}</td>"
                     f"<td class=\"cfg\">{esc(machine_short(r['machine']))} ({esc(r['profile'])})</td>"
                     f"<td class=\"num\">{r['m']}</td><td class=\"num\">{r['n']}, {r['k']}, {r['world']}</td>"
                     f"<td class=\"num\">{esc(fmt(r['time_us']))}</td><td class=\"num\">{esc(fmt(model))}</td>"
                     f"<td class=\"num\">{esc(fmt(r['rel_l2']))}</td><td class=\"num\">{esc(fmt(r['floor']))}</td>"
                     f"<td>{esc(fmt(r['validated']))}</td>{verdict_cell(r['verdict'])}"
                     f"<td>{findings_list(r['findings'])}</td><td>{esc(extra)}</td>"
                     f"<td><a href=\"{esc(r['timeline'])}\">json</a>{traced}</td></tr>")
        p.append("</table>")
    p.append(f"<h2 id=\"skipped\">Skipped records ({len(doc['skipped'])})</h2>")
    if doc["skipped"]:
        p += skipped_table(doc["skipped"])
    else:
        p.append("<p>None: every record of the inputs was read.</p>")
    p.append("</body></html>\n")
    with open(os.path.join(outdir, "runs.html"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(p))


PHASES_INTRO = (
    "<p class=\"dim\">Per config, machine and shape: each phase the measured runs or the model name. "
    "<b>measured</b>: the median over the group's runs of the phase's time (max over ranks); <b>model</b>: gemmar's "
    "model of the runs' shape and config under their profile (the one <code>gemmar check</code> judges against); "
    "<b>ceiling</b>: the phase's FLOPs and bytes at the device's measured ceiling rates, nothing else; "
    "<b>lower bound</b>: its share of the model's physical lower bound (FLOPs and bytes at peak rates); "
    "<b>efficiency</b>: ceiling / measured. <b>unattributed</b>: the measured total (median of passing runs) minus "
    "the measured phases: launch gaps, the ranks' skew, work no phase names (negative when the phases, each a max "
    "over ranks, add up to more than the total). Collective legs: <b>algbw</b> = S / t with S the whole array in "
    "bytes (M padded x N x the leg's bytes per element: bf16 2, the fp8 wire 1), <b>busbw</b> = algbw x 2(n-1)/n "
    "for an all-reduce, x (n-1)/n for a reduce-scatter or an all-gather (nccl-tests' doc/PERFORMANCE.md). "
    "<b>vs split</b>: split-sdma's time over this config's (mori's margin: 1 - this / split, "
    "tests/python/cco/test_gemm_ar_bench.py).</p>")


def phase_keys(doc, g):
    t = g["phase_table"]
    ok = g["time_ok_us"] if g["time_ok_us"] and g["time_ok_us"].get("n") else g["time_us"]
    keys = []
    if ok and ok.get("n"):
        keys.append(f"time <b>{fmt(ok['median'])} us</b> (median of {ok['n']} run(s))")
    m = g["model"]
    if m:
        keys.append(f"model {fmt(m['total_us'])} us, lower bound {fmt(m['lower_bound_us'])} us "
                    f"<span class=\"dim\">({esc(m['from'])})</span>")
    for note in (m or {}).get("notes") or []:
        keys.append(f"<span class=\"dim\">model: {esc(note)}</span>")
    tf = t["gemm_tflops"]
    rates = [f"{k} {tf[k]:.0f}" for k in ("measured", "model", "ceiling") if finite(tf.get(k))]
    if rates:
        per = f", {tf['ranks_per_device']} ranks' GEMMs" if tf["ranks_per_device"] > 1 else ""
        keys.append("GEMM TFLOP/s per device" + per + ": " + ", ".join(rates))
    sp = g.get("speedup")
    if sp and (sp.get("measured") or sp.get("model") or sp.get("in_run")):
        keys.append(f"vs {esc(sp['baseline'])}: " + speedup_cell(sp).replace("<br>", ", "))
    runs = g["members"][:5]
    keys.append("timeline: " + " ".join(f"<a href=\"{esc(doc['runs'][i]['timeline'])}\">run {i}</a>" for i in runs)
                + (f" <span class=\"dim\">(+{len(g['members']) - 5} in runs.html)</span>" if len(g["members"]) > 5
                   else ""))
    return "<p class=\"keys\">" + " &middot; ".join(keys) + "</p>"


def phase_table_html(t):
    def num(v, digits=4):
        return esc(fmt(v, digits)) if finite(v) else ""

    def pct(v):
        return f"{100 * v:.0f}%" if finite(v) else ""

    p = ["<table class=\"phases\"><tr><th>phase</th><th>measured (us)</th><th>model (us)</th><th>ceiling (us)</th>"
         "<th>lower bound (us)</th><th>measured / model</th><th>efficiency</th><th>collective</th>"
         "<th>algbw (GB/s)</th><th>busbw (GB/s)</th><th>model busbw</th><th>note</th></tr>"]
    for r in t["rows"]:
        p.append(f"<tr><td class=\"name\">{esc(r['phase'])}</td><td class=\"num\">{num(r['measured_us'])}</td>"
                 f"<td class=\"num\">{num(r['model_us'])}</td><td class=\"num\">{num(r['ceiling_us'])}</td>"
                 f"<td class=\"num\">{num(r['bound_us'])}</td><td class=\"num\">{num(r['measured_over_model'], 3)}</td>"
                 f"<td class=\"num\">{pct(r['efficiency'])}</td><td>{esc(r.get('collective', ''))}</td>"
                 f"<td class=\"num\">{num(r.get('algbw_gbs'), 3)}</td><td class=\"num\">{num(r.get('busbw_gbs'), 3)}</td>"
                 f"<td class=\"num\">{num(r.get('model_busbw_gbs'), 3)}</td><td>{esc(r.get('note', ''))}</td></tr>")
    un = t["unattributed_us"]
    if finite(un):
        p.append(f"<tr class=\"derived\"><td class=\"name\">unattributed</td><td class=\"num\">{num(un)}</td>"
                 "<td colspan=\"10\" class=\"dim\">total minus the measured phases"
                 + (" (negative: the phases overlap, or different ranks were slowest in each)" if un < 0 else "")
                 + "</td></tr>")
    p.append(f"<tr class=\"derived\"><td class=\"name\">total</td><td class=\"num\">{num(t['measured_total_us'])}</td>"
             f"<td class=\"num\">{num(t['model_total_us'])}</td><td></td>"
             f"<td class=\"num\">{num(t['model_bound_us'])}</td><td class=\"num\">{num(t['total_over_model'], 3)}</td>"
             "<td colspan=\"6\"></td></tr>")
    p.append("</table>")
    return p


def write_phases(doc, outdir):
    p = head("gemmar report: where the time went")
    p.append("<h1>Where the time went, per config</h1><p><a href=\"index.html\">Back to the summary</a></p>")
    p.append(PHASES_INTRO)
    if not doc["groups"]:
        p.append("<p class=\"missing\">No runs in the inputs.</p>")
    for g in doc["groups"]:
        sh = g["shape"]
        p.append(f"<h2 id=\"g{g['index']}\">{g['index']}: {esc(g['series'])} &nbsp;M={sh['m']} N={sh['n']} "
                 f"K={sh['k']} W={sh['world']}</h2>")
        p.append(phase_keys(doc, g))
        p += phase_table_html(g["phase_table"])
    p.append("</body></html>\n")
    with open(os.path.join(outdir, "phases.html"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(p))


def write_pages(doc, outdir, drawn, not_drawn, notes):
    write_index(doc, outdir, drawn, not_drawn, notes)
    write_runs(doc, outdir)
    write_phases(doc, outdir)
