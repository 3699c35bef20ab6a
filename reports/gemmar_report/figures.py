"""The PNG figures, drawn from the aggregated groups of the report document.

Every figure has a bounded size (at most MAX_WIDTH_IN x HEIGHT_IN inches at 100 dpi) whatever the number of
runs: runs are drawn per config group (median, min-max), and at most MAX_GROUPS groups per figure; the rest
are named in a note. Titles only claim what is drawn.
"""
import math
import os

PHASE_COLORS = {
    "gemm": "#4c72b0", "scatter": "#dd8452", "drain": "#c9a26b", "reduce": "#55a868", "quantize": "#8172b3",
    "gather": "#c44e52", "dequantize": "#937860", "pull": "#da8bc3", "allreduce": "#8c8c8c",
    "output": "#64b5cd", "skew": "#ccb974",
}
OTHER_COLOR = "#cccccc"
# The benchmark's own pass windows (docs/spec.md 1.2), drawn beside the predicted floors.
BENCH_WINDOW = {"bf16": (None, 3e-3), "fp8": (5e-3, 4e-2)}

MAX_WIDTH_IN = 16.0   # 1600 px
HEIGHT_IN = 6.5       # 650 px
MAX_GROUPS = 40       # per-group figures (relL2, rank spread)
MAX_SERIES = 12       # lines of total_vs_m


def setup_matplotlib():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401
    # Fixed rc: the same document gives the same bytes on every machine (no user matplotlibrc leaks in).
    matplotlib.rcdefaults()
    matplotlib.rcParams.update({
        "font.size": 10, "font.family": "DejaVu Sans", "axes.titlesize": 11, "axes.labelsize": 10,
        "legend.fontsize": 8, "xtick.labelsize": 8, "ytick.labelsize": 9,
        "figure.figsize": (10, HEIGHT_IN), "figure.dpi": 100, "savefig.dpi": 100,
        "axes.grid": True, "grid.alpha": 0.3, "path.simplify": False,
        "svg.hashsalt": "gemmar", "axes.axisbelow": True,
    })


def width_for(n, per=0.4, base=3.0, least=9.0):
    return min(MAX_WIDTH_IN, max(least, base + per * n))


# The title each figure was drawn with: the page's caption repeats it, so it never claims what is not drawn.
DRAWN_TITLES = {}


def save(fig, outdir, name):
    import matplotlib.pyplot as plt
    title = fig._suptitle.get_text() if fig._suptitle is not None else fig.axes[0].get_title()
    DRAWN_TITLES[name] = " ".join(title.split())
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, name), format="png", metadata={"Software": None})
    plt.close(fig)


def finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fmt_us(x):
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def config_tick(c):
    ms = c["m_values"]
    return c["series"] + (f" M={ms[0]}" if len(ms) == 1 else f" ({len(ms)} M)")


def name_list(names, most=6):
    names = list(dict.fromkeys(names))
    if len(names) <= most:
        return ", ".join(names)
    return ", ".join(names[:most]) + f" and {len(names) - most} more"


def cap(items, limit, name, notes):
    if len(items) > limit:
        notes.append(f"{name}: {len(items)} configs; the first {limit} (in the table's order) are drawn, "
                     f"all are in the summary table")
        return items[:limit]
    return items


# ----------------------------------------------------------------------------------------------------------

UNATTRIBUTED = "unattributed"
# Phases the table above has no colour for (a phase the model adds later) take these, in order of appearance.
EXTRA_COLORS = ["#b47cc7", "#17becf", "#bcbd22", "#7f7f7f", "#e377c2", "#2ca02c"]
MAX_TIMELINE_ROWS = 27  # rows of the phase figure (measured, model, overlap per config): 1000 px at most


def phase_colors(names):
    colors, extra = {}, iter(EXTRA_COLORS * 4)
    for n in names:
        colors[n] = "#f0f0f0" if n == UNATTRIBUTED else PHASE_COLORS.get(n) or next(extra, OTHER_COLOR)
    return colors


def timeline_rows(doc, notes):
    """Per config (machine, profile and config), the group at the largest M with measured phases (else with a
    model): its measured lane, its model lane and the model's overlapped scatter, each a row."""
    best = {}
    for g in doc["groups"]:
        lanes = g["lanes"]
        if not (lanes["measured"] or lanes["model"]):
            continue
        rank = (bool(g["phases_us"]), g["shape"]["m"])
        if g["series"] not in best or rank > best[g["series"]][0]:
            best[g["series"]] = (rank, g)
    rows = []  # (panel: machine and profile, group label, kind, lane)
    placements = [f"{p['machine']}|{p['profile']}" for p in doc.get("placements", [])]
    chosen = sorted(best.values(), key=lambda x: (placements.index(f"{x[1]['machine']}|{x[1]['profile']}"),
                                                  x[1]["index"]))
    for _, g in chosen:
        panel = (g["machine"].split(" (")[0] or "machine not named") + f" (profile {g['profile']})"
        label = f"{g['config']} M={g['shape']['m']}"
        lanes = g["lanes"]
        if lanes["measured"]:
            n = g["phases_runs"]
            rows.append((panel, label, f"measured{f' (median of {n})' if n > 1 else ''}", lanes["measured"]))
        if lanes["model"]:
            rows.append((panel, label, "model", lanes["model"]))
        if lanes["overlap"]:
            rows.append((panel, label, "overlap", lanes["overlap"]))
    if not rows and doc["runs"] == []:
        for m in doc["models"]:  # model documents alone: each its own model row
            sh = m["shape"]
            label = (m["config"] or os.path.basename(m["source"])) + (f" M={sh['m']}" if sh else " (no shape)")
            t, lane = 0.0, []
            for name, us in m["model"]["phases"]:
                lane.append([name, t, us])
                t += us
            rows.append(("model documents", label, "model", lane))
    labels = list(dict.fromkeys(r[1] for r in rows))
    if len(rows) > MAX_TIMELINE_ROWS:
        keep, count = set(), 0
        for lab in labels:
            n = sum(1 for r in rows if r[1] == lab)
            if count + n > MAX_TIMELINE_ROWS:
                break
            keep.add(lab)
            count += n
        notes.append(f"phases_by_mode.png: {len(labels)} configs; the first {len(keep)} are drawn, every one is in "
                     f"phases.html")
        rows = [r for r in rows if r[1] in keep]
    return rows


def gemm_end(lane):
    for name, start, dur in lane:
        if name == "gemm":
            return start + dur
    return 0.0


def draw_rows(ax, rows, colors, zoom):
    """One horizontal bar per row, its phases at their start and duration; zoom: time from the row's GEMM end."""
    y, ticks, model_end = 0.0, [], {}
    for _, label, kind, lane in rows:
        if kind == "model":
            model_end[label] = gemm_end(lane)
        shift = (model_end.get(label, 0.0) if kind == "overlap" else gemm_end(lane)) if zoom else 0.0
        height = 0.38 if kind == "overlap" else 0.75
        yy = y - 0.32 if kind == "overlap" else y
        for name, start, dur in lane:
            hatch = "xx" if name == UNATTRIBUTED else ("//" if kind == "model" else ("..." if kind == "overlap" else None))
            ax.barh(yy, dur, left=start - shift, height=height, color=colors[name], edgecolor="black", linewidth=0.4,
                    hatch=hatch)
        if kind != "overlap":
            ticks.append((y, f"{label}  {kind}"))
            y += 1.0
        else:
            ticks[-1] = (ticks[-1][0] - 0.16, ticks[-1][1] + "\n+ scatter under the GEMM")
            y += 0.55
    ax.set_ylim(max(y - 0.4, 2.4), -0.6)  # a lone row stays bar-shaped
    return ticks


def fig_phases(doc, outdir, notes):
    """Where the time went: per config, the measured phases end to end with what they leave unattributed, the model's
    phases, and a fused scatter's puts on their own row under the GEMM (overlap drawn, never stacked away); the right
    panels zoom on what follows the GEMM, where the collective legs are. One pair of panels per machine and profile:
    each has its own time axis, and no two machines share a bar."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    rows = timeline_rows(doc, notes)
    if not rows:
        return "no run carries measured phases (phases_us) or a model, and no model document was given"
    names = []
    for _, _, _, lane in rows:
        for name, _, _ in lane:
            if name not in names:
                names.append(name)
    order = list(doc["phase_order"])
    names.sort(key=lambda n: (n == UNATTRIBUTED, order.index(n) if n in order else len(order)))
    colors = phase_colors(names)
    panels = list(dict.fromkeys(r[0] for r in rows))
    heights = [sum(0.55 if r[2] == "overlap" else 1.0 for r in rows if r[0] == p) + 0.8 for p in panels]
    fig, axes = plt.subplots(len(panels), 2, squeeze=False,
                             figsize=(MAX_WIDTH_IN, min(10.0, max(3.2, 1.3 + 0.3 * sum(heights)))),
                             gridspec_kw={"width_ratios": [1.15, 1.0], "height_ratios": heights})
    meas = any(r[2].startswith("measured") for r in rows)
    model = any(r[2] == "model" for r in rows)
    for i, panel in enumerate(panels):
        ax, zx = axes[i]
        prow = [r for r in rows if r[0] == panel]
        ticks = draw_rows(ax, prow, colors, zoom=False)
        draw_rows(zx, prow, colors, zoom=True)
        for a in (ax, zx):
            a.set_yticks([t for t, _ in ticks])
            a.grid(axis="y", visible=False)
        ax.set_yticklabels([lab for _, lab in ticks], fontsize=7)
        zx.set_yticklabels([])
        ends = [s + d - gemm_end(lane) for _, _, k, lane in prow if k != "overlap" for _, s, d in lane]
        after = max([e for e in ends if e > 0] or [1.0])
        zx.set_xlim(-0.25 * after, after * 1.04)
        zx.axvline(0, color="black", linewidth=0.8)
        ax.set_title(panel, fontsize=9, loc="left")
        zx.set_title("zoom: what follows the GEMM (the collective legs)", fontsize=9, loc="left")
    axes[-1][0].set_xlabel("time from the start of the run (us)")
    axes[-1][1].set_xlabel("time from the end of the GEMM (us)")
    if meas and model:
        title = "Where the time went per config: measured (solid) beside model (hatched)"
    elif meas:
        title = "Where the time went per config: measured phases (no model phases in the inputs)"
    else:
        title = "Where the time went per config: model phases (hatched; no measured phases in the inputs)"
    fig.suptitle(title, fontsize=11)
    handles = [Patch(facecolor=colors[n], edgecolor="black", hatch="xx" if n == UNATTRIBUTED else None,
                     label="unattributed (total minus the phases)" if n == UNATTRIBUTED else n) for n in names]
    if meas:
        handles.append(Patch(facecolor="white", edgecolor="black", label="measured"))
    if model:
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="//", label="model"))
    if any(r[2] == "overlap" for r in rows):
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="...",
                             label="model: a fused scatter's transfers\nunder the GEMM (overlap)"))
    axes[0][1].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    save(fig, outdir, "phases_by_mode.png")
    return None


def fig_total_vs_m(doc, outdir, notes):
    import matplotlib.pyplot as plt
    series = {}
    for g in doc["groups"]:
        t = g["time_ok_us"]
        if t and t.get("n"):
            series.setdefault(g["series"], []).append(g)
    failed_runs = [r for r in doc["runs"] if r["verdict"] == "fail" and finite(r["time_us"])]
    ms = sorted({g["shape"]["m"] for gs in series.values() for g in gs})
    if not series and not failed_runs:
        return "no run carries a time (max_rank_time_us or per_rank_time_us)"
    if len(ms) < 2:
        return (f"every timed passing run is at one M ({ms[0]}); a curve against M needs two values of M"
                if ms else "no passing run carries a time")
    labels = sorted(series, key=lambda c: series[c][0]["index"])
    if len(labels) > MAX_SERIES:
        notes.append(f"total_vs_m.png: {len(labels)} configs; the first {MAX_SERIES} are drawn")
        labels = labels[:MAX_SERIES]
    fig, ax = plt.subplots(figsize=(12.0, HEIGHT_IN))
    cmap = plt.get_cmap("tab20" if len(labels) > 10 else "tab10")
    any_model = False
    for i, label in enumerate(labels):
        gs = sorted(series[label], key=lambda g: g["shape"]["m"])
        color = cmap(i % cmap.N)
        x = [g["shape"]["m"] for g in gs]
        med = [g["time_ok_us"]["median"] for g in gs]
        lo = [g["time_ok_us"]["median"] - g["time_ok_us"]["min"] for g in gs]
        hi = [g["time_ok_us"]["max"] - g["time_ok_us"]["median"] for g in gs]
        ax.errorbar(x, med, yerr=[lo, hi], fmt="o-", color=color, capsize=3, markersize=5, label=label)
        mx = [(g["shape"]["m"], g["model"]["total_us"]) for g in gs if g["model"] and finite(g["model"]["total_us"])]
        if mx:
            any_model = True
            ax.plot([a for a, _ in mx], [b for _, b in mx], "s--", color=color, alpha=0.7, markerfacecolor="none")
    if failed_runs:
        ax.plot([r["m"] for r in failed_runs], [r["time_us"] for r in failed_runs], "X", color="#c44e52",
                markersize=9, markeredgecolor="black", linestyle="none", label=f"failed run ({len(failed_runs)})")
        notes.append(f"total_vs_m.png: {len(failed_runs)} failed run(s) are marked X and kept off the curves")
    ys = [g["time_ok_us"]["median"] for label in labels for g in series[label]]
    if ys and max(ys) > 10 * min(ys):  # two machines, or M over a wide range: every curve stays readable
        ax.set_yscale("log")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ms)
    ax.set_xticklabels([str(m) for m in ms], rotation=45 if len(ms) > 8 else 0)
    ax.minorticks_off()
    ax.set_xlabel("M (rows)")
    ax.set_ylabel("total time, max over ranks (us)" + (", log" if ax.get_yscale() == "log" else ""))
    title = "Total time per config against M: median of passing runs, bars min-max"
    title += "; dashed: model" if any_model else " (no model totals in the inputs)"
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    save(fig, outdir, "total_vs_m.png")
    return None


def fig_pull_grid(doc, outdir, notes):
    import matplotlib.pyplot as plt
    sweeps = doc["sweeps"]
    if not sweeps:
        return "no pull-grid sweep (gemmar model sweep --json, or model_sweeps in results.json) was given"
    sweep = sweeps[0]
    if len(sweeps) > 1:
        notes.append(f"pull_grid.png: {len(sweeps)} sweeps given; drawn: {sweep['source']}")
    match = sweep.get("config_match") or {}
    m_sweep = sweep.get("m")
    measured = []
    for g in doc["groups"]:
        if g["pull_blocks"] is None or not (g["time_ok_us"] and g["time_ok_us"].get("n")):
            continue
        if match and (g["mode"], g["wire"], g["transport"]) != (match["mode"], match["gather_dtype"],
                                                                 match["gather_transport"]):
            continue
        if not match and (g["wire"], g["transport"]) != ("fp8", "lsa"):
            continue
        if m_sweep is not None and g["shape"]["m"] != m_sweep:
            continue
        if sweep.get("profile") and g["profile"] != sweep["profile"]:
            continue  # another machine's runs are not points of this machine's curve
        measured.append(g)
    keys = list(dict.fromkeys((g["machine"], g["profile"]) for g in measured))
    if len(keys) > 1:
        notes.append(f"pull_grid.png: the runs at the sweep's config are of {len(keys)} machines; those of "
                     f"{keys[0][0] or 'the unnamed machine'} ({keys[0][1]}) are drawn")
        measured = [g for g in measured if (g["machine"], g["profile"]) == keys[0]]
    fig, ax = plt.subplots(figsize=(11.0, HEIGHT_IN))
    xs = [p[0] for p in sweep["points"]]
    ys = [p[1] for p in sweep["points"]]
    if sweep["band"]:
        lo, hi = sweep["band"]
        ax.axvspan(lo if lo != hi else lo * 0.97, hi if lo != hi else hi * 1.03, color="#55a868", alpha=0.2,
                   label=f"model optimum band [{lo:g}, {hi:g}] (within 1% of best)")
    ax.plot(xs, ys, "-", color="#4c72b0", marker=".", label="model")
    if sweep["optimum"] is not None:
        ax.axvline(sweep["optimum"], color="#55a868", linestyle=":", label=f"model optimum {sweep['optimum']:g}")
    if measured:
        px = [g["pull_blocks"] for g in measured]
        med = [g["time_ok_us"]["median"] for g in measured]
        lo = [g["time_ok_us"]["median"] - g["time_ok_us"]["min"] for g in measured]
        hi = [g["time_ok_us"]["max"] - g["time_ok_us"]["median"] for g in measured]
        n = sum(g["time_ok_us"]["n"] for g in measured)
        ax.errorbar(px, med, yerr=[lo, hi], fmt="o", color="#c44e52", capsize=3, markersize=7,
                    label=f"measured: median of passing runs, bars min-max ({n} runs)")
    else:
        notes.append("pull_grid.png: no measured run with a pull_blocks value matches the sweep's config and M; "
                     "only the model curve is drawn")
    ax.set_xscale("log", base=2)
    ticks = sorted(set(xs) | {float(g["pull_blocks"]) for g in measured})
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:g}" for t in ticks], rotation=45 if len(ticks) > 10 else 0)
    ax.minorticks_off()
    ax.set_xlabel("pull grid (blocks per rank, MORI_GEMM_AR_PULL_BLOCKS)")
    ax.set_ylabel("total time (us)")
    title = "Pull-grid sweep: model curve" + (", measured points" if measured else "") + ", optimum band"
    if sweep.get("config"):
        title += f"\n{sweep['config']}"
    if m_sweep is not None:
        title += f" M={m_sweep}"
    ax.set_title(title)
    ax.legend(loc="upper center")
    save(fig, outdir, "pull_grid.png")
    return None


def fig_rel_l2(doc, outdir, notes):
    """One column per config (every M together: the floor is a per-row statistic)."""
    import matplotlib.pyplot as plt
    groups = [c for c in doc["configs"] if c["rel_l2"]]
    if not groups:
        return "no run carries rel_l2"
    groups = cap(groups, MAX_GROUPS, "rel_l2_vs_floor.png", notes)
    fig, ax = plt.subplots(figsize=(width_for(len(groups)), HEIGHT_IN + 1.0))
    vals = [3e-3, 4e-2, 5e-3]
    for g in groups:
        s = g["rel_l2"]
        if s.get("n"):
            vals += [v for v in (s["min"], s["max"]) if v > 0]
        if finite(g["floor"]) and g["floor"] > 0:
            vals.append(g["floor"])
        if g["band"]:
            vals += [b for b in g["band"] if finite(b) and b > 0]
    top, bottom = max(vals) * 3.0, min(vals) / 3.0
    failed = {}
    for r in doc["runs"]:
        if r["verdict"] == "fail":
            failed.setdefault(r["series"], []).append(r)
    labelled = set()

    def once(label):
        if label in labelled:
            return None
        labelled.add(label)
        return label

    no_floor = []
    for i, g in enumerate(groups):
        lo_w, hi_w = BENCH_WINDOW.get(g["wire"], (None, None))
        if hi_w is not None:
            ax.fill_between([i - 0.4, i + 0.4], [lo_w or bottom] * 2, [hi_w] * 2, color="#55a868", alpha=0.12,
                            linewidth=0, label=once("benchmark pass window (docs/spec.md 1.2)"))
        if g["band"]:
            blo, bhi = g["band"]
            ax.fill_between([i - 0.35, i + 0.35], [blo if finite(blo) and blo > 0 else bottom] * 2, [bhi] * 2,
                            color="#4c72b0", alpha=0.3, linewidth=0, label=once("verdict's floor band"))
        if finite(g["floor"]):
            ax.hlines(g["floor"], i - 0.35, i + 0.35, color="#4c72b0", linewidth=2, label=once("predicted floor"))
        else:
            no_floor.append(g["series"])
        s = g["rel_l2"]
        bad = g["fail"] > 0
        if s.get("n"):
            lo, hi = max(s["min"], bottom), max(s["max"], bottom)
            ax.vlines(i, lo, hi, color="#555555", linewidth=1.5, label=once("min-max over runs"))
            ax.plot(i, max(s["median"], bottom), marker="o", color="black", markersize=6, linestyle="none",
                    label=once("median relL2"))
        fr = [r["rel_l2"] for r in failed.get(g["series"], []) if finite(r["rel_l2"])]
        if fr:
            ax.plot([i] * len(fr), [min(max(v, bottom), top) for v in fr], "X", color="#c44e52", markersize=8,
                    linestyle="none", label=once("failed run"))
        if s.get("nonfinite") or bad:
            txt = []
            if bad:
                txt.append(f"{g['fail']} fail")
            if s.get("nonfinite"):
                txt.append(f"{s['nonfinite']} NaN")
            ax.annotate(", ".join(txt), (i, top / 1.6), ha="center", va="center", fontsize=7, color="#c44e52",
                        rotation=90 if len(groups) > 12 else 0)
    ax.set_yscale("log")
    ax.set_ylim(bottom, top)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([config_tick(c) for c in groups], rotation=35, ha="right", fontsize=7)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylabel("relL2 against the fp32 reference (log)")
    ax.set_title("relL2 per config against the predicted floor of its wire (median, min-max over its runs)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if no_floor:
        notes.append("rel_l2_vs_floor.png: no predicted floor for " + name_list(no_floor)
                     + " (no floor in the inputs; gemmar check adds it)")
    save(fig, outdir, "rel_l2_vs_floor.png")
    return None


def fig_rank_spread(doc, outdir, notes):
    import matplotlib.pyplot as plt
    groups = [c for c in doc["configs"] if c["rank_spread_pct"] and c["rank_spread_pct"].get("n")]
    if not groups:
        return "no run carries per_rank_time_us for two or more ranks"
    groups = cap(groups, MAX_GROUPS, "rank_spread.png", notes)
    fig, ax = plt.subplots(figsize=(width_for(len(groups)), HEIGHT_IN + 1.0))
    for i, g in enumerate(groups):
        s = g["rank_spread_pct"]
        ax.vlines(i, s["min"], s["max"], color="#8c8c8c", linewidth=1.5, label="min-max over runs" if i == 0 else None)
        ax.plot(i, s["median"], "o", color="#4c72b0", markersize=6, label="median" if i == 0 else None)
        sr = g["slowest_rank"]
        if sr:
            ax.annotate(f"r{sr['rank']}\n{sr['runs']}/{s['n']}", (i, s["max"]), textcoords="offset points",
                        xytext=(0, 4), ha="center", va="bottom", fontsize=6)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([config_tick(c) for c in groups], rotation=35, ha="right", fontsize=7)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylim(0, max(g["rank_spread_pct"]["max"] for g in groups) * 1.25 or 1.0)  # room for the annotations
    ax.set_ylabel("slowest minus fastest rank, % of the median rank")
    ax.set_title("Per-rank time spread per config (annotated: the rank slowest most often, in how many runs)")
    ax.legend(loc="upper left")
    save(fig, outdir, "rank_spread.png")
    return None


FIGURES = [
    ("phases_by_mode.png", "Where the time went per config: measured beside model", fig_phases),
    ("total_vs_m.png", "Total time per config against M", fig_total_vs_m),
    ("pull_grid.png", "Pull-grid sweep: model curve, measured points, optimum band", fig_pull_grid),
    ("rel_l2_vs_floor.png", "relL2 per config against the predicted floor", fig_rel_l2),
    ("rank_spread.png", "Per-rank time spread per config", fig_rank_spread),
]


def draw_all(doc, outdir):
    drawn, not_drawn, notes = [], [], list(doc["notes"])
    for name, title, fn in FIGURES:
        reason = fn(doc, outdir, notes)
        if reason is None:
            drawn.append((name, DRAWN_TITLES.get(name, title)))
        else:
            not_drawn.append((name, reason))
    return drawn, not_drawn, notes
