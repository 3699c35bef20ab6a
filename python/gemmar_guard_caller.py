#!/usr/bin/env python3
"""The caller guard's torch-free parts (docs/guard.md "The guard from what the caller holds"): the record layout,
the bound's constants and thresholds, the judge in numpy, the findings, and the ctypes binding of the device library
(libgemmar_guard.so, kernels/check/caller_guard.cu). python/gemmar_guard.py's CallerGuard is the torch wrapper.

The formulas are reference/guard_caller_inline.hpp's and reference/guard_caller.cpp's, written again in numpy;
tests/reference/reference_guard_caller_test.cpp feeds both the same records and checks that they judge alike.

    python3 gemmar_guard_caller.py --judge FILE     judge records written by the C++ test (prints the cells)
    python3 gemmar_guard_caller.py --selftest       numpy only: an op emulated on the CPU, clean and faulty calls
    python3 gemmar_guard_caller.py --cell-layout    each cell field's name and byte offset, then the cell's size
"""
import argparse
import ctypes
import math
import os
import sys

U_BF16 = 2.0 ** -8
U_FP32 = 2.0 ** -24
U_E4M3 = 2.0 ** -4
BLOCK_COLS = 1024  # columns per checksum block (caller_guard::kBlockCols)
HEADER_FLOATS = 4
MAX_WORLD = 64
SPECTRAL_MARGIN = 1e-6
SAMPLE_MAX_STRIDE = 128
_MASK64 = (1 << 64) - 1
CODES = ("GUARD_REDUCE", "GUARD_GATHER", "GUARD_WIRE")
# The fp8 gather's recipes the owner can replay (reference/quant.hpp WireRecipe; the device library's ids).
WIRE_RECIPES = {"mori": 0, "true-division": 1, "div-codes": 2}


def gamma32(n):
    return n * U_FP32 / (1.0 - n * U_FP32)


def gemm_roundings(k, k_block):
    """reference/guard.cpp guard_gemm_roundings: K additions, 3 roundings per scale block, 3 more."""
    return k + 3 * (k // k_block) + 3


class Layout:
    """caller_guard::Layout: one rank's record, float offsets (row-major [listed row][block])."""

    def __init__(self, world, m, n, stride):
        self.world, self.n = world, n
        self.nb = (n + BLOCK_COLS - 1) // BLOCK_COLS
        self.L = m // stride
        self.Ls = self.L // world
        o = HEADER_FLOATS
        self.wnorm = o
        o += 2 * self.nb
        grid = self.L * self.nb
        self.pred, self.pabs, self.osum, self.osq, self.oabs = (o + i * grid for i in range(5))
        o += 5 * grid
        self.asq = o
        o += self.L
        self.wsum = o
        o += self.Ls * self.nb
        self.wscale = o
        o += self.Ls
        self.floats = (o + 3) // 4 * 4

    def offsets(self):
        return (self.wnorm, self.pred, self.pabs, self.osum, self.osq, self.oabs, self.asq, self.wsum, self.wscale,
                self.floats)

    def block_cols(self, b):
        return min(BLOCK_COLS, self.n - b * BLOCK_COLS)


def caller_lambda(p):
    return math.sqrt(2.0 * math.log(2.0 / p))


def agg_threshold(n, p):
    """The least t > n with (t/n)^(n/2) exp(-(t-n)/2) <= p (reference/guard_caller.cpp caller_agg_threshold)."""
    target = math.log(p)
    lo, hi = 1.0, 2.0 + 4.0 * (-target) / n
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if 0.5 * n * (math.log(mid) - mid + 1.0) - target > 0:
            lo = mid
        else:
            hi = mid
    return hi * n


class CallerPlan:
    """What the guard knows of the op and the bound's constants (reference/guard_caller.cpp caller_plan).

    world, m (the padded rows the op runs), n, k; stride: one listed row per stratum of `stride` rows;
    fp8_gather / fp8_scatter: the wires; wire_recipe: the fp8 gather's recipe the owner replays ("mori",
    "true-division", "div-codes"), None when unknown (then the views are compared within the wire's bound);
    fnuz: the fp8 wire's format; k_block: K columns per A scale (quant); alpha: the per-call false-alarm probability.
    """

    def __init__(self, world, m, n, k, stride=32, fp8_gather=False, fp8_scatter=False, wire_recipe="mori",
                 fnuz=False, k_block=128, alpha=1e-9):
        if not 1 <= world <= MAX_WORLD or n <= 0 or k <= 0:
            raise ValueError(f"gemmar_guard: world {world}, N {n}, K {k}")
        if stride < 1 or SAMPLE_MAX_STRIDE % stride or m % (world * stride):
            raise ValueError(f"gemmar_guard: M = {m} must be a multiple of world x sample = {world} x {stride} "
                             f"(the sample must divide 128)")
        if not 0 < alpha < 1:
            raise ValueError(f"gemmar_guard: alpha {alpha}")
        if wire_recipe is not None and wire_recipe not in WIRE_RECIPES:
            raise ValueError(f"gemmar_guard: wire_recipe {wire_recipe!r} is not one of {sorted(WIRE_RECIPES)} or None")
        self.world, self.m, self.n, self.k, self.stride = world, m, n, k, stride
        self.fp8_gather, self.fp8_scatter, self.fnuz, self.alpha = fp8_gather, fp8_scatter, fnuz, alpha
        self.wire_recipe = wire_recipe if fp8_gather else None
        self.gemm_roundings = gemm_roundings(k, k_block)
        self.layout = Layout(world, m, n, stride)
        self.recipe_known = 1 if self.wire_recipe is not None else 0
        gk = gamma32(k + 3)
        c8 = ((1 + U_E4M3) * (1 + gamma32(3)) - 1 + 16.0 * 2.0 ** -10 / 448.0 * (1 + 2 * U_FP32)) if fp8_scatter else 0.0
        self.consts = {
            "det_pred": gk * (1 + gk) / (1 - gk),
            "k_asq": 1.0 / ((1 - U_FP32) * (1 - U_FP32) * (1 - gamma32(k + 1))),
            "part2": U_BF16 * U_BF16 + (c8 * (1 + U_BF16)) * (c8 * (1 + U_BF16)),
            "reduce": gamma32(max(0, world - 1)) * (1 + U_BF16) * (1 + c8),
            "out2": U_BF16 * U_BF16,
            "wire_rel": ((1 + U_E4M3) * (1 + U_BF16) * (1 + gamma32(5)) - 1) if fp8_gather else 0.0,
            "wire_sub": ((2.0 ** -11 if fnuz else 2.0 ** -10) * (1 + U_BF16) * (1 + gamma32(2)) * (1 + U_FP32) /
                         (240.0 if fnuz else 448.0)) if fp8_gather else 0.0,
            "underflow": (world + 1) * 2.0 ** -134 + world * (self.gemm_roundings + 2) * 2.0 ** -150,
        }
        l = self.layout
        self.checks = world * l.L * l.nb * (2 if fp8_gather and not self.recipe_known else 1)
        self.cells = world * world
        self.consts["lambda"] = caller_lambda(alpha / 2 / self.checks)
        self.consts["agg_threshold"] = agg_threshold(l.Ls * l.nb, alpha / 2 / self.cells)

    def weight_norms(self, w_sum_frob2, spectral2):
        """(c_gemm, c_part) of one column block from ||B_b||_F^2 and ||B_b||_2^2, rounded up to fp32."""
        g = gamma32(self.gemm_roundings + 2)
        frob = math.sqrt(w_sum_frob2)
        spec = math.sqrt(spectral2) * (1 + SPECTRAL_MARGIN)
        return _round_up_f32(g * frob), _round_up_f32(spec + (U_FP32 + g) * frob)

    def confidence(self):
        l = self.layout
        return (f"the bounds hold on a clean call with probability >= 1 - {self.alpha:.4g} under the rounding model "
                f"(lambda = {self.consts['lambda']:.4g} per check over {self.checks} checks, aggregate threshold "
                f"{self.consts['agg_threshold']:.4g} over {l.Ls * l.nb} checks per cell)")


def _round_up_f32(x):
    import numpy as np
    f = np.float32(x)
    return float(f) if float(f) >= x else float(np.nextafter(f, np.float32(np.inf)))


# ---- the rows (reference/guard_sample.hpp) ------------------------------------------------------------------
def sample_rows(m, stride, seed, call):
    """The listed rows of one call: one per aligned stratum of `stride` rows, numpy-vectorised splitmix64."""
    import numpy as np
    if stride == 1:
        return np.arange(m, dtype=np.int64)
    with np.errstate(over="ignore"):
        def mix(x):
            x = x + np.uint64(0x9E3779B97F4A7C15)
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            return x ^ (x >> np.uint64(31))
        base = mix(np.uint64(seed & _MASK64) ^ mix(np.uint64(call & _MASK64)))
        strata = np.arange(m // stride, dtype=np.uint64)
        pick = mix(base ^ strata) % np.uint64(stride)
    return (strata * np.uint64(stride) + pick).astype(np.int64)


# ---- the judge (reference/guard_caller_inline.hpp check_one, cell_add) -----------------------------------------
CELL_DTYPE = None


def cell_dtype():
    import numpy as np
    global CELL_DTYPE
    if CELL_DTYPE is None:
        u, f = np.uint32, np.float32
        CELL_DTYPE = np.dtype([("checks", u), ("pred_fail", u), ("nonfinite", u), ("worst_idx", u),
                               ("worst_ratio", f), ("worst_d", f), ("worst_bound", f), ("zsum", f),
                               ("gather", u), ("gather_first", u), ("wire", u), ("wire_first", u),
                               ("bypass", u), ("other", u), ("pad0", u), ("pad1", u)])
    return CELL_DTYPE


def judge(plan, records, ld=None):
    """Every (view, slice) cell of one call from the gathered records (rank r's at r * ld floats, ld = the record's
    size by default; float32): a numpy structured array of world * world cells, index v * world + s (the device
    library's cells, field for field)."""
    import numpy as np
    l, c, W = plan.layout, plan.consts, plan.world
    flat = np.asarray(records, dtype=np.float32).ravel()
    ld = ld or l.floats
    rec = np.stack([flat[r * ld:r * ld + l.floats] for r in range(W)])
    L, nb, Ls = l.L, l.nb, l.Ls

    def grid(off):
        return rec[:, off:off + L * nb].reshape(W, L, nb).astype(np.float64)

    pred, pabs, osum32 = grid(l.pred), grid(l.pabs), rec[:, l.osum:l.osum + L * nb].reshape(W, L, nb)
    osum, osq, oabs = osum32.astype(np.float64), grid(l.osq), grid(l.oabs)
    asq = rec[:, l.asq:l.asq + L].astype(np.float64)
    cgemm = rec[:, l.wnorm:l.wnorm + nb].astype(np.float64)
    cpart = rec[:, l.wnorm + nb:l.wnorm + 2 * nb].astype(np.float64)
    wsum32 = rec[:, l.wsum:l.wsum + Ls * nb].reshape(W, Ls, nb)
    tot = np.zeros((L, nb))
    ptot = np.zeros((L, nb))
    g2 = np.zeros((L, nb))
    p2 = np.zeros((L, nb))
    psum = np.zeros((L, nb))
    for r in range(W):  # in rank order, as check_terms sums
        tot += pred[r]
        ptot += pabs[r]
        a = np.sqrt(np.maximum(asq[r], 0.0) * c["k_asq"])[:, None]
        g = a * cgemm[r][None, :]
        q = a * cpart[r][None, :]
        g2 += g * g
        p2 += q * q
        psum += q
    T = np.array([l.block_cols(b) for b in range(nb)], dtype=np.float64)
    gT = T * U_FP32 / (1.0 - T * U_FP32)
    kT = 1.0 / (1.0 - gT)
    owner = np.arange(L) // Ls
    own_sq = osq[owner, np.arange(L)] * kT[None, :]
    red = c["reduce"] * psum
    base2 = g2 + c["part2"] * p2 + red * red + c["out2"] * own_sq
    row_sq = np.zeros((L, 1))
    for b in range(nb):  # in block order, as check_terms sums
        row_sq[:, 0] += osq[owner, np.arange(L), b]
    wire_w = c["wire_rel"] * np.sqrt(own_sq) + np.sqrt(T)[None, :] * np.sqrt(row_sq * kT[None, :]) * c["wire_sub"]
    bits = osum32.view(np.uint32)
    wbits = wsum32.view(np.uint32)
    cells = np.zeros(W * W, dtype=cell_dtype())
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for v in range(W):
            d = np.abs(osum[v] - tot)
            det = c["det_pred"] * ptot + (gT * kT)[None, :] * oabs[v] + T[None, :] * c["underflow"]
            for s in range(W):
                rows = slice(s * Ls, (s + 1) * Ls)
                sig2 = base2[rows] + (wire_w[rows] ** 2 if (plan.fp8_gather and v != s) else 0.0)
                cells[v * W + s] = _cell(plan, v, s, d[rows], det[rows], np.sqrt(sig2), bits, wbits, osq, oabs,
                                         osum, rows, T, gT, kT)
    return cells


def _cell(plan, v, s, d, det, sigma, bits, wbits, osq, oabs, osum, rows, T, gT, kT):
    import numpy as np
    c, W = plan.consts, plan.world
    bound = det + c["lambda"] * sigma
    fail = ~(d <= bound)
    nonfinite = ~np.isfinite(d)
    ratio = np.where(nonfinite, np.inf, np.where(bound > 0, d / np.where(bound > 0, bound, 1.0),
                                                 np.where(d > 0, np.inf, 0.0)))
    excess = d - det
    z2 = np.where(nonfinite, np.inf, np.where(excess <= 0, 0.0, np.where(sigma > 0, (excess / np.where(
        sigma > 0, sigma, 1.0)) ** 2, np.inf)))
    cell = np.zeros((), dtype=cell_dtype())
    flat_ratio = ratio.astype(np.float32).ravel()
    n = flat_ratio.size
    cell["checks"] = n
    cell["pred_fail"] = int(fail.sum())
    cell["nonfinite"] = int(nonfinite.sum())
    i = int(np.argmax(flat_ratio)) if n else 0
    cell["worst_idx"] = i
    cell["worst_ratio"] = flat_ratio[i]
    cell["worst_d"] = np.float32(d.ravel()[i])
    cell["worst_bound"] = np.float32(bound.ravel()[i])
    cell["zsum"] = np.float32(z2.sum())
    other = next((r for r in range(W) if r != v and r != s), -1)
    cell["other"] = np.uint32(other & 0xffffffff)
    cell["gather_first"] = cell["wire_first"] = 0xffffffff
    if v == s:
        return cell
    view, own = bits[v, rows], bits[s, rows]
    gather = np.zeros(view.shape, dtype=bool)
    wire = np.zeros(view.shape, dtype=bool)
    bypass = np.zeros(view.shape, dtype=bool)
    if not plan.fp8_gather:
        gather = view != own
    else:
        agrees = np.ones(view.shape, dtype=bool) if other < 0 else view == bits[other, rows]
        live = osq[s, rows] > 0
        if plan.recipe_known:
            w = wbits[s]
            ok = view == w
            bypass = ~ok & (view == own) & (own != w) & live
            bad = ~ok & ~bypass
            wire = bad & agrees
            gather = bad & ~agrees
        else:
            gather = ~agrees
            bypass = (view == own) & live
            row_sq = np.zeros((osq[s, rows].shape[0], 1))
            for b in range(osq.shape[2]):
                row_sq[:, 0] += osq[s, rows, b]
            sig = c["wire_rel"] * np.sqrt(osq[s, rows] * kT[None, :]) + \
                np.sqrt(T)[None, :] * np.sqrt(row_sq * kT[None, :]) * c["wire_sub"]
            det = (gT * kT)[None, :] * (oabs[v, rows] + oabs[s, rows])
            wire = ~bypass & ~(np.abs(osum[v, rows] - osum[s, rows]) <= det + c["lambda"] * sig)
    for name, mask in (("gather", gather), ("wire", wire)):
        flat = mask.ravel()
        cell[name] = int(flat.sum())
        if flat.any():
            cell[name + "_first"] = int(np.argmax(flat))
    cell["bypass"] = int(bypass.sum())
    return cell


def reduce_flagged(plan, cell):
    return int(cell["pred_fail"]) > 0 or not float(cell["zsum"]) <= plan.consts["agg_threshold"]


def findings(plan, cells, rows):
    """[(code, message), ...] of one call from its cells and listed rows (reference/guard_caller.cpp
    caller_findings): one per code, the first flagged cell, with its row, its bound and the bound's confidence."""
    W, l = plan.world, plan.layout
    first = {}
    count = {code: 0 for code in CODES}
    for i, cell in enumerate(cells):
        for code, hit in (("GUARD_REDUCE", reduce_flagged(plan, cell)), ("GUARD_GATHER", int(cell["gather"]) > 0),
                          ("GUARD_WIRE", int(cell["wire"]) > 0 or int(cell["bypass"]) > 0)):
            if hit:
                count[code] += 1
                first.setdefault(code, i)

    def where(s, idx):
        pos = s * l.Ls + idx // l.nb
        return (int(rows[pos]) if pos < len(rows) else -1), idx % l.nb

    out = []
    if "GUARD_REDUCE" in first:
        i = first["GUARD_REDUCE"]
        v, s, c = i // W, i % W, cells[i]
        row, b = where(s, int(c["worst_idx"]))
        nonfinite = f" ({int(c['nonfinite'])} not finite)" if int(c["nonfinite"]) else ""
        out.append(("GUARD_REDUCE",
                    f"rank {v}'s view of slice {s}: {int(c['pred_fail'])} of {int(c['checks'])} block sums (1024 "
                    f"columns of a sampled row) off the sum over the {W} ranks of A . checksum(B){nonfinite}; worst "
                    f"row {row} block {b}: |difference| {float(c['worst_d']):.4g} against the bound "
                    f"{float(c['worst_bound']):.4g} ({float(c['worst_ratio']):.4g}x); sum of squared excesses "
                    f"{float(c['zsum']):.4g} against {plan.consts['agg_threshold']:.4g}; {count['GUARD_REDUCE']} "
                    f"cell(s) flagged; {plan.confidence()}: the output is not the reduce of what the inputs give (a "
                    f"dropped peer, a stale or zeroed slice, a wrong operand or scale, a NaN)."))
    if "GUARD_GATHER" in first:
        i = first["GUARD_GATHER"]
        v, s, c = i // W, i % W, cells[i]
        row, b = where(s, int(c["gather_first"]))
        against = (f"rank {int(c['other'])}'s (the other non-owners' views are equal bits)" if plan.fp8_gather
                   else "the owner's (the gather copies its bits)")
        out.append(("GUARD_GATHER",
                    f"rank {v}'s view of slice {s} differs bitwise from {against} in {int(c['gather'])} of "
                    f"{int(c['checks'])} block sums (first: row {row} block {b}); {count['GUARD_GATHER']} cell(s) "
                    f"flagged: the gather to that rank did not deliver this call's slice."))
    if "GUARD_WIRE" in first:
        i = first["GUARD_WIRE"]
        v, s, c = i // W, i % W, cells[i]
        if int(c["bypass"]):
            what = (f"{int(c['bypass'])} block sums hold the owner's exact bf16 bits where the fp8 wire changes "
                    f"them: the gather moved bf16, the fp8 wire never engaged")
        else:
            row, b = where(s, int(c["wire_first"]))
            what = (f"{int(c['wire'])} of {int(c['checks'])} block sums (first: row {row} block {b}) " +
                    (f"differ from the wire's re-quantization of the owner's rows ({plan.wire_recipe}) while the "
                     f"non-owners agree: a wrong scale or code on the fp8 wire" if plan.recipe_known else
                     f"are off the owner's beyond the fp8 wire's rounding bound: a wrong scale or code on the fp8 "
                     f"wire; {plan.confidence()}"))
        out.append(("GUARD_WIRE", f"rank {v}'s view of slice {s}: {what}; {count['GUARD_WIRE']} cell(s) flagged."))
    return out


# ---- the numpy record (the CPU self-test and the C++ comparison) -------------------------------------------
def rank_record(plan, rank, call, a_deq, out, w, c_gemm, c_part, wire=None):
    """One rank's record in numpy: a_deq [L, K] float32 (its A's listed rows dequantized), out [L, N] float32 (its
    view's listed rows, bf16 values), w [nb, K] the weights' checksum, c_gemm / c_part [nb]; wire(rows [Ls, N]) ->
    (view [Ls, N], scales [Ls]) replays the fp8 gather on the owner's rows. Sums in float64, stored float32."""
    import numpy as np
    l = plan.layout
    r = np.zeros(l.floats, dtype=np.float32)
    r[0] = np.array([call & 0xffffffff], dtype=np.uint32).view(np.float32)[0]
    r[l.wnorm:l.wnorm + l.nb] = c_gemm
    r[l.wnorm + l.nb:l.wnorm + 2 * l.nb] = c_part
    a = a_deq.astype(np.float64)
    prod = a[:, None, :] * w.astype(np.float64)[None, :, :]
    r[l.pred:l.pred + l.L * l.nb] = prod.sum(axis=2).ravel()
    r[l.pabs:l.pabs + l.L * l.nb] = np.abs(prod).sum(axis=2).ravel()
    r[l.asq:l.asq + l.L] = (a * a).sum(axis=1)

    def blocks(x):
        pad = l.nb * BLOCK_COLS - x.shape[1]
        return np.pad(x.astype(np.float64), ((0, 0), (0, pad))).reshape(x.shape[0], l.nb, BLOCK_COLS)

    o = blocks(out)
    r[l.osum:l.osum + l.L * l.nb] = o.sum(axis=2).ravel()
    r[l.osq:l.osq + l.L * l.nb] = (o * o).sum(axis=2).ravel()
    r[l.oabs:l.oabs + l.L * l.nb] = np.abs(o).sum(axis=2).ravel()
    if plan.recipe_known and wire is not None:
        own = out[rank * l.Ls:(rank + 1) * l.Ls]
        view, scales = wire(own)
        r[l.wsum:l.wsum + l.Ls * l.nb] = blocks(view).sum(axis=2).ravel()
        r[l.wscale:l.wscale + l.Ls] = scales
    return r


def weights_numpy(plan, b_deq):
    """(w [nb, K] float32, c_gemm [nb], c_part [nb]) of B dequantized [N, K] (float64 sums, the Gram's largest
    eigenvalue in float64)."""
    import numpy as np
    nb, K = plan.layout.nb, plan.k
    w = np.zeros((nb, K), dtype=np.float32)
    cg, cp = np.zeros(nb, dtype=np.float32), np.zeros(nb, dtype=np.float32)
    for b in range(nb):
        blk = b_deq[b * BLOCK_COLS:(b + 1) * BLOCK_COLS].astype(np.float64)
        w[b] = blk.sum(axis=0)
        gram = blk @ blk.T if blk.shape[0] <= blk.shape[1] else blk.T @ blk
        cg[b], cp[b] = plan.weight_norms(float((blk * blk).sum()), float(max(0.0, np.linalg.eigvalsh(gram)[-1])))
    return w, cg, cp


# ---- the device library (kernels/check/caller_guard.cu, C ABI kernels/check/gemmar_guard.h) ------------------
ABI_VERSION = 1


class _Consts(ctypes.Structure):
    _fields_ = [(n, ctypes.c_double) for n in ("lambda_", "agg_threshold", "det_pred", "k_asq", "part2", "reduce",
                                                "out2", "wire_rel", "wire_sub", "underflow")] + \
               [("fp8_gather", ctypes.c_int32), ("recipe_known", ctypes.c_int32)]


class SumsArgs(ctypes.Structure):
    _fields_ = [("world", ctypes.c_int32), ("rank", ctypes.c_int32), ("m", ctypes.c_int64), ("n", ctypes.c_int64),
                ("k", ctypes.c_int64), ("stride", ctypes.c_int32), ("a_scale_kind", ctypes.c_int32),
                ("seed", ctypes.c_uint64), ("a", ctypes.c_void_p), ("a_scale", ctypes.c_void_p),
                ("a_scale_k", ctypes.c_int32), ("a_fnuz", ctypes.c_int32), ("out", ctypes.c_void_p),
                ("out_ld", ctypes.c_int64), ("w", ctypes.c_void_p), ("record", ctypes.c_void_p),
                ("wire_recipe", ctypes.c_int32), ("wire_fnuz", ctypes.c_int32), ("call", ctypes.c_void_p)]


class JudgeArgs(ctypes.Structure):
    _fields_ = [("world", ctypes.c_int32), ("stride", ctypes.c_int32), ("m", ctypes.c_int64), ("n", ctypes.c_int64),
                ("records", ctypes.c_void_p), ("records_ld", ctypes.c_int64), ("consts", _Consts),
                ("cells", ctypes.c_void_p),
                ("call", ctypes.c_void_p)]


# A-scale layouts the device reads in place (gg_sums_args.a_scale_kind): fp32 [K/k, M] (blockscale's physical
# order), fp32 [M, K/k], e8m0 bytes [M, K/k], e8m0 bytes in mori's preshuffle_a_scale order (mxfp8).
A_SCALE_KINDS = {"f32_k_major": 0, "f32_row_major": 1, "e8m0_row_major": 2, "e8m0_mori_packed": 3}


def find_library():
    """libgemmar_guard.so: $GEMMAR_GUARD_LIB, else the build trees of this checkout (cmake --preset cuda / hip)."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("GEMMAR_GUARD_LIB")
    cands = [env] if env else [os.path.join(here, "libgemmar_guard.so")] + [
        os.path.join(here, "..", d, "kernels", "libgemmar_guard.so") for d in ("build-cuda", "build-hip")]
    for p in cands:
        if p and os.path.isfile(p):
            return p
    return None


class Library:
    """The device library through ctypes: raw device pointers, the caller's stream, no torch."""

    def __init__(self, path):
        self.path = path
        self.dll = ctypes.CDLL(path)
        self.dll.gg_abi_version.restype = ctypes.c_int
        got = self.dll.gg_abi_version()
        if got != ABI_VERSION:
            raise RuntimeError(f"gemmar_guard: {path} has ABI {got}, this wrapper {ABI_VERSION}")
        self.dll.gg_layout.argtypes = [ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_int32,
                                       ctypes.POINTER(ctypes.c_int64)]
        self.dll.gg_layout.restype = ctypes.c_int
        self.dll.gg_sums.argtypes = [ctypes.POINTER(SumsArgs), ctypes.c_void_p]
        self.dll.gg_sums.restype = ctypes.c_int
        self.dll.gg_judge.argtypes = [ctypes.POINTER(JudgeArgs), ctypes.c_void_p]
        self.dll.gg_judge.restype = ctypes.c_int
        self.dll.gg_last_error.restype = ctypes.c_char_p

    def check_layout(self, plan):
        out = (ctypes.c_int64 * 10)()
        self._ok(self.dll.gg_layout(plan.world, plan.m, plan.n, plan.stride, out))
        if tuple(out) != plan.layout.offsets():
            raise RuntimeError(f"gemmar_guard: {self.path}'s record layout {tuple(out)} differs from "
                               f"this wrapper's {plan.layout.offsets()}")

    def consts(self, plan):
        c = plan.consts
        return _Consts(c["lambda"], c["agg_threshold"], c["det_pred"], c["k_asq"], c["part2"], c["reduce"], c["out2"],
                       c["wire_rel"], c["wire_sub"], c["underflow"], 1 if plan.fp8_gather else 0, plan.recipe_known)

    def sums(self, args, stream):
        self._ok(self.dll.gg_sums(ctypes.byref(args), ctypes.c_void_p(stream)))

    def judge(self, args, stream):
        self._ok(self.dll.gg_judge(ctypes.byref(args), ctypes.c_void_p(stream)))

    def _ok(self, rc):
        if rc != 0:
            raise RuntimeError("gemmar_guard: " + (self.dll.gg_last_error() or b"?").decode())


# ---- command line ---------------------------------------------------------------------------------------------
def _judge_file(path):
    """The C++ test's records: a text header line (world m n k stride fp8_gather fp8_scatter recipe_known alpha
    k_block) and the float32 records; prints lambda, the threshold and every cell, one per line."""
    import numpy as np
    with open(path, "rb") as f:
        head = f.readline().split()
        world, m, n, k, stride, fg, fs, rk = (int(x) for x in head[:8])
        alpha, k_block = float(head[8]), int(head[9])
        plan = CallerPlan(world, m, n, k, stride, bool(fg), bool(fs), "mori" if rk else None, False, k_block, alpha)
        recs = np.frombuffer(f.read(), dtype=np.float32)
    print(repr(plan.consts["lambda"]), repr(plan.consts["agg_threshold"]), repr(plan.consts["part2"]),
          repr(plan.consts["reduce"]), repr(plan.consts["wire_sub"]))
    for c in judge(plan, recs):  # the ratio as its float32 bits; a sum that is not finite as -1
        z = float(c["zsum"])
        print(int(c["pred_fail"]), int(c["nonfinite"]), int(c["worst_idx"]),
              int(np.array([c["worst_ratio"]], dtype=np.float32).view(np.uint32)[0]),
              repr(z) if math.isfinite(z) else -1, int(c["gather"]), int(c["gather_first"]), int(c["wire"]),
              int(c["wire_first"]), int(c["bypass"]))
    return 0


def selftest(world=4, m=512, n=2048, k=256, stride=8, seed=5):
    """numpy only: the op emulated (fp32 GEMM of fp8-valued operands, bf16 partials, fp32 reduce in peer order,
    bf16 out, bf16 or fp8 gather with mori's recipe), its records, the judge; clean calls pass, faults are caught."""
    import numpy as np
    rng = np.random.default_rng(seed)

    def bf16(x):
        u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
        return (u & 0xFFFFFFFF).astype(np.uint32).view(np.float32)

    def e4m3(x):  # RNE onto e4m3fn's grid (|x| <= 448): 3 mantissa bits, subnormals below 2^-6
        x = np.asarray(x, dtype=np.float64)
        e = np.floor(np.log2(np.maximum(np.abs(x), 2.0 ** -9)))
        q = 2.0 ** (np.maximum(e, -6) - 3)
        return (np.round(x / q) * q).clip(-448, 448).astype(np.float32)

    def wire(rows):  # mori's quantize_gather: scale = amax * fl(1/448), inv = fl(448 / amax)
        amax = np.abs(rows).max(axis=1, keepdims=True).astype(np.float32)
        scale = np.where(amax == 0, np.float32(1), amax * np.float32(1 / 448.0)).astype(np.float32)
        inv = np.where(amax == 0, np.float32(1), np.float32(448.0) / np.where(amax == 0, 1, amax)).astype(np.float32)
        codes = e4m3((rows * inv).astype(np.float32))
        return bf16((codes * scale).astype(np.float32)), scale.ravel()

    fails = 0
    for fp8 in (False, True):
        plan = CallerPlan(world, m, n, k, stride, fp8_gather=fp8, fp8_scatter=False)
        S = m // world
        A = [e4m3(rng.standard_normal((m, k)) / 8) * np.float32(0.015) for _ in range(world)]
        B = [e4m3(rng.standard_normal((n, k)) / 8) * np.float32(0.015) for _ in range(world)]
        parts = [bf16(A[r].astype(np.float64) @ B[r].astype(np.float64).T) for r in range(world)]
        outs = [p.copy() for p in parts]
        for o in range(world):
            acc = parts[o][o * S:(o + 1) * S].astype(np.float32)
            for j in range(1, world):
                acc = (acc + parts[(o + j) % world][o * S:(o + 1) * S]).astype(np.float32)
            red = bf16(acc)
            view = wire(red)[0] if fp8 else red
            for r in range(world):
                outs[r][o * S:(o + 1) * S] = red if r == o else view
        weights = [weights_numpy(plan, B[r]) for r in range(world)]

        def run(views, call):
            rows = sample_rows(m, stride, 11, call)
            recs = np.concatenate([rank_record(plan, r, call, A[r][rows], views[r][rows], *weights[r], wire=wire)
                                   for r in range(world)])
            return [code for code, _ in findings(plan, judge(plan, recs), rows)]

        cases = [("clean", [o.copy() for o in outs], [])]
        stale = [o.copy() for o in outs]
        for o in stale:
            o[S:2 * S] = 0
        cases.append(("zeroed slice", stale, ["GUARD_REDUCE"]))
        differs = [o.copy() for o in outs]
        differs[world - 1][S:2 * S] = outs[0][0:S]
        cases.append(("one view differs", differs, ["GUARD_GATHER"]))
        for name, views, want in cases:
            got = run(views, 3)
            ok = all(w in got for w in want) and (want or not got)
            fails += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {'fp8' if fp8 else 'bf16'} gather: {name}: {got}")
    print(f"{fails} failure(s)")
    return fails


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judge", metavar="FILE", help="judge the records of FILE (written by the C++ test)")
    ap.add_argument("--selftest", action="store_true", help="numpy only: clean and faulty emulated calls")
    ap.add_argument("--cell-layout", action="store_true",
                    help="print each cell field's name and byte offset, then the size (the C++ test compares)")
    args = ap.parse_args()
    if args.cell_layout:
        dt = cell_dtype()
        for name in dt.names:
            print(name, dt.fields[name][1])
        print("itemsize", dt.itemsize)
        return 0
    if args.judge:
        return _judge_file(args.judge)
    if args.selftest:
        return 1 if selftest() else 0
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
