"""index.html (one row per config and shape, failures, skipped records, figures) and runs.html (every run and
every skipped record). Self-contained: inline CSS, no scripts, no external URLs, images referenced relatively.
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
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.cfg{white-space:nowrap}
.pass{color:#176b2c;font-weight:bold}.fail{color:#b00020;font-weight:bold}.unknown{color:#777}
.sev-error{color:#b00020}.sev-warning{color:#8a6d00}
.missing{background:#fff6e0;border:1px solid #e6c36a;padding:.4em 1em;margin:.6em 0}
.missing ul{margin:.2em 0;padding-left:1.2em}
.summary{font-size:1.05em}.dim{color:#666}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{color:#555;font-size:.9em}
pre{background:#f7f7f7;padding:.6em;overflow:auto;font-size:.8em;max-height:20em}code{font-size:.9em}
ul.codes{margin:0;padding-left:1.1em}ul.codes li{white-space:nowrap}details{margin:.5em 0}summary{cursor:pointer}
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


def fmt_stats(s, digits=4):
    if not s or not s.get("n"):
        nf = (s or {}).get("nonfinite")
        return f"NaN x{nf}" if nf else ""
    text = fmt(s["median"], digits)
    if s["n"] > 1:
        text += f" <span class=\"dim\">[{esc(fmt(s['min'], 3))} &ndash; {esc(fmt(s['max'], 3))}]</span>"
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


def groups_table(doc):
    p = ["<table><tr><th>#</th><th>config</th><th>M</th><th>N</th><th>K</th><th>W</th><th>runs</th>"
         "<th>pass</th><th>fail</th><th>time (us): median [min &ndash; max]</th><th>model (us)</th>"
         "<th>relL2: median [min &ndash; max]</th><th>floor</th><th>findings (runs)</th></tr>"]
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
        if g["no_verdict"] == g["runs"]:
            passed = fail = "<span class=\"dim\">no verdict</span>"
        elif g["no_verdict"]:
            passed += f" <span class=\"dim\">(+{g['no_verdict']} without verdict)</span>"
        p.append(f"<tr><td>{g['index']}</td><td class=\"cfg\">{esc(g['config'])}</td><td class=\"num\">{sh['m']}</td>"
                 f"<td class=\"num\">{sh['n']}</td><td class=\"num\">{sh['k']}</td><td class=\"num\">{sh['world']}</td>"
                 f"<td class=\"num\">{g['runs']}</td><td class=\"num\">{passed}</td><td class=\"num\">{fail}</td>"
                 f"<td class=\"num\">{fmt_stats(g['time_us'])}</td><td class=\"num\">{esc(fmt(model))}</td>"
                 f"<td class=\"num\">{fmt_stats(g['rel_l2'])}</td><td class=\"num\">{esc(fmt(g['floor']))}</td>"
                 f"<td>{codes}</td></tr>")
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
            used = (f"the model of {m['used_by_groups']} config group(s)" if m["used_by_groups"]
                    else "a model-only bar (no run of this config and shape)")
            p.append(f"<tr><td><code>{esc(m['source'])}</code></td><td class=\"cfg\">{esc(m['config'])}</td>"
                     f"<td class=\"num\">{esc(m['shape']['m'] if m['shape'] else '')}</td>"
                     f"<td class=\"num\">{esc(fmt(md['total_us']))}</td>"
                     f"<td class=\"num\">{esc(fmt(md['lower_bound_us']))}</td><td>{ph}</td><td>{used}</td></tr>")
        p.append("</table>")
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
             f"Every run in detail: <a href=\"runs.html\">runs.html</a>.</p>")
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
        p.append("<p class=\"dim\">One row per config and shape. Time is the max over ranks per run; a group's "
                 "time includes its failed runs (the figures use passing runs only).</p>")
        p += groups_table(doc)
    else:
        p.append("<p class=\"missing\">No runs in the inputs: only model data is shown.</p>")

    failing = [r for r in doc["runs"] if r["verdict"] == "fail"]
    if failing:
        p.append(f"<h2>Failed runs ({len(failing)})</h2><table><tr><th>#</th><th>source</th><th>config</th>"
                 "<th>M</th><th>findings</th></tr>")
        for r in failing[:MAX_FAILURES_SHOWN]:
            p.append(f"<tr><td>{r['index']}</td><td class=\"cfg\"><code>{esc(r['source'])}</code></td>"
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
    p.append(f"<h1>Every run ({len(doc['runs'])})</h1><p><a href=\"index.html\">Back to the summary</a></p>")
    if doc["runs"]:
        p.append("<table><tr><th>#</th><th>source</th><th>config</th><th>M</th><th>N</th><th>K</th><th>W</th>"
                 "<th>time (us)</th><th>model (us)</th><th>relL2</th><th>floor</th><th>validated</th>"
                 "<th>verdict</th><th>findings</th><th>profile / backend / timing</th></tr>")
        for r in doc["runs"]:
            model = r["model"]["total_us"] if r["model"] else None
            extra = " / ".join(x for x in (r["profile"], r["backend"], r["timing"]) if x)
            p.append(f"<tr><td>{r['index']}</td><td class=\"cfg\"><code>{esc(r['source'])}</code></td>"
                     f"<td class=\"cfg\">{esc(r['config'])}</td><td class=\"num\">{r['m']}</td>"
                     f"<td class=\"num\">{r['n']}</td><td class=\"num\">{r['k']}</td><td class=\"num\">{r['world']}</td>"
                     f"<td class=\"num\">{esc(fmt(r['time_us']))}</td><td class=\"num\">{esc(fmt(model))}</td>"
                     f"<td class=\"num\">{esc(fmt(r['rel_l2']))}</td><td class=\"num\">{esc(fmt(r['floor']))}</td>"
                     f"<td>{esc(fmt(r['validated']))}</td>{verdict_cell(r['verdict'])}"
                     f"<td>{findings_list(r['findings'])}</td><td>{esc(extra)}</td></tr>")
        p.append("</table>")
    p.append(f"<h2 id=\"skipped\">Skipped records ({len(doc['skipped'])})</h2>")
    if doc["skipped"]:
        p += skipped_table(doc["skipped"])
    else:
        p.append("<p>None: every record of the inputs was read.</p>")
    p.append("</body></html>\n")
    with open(os.path.join(outdir, "runs.html"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(p))


def write_pages(doc, outdir, drawn, not_drawn, notes):
    write_index(doc, outdir, drawn, not_drawn, notes)
    write_runs(doc, outdir)
