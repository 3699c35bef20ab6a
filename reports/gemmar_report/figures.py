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
}
OTHER_COLOR = "#cccccc"
# The benchmark's own pass windows (docs/spec.md 1.2), drawn beside the predicted floors.
BENCH_WINDOW = {"bf16": (None, 3e-3), "fp8": (5e-3, 4e-2)}

MAX_WIDTH_IN = 16.0   # 1600 px
HEIGHT_IN = 6.5       # 650 px
MAX_GROUPS = 40       # per-group figures (relL2, rank spread)
MAX_PHASE_GROUPS = 16  # bar groups of the phase figure (two bars each)
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
    DRAWN_TITLES[name] = " ".join(fig.axes[0].get_title().split())
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, name), format="png", metadata={"Software": None})
    plt.close(fig)


def finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fmt_us(x):
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def tick_label(g):
    return f"{g['config']}\nM={g['shape']['m']}"


def config_tick(c):
    ms = c["m_values"]
    return c["config"] + (f" M={ms[0]}" if len(ms) == 1 else f" ({len(ms)} M)")


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

def fig_phases(doc, outdir, notes):
    """Stacked phases per config (largest M with phases): measured median beside the model."""
    import matplotlib.pyplot as plt
    best = {}
    for g in doc["groups"]:
        meas = bool(g["phases_us"])
        model = bool(g["model"] and g["model"]["phases"])
        if not (meas or model):
            continue
        rank = (meas, model, g["shape"]["m"])
        if g["config"] not in best or rank > best[g["config"]][0]:
            best[g["config"]] = (rank, g)
    chosen = sorted((g for _, g in best.values()), key=lambda g: g["index"])
    loose = [m for m in doc["models"] if m["used_by_groups"] == 0]
    if not chosen and not loose:
        return "no run carries measured phases (phases_us) or model phases, and no model document was given"
    bars = []  # (group label, bar label, phases [[name, us]], hatch)
    no_model, no_meas = [], []
    for g in chosen:
        label = tick_label(g)
        if g["phases_us"]:
            n = g["phases_runs"]
            bars.append((label, f"measured\n(median of {n})" if n > 1 else "measured", g["phases_us"], None))
        else:
            no_meas.append(g["config"])
        if g["model"] and g["model"]["phases"]:
            bars.append((label, "model", g["model"]["phases"], "//"))
        else:
            no_model.append(g["config"])
    for m in loose:
        shape = m["shape"]
        label = (m["config"] or os.path.basename(m["source"])) + (f"\nM={shape['m']}" if shape else "\n(no shape)")
        bars.append((label, "model", m["model"]["phases"], "//"))
    labels_in_order = []
    for b in bars:
        if b[0] not in labels_in_order:
            labels_in_order.append(b[0])
    if len(labels_in_order) > MAX_PHASE_GROUPS:
        keep = set(labels_in_order[:MAX_PHASE_GROUPS])
        notes.append(f"phases_by_mode.png: {len(labels_in_order)} bar groups; the first {MAX_PHASE_GROUPS} are drawn")
        bars = [b for b in bars if b[0] in keep]
    if no_meas and chosen:
        notes.append("phases_by_mode.png: no measured phases (phases_us) for " + name_list(no_meas)
                     + "; only the model bar is drawn")
    if no_model:
        notes.append("phases_by_mode.png: no model phases for " + name_list(no_model)
                     + " (give `gemmar model --json` for that config and shape); only the measured bar is drawn")
    order = list(doc["phase_order"])
    names = []
    for _, _, ph, _ in bars:
        for name, _ in ph:
            if name not in names:
                names.append(name)
    names.sort(key=lambda n: (order.index(n) if n in order else len(order), n))
    n_groups = len({b[0] for b in bars})
    fig, ax = plt.subplots(figsize=(width_for(len(bars), per=0.75, base=3.5, least=8.0), HEIGHT_IN + 0.5))
    xs, x, prev = [], 0.0, None
    for glabel, _, _, _ in bars:
        if prev is not None and glabel != prev:
            x += 0.6  # a gap between configs, none between measured and model of one config
        xs.append(x)
        prev = glabel
        x += 1.0
    drawn = set()
    for xi, (_, _, ph, hatch) in zip(xs, bars):
        bottom = 0.0
        d = dict(ph)
        for name in names:
            us = d.get(name)
            if not us:
                continue
            ax.bar(xi, us, bottom=bottom, width=0.8, color=PHASE_COLORS.get(name, OTHER_COLOR), edgecolor="black",
                   linewidth=0.4, hatch=hatch, label=name if name not in drawn else None)
            drawn.add(name)
            bottom += us
        ax.text(xi, bottom, fmt_us(bottom), ha="center", va="bottom", fontsize=7)
    # One tick per config, centred under its measured/model pair; which bar is which is in the legend.
    groups_x = {}
    for xi, b in zip(xs, bars):
        groups_x.setdefault(b[0], []).append(xi)
    ax.set_xticks([sum(gx) / len(gx) for gx in groups_x.values()])
    ax.set_xticklabels([g.replace("\n", " ") for g in groups_x], rotation=30, ha="right", fontsize=7)
    ax.grid(axis="x", visible=False)
    span = xs[-1] - xs[0] + 1.6
    if span < 8.0:  # few bars: keep them bar-shaped rather than stretched over the whole width
        mid = (xs[0] + xs[-1]) / 2
        ax.set_xlim(mid - 4.0, mid + 4.0)
    ax.set_ylabel("time (us), phases stacked")
    n_meas = sum(1 for b in bars if b[3] is None)
    n_model = len(bars) - n_meas
    if n_meas and n_model:
        title = "Phase breakdown per config: measured (solid) beside model (hatched)"
    elif n_meas:
        title = "Measured phase breakdown per config (no model phases in the inputs)"
    else:
        title = "Model phase breakdown per config (hatched; no measured phases in the inputs)"
    ax.set_title(f"{title}, {n_groups} config(s)")
    handles, labels = ax.get_legend_handles_labels()
    idx = [labels.index(n) for n in names if n in labels]
    handles, labels = [handles[i] for i in idx], [labels[i] for i in idx]
    from matplotlib.patches import Patch
    multi = [b[1] for b in bars if b[3] is None and "median" in b[1]]
    if n_meas:
        handles.append(Patch(facecolor="white", edgecolor="black"))
        labels.append("measured" + (" (median over the config's runs)" if multi else ""))
    if n_model:
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="//"))
        labels.append("model")
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.margins(y=0.08)
    save(fig, outdir, "phases_by_mode.png")
    return None


def fig_total_vs_m(doc, outdir, notes):
    import matplotlib.pyplot as plt
    series = {}
    for g in doc["groups"]:
        t = g["time_ok_us"]
        if t and t.get("n"):
            series.setdefault(g["config"], []).append(g)
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
    ax.set_xscale("log", base=2)
    ax.set_xticks(ms)
    ax.set_xticklabels([str(m) for m in ms], rotation=45 if len(ms) > 8 else 0)
    ax.minorticks_off()
    ax.set_xlabel("M (rows)")
    ax.set_ylabel("total time, max over ranks (us)")
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
        measured.append(g)
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
            failed.setdefault(r["config"], []).append(r)
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
            no_floor.append(g["config"])
        s = g["rel_l2"]
        bad = g["fail"] > 0
        if s.get("n"):
            lo, hi = max(s["min"], bottom), max(s["max"], bottom)
            ax.vlines(i, lo, hi, color="#555555", linewidth=1.5, label=once("min-max over runs"))
            ax.plot(i, max(s["median"], bottom), marker="o", color="black", markersize=6, linestyle="none",
                    label=once("median relL2"))
        fr = [r["rel_l2"] for r in failed.get(g["config"], []) if finite(r["rel_l2"])]
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
    ax.set_ylim(bottom=0)
    ax.margins(y=0.2)
    ax.set_ylabel("slowest minus fastest rank, % of the median rank")
    ax.set_title("Per-rank time spread per config (annotated: the rank slowest most often, in how many runs)")
    ax.legend(loc="upper left")
    save(fig, outdir, "rank_spread.png")
    return None


FIGURES = [
    ("phases_by_mode.png", "Phase breakdown per config, measured beside model", fig_phases),
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
