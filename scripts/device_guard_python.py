#!/usr/bin/env python3
"""The caller guard (python/gemmar_guard.py CallerGuard, libgemmar_guard.so) on one GPU against an independent torch
gemm_ar (python/torch_gemm_ar.py, W ranks on one device), issue 49. Run by scripts/device_guard_python.sh; writes
OUT/guard_python.json after every section (a run cut short keeps what it finished) and prints a log.

Sections, in order:
  agree   the library's records against the torch fallback's on the same call (within the sums' rounding), and the
          device judge's cells against the numpy judge's on the same gathered records (equal)
  cost    mori's V4-Pro target (blockscale, W = 8, N = 7168, K = 2048) at M = 4096 and 16384 on the four scatter x
          gather wire pairs: the op (its 8 GEMMs and the torch collective), the GEMMs alone, and the guard's device
          time per call for all 8 ranks (8 sums + 8 judges: a CUDA graph replayed, and eager); the guard over the op
          and over the GEMMs alone (a lower bound of any op on this device); the torch fallback once
  faults  M = 4096, each wire pair: a dropped peer, a stale slice, a zeroed half slice, one rank's view differing, a
          wrong wire scale (fp8 wires), each on FAULT_CALLS calls; one NaN at a random element on NAN_CALLS calls;
          caught per call against the probability docs/guard.md states (1; one NaN: 1 / sample)
  clean   CLEAN_CALLS calls per wire pair of both targets (V4-Pro blockscale W = 8; V4-Flash mxfp8 W = 4, N = 5120,
          A scales in mori's packed int32 layout), new activations every call, and the fp8 gather's named recipe
          variants (true-division, div-codes): flagged calls (must be 0), the worst check's ratio to its bound and the
          worst cell's aggregate over its threshold; the calls go round the configurations in chunks, so a run that
          reaches --budget-s leaves every configuration with calls
OUT/summary.txt is the short text of OUT/guard_python.json (rewritten after every section; --summary-only rewrites
it from the JSON alone): the guard's share of the op against the goal (<= 2% at M = 16384, <= 5% at 4096), each fault
class's catches against its stated probability, the clean calls and their flags.
"""
import argparse
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import torch  # noqa: E402

import gemmar_guard as gg  # noqa: E402
import gemmar_guard_caller as gc  # noqa: E402
import torch_gemm_ar as tg  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False

TARGETS = {"v4-pro": dict(quant="blockscale", world=8, n=7168, k=2048),
           "v4-flash": dict(quant="mxfp8", world=4, n=5120, k=2048)}
WIRES = [("bf16", "bf16"), ("bf16", "fp8"), ("fp8", "bf16"), ("fp8", "fp8")]  # (scatter, gather)
SEED = 0x5EED0049
RESULT = {}
GOAL_PCT = {4096: 5.0, 16384: 2.0}  # the goal for the guard's share of the op, by M
DEADLINE = [float("inf")]  # time.time() past which a section stops early (--budget-s)


def over_budget():
    return time.time() > DEADLINE[0]


def log(*a):
    print(*a, flush=True)


def save(out):
    with open(os.path.join(out, "guard_python.json"), "w") as f:
        json.dump(RESULT, f, indent=1, sort_keys=True)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(summary(RESULT))


def summary(res):
    """The short text: one line per measurement, the verdict against the issue's goals first."""
    lines = [f"caller guard on {res.get('device')} (torch {res.get('torch')}), implementation "
             f"{'library ' + str(res.get('library')) if res.get('library') else 'torch fallback (no library)'}"]
    cost = {k: v for k, v in res.get("cost", {}).items() if "error" not in v}
    for m in sorted(GOAL_PCT):
        rows = [v for k, v in cost.items() if k.startswith(f"M={m} ")]
        if rows:
            worst = max(v["guard_over_op_pct"] for v in rows)
            gemms = max(v["guard_over_gemms_pct"] for v in rows)
            lines.append(f"GOAL cost M={m}: worst guard/op {worst:.2f}% over {len(rows)} wire pairs "
                         f"(goal <= {GOAL_PCT[m]:g}%): {'met' if worst <= GOAL_PCT[m] else 'NOT MET'}; "
                         f"worst guard/(the op's GEMMs alone) {gemms:.2f}%")
    faults = res.get("faults", {})
    every = [k for k, v in faults.items() if v["stated_p"] == 1.0]
    missed = [k for k in every if faults[k]["caught"] != faults[k]["calls"]]
    if faults:
        lines.append(f"GOAL faults: {len(every) - len(missed)} of {len(every)} (wire pair, class) caught on every call"
                     + (f"; missed on some call: {missed}" if missed else ""))
    clean = res.get("clean", {})
    if clean:
        n = sum(v["calls"] for v in clean.values())
        f = sum(v["flagged"] for v in clean.values())
        lines.append(f"GOAL clean: {f} flagged of {n} clean calls over {len(clean)} configurations (goal 0 of >= 1000)"
                     f": {'met' if f == 0 and n >= 1000 else 'NOT MET'}")
    for k, v in res.get("agree", {}).items():
        lines.append(f"agree {k}: device judge == numpy judge {v['cells_equal']}, worst ratios bit-equal "
                     f"{v['worst_ratio_bits_equal']}, records library vs torch max rel diff "
                     f"{max(v['record_rel_diff_lib_vs_torch'].values()):.2e}")
    for k, v in cost.items():
        graph = "-" if v.get("guard_graph_ms") is None else f"{v['guard_graph_ms']:.4f}"
        lines.append(f"cost {k}: op {v['op_ms']:.3f} ms (its 8 GEMMs {v['gemms_ms']:.3f} ms), guard {graph} ms graph / "
                     f"{v['guard_eager_ms']:.4f} ms eager for 8 ranks: {v['guard_over_op_pct']:.2f}% of the op, "
                     f"{v['guard_over_gemms_pct']:.2f}% of its GEMMs (timed by {v.get('timed_by', 'graph')}); clean "
                     f"findings {v['clean_findings']}" + (f"; graph capture failed: {v['graph_error']}"
                                                          if v.get("graph_error") else ""))
    if "torch_fallback_ms_per_call_16384" in res:
        lines.append(f"cost torch fallback, M=16384 bf16/bf16: {res['torch_fallback_ms_per_call_16384']:.1f} ms per "
                     f"call (wall, 8 ranks, numpy judges)")
    for k, v in faults.items():
        exp = v["calls"] * v["stated_p"]
        lines.append(f"fault {k}: caught on {v['caught']} of {v['calls']} calls (stated p {v['stated_p']:.4g}: "
                     f"{exp:.1f} expected), codes {v.get('codes', [])}")
    for k, v in clean.items():
        lines.append(f"clean {k}: {v['flagged']} of {v['calls']} flagged; worst check {v['worst_check_over_bound']:.3f} "
                     f"of its bound, worst cell {v['worst_cell_over_threshold']:.4f} of its threshold")
    for k in res.get("errors", {}):
        lines.append(f"ERROR section {k} failed (traceback in guard_python.json and guard_python.log)")
    return "\n".join(lines) + "\n"


class Target:
    """One target's weights (fixed across calls), prepared once per rank; guards per wire pair share them."""

    def __init__(self, name, library="auto", sample=32):
        t = TARGETS[name]
        self.name, self.quant, self.W, self.n, self.k = name, t["quant"], t["world"], t["n"], t["k"]
        self.sample, self.library = sample, library
        self.b = [tg.weights(r, self.n, self.k, self.quant) for r in range(self.W)]
        t0 = time.time()
        g = self.guards("bf16", "bf16")
        self.weights = [g[r].prepare(*self.b[r]) for r in range(self.W)]
        torch.cuda.synchronize()
        self.prepare_s = time.time() - t0
        self._guards = {}

    def guards(self, scatter, gather, recipe="mori", library=None):
        key = (scatter, gather, recipe, library)
        if not hasattr(self, "_guards"):
            self._guards = {}
        if key not in self._guards:
            self._guards[key] = [gg.CallerGuard(self.n, self.k, quant=self.quant, gather_dtype=gather,
                                                scatter_dtype=scatter, wire_recipe=recipe, sample=self.sample,
                                                world=self.W, rank=r, seed=SEED, on_finding="return",
                                                library=self.library if library is None else library)
                                 for r in range(self.W)]
        return self._guards[key]

    def inputs(self, m, seed):
        acts = [tg.activations(m, self.k, self.quant, seed=seed * 64 + r) for r in range(self.W)]
        a = [x[0] for x in acts]
        # what the op takes: blockscale fp32 [K/128, M] flat; mxfp8 mori's packed int32 (preshuffle_a_scale's order)
        sa = [x[1] if self.quant == "blockscale" else tg.mori_packed_a_scale(x[1]) for x in acts]
        return a, [x[1] for x in acts], sa

    def parts(self, a, sa_raw):
        return [tg.partial(a[r], sa_raw[r], *self.b[r], self.quant) for r in range(self.W)]


_TARGETS = {}


def target(name):
    """One Target per name for the whole run: its weights are prepared once."""
    if name not in _TARGETS:
        _TARGETS[name] = Target(name)
        RESULT.setdefault("prepare_s", {})[name] = _TARGETS[name].prepare_s
    return _TARGETS[name]


def op(target, m, seed, scatter, gather, recipe="mori", **fault):
    a, sa_raw, sa = target.inputs(m, seed)
    parts = target.parts(a, sa_raw)
    outs = tg.gemm_ar(parts, gather, scatter, recipe, **fault)
    return a, sa, outs


def judge(target, guards, a, sa, outs):
    """Every rank's findings; the ranks judge the same records, so they must agree."""
    calls = gg.check_local(guards, target.weights, a, sa, outs, wait=False)
    found = [c.findings() for c in calls]
    if any(f != found[0] for f in found):
        raise RuntimeError("the ranks' judges disagree: %r" % (found,))
    return found[0], calls[0].cells()


def events_ms(fn, reps):
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def section_agree(out):
    """The library against the torch fallback on the same call, and the device judge against numpy's."""
    t = target("v4-pro")
    res = {}
    for scatter, gather in WIRES:
        a, sa, outs = op(t, 4096, 7, scatter, gather)
        lib_g, torch_g = t.guards(scatter, gather), t.guards(scatter, gather, library=False)
        plan, gathered = gg.enqueue_local(lib_g, t.weights, a, sa, outs)
        lib_rec = gathered.clone()
        torch_g[0].host_calls = int(lib_g[0].call_counter.item()) - 1  # the rows the library drew
        for g in torch_g:
            g.host_calls = torch_g[0].host_calls
        _, tgath = gg.enqueue_local(torch_g, t.weights, a, sa, outs)
        l = plan.layout
        diffs = {}
        for name, off, cnt in (("pred", l.pred, l.L * l.nb), ("osum", l.osum, l.L * l.nb), ("osq", l.osq, l.L * l.nb),
                               ("asq", l.asq, l.L), ("wsum", l.wsum, l.Ls * l.nb)):
            x = lib_rec.view(t.W, l.floats)[:, off:off + cnt].double()
            y = tgath.view(t.W, l.floats)[:, off:off + cnt].double()
            scale = y.abs().max().clamp_min(1e-30)
            diffs[name] = float((x - y).abs().max() / scale)
        # the device judge's cells against numpy's on the library's records
        cells = lib_g[0]._buffers(4096)["cells"].cpu().numpy()
        import numpy as np
        dev = np.frombuffer(cells.tobytes(), dtype=gc.cell_dtype())[:t.W * t.W]
        ref = gc.judge(plan, lib_rec.cpu().numpy())
        same = all(int(dev[i][f]) == int(ref[i][f]) for i in range(t.W * t.W)
                   for f in ("pred_fail", "nonfinite", "worst_idx", "gather", "wire", "bypass"))
        ratio_same = bool(np.array_equal(dev["worst_ratio"], ref["worst_ratio"]))
        res[f"{scatter}/{gather}"] = {"record_rel_diff_lib_vs_torch": diffs, "cells_equal": same,
                                      "worst_ratio_bits_equal": ratio_same}
        log(f"agree {scatter}/{gather}: record library vs torch (max rel) {diffs}; device judge == numpy: {same} "
            f"(worst ratios bit-equal: {ratio_same})")
    RESULT["agree"] = res
    save(out)


def cost_point(t, m, scatter, gather, reps):
    """One (M, wire pair): the op, its GEMMs alone and the guard of its 8 ranks, each the median of reps."""
    key = f"M={m} scatter={scatter} gather={gather}"
    a, sa_raw, sa = t.inputs(m, 11)
    parts = t.parts(a, sa_raw)
    outs = tg.gemm_ar(parts, gather, scatter)
    guards = t.guards(scatter, gather)
    gemm_ms = events_ms(lambda: t.parts(a, sa_raw), reps)
    op_ms = events_ms(lambda: tg.gemm_ar(t.parts(a, sa_raw), gather, scatter), reps)
    found, _ = judge(t, guards, a, sa, outs)
    eager_ms = events_ms(lambda: gg.enqueue_local(guards, t.weights, a, sa, outs), reps)
    graph_ms, graph_error = None, None
    try:  # the device time without the host's launch cost; eager stands in if capture fails
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            gg.enqueue_local(guards, t.weights, a, sa, outs)  # warm: every buffer exists before capture
            with torch.cuda.graph(graph, stream=stream):
                gg.enqueue_local(guards, t.weights, a, sa, outs)
        torch.cuda.current_stream().wait_stream(stream)
        graph_ms = events_ms(lambda: graph.replay(), reps)
    except Exception as e:  # noqa: BLE001 - recorded, and the eager time is the measurement
        graph_error = repr(e)
        torch.cuda.synchronize()
    guard_ms = graph_ms if graph_ms is not None else eager_ms
    r = {"op_ms": op_ms, "gemms_ms": gemm_ms, "guard_graph_ms": graph_ms, "guard_eager_ms": eager_ms,
         "timed_by": "graph" if graph_ms is not None else "eager", "graph_error": graph_error,
         "guard_over_op_pct": 100 * guard_ms / op_ms, "guard_over_gemms_pct": 100 * guard_ms / gemm_ms,
         "guard_per_rank_us": 1000 * guard_ms / t.W, "clean_findings": [c for c, _ in found]}
    log(f"cost {key}: op {op_ms:.3f} ms, GEMMs {gemm_ms:.3f} ms, guard {guard_ms:.4f} ms ({r['timed_by']}; "
        f"eager {eager_ms:.4f} ms): {r['guard_over_op_pct']:.2f}% of the op, "
        f"{r['guard_over_gemms_pct']:.2f}% of its GEMMs; findings {r['clean_findings']}"
        + (f"; graph capture failed: {graph_error}" if graph_error else ""))
    return r


def guard_kernels(t, m, scatter, gather, calls):
    """The guard's GPU kernels over `calls` eager calls (torch.profiler): {name: launches, us per call, us each}."""
    from torch.profiler import ProfilerActivity, profile
    a, sa_raw, sa = t.inputs(m, 13)
    outs = tg.gemm_ar(t.parts(a, sa_raw), scatter, gather)
    guards = t.guards(scatter, gather)
    gg.enqueue_local(guards, t.weights, a, sa, outs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            gg.enqueue_local(guards, t.weights, a, sa, outs)
        torch.cuda.synchronize()
    res = {}
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", None)
        if us is None:
            us = e.cuda_time_total
        if us <= 0:
            continue
        res[e.key] = {"launches": e.count, "us_per_call": us / calls, "us_per_launch": us / max(1, e.count)}
    return dict(sorted(res.items(), key=lambda kv: -kv[1]["us_per_call"]))


def section_cost(out, reps):
    t = target("v4-pro")
    res = {}
    for m in (4096, 16384):
        for scatter, gather in WIRES:
            key = f"M={m} scatter={scatter} gather={gather}"
            try:
                res[key] = cost_point(t, m, scatter, gather, reps)
            except Exception:  # noqa: BLE001 - the next point still runs; the error is in the JSON
                res[key] = {"error": traceback.format_exc()}
                log(f"cost {key} failed:\n{res[key]['error']}")
                RESULT.setdefault("errors", {})[f"cost {key}"] = res[key]["error"]
            RESULT["cost"] = res
            save(out)
    # Where the guard's time goes: its GPU kernels over 5 eager calls at M = 16384 (8 ranks), per kernel name.
    try:
        RESULT["cost_kernels_16384"] = guard_kernels(t, 16384, "bf16", "bf16", 5)
        for name, v in RESULT["cost_kernels_16384"].items():
            log(f"cost kernels M=16384 bf16/bf16: {name[:70]}: {v['launches']} launches, {v['us_per_call']:.1f} us "
                f"per call (8 ranks), {v['us_per_launch']:.2f} us each")
    except Exception:  # noqa: BLE001 - the profile is extra; the error is in the JSON
        RESULT.setdefault("errors", {})["cost kernels"] = traceback.format_exc()
    save(out)
    # The torch fallback (no library) once, wall time per call including its numpy judges on the host.
    a, sa_raw, sa = t.inputs(16384, 12)
    outs = tg.gemm_ar(t.parts(a, sa_raw), "bf16", "bf16")
    fb = t.guards("bf16", "bf16", library=False)
    gg.check_local(fb, t.weights, a, sa, outs)
    torch.cuda.synchronize()
    t0 = time.time()
    for _ in range(3):
        gg.check_local(fb, t.weights, a, sa, outs)
    RESULT["torch_fallback_ms_per_call_16384"] = 1000 * (time.time() - t0) / 3
    log(f"cost torch fallback at M=16384 bf16/bf16: {RESULT['torch_fallback_ms_per_call_16384']:.1f} ms per call "
        f"(wall, 8 ranks, numpy judges)")
    save(out)


def faults_pair(out, t, res, scatter, gather, calls, nan_calls):
    """Every fault class on one wire pair at M = 4096, into res."""
    m, W = 4096, t.W
    S = m // W
    guards = t.guards(scatter, gather)
    classes = ["dropped-peer", "stale-slice", "zeroed-half-slice", "view-differs"]
    if "fp8" in (scatter, gather):
        classes.append("wrong-wire-scale")
    prev = op(t, m, 999, scatter, gather)[2]
    for cls in classes:
        caught, codes = 0, set()
        for c in range(calls):
            seed = 1000 + c
            if cls == "dropped-peer":
                a, sa, outs = op(t, m, seed, scatter, gather, drop_peer=2)
            elif cls == "wrong-wire-scale":
                a, sa, outs = op(t, m, seed, scatter, gather, wrong_scale_slice=1)
            else:
                a, sa, outs = op(t, m, seed, scatter, gather)
                if cls == "stale-slice":
                    for r in range(W):
                        outs[r][S:2 * S] = prev[r][S:2 * S]
                elif cls == "zeroed-half-slice":
                    for r in range(W):
                        outs[r][S:S + S // 2] = 0
                else:  # one rank's gather of slice 1 did not land this call
                    outs[W - 1][S:2 * S] = prev[W - 1][S:2 * S]
            found, _ = judge(t, guards, a, sa, outs)
            caught += bool(found)
            codes.update(code for code, _ in found)
        res[f"{scatter}/{gather} {cls}"] = {"calls": calls, "caught": caught, "stated_p": 1.0,
                                            "codes": sorted(codes)}
        log(f"faults {scatter}/{gather} {cls}: caught on {caught} of {calls} calls (stated 1), codes {sorted(codes)}")
        RESULT["faults"] = res
        save(out)
    # One NaN at a random element of a random rank's view, a fresh one per call, on one clean output.
    a, sa, outs = op(t, m, 4242, scatter, gather)
    g = torch.Generator().manual_seed(77)
    caught = 0
    done = 0
    for c in range(nan_calls):
        if over_budget():
            break
        done += 1
        r = int(torch.randint(W, (1,), generator=g))
        i = int(torch.randint(m, (1,), generator=g))
        j = int(torch.randint(t.n, (1,), generator=g))
        keep = outs[r][i, j].clone()
        outs[r][i, j] = float("nan")
        found, _ = judge(t, guards, a, sa, outs)
        outs[r][i, j] = keep
        caught += bool(found)
    res[f"{scatter}/{gather} one-nan"] = {"calls": done, "caught": caught, "stated_p": 1.0 / t.sample}
    log(f"faults {scatter}/{gather} one-nan: caught on {caught} of {done} calls (stated 1/{t.sample} = "
        f"{done / t.sample:.1f} expected)")
    RESULT["faults"] = res
    save(out)


def section_faults(out, calls, nan_calls):
    t = target("v4-pro")
    res = {}
    for scatter, gather in WIRES:
        try:
            faults_pair(out, t, res, scatter, gather, calls, nan_calls)
        except Exception:  # noqa: BLE001 - the next pair still runs; the error is in the JSON
            err = traceback.format_exc()
            log(f"faults {scatter}/{gather} failed:\n{err}")
            RESULT.setdefault("errors", {})[f"faults {scatter}/{gather}"] = err
            save(out)


def section_clean(out, calls, variant_calls, chunk=10):
    runs = [(name, s, g, "mori", calls) for name in ("v4-pro", "v4-flash") for s, g in WIRES]
    runs += [("v4-pro", "bf16", "fp8", r, variant_calls) for r in ("true-division", "div-codes")]
    m = 4096
    state = []
    for name, scatter, gather, recipe, n_calls in runs:
        t = target(name)
        state.append({"t": t, "guards": t.guards(scatter, gather, recipe), "scatter": scatter, "gather": gather,
                      "recipe": recipe, "want": n_calls, "key": f"{name} scatter={scatter} gather={gather} recipe={recipe}",
                      "r": {"calls": 0, "flagged": 0, "worst_check_over_bound": 0.0, "worst_cell_over_threshold": 0.0,
                            "first_finding": None, "s": 0.0}})
    res = RESULT.setdefault("clean", {})
    while not over_budget() and any(st["r"]["calls"] < st["want"] for st in state):
        for st in state:
            r, t, guards = st["r"], st["t"], st["guards"]
            t0 = time.time()
            for _ in range(min(chunk, st["want"] - r["calls"])):
                if over_budget():
                    break
                a, sa, outs = op(t, m, 20000 + r["calls"], st["scatter"], st["gather"], st["recipe"])
                found, cells = judge(t, guards, a, sa, outs)
                r["calls"] += 1
                if found:
                    r["flagged"] += 1
                    r["first_finding"] = r["first_finding"] or found
                r["worst_check_over_bound"] = max(r["worst_check_over_bound"], float(cells["worst_ratio"].max()))
                r["worst_cell_over_threshold"] = max(
                    r["worst_cell_over_threshold"],
                    float(cells["zsum"].max()) / guards[0]._plan(m).consts["agg_threshold"])
            r["s"] += time.time() - t0
            res[st["key"]] = r
        save(out)
    for st in state:
        r = st["r"]
        log(f"clean {st['key']}: {r['flagged']} of {r['calls']} calls flagged (of {st['want']} asked); worst check "
            f"{r['worst_check_over_bound']:.3f} of its bound, worst cell {r['worst_cell_over_threshold']:.4f} of its "
            f"threshold ({r['s']:.1f} s)")
    save(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--sections", default="agree cost faults clean")
    ap.add_argument("--reps", type=int, default=int(os.environ.get("COST_REPS", 10)))
    ap.add_argument("--fault-calls", type=int, default=int(os.environ.get("FAULT_CALLS", 8)))
    ap.add_argument("--nan-calls", type=int, default=int(os.environ.get("NAN_CALLS", 320)))
    ap.add_argument("--clean-calls", type=int, default=int(os.environ.get("CLEAN_CALLS", 150)))
    ap.add_argument("--variant-calls", type=int, default=int(os.environ.get("VARIANT_CALLS", 100)))
    ap.add_argument("--budget-s", type=float, default=float(os.environ.get("BUDGET_S", 160)),
                    help="seconds from the start after which the NaN and clean loops stop early (default 160)")
    ap.add_argument("--summary-only", action="store_true", help="rewrite OUT/summary.txt from OUT/guard_python.json")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.summary_only:
        with open(os.path.join(args.out, "guard_python.json")) as f:
            text = summary(json.load(f))
        with open(os.path.join(args.out, "summary.txt"), "w") as f:
            f.write(text)
        print(text, end="")
        return 0
    DEADLINE[0] = time.time() + args.budget_s
    lib = gc.find_library()
    RESULT["library"] = lib
    RESULT["torch"] = torch.__version__
    RESULT["device"] = torch.cuda.get_device_name(0)
    log(f"device {RESULT['device']}, torch {torch.__version__}, library {lib}")
    if not lib:
        log("libgemmar_guard.so not found ($GEMMAR_GUARD_LIB): the sections run the torch fallback")
    save(args.out)
    t0 = time.time()
    for name in args.sections.split():
        try:
            {"agree": lambda: section_agree(args.out),
             "cost": lambda: section_cost(args.out, args.reps),
             "faults": lambda: section_faults(args.out, args.fault_calls, args.nan_calls),
             "clean": lambda: section_clean(args.out, args.clean_calls, args.variant_calls)}[name]()
        except Exception:  # noqa: BLE001 - the next section still runs; the error is in the log and the JSON
            RESULT.setdefault("errors", {})[name] = traceback.format_exc()
            log(f"section {name} failed:\n{traceback.format_exc()}")
            save(args.out)
        log(f"section {name} done at {time.time() - t0:.1f} s")
    return 1 if RESULT.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
