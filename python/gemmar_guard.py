#!/usr/bin/env python3
"""gemmar guard for a serving process: checks every call of a fused GEMM + all-reduce (mori's gemm_ar or any
reduce-scatter + all-gather sharded by rows) from each rank's partial and output, by linear invariants.

docs/guard.md derives the checks and bounds; they are the ones of gemmar's reference/guard.cpp (the same
formulas, the same finding codes). Per call, every rank reduces its bf16 partial and its output to fp32 column
sums per slice (slice s = the rows rank s owns) and row sums; the ranks all_gather these vectors (about
4 W N floats each) and every rank judges:

  GUARD_REDUCE  the owner's output column sums of its slice != the sum over ranks of the partials' (beyond the
                bf16 / fp32 rounding bound): a put that never landed, a slot read early, a stale output
  GUARD_GATHER  a non-owner's view of a slice != the owner's bitwise (bf16 wire) or != the fp8 wire's sums
                (every non-owner holds the same bf16(code * scale)): a silent or stale gather
  GUARD_WIRE    fp8 wire: the wire's sums off the owner's beyond e4m3's bound, or a non-owner holding the owner's
                exact bf16 where the wire changes it (the fp8 wire never engaged)
  GUARD_GEMM    (optional, with A and the weights' checksum) a partial's row-block sums off A . checksum(B)

Use, after the op, on every rank (torch.distributed initialised):

    import gemmar_guard as gg
    weights = gg.weights_checksum(b_fp8, b_scale, quant="ptpc")  # once, when the weights are loaded
    out = gemm_ar(a, b, a_scale, b_scale)                        # the op; `partial` is its local GEMM output
    gg.guard_call(partial, out, fp8_wire=True, a=a, a_scale=a_scale, weights=weights, quant="ptpc",
                  on_finding="raise")

quant is "blockscale" (the default), "ptpc" or "mxfp8", with the scale layouts of gemmar_dump.QUANTS
(common/modes.hpp's scale blocks): blockscale A [K/128, M] (or torch._scaled_mm's [M, K/128]), B [N/128, K/128];
ptpc A [M], B [N] (or [rows, 1]); mxfp8 A [M, K/32], B [N/32, K/32] (mori's weights: one scale per 32x32 block).

For tests and a single device: guard_ranks(partials, outputs, ...) takes every rank's tensors at once.
`python3 gemmar_guard.py --selftest [--device cuda]` emulates the op on one device with W ranks as tensors,
checks that clean calls pass and that each fault class is caught by its code. Needs torch only; the bound
formulas below are plain Python (importable without torch).
"""
import argparse
import logging
import math
import os
import sys

from gemmar_dump import QUANTS, _stored_scale_shape  # the scale layouts, checked against common/modes.hpp

U_BF16 = 2.0 ** -8
U_FP32 = 2.0 ** -24
U_E4M3 = 2.0 ** -4
BF16_UNDERFLOW = 2.0 ** -134
COLUMN_BLOCK = 1024  # columns per row block (the GEMM check's granularity), as reference/guard.hpp
FP8_MAX = 448.0
SAMPLE_MAX_STRIDE = 128  # reference/guard_sample.hpp: strata nest in the 128-row tile bands
_MASK64 = (1 << 64) - 1


class GuardError(RuntimeError):
    """A call the guard flagged; .findings = [(code, message), ...]."""

    def __init__(self, findings):
        super().__init__("; ".join(f"{c}: {m}" for c, m in findings))
        self.findings = findings


# ---- the bounds (docs/guard.md; reference/guard.cpp guard_*_bound, the same formulas) ----------------------
def gamma(n, u):
    nu = n * u
    if nu >= 0.5:
        raise ValueError(f"gamma({n}) out of range")
    return nu / (1 - nu)


def reduce_bound(abs_out, abs_partials, terms, world):
    gs = gamma(terms, U_FP32)
    e = (U_BF16 + gs) * abs_out + (gamma(max(0, world - 1), U_FP32) + gs) * abs_partials
    return e * (1 + gs) / (1 - gs) + terms * BF16_UNDERFLOW


def wire_bound(abs_out, scale_sum, terms, fnuz=False):
    gs = gamma(terms, U_FP32)
    c_rel = (1 + U_E4M3) * (1 + U_BF16) * (1 + gamma(5, U_FP32)) - 1
    sub_half = 2.0 ** -11 if fnuz else 2.0 ** -10
    e = (c_rel + gs * (2 + c_rel)) * abs_out + sub_half * (1 + U_BF16) * scale_sum * (1 + gs)
    return e * (1 + gs) / (1 - gs) + terms * BF16_UNDERFLOW * 2


def gemm_roundings(k, k_block=128):
    return k + 3 * (k // k_block) + 3


def gemm_bound(abs_partial, abs_pred, terms, k, roundings):
    gs = gamma(terms, U_FP32)
    gk = gamma(k + 3, U_FP32)
    e = (gamma(roundings + 2, U_FP32) + gamma(k + 1, U_FP32)) * abs_pred * (1 + gk) / (1 - gk) + \
        (U_BF16 + gs) * abs_partial * (1 + gs) / (1 - gs)
    return e + terms * BF16_UNDERFLOW


# ---- the sampled rows (reference/guard_sample.hpp, the same draws) ----------------------------------------
def _mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def sample_rows(m, stride, seed, call):
    """The rows one call reads: one of every `stride` consecutive rows (stride divides 128 and m), drawn from
    (seed, call) as gemmar's guard_sample::row. stride 1: every row."""
    if stride < 1 or SAMPLE_MAX_STRIDE % stride or m % stride:
        raise ValueError(f"gemmar_guard: sample stride {stride} must divide 128 and M = {m}")
    seed &= _MASK64
    base = _mix64(seed ^ _mix64(call & _MASK64))
    return [i * stride + _mix64(base ^ i) % stride for i in range(m // stride)]


# ---- torch part -------------------------------------------------------------------------------------------
def _torch():
    import torch  # noqa: imported lazily so the bounds above need no torch
    return torch


def expand_scale(scale, rows, k, quant="blockscale", operand="a", row_index=None):
    """The per-element scales [rows, K] of an operand from its quant's scale tensor (QUANTS[quant][operand]:
    one scale per `rows` x `k` block, k 0 = the whole K; k_major = stored [K/k, rows]); with row_index, only
    those rows ([len(row_index), K]), without widening the others."""
    blk = QUANTS[quant][operand]
    kext = blk["k"] or k
    rb, kb = -(-rows // blk["rows"]), k // kext
    s = scale.float()
    if blk["k_major"]:  # stored [K/k, rows]; torch._scaled_mm's [rows, K/k] is taken as it is
        s = s if (s.dim() == 2 and tuple(s.shape) == (rb, kb) and rb != kb) else s.reshape(kb, rb).t()
    else:
        s = s.reshape(rb, kb)
    s = s.repeat_interleave(blk["rows"], 0)[:rows]
    if row_index is not None:
        s = s[row_index]
    return s.repeat_interleave(kext, 1)[:, :k]


def weights_checksum(b_codes, b_scale, quant="blockscale"):
    """The weights' checksum, once at load time: per column block b, bsum[b, k] = sum over its columns of
    B_deq[n, k] (and babs over |B_deq|). b_codes [N, K] (float8_e4m3fn or any float), b_scale in the quant's
    layout (blockscale [N/128, K/128], ptpc [N], mxfp8 [N/32, K/32])."""
    torch = _torch()
    n, k = b_codes.shape
    b = b_codes.float() * expand_scale(b_scale, n, k, quant, "b")
    nb = (n + COLUMN_BLOCK - 1) // COLUMN_BLOCK
    pad = nb * COLUMN_BLOCK - n
    bp = torch.nn.functional.pad(b, (0, 0, 0, pad)).view(nb, COLUMN_BLOCK, k)
    return bp.double().sum(1).float(), bp.abs().double().sum(1).float()


def _wire_slice(own, scale_rule="mori"):
    """The owner's slice as the fp8 wire carries it (mori quantize_gather / dequantize_gather): per row amax,
    scale = amax * fl32(1/448) ("mori", the default: mori's quantize_gather and gemmar's numerics) or the
    true-division variant amax / 448 ("div", "div-codes"), inv = fl32(448 / amax),
    code = e4m3fn RNE(x * inv) (or RNE(x / scale): "div-codes"), view = bf16(code * scale). Returns (view, scales)."""
    torch = _torch()
    x = own.float()
    amax = x.abs().amax(dim=1, keepdim=True)
    zero = amax == 0
    if scale_rule == "mori":
        scale = amax * torch.tensor(1.0 / FP8_MAX, dtype=torch.float32, device=x.device)
    else:  # a true division: `amax / 448.0` with a Python scalar is a multiply by fl32(1/448) in torch
        scale = amax / torch.full_like(amax, FP8_MAX)
    inv = torch.full_like(amax, FP8_MAX) / amax
    scale = torch.where(zero, torch.ones_like(scale), scale)
    inv = torch.where(zero, torch.ones_like(inv), inv)
    scaled = x / scale if scale_rule == "div-codes" else x * inv
    codes = scaled.clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return (codes.float() * scale).to(torch.bfloat16), scale.squeeze(1)


def rank_sums(partial, output, rank, world, fp8_wire=False, a=None, a_scale=None, weights=None,
              scale_rule="mori", quant="blockscale", rows=None):
    """One rank's checksums (a dict of fp32 tensors): partial/output [M, N] bf16, M a multiple of world.
    a [M, K] fp8 and a_scale (the quant's layout: blockscale [K/128, M]) with weights enable the GEMM check.
    rows (ascending, the same count in every slice: sample_rows): the sums over those rows only."""
    torch = _torch()
    m_all, n = output.shape
    idx = None if rows is None else torch.as_tensor(rows, dtype=torch.long, device=output.device)
    m = m_all if idx is None else idx.numel()
    s_rows = m // world
    p = (partial if idx is None else partial.index_select(0, idx)).float()
    o = (output if idx is None else output.index_select(0, idx)).float()
    nb = (n + COLUMN_BLOCK - 1) // COLUMN_BLOCK
    pad = nb * COLUMN_BLOCK - n
    pb = torch.nn.functional.pad(p, (0, pad)).view(m, nb, COLUMN_BLOCK)
    # Column sums slice by slice, each one [S, N].sum(0): the same reduction for every view and for the wire's
    # slice, so equal data gives equal bits (torch's reductions are deterministic for a given shape).
    def cols(x):
        return torch.stack([x[i * s_rows:(i + 1) * s_rows].sum(0) for i in range(world)])

    s = {
        "partial_col": cols(p), "partial_col_abs": cols(p.abs()),
        "out_col": cols(o), "out_col_abs": cols(o.abs()),
        "partial_blk": pb.sum(2), "partial_blk_abs": pb.abs().sum(2),
        "out_row": o.sum(1), "out_row_abs": o.abs().sum(1),
    }
    if fp8_wire:
        # The wire quantizes row by row, so the owner's listed rows alone give the same codes and scales.
        view, scales = _wire_slice(o[rank * s_rows:(rank + 1) * s_rows].to(output.dtype), scale_rule)
        s["wire_col"] = view.float().sum(0)
        s["wire_scale_sum"] = scales.sum().reshape(1)
    if a is not None and weights is not None:
        k = a.shape[1]
        a_rows = a if idx is None else a.index_select(0, idx)
        a_deq = a_rows.float() * expand_scale(a_scale, a.shape[0], k, quant, "a", idx)
        bsum, babs = weights
        prec = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("highest")  # no TF32: the bound assumes fp32 products
        try:
            s["gemm_pred"] = a_deq @ bsum.to(a_deq.device).t()
            s["gemm_pred_abs"] = a_deq.abs() @ babs.to(a_deq.device).t()
        finally:
            torch.set_float32_matmul_precision(prec)
    return s


def _same_bits(x, y):
    torch = _torch()
    return torch.equal(x.contiguous().view(torch.int32), y.contiguous().view(torch.int32))


def check(sums, fp8_wire=False, k=None, fnuz=False, quant="blockscale"):
    """Judges one call from every rank's sums (list, index = rank): [(code, message), ...], empty when clean."""
    torch = _torch()
    world = len(sums)
    n = sums[0]["out_col"].shape[1]
    m = sums[0]["out_row"].shape[0]
    s_rows = m // world
    out = []

    def add(code, msg):
        if all(c != code for c, _ in out):
            out.append((code, msg))

    def worst(diff, bound):
        bad = ~(diff <= bound)
        if not bool(bad.any()):
            return None
        ratio = torch.where(bad, diff / bound.clamp_min(1e-300), torch.zeros_like(diff))
        ratio = torch.where(torch.isnan(ratio), torch.full_like(ratio, math.inf), ratio)
        i = int(ratio.argmax())
        return int(bad.sum()), i, float(diff.flatten()[i]), float(bound.flatten()[i])

    gs = gamma(s_rows, U_FP32)
    for s in range(world):
        own = sums[s]
        p = sum(x["partial_col"][s].double() for x in sums)
        pa = sum(x["partial_col_abs"][s].double() for x in sums)
        oabs = own["out_col_abs"][s].double()
        g_w = gamma(max(0, world - 1), U_FP32)
        bound = ((U_BF16 + gs) * oabs + (g_w + gs) * pa) * (1 + gs) / (1 - gs) + s_rows * BF16_UNDERFLOW
        w = worst((own["out_col"][s].double() - p).abs(), bound)
        if w:
            add("GUARD_REDUCE", f"slice {s}: output column sums off the sum of the {world} partials' in {w[0]} of "
                                f"{n} columns; worst column {w[1]}: |difference| {w[2]:.4g} against the bound "
                                f"{w[3]:.4g}")
        exact = own["out_col"][s]
        expect = own["wire_col"] if fp8_wire else exact
        if fp8_wire:
            c_rel = (1 + U_E4M3) * (1 + U_BF16) * (1 + gamma(5, U_FP32)) - 1
            sub = (2.0 ** -11 if fnuz else 2.0 ** -10) * (1 + U_BF16) * float(own["wire_scale_sum"][0]) * (1 + gs)
            wb = ((c_rel + gs * (2 + c_rel)) * oabs + sub) * (1 + gs) / (1 - gs) + s_rows * BF16_UNDERFLOW * 2
            w = worst((own["wire_col"].double() - exact.double()).abs(), wb)
            if w:
                add("GUARD_WIRE", f"slice {s}: the fp8 wire's sums off the owner's beyond e4m3's rounding in {w[0]} "
                                  f"columns (worst column {w[1]})")
        wire_changes = fp8_wire and not _same_bits(exact, expect)
        for r in range(world):
            if r == s:
                continue
            view = sums[r]["out_col"][s]
            if _same_bits(view, expect):
                continue
            if wire_changes and _same_bits(view, exact):
                add("GUARD_WIRE", f"rank {r}'s view of slice {s} holds the owner's exact bf16 sums: the gather "
                                  f"moved bf16, the fp8 wire never engaged")
                continue
            cols = int((view.contiguous().view(torch.int32) != expect.contiguous().view(torch.int32)).sum())
            add("GUARD_GATHER", f"rank {r}'s view of slice {s} differs from the "
                                f"{'fp8 wire' if fp8_wire else 'owner'}'s in {cols} of {n} column sums")
    for r, x in enumerate(sums):
        if "gemm_pred" not in x or k is None:
            continue
        nb = x["partial_blk"].shape[1]
        terms = torch.tensor([min(COLUMN_BLOCK, n - b * COLUMN_BLOCK) for b in range(nb)],
                             dtype=torch.float64, device=x["partial_blk"].device)
        gt = terms * U_FP32 / (1 - terms * U_FP32)
        gk = gamma(k + 3, U_FP32)
        g_gemm = gamma(gemm_roundings(k, QUANTS[quant]["a"]["k"] or k) + 2, U_FP32)
        bound = (g_gemm + gamma(k + 1, U_FP32)) * x["gemm_pred_abs"].double() * (1 + gk) / (1 - gk) + \
            (U_BF16 + gt) * x["partial_blk_abs"].double() * (1 + gt) / (1 - gt) + terms * BF16_UNDERFLOW
        w = worst((x["partial_blk"].double() - x["gemm_pred"].double()).abs(), bound)
        if w:
            add("GUARD_GEMM", f"rank {r}'s partial: {w[0]} row blocks off A . checksum(B) beyond the GEMM's "
                              f"rounding (worst row {w[1] // nb} block {w[1] % nb}): a wrong scale or operand")
    return out


_KEYS = ["partial_col", "partial_col_abs", "out_col", "out_col_abs", "partial_blk", "partial_blk_abs", "out_row",
         "out_row_abs", "wire_col", "wire_scale_sum", "gemm_pred", "gemm_pred_abs"]


_CALLS = {}  # process group -> [seed, calls so far]: every rank draws the same rows in the same call


def _next_sample(m, sample, group, seed):
    """This call's rows for guard_call: the seed drawn once by rank 0 (or given) and broadcast, the call count
    kept per group; every rank calls the guard once per call of the op, so the counts stay equal."""
    if sample == 1:
        return None
    import os
    import torch.distributed as dist
    key = id(group)
    if key not in _CALLS:
        if seed is None:
            box = [int.from_bytes(os.urandom(8), "little")]
            dist.broadcast_object_list(box, src=dist.get_global_rank(group, 0) if group is not None else 0,
                                       group=group)
            seed = box[0]
        _CALLS[key] = [seed, 0]
    state = _CALLS[key]
    rows = sample_rows(m, sample, state[0], state[1])
    state[1] += 1
    return rows


def guard_call(partial, output, fp8_wire=False, a=None, a_scale=None, weights=None, group=None,
               on_finding="raise", scale_rule="mori", quant="blockscale", sample=32, seed=None):
    """After the op on every rank: all_gather the sums over torch.distributed, judge, raise GuardError or log.
    sample: read one row of every `sample` (docs/guard.md "Sampled rows"; 1 = every row), drawn anew per call
    from `seed` (None: rank 0 draws one at the first call) and the call count."""
    torch = _torch()
    import torch.distributed as dist
    world = dist.get_world_size(group)
    rank = dist.get_rank(group)
    rows = _next_sample(output.shape[0], sample, group, seed)
    mine = rank_sums(partial, output, rank, world, fp8_wire, a, a_scale, weights, scale_rule, quant, rows)
    keys = [key for key in _KEYS if key in mine]
    flat = torch.cat([mine[key].float().flatten() for key in keys])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat, group=group)
    sums = []
    for g in gathered:
        d, off = {}, 0
        for key in keys:
            cnt = mine[key].numel()
            d[key] = g[off:off + cnt].view(mine[key].shape)
            off += cnt
        sums.append(d)
    return _report(check(sums, fp8_wire, a.shape[1] if a is not None else None, quant=quant), on_finding)


def guard_ranks(partials, outputs, fp8_wire=False, a=None, a_scales=None, weights=None, on_finding="raise",
                scale_rule="mori", quant="blockscale", sample=1, seed=0, call=0):
    """Every rank's tensors at once (ranks as tensors on one device): the same check without a process group,
    over sample_rows(M, sample, seed, call)."""
    world = len(outputs)
    rows = None if sample == 1 else sample_rows(outputs[0].shape[0], sample, seed, call)
    sums = [rank_sums(partials[r], outputs[r], r, world, fp8_wire, a[r] if a else None,
                      a_scales[r] if a_scales else None, weights[r] if weights else None, scale_rule, quant, rows)
            for r in range(world)]
    return _report(check(sums, fp8_wire, a[0].shape[1] if a else None, quant=quant), on_finding)


def _report(findings, on_finding):
    if findings and on_finding == "raise":
        raise GuardError(findings)
    for code, msg in findings:
        logging.getLogger("gemmar_guard").error("%s: %s", code, msg)
    return findings


# ---- the caller guard: from what a serving process holds (docs/guard.md "The guard from what the caller holds") --
# No partials: each rank's A (codes and scales), its weights B and its output view. The device library
# (libgemmar_guard.so, kernels/check/caller_guard.cu) through ctypes on the caller's stream; the same record and
# judge in torch and numpy where the library is absent (gemmar_guard_caller.py).
import gemmar_guard_caller as _gc  # noqa: E402 - torch-free: the layout, the bound, the judge, the binding


def unshuffle_b(w):
    """[N, K] fp8 in mori's preshuffle_b order (aiter's shuffle_weight(layout=(16, 16)); ROCm/mori
    python/mori/ops/gemm_ar/_shuffle.py @bc802ffe: N0 K0 KLane(4) NLane(16) KPack(16)) back to row-major [N, K]."""
    n, k = w.shape
    return w.view(n // 16, k // 64, 4, 16, 16).permute(0, 3, 1, 2, 4).contiguous().view(n, k)


def _e8m0_to_f32(e):
    torch = _torch()
    e = e.to(torch.int32)
    return torch.where(e == 255, torch.full_like(e, 0x7FC00000), torch.where(e == 0, torch.full_like(e, 0x00400000),
                                                                             e << 23)).view(torch.float32)


def _b_scale_f32(quant, b_scale, n, k):
    """B's scales as fp32 in the quant's logical layout (QUANTS[quant]["b"]). mxfp8: the e8m0 exponents [N/32, K/32]
    as bytes, or mori's operand (their K/32-major widening to int32, flat: op.py @f3bff0ae __call__'s docstring)."""
    torch = _torch()
    if quant != "mxfp8":
        return b_scale.float()
    nb, kb = n // 32, k // 32
    if b_scale.dtype == torch.int32 and b_scale.dim() == 1:  # mori's [K/32][N/32] flat int32
        b_scale = b_scale.view(kb, nb).t()
    if b_scale.dtype in (torch.uint8, torch.int32):
        return _e8m0_to_f32(b_scale.reshape(nb, kb))
    return b_scale.float().reshape(nb, kb)


class CallerWeights:
    """One layer's weights as the guard needs them on one rank (CallerGuard.prepare): the checksum w [nb, K] fp32
    on the device and the two norms per column block the bound needs (c_gemm, c_part: reference/guard_caller.hpp)."""

    def __init__(self, w, c_gemm, c_part):
        torch = _torch()
        self.w = w.contiguous()
        self.wnorm = torch.tensor(list(c_gemm) + list(c_part), dtype=torch.float32, device=w.device)
        self.nb, self.k = w.shape


class CallerCall:
    """One checked call; findings() waits for it (a host sync) and returns [(code, message), ...]."""

    def __init__(self, guard, plan, resolve):
        self._guard, self._plan, self._resolve, self._findings = guard, plan, resolve, None

    def done(self):
        return self._findings is not None or self._resolve(block=False) is not None

    def findings(self):
        if self._findings is None:
            self._findings = self._resolve(block=True)
            self._guard._report(self._findings)
        return self._findings

    def cells(self):
        """The judge's (view, slice) cells (gemmar_guard_caller.cell_dtype): each check's worst ratio to its bound,
        the aggregate sums; a host sync."""
        return self._resolve(block=True, want_cells=True)[1]


class CallerGuard:
    """The caller guard on one rank (docs/guard.md "Integration"): prepare() once per layer at weight load, check()
    after every call of the op. Every rank of the group calls check() once per call of the op, in the same order.

    n, k: the op's weight shape; quant "blockscale" (A scales 1x128, B 128x128), "mxfp8" (32-wide e8m0) or "ptpc";
    gather_dtype / scatter_dtype "bf16" or "fp8" (the op's wires); gather_transport is recorded in the findings;
    wire_recipe: the fp8 gather's recipe ("mori", "true-division", "div-codes", None = compare within its bound);
    sample: one row in `sample` per call (divides 128); alpha: the per-call false-alarm probability of the bounds;
    group: the torch.distributed group of the op's ranks (None with world= and rank=: ranks in one process, checked
    together by check_local); seed: the sample's seed (None: rank 0 draws one at the first check, broadcast);
    library: "auto" (libgemmar_guard.so if found, $GEMMAR_GUARD_LIB), a path, or False (torch, numpy judge);
    on_finding: "log" (logging.error, the default), "raise" (GuardError) or "return" (nothing but the findings).
    """

    def __init__(self, n, k, *, quant="blockscale", gather_dtype="bf16", scatter_dtype="bf16",
                 gather_transport="sdma", wire_recipe="mori", sample=32, alpha=1e-9, group=None, world=None, rank=None,
                 seed=None, library="auto", on_finding="log", device=None):
        torch = _torch()
        if quant not in QUANTS:
            raise ValueError(f"gemmar_guard: quant {quant!r} is not one of {sorted(QUANTS)}")
        for name, v in (("gather_dtype", gather_dtype), ("scatter_dtype", scatter_dtype)):
            if v not in ("bf16", "fp8"):
                raise ValueError(f"gemmar_guard: {name} {v!r} must be bf16 or fp8")
        self.n, self.k, self.quant = n, k, quant
        self.fp8_gather, self.fp8_scatter = gather_dtype == "fp8", scatter_dtype == "fp8"
        self.transport, self.wire_recipe, self.sample, self.alpha = gather_transport, wire_recipe, sample, alpha
        self.on_finding = on_finding
        self.group = group
        if group is not None or (world is None and rank is None):
            import torch.distributed as dist
            self.world, self.rank = dist.get_world_size(group), dist.get_rank(group)
            self.local = False
        else:
            self.world, self.rank, self.local = world, rank, True
        self.device = torch.device(device) if device is not None else torch.device("cuda", torch.cuda.current_device())
        self.seed = seed
        self.k_block = QUANTS[quant]["a"]["k"] or k
        self.lib = None
        if library:
            path = _gc.find_library() if library == "auto" else library
            if path:
                self.lib = _gc.Library(path)
        self.impl = "library" if self.lib else "torch"
        self.call_counter = torch.zeros(1, dtype=torch.int64, device=self.device)
        self.host_calls = 0
        self._plans, self._bufs, self._pinned, self._agreed = {}, {}, {}, False
        self._batch, self._batch_send, self._batch_cells = [], None, []
        self.calls = self.flagged = 0

    # ---- once per layer, at weight load ------------------------------------------------------------------
    def prepare(self, b, b_scale, b_layout="logical"):
        """The weights' checksum and norms of this rank's B (codes [N, K] e4m3, "logical" row-major or
        "mori_preshuffled") and its scales (QUANTS layout; mxfp8 also mori's flat int32). float64 sums, the Gram
        matrix's largest eigenvalue per 1024-column block (torch.linalg.eigvalsh, float64) for the spectral bound."""
        torch = _torch()
        n, k = b.shape
        if (n, k) != (self.n, self.k):
            raise ValueError(f"gemmar_guard: B is {tuple(b.shape)}, the guard's weights are ({self.n}, {self.k})")
        if b_layout == "mori_preshuffled":
            b = unshuffle_b(b)
        elif b_layout != "logical":
            raise ValueError(f"gemmar_guard: b_layout {b_layout!r} must be logical or mori_preshuffled")
        codes = b.view(torch.float8_e4m3fn) if b.dtype != torch.float8_e4m3fn else b
        sb = _b_scale_f32(self.quant, b_scale, n, k)
        plan = _gc.CallerPlan(self.world, self.world * self.sample, n, k, self.sample, k_block=self.k_block)
        nb = plan.layout.nb
        w = torch.empty(nb, k, dtype=torch.float32, device=b.device)
        c_gemm, c_part = [], []
        for blk in range(nb):
            r0, r1 = blk * _gc.BLOCK_COLS, min(n, (blk + 1) * _gc.BLOCK_COLS)
            rows = torch.arange(r0, r1, device=b.device)
            bd = (codes[r0:r1].float() * expand_scale(sb, n, k, self.quant, "b", rows)).double()
            w[blk] = bd.sum(0).float()
            gram = bd @ bd.t() if bd.shape[0] <= bd.shape[1] else bd.t() @ bd
            top = float(torch.linalg.eigvalsh(gram)[-1].clamp_min(0))
            cg, cp = plan.weight_norms(float((bd * bd).sum()), top)
            c_gemm.append(cg)
            c_part.append(cp)
        return CallerWeights(w, c_gemm, c_part)

    # ---- per call -------------------------------------------------------------------------------------------
    def _plan(self, m):
        if m not in self._plans:
            self._plans[m] = _gc.CallerPlan(self.world, m, self.n, self.k, self.sample, self.fp8_gather,
                                            self.fp8_scatter, self.wire_recipe if self.fp8_gather else None,
                                            k_block=self.k_block, alpha=self.alpha)
            if self.lib:
                self.lib.check_layout(self._plans[m])
        return self._plans[m]

    def _buffers(self, m):
        torch = _torch()
        if m not in self._bufs:
            l = self._plan(m).layout
            self._bufs[m] = {
                "send": torch.zeros(l.floats, dtype=torch.float32, device=self.device),
                "gathered": torch.zeros(self.world * l.floats, dtype=torch.float32, device=self.device),
                "cells": torch.zeros((self.world * self.world + 1) * 16, dtype=torch.int32, device=self.device),
            }
        return self._bufs[m]

    def _first_call(self):
        """Once, collectively: the sample's seed from rank 0, and every rank on the same implementation (the views
        compare bitwise only when every rank sums them with the same code)."""
        torch = _torch()
        import torch.distributed as dist
        if self.seed is None:
            box = [int.from_bytes(os.urandom(8), "little")]
            dist.broadcast_object_list(box, src=dist.get_global_rank(self.group, 0) if self.group else 0,
                                       group=self.group)
            self.seed = box[0]
        mine = torch.tensor([1 if self.lib else 2], dtype=torch.int32, device=self.device)
        every = [torch.empty_like(mine) for _ in range(self.world)]
        dist.all_gather(every, mine, group=self.group)
        if len({int(x) for x in every}) != 1:
            raise RuntimeError("gemmar_guard: the ranks run different guard implementations (library / torch): "
                               "their views would not compare bitwise; install libgemmar_guard.so on every rank")
        self._agreed = True

    def sums(self, weights, a, a_scale, out, record, a_scale_layout=None):
        """This rank's record of one call into `record` (a float32 tensor of the layout's size), on the current
        stream: the library's kernel, or torch ops (the host counts the calls then)."""
        torch = _torch()
        m = out.shape[0]
        plan = self._plan(m)
        l = plan.layout
        if tuple(a.shape) != (m, self.k) or out.shape[1] != self.n or out.dtype != torch.bfloat16 or out.stride(1) != 1:
            raise ValueError(f"gemmar_guard: a {tuple(a.shape)} and out {tuple(out.shape)} {out.dtype} do not match "
                             f"[M, {self.k}] e4m3 and [M, {self.n}] bf16 with unit column stride")
        kind, sk, scale = _a_scale_kind(self.quant, a_scale, m, self.k, a_scale_layout)
        record[l.wnorm:l.wnorm + 2 * l.nb].copy_(weights.wnorm)
        if self.lib:
            args = _gc.SumsArgs(world=self.world, rank=self.rank, m=m, n=self.n, k=self.k, stride=self.sample,
                                a_scale_kind=kind, seed=self.seed & ((1 << 64) - 1), a=a.data_ptr(),
                                a_scale=scale.data_ptr(), a_scale_k=sk, a_fnuz=0, out=out.data_ptr(),
                                out_ld=out.stride(0), w=weights.w.data_ptr(), record=record.data_ptr(),
                                wire_recipe=_gc.WIRE_RECIPES[plan.wire_recipe] if plan.recipe_known else -1,
                                wire_fnuz=0, call=self.call_counter.data_ptr())
            self.lib.sums(args, torch.cuda.current_stream(self.device).cuda_stream)
        else:
            _torch_record(plan, self.rank, self.host_calls, self.seed, a, kind, sk, scale, out, weights, record)
        return plan

    def judge(self, plan, gathered, cells, ld=None):
        """The library's judge of the gathered records on the current stream (advances the call counter)."""
        torch = _torch()
        args = _gc.JudgeArgs(world=self.world, stride=self.sample, m=plan.m, n=self.n, records=gathered.data_ptr(),
                             records_ld=ld or 0, consts=self.lib.consts(plan), cells=cells.data_ptr(),
                             call=self.call_counter.data_ptr())
        self.lib.judge(args, torch.cuda.current_stream(self.device).cuda_stream)

    def check(self, weights, a, a_scale, out, *, wait=True, defer=False, a_scale_layout=None):
        """After the op on this rank: its record, the all_gather of the records over the group, the judge. Returns the
        findings ([(code, message)], a host sync) when wait, else a CallerCall to ask later (no sync here).
        defer: only the record now; flush() exchanges every deferred record in one all_gather and judges them (one
        collective per forward instead of one per layer), and the CallerCall answers after it."""
        import torch.distributed as dist
        if self.local:
            raise RuntimeError("gemmar_guard: this guard has no process group: check its ranks with check_local")
        if not self._agreed:
            self._first_call()
        if defer:
            return self._defer(weights, a, a_scale, out, a_scale_layout)
        bufs = self._buffers(out.shape[0])
        host_call = self.host_calls
        plan = self.sums(weights, a, a_scale, out, bufs["send"], a_scale_layout)
        dist.all_gather_into_tensor(bufs["gathered"], bufs["send"], group=self.group)
        call = self._finish(plan, bufs["gathered"], bufs["cells"], host_call=host_call)
        self.host_calls = host_call + 1
        return call.findings() if wait else call

    def _defer(self, weights, a, a_scale, out, a_scale_layout):
        torch = _torch()
        plan = self._plan(out.shape[0])
        used = sum(e["plan"].layout.floats for e in self._batch)
        need = used + plan.layout.floats
        if self._batch_send is None or self._batch_send.numel() < need:
            old = self._batch_send
            self._batch_send = torch.zeros(max(need, 2 * (old.numel() if old is not None else 0)),
                                           dtype=torch.float32, device=self.device)
            if old is not None:
                self._batch_send[:old.numel()].copy_(old)
        self.sums(weights, a, a_scale, out, self._batch_send[used:need], a_scale_layout)
        entry = {"plan": plan, "offset": used, "call": None}
        self._batch.append(entry)

        def resolve(block, want_cells=False):
            if entry["call"] is None:
                if not block:
                    return None
                raise RuntimeError("gemmar_guard: a deferred check answers after flush()")
            return entry["call"]._resolve(block, want_cells)
        return CallerCall(self, plan, resolve)

    def flush(self):
        """Every deferred record of this rank in one all_gather, then each one's judge. Call it on every rank at the
        same point (the end of a forward); returns the number of calls it judged."""
        torch = _torch()
        import torch.distributed as dist
        if not self._batch:
            return 0
        used = sum(e["plan"].layout.floats for e in self._batch)
        gathered = torch.empty(self.world * used, dtype=torch.float32, device=self.device)
        dist.all_gather_into_tensor(gathered, self._batch_send[:used], group=self.group)
        host_call = self.host_calls
        for i, e in enumerate(self._batch):
            while len(self._batch_cells) <= i:
                self._batch_cells.append(torch.zeros((self.world * self.world + 1) * 16, dtype=torch.int32,
                                                     device=self.device))
            plan = e["plan"]
            view = gathered[e["offset"]:]
            e["call"] = self._finish(plan, view, self._batch_cells[i], ld=used, host_call=host_call)
        self.host_calls = host_call + 1
        n = len(self._batch)
        self._batch = []
        return n

    def _finish(self, plan, gathered, cells, ld=None, judged=False, host_call=None):
        """The judge (library: on the device, unless `judged`; its cells copied to a pinned slot behind an event;
        torch: numpy on the host now) and the handle that turns its cells into findings."""
        torch = _torch()
        self.calls += 1
        if self.lib:
            if not judged:
                self.judge(plan, gathered, cells, ld)
            ring = self._pinned.setdefault(plan.m, [])
            if len(ring) < 8:  # a ring of pinned slots: a handle is good until 8 later calls of this M
                ring.append([torch.empty(cells.numel(), dtype=torch.int32, pin_memory=True), None])
            slot = ring[self.calls % len(ring)] if len(ring) == 8 else ring[-1]
            slot[0].copy_(cells, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            slot[1] = event
            host = slot[0]

            def resolve(block, want_cells=False):
                if slot[1] is not event:
                    raise RuntimeError("gemmar_guard: this call's cells were overwritten: ask for its findings "
                                       "before 8 more calls of the same M")
                if not block and not event.query():
                    return None
                event.synchronize()
                return _cells_findings(plan, self, host.numpy(), want_cells)
            return CallerCall(self, plan, resolve)
        call = self.host_calls if host_call is None else host_call  # the call number the torch sums drew for
        records = gathered.cpu().numpy()
        cells_np = _gc.judge(plan, records, ld)
        found = _gc.findings(plan, cells_np, _gc.sample_rows(plan.m, plan.stride, self.seed, call))
        return CallerCall(self, plan, lambda block, want_cells=False: (found, cells_np) if want_cells else found)

    def _report(self, found):
        if found:
            self.flagged += 1
        if found and self.on_finding == "raise":
            raise GuardError(found)
        if self.on_finding == "log":
            for code, msg in found:
                logging.getLogger("gemmar_guard").error("%s: %s (gather %s/%s, scatter %s)", code, msg,
                                                        "fp8" if self.fp8_gather else "bf16", self.transport,
                                                        "fp8" if self.fp8_scatter else "bf16")


def _cells_findings(plan, guard, words, want_cells=False):
    import numpy as np
    W = plan.world
    cells = np.frombuffer(words.tobytes(), dtype=_gc.cell_dtype())
    call = int(cells[W * W]["checks"])
    rows = _gc.sample_rows(plan.m, plan.stride, guard.seed, call)
    found = _gc.findings(plan, cells[:W * W], rows)
    return (found, cells[:W * W]) if want_cells else found


def enqueue_local(guards, weights, a, a_scales, outs, a_scale_layout=None):
    """Every rank of one op in one process (ranks as tensors on one device, python/torch_gemm_ar.py), on the current
    stream, nothing on the host: each guard's record written into one gathered array (what the all_gather
    assembles), then every rank's judge, as every rank of a group judges. Capturable in a CUDA graph (library)."""
    torch = _torch()
    g0 = guards[0]
    plan = g0._plan(outs[0].shape[0])
    l = plan.layout
    key = ("local", plan.m)
    if key not in g0._bufs:
        g0._bufs[key] = torch.zeros(g0.world * l.floats, dtype=torch.float32, device=g0.device)
    gathered = g0._bufs[key]
    for r, g in enumerate(guards):
        if g.seed is None:
            raise ValueError("gemmar_guard: ranks in one process need the guards' common seed")
        g.sums(weights[r], a[r], a_scales[r], outs[r], gathered[r * l.floats:(r + 1) * l.floats], a_scale_layout)
    if g0.lib:
        for g in guards:
            g.judge(plan, gathered, g._buffers(plan.m)["cells"])
    return plan, gathered


def check_local(guards, weights, a, a_scales, outs, *, wait=True, a_scale_layout=None):
    """enqueue_local, then each rank's handle (library: its cells to the host behind an event; torch: the numpy
    judge). Returns each rank's findings (wait) or CallerCalls."""
    plan, gathered = enqueue_local(guards, weights, a, a_scales, outs, a_scale_layout)
    calls = [g._finish(plan, gathered, g._buffers(plan.m)["cells"], judged=True) for g in guards]
    for g in guards:
        g.host_calls += 1
    return [c.findings() for c in calls] if wait else calls


def _a_scale_kind(quant, a_scale, m, k, layout=None):
    """(gg_a_scale_kind, K columns per scale, the tensor read in place) for the A scales the caller holds.
    blockscale: fp32 [K/128, M], flat (mori's physical order), or [M, K/128] column-major (stride (1, M)); a
    row-major [M, K/128] is ambiguous (ROCm/mori op.py @f3bff0ae _flatten_a_scale refuses it too): pass
    a_scale_layout="row_major" or "k_major". mxfp8: mori's flat int32 (preshuffle_a_scale's order), or e8m0 bytes /
    fp32 powers of two [M, K/32]. ptpc: fp32 [M]."""
    torch = _torch()
    kinds = _gc.A_SCALE_KINDS
    if quant == "ptpc":
        return kinds["f32_row_major"], k, a_scale.float().contiguous()
    if quant == "mxfp8":
        if a_scale.dtype == torch.int32 and a_scale.dim() == 1:
            return kinds["e8m0_mori_packed"], 32, a_scale.view(torch.uint8)
        if a_scale.dtype in (torch.uint8, torch.int32):
            return kinds["e8m0_row_major"], 32, a_scale.to(torch.uint8).reshape(m, k // 32).contiguous()
        return kinds["f32_row_major"], 32, a_scale.float().reshape(m, k // 32).contiguous()
    kb = k // 128
    s = a_scale if a_scale.dtype == torch.float32 else a_scale.float()
    if layout == "row_major" or (s.dim() == 2 and tuple(s.shape) == (m, kb) and s.stride() == (kb, 1) and
                                 layout != "k_major" and kb != 1):
        if layout != "row_major":
            raise ValueError("gemmar_guard: a row-major [M, K/128] A scale is ambiguous (a logical [M, K/128], or a "
                             "K/128-major buffer of that shape): pass a_scale_layout='row_major' or 'k_major'")
        return kinds["f32_row_major"], 128, s.contiguous()
    if s.dim() == 2 and tuple(s.shape) == (m, kb) and s.stride() == (1, m):
        return kinds["f32_k_major"], 128, s.t()
    if s.numel() != m * kb:
        raise ValueError(f"gemmar_guard: A scales of {s.numel()} elements, blockscale needs M * K/128 = {m * kb}")
    return kinds["f32_k_major"], 128, s.contiguous()


def _torch_record(plan, rank, call, seed, a, kind, sk, scale, out, weights, record):
    """The library's record in torch ops (the fallback): the same sums, in torch's own order (every rank runs the
    same ops on the same shapes, so equal views still give equal bits)."""
    torch = _torch()
    l = plan.layout
    dev = out.device
    rows = torch.as_tensor(_gc.sample_rows(plan.m, plan.stride, seed, call), device=dev)
    codes = a.view(torch.uint8).index_select(0, rows).view(torch.float8_e4m3fn).float()
    kbs = plan.k // sk
    kinds = _gc.A_SCALE_KINDS
    if kind == kinds["f32_k_major"]:
        sc = scale.reshape(kbs, plan.m).index_select(1, rows).t()
    elif kind == kinds["f32_row_major"]:
        sc = scale.reshape(plan.m, kbs).index_select(0, rows)
    elif kind == kinds["e8m0_row_major"]:
        sc = _e8m0_to_f32(scale.reshape(plan.m, kbs).index_select(0, rows))
    else:  # mori's packed order: byte kb * M + row / 64 * 64 + row % 16 * 4 + row % 64 / 16
        pos = (rows // 64 * 64 + rows % 16 * 4 + rows % 64 // 16)[:, None] + \
            torch.arange(kbs, device=dev)[None, :] * plan.m
        sc = _e8m0_to_f32(scale.view(torch.uint8).reshape(-1)[pos])
    a_deq = codes * sc.repeat_interleave(sk, 1)
    prec = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        pred = a_deq @ weights.w.t()
        pabs = a_deq.abs() @ weights.w.abs().t()
    finally:
        torch.set_float32_matmul_precision(prec)
    pad = l.nb * _gc.BLOCK_COLS - plan.n

    def blocks(x):
        return torch.nn.functional.pad(x.float(), (0, pad)).view(x.shape[0], l.nb, _gc.BLOCK_COLS)

    o_bf = out.index_select(0, rows)
    o = blocks(o_bf)
    grid = l.L * l.nb
    low = call & 0xFFFFFFFF  # the call number's low bits, as the library writes them; then the implementation: 2
    record[0:2].view(torch.int32).copy_(torch.tensor([low - (1 << 32) if low >= 1 << 31 else low, 2],
                                                     dtype=torch.int32))
    record[l.pred:l.pred + grid] = pred.reshape(-1)
    record[l.pabs:l.pabs + grid] = pabs.reshape(-1)
    record[l.osum:l.osum + grid] = o.sum(-1).reshape(-1)
    record[l.osq:l.osq + grid] = (o * o).sum(-1).reshape(-1)
    record[l.oabs:l.oabs + grid] = o.abs().sum(-1).reshape(-1)
    record[l.asq:l.asq + l.L] = (a_deq * a_deq).sum(1)
    if plan.recipe_known:
        own = slice(rank * l.Ls, (rank + 1) * l.Ls)
        rule = {"mori": "mori", "true-division": "div", "div-codes": "div-codes"}[plan.wire_recipe]
        view, scales = _wire_slice(o_bf[own], rule)
        full = o_bf.clone()
        full[own] = view  # the same shape as the views' sums: the same reduction, equal data gives equal bits
        record[l.wsum:l.wsum + l.Ls * l.nb] = blocks(full).sum(-1)[own].reshape(-1)
        record[l.wscale:l.wscale + l.Ls] = scales


# ---- self-test: the op emulated on one device, W ranks as tensors -----------------------------------------
def _emulate(partials_f32, fp8_wire, scale_rule, fault=None):
    """bf16 partials; owner reduce in fp32 in peer order (owner + j) % W; bf16; gather (fp8 wire: quantized)."""
    torch = _torch()
    world = len(partials_f32)
    m, n = partials_f32[0].shape
    s_rows = m // world
    local = [p.to(torch.bfloat16) for p in partials_f32]
    outs = [x.clone() for x in local]  # in place: each output starts as its local partial
    for o in range(world):
        rows = slice(o * s_rows, (o + 1) * s_rows)
        acc = local[o][rows].float()  # from the owner's own value, as mori's sdma_reduce (-0 stays -0)
        for j in range(1, world):
            q = (o + j) % world
            if fault == "silent-scatter" and q != o:
                continue
            acc = acc + local[q][rows].float()
        red = acc.to(torch.bfloat16)
        outs[o][rows] = red
        view = red
        if fp8_wire and fault != "wire-bypassed":
            view, _ = _wire_slice(red, scale_rule)
        for r in range(world):
            if r == o or (fault == "silent-gather"):
                continue
            outs[r][rows] = view
    return local, outs


def _stored_scales(quant, operand, rows, k, g):
    """Random scales in the quant's stored layout (mxfp8: powers of two, as e8m0)."""
    torch = _torch()
    s = torch.rand(*_stored_scale_shape(quant, operand, rows, k), generator=g) * 0.01 + 0.01
    return torch.exp2(torch.round(torch.log2(s))) if QUANTS[quant]["e8m0_scales"] else s


def selftest(device="cpu", world=8, m=1024, n=2048, k=256, seed=7, quant="blockscale"):
    torch = _torch()
    g = torch.Generator(device="cpu").manual_seed(seed)
    a, a_scales, weights, parts = [], [], [], []
    for _ in range(world):
        ar = (torch.randn(m, k, generator=g) / 2).to(torch.float8_e4m3fn).to(device)
        sa = _stored_scales(quant, "a", m, k, g).to(device)
        br = (torch.randn(n, k, generator=g) / 2).to(torch.float8_e4m3fn).to(device)
        sb = _stored_scales(quant, "b", n, k, g).to(device)
        a_deq = ar.float() * expand_scale(sa, m, k, quant, "a")
        b_deq = br.float() * expand_scale(sb, n, k, quant, "b")
        prec = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("highest")
        parts.append(a_deq @ b_deq.t())
        torch.set_float32_matmul_precision(prec)
        a.append(ar)
        a_scales.append(sa)
        weights.append(weights_checksum(br, sb, quant))
    failures = 0
    # The op's wire and the guard's re-quantization follow the same recipe: mori's (the default) in every case,
    # and once the true-division variant on both sides (scale_rule="div"). A mismatch is a GUARD_GATHER by design
    # (on a CPU the two recipes' scales differ in the last bit in about half of the rows).
    cases = [(None, False, [], "mori"), (None, True, [], "mori"), (None, True, [], "div"),
             ("silent-scatter", False, ["GUARD_REDUCE"], "mori"), ("silent-gather", False, ["GUARD_GATHER"], "mori"),
             ("silent-gather", True, ["GUARD_GATHER"], "mori"), ("wire-bypassed", True, ["GUARD_WIRE"], "mori"),
             ("perturb-rank", False, ["GUARD_GEMM"], "mori"), ("stale-output", True, ["GUARD_REDUCE"], "mori")]
    # Every case with every row read, and with one row in 32 on three calls (other rows each call).
    for (fault, fp8, want, rule), (sample, call) in [(c, s) for c in cases for s in ((1, 0), (32, 0), (32, 1), (32, 2))]:
        p = [x * 1.25 if (fault == "perturb-rank" and r == 3) else x for r, x in enumerate(parts)]
        local, outs = _emulate(p, fp8, rule, fault)
        if fault == "stale-output":
            _, outs = _emulate([x * 2 for x in parts], fp8, rule)
        got = guard_ranks(local, outs, fp8, a, a_scales, weights, on_finding="return", scale_rule=rule, quant=quant,
                          sample=sample, seed=seed, call=call)
        codes = sorted({c for c, _ in got})
        ok = codes == sorted(want)
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} quant={quant:10s} fault={fault or 'none':15s} "
              f"wire={'fp8 ' + rule if fp8 else 'bf16'} sample={sample:<3d} call={call} codes={codes} "
              f"expected={want}" + ("" if ok else f" {got}"))
    return failures


def bench(device="cuda", world=8, m=16384, n=7168, k=2048, calls=20, quant="blockscale"):
    """Per-call time of guard_ranks (all W ranks' sums and the check, ranks as tensors on one device) for one row
    in 32 and for every row, on clean data of the op's shape; the median of `calls` calls after 3 warm-ups."""
    import time
    torch = _torch()
    g = torch.Generator(device="cpu").manual_seed(11)
    a = [(torch.randn(m, k, generator=g) / 2).to(torch.float8_e4m3fn).to(device) for _ in range(world)]
    sa = [_stored_scales(quant, "a", m, k, g).to(device) for _ in range(world)]
    br = (torch.randn(n, k, generator=g) / 2).to(torch.float8_e4m3fn).to(device)
    sb = _stored_scales(quant, "b", n, k, g).to(device)
    weights = [weights_checksum(br, sb, quant)] * world
    # The partials are the GEMM's (fp32, then the op's bf16): clean data, so the GEMM check must pass too.
    b_deq = br.float() * expand_scale(sb, n, k, quant, "b")
    prec = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    parts = [(a[r].float() * expand_scale(sa[r], m, k, quant, "a")) @ b_deq.t() for r in range(world)]
    torch.set_float32_matmul_precision(prec)
    del b_deq
    local, outs = _emulate(parts, False, "mori")
    del parts
    flagged_total = 0
    for sample in (32, 1):
        times, flagged = [], 0
        for call in range(calls + 3):
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            got = guard_ranks(local, outs, False, a, sa, weights, on_finding="return", quant=quant, sample=sample,
                              seed=5, call=call)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            if call >= 3:
                times.append(time.perf_counter() - t0)
            flagged += bool(got)
        times.sort()
        flagged_total += flagged
        print(f"bench world={world} m={m} n={n} k={k} quant={quant} sample={sample}: "
              f"{1e3 * times[len(times) // 2]:.3f} ms per call (median of {calls}, all ranks, host wall time); "
              f"{flagged} of {calls + 3} clean calls flagged")
    return flagged_total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--selftest", action="store_true", help="emulate the op with W ranks on one device and check")
    ap.add_argument("--bench", action="store_true",
                    help="time guard_ranks per call at M=16384, N=7168, K=2048 (one row in 32, and every row)")
    ap.add_argument("--device", default="cpu", help="torch device of the self-test (default: cpu)")
    ap.add_argument("--world", type=int, default=8, help="ranks of the self-test (default: 8)")
    ap.add_argument("--quant", default="all", choices=["all"] + list(QUANTS),
                    help="the self-test's quant (default: all three)")
    args = ap.parse_args()
    if not (args.selftest or args.bench):
        ap.print_help()
        return 2
    try:
        _torch()
    except ImportError:
        print("gemmar_guard: torch is not importable", file=sys.stderr)
        return 3
    if args.bench:
        return 1 if bench(args.device, args.world) else 0
    failures = sum(selftest(args.device, args.world, quant=q)
                   for q in (QUANTS if args.quant == "all" else [args.quant]))
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
