"""A torch implementation of gemm_ar on one device: W ranks as separate tensors (docs/python.md, docs/verify.md).

Each rank's partial is torch._scaled_mm, bf16 out: blockscale scales (A one fp32 scale per 1x128 block, B one per
128x128 block) or ptpc (per row of A, per column of B). The collective is docs/spec.md 1.1 in torch: every owner sums
its slice of the W bf16 partials in fp32 in peer order (owner + j) % W starting from its own, rounds to bf16, and
gathers it (bf16 wire: copies; fp8 wire: per-row amax, the recipe below, peers write bf16(decode(q) * scale); the
owner's rows are never quantized). fused-sdma computes the same values (what differs is when the legs run, which
one device does not show); with mori's fp8 scatter (scatter_dtype "fp8", fused-sdma only) every rank narrows its
whole bf16 partial per row and 256 columns (kernels_fused.py @f3bff0ae, the `if const_expr(fp8_scatter)` epilogue:
scale = fl32(amax / 448), 1 for an all-zero segment, codes = RNE(x * fl32(1 / scale))) and each owner sums
decode(code) * scale in fp32 in the same peer order (kernels_sdma.py sdma_reduce).

As an implementation for `gemmar validate|run --backend python --impl python/gemmar_torch_impl.py:NAME` (the protocol
of python/gemmar_runner.py; every rank in one process, so W is --world, not the device count):

    TorchGemmAr     the op, clean (gemm-only, split-sdma and fused-sdma on every wire, split-lsa; fused-sdma
                    also with the fp8 scatter; blockscale and ptpc)
    skip_gather     rank min(3, W-1) never receives slice (that rank + 2) % W: a silent put (it keeps its partial)
    wire_bypassed   an fp8-wire config that gathers bf16 (the wire never engaged)
    scatter_not_narrowed  fused-sdma asked for the fp8 scatter reduces the bf16 partials (the scatter never engaged)

As a script, the operands of mori's benchmark (python/gemmar_runner.py torch_operands), dumped with gemmar_dump:

    python3 gemmar_torch_impl.py OUT_DIR [-m 16384] [--gather-dtype bf16|fp8] [--fault none|skip-gather|wire-bypassed]

--wire-recipe names how a row is narrowed (reference/quant.hpp WireRecipe; `gemmar verify` names the one it finds):
    mori           (default) mori's kernels (ROCm/mori python/mori/ops/gemm_ar/kernels_sdma.py quantize_gather):
                   scale = amax * fl32(1/448), inv = fl32(448 / amax), codes = RNE(x * inv) saturated
    true-division  scale = fl32(amax / 448) (a true division), the same inv and codes
    div-codes      scale = fl32(amax / 448), codes = RNE(x / scale): torch's usual quantize, and mori's own test
                   reference (tests/python/cco/gemm_ar_wire_reference.py)
An all-zero row has scale 1. (The first version of this script wrote `amax / 448.0` with a Python scalar, which
torch computes as a multiply by fl32(1/448): that "slip" is mori's scale.)
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemmar_dump  # noqa: E402
import gemmar_runner  # noqa: E402

BLOCK_M = {"blockscale": 128, "ptpc": 256}
FP8_MAX = 448.0


def rows_per_owner(m, world, quant):
    """M padded to W x BLOCK_M (docs/spec.md 1.1), divided by W."""
    granule = world * BLOCK_M[quant]
    return (m + granule - 1) // granule * granule // world


def mm_scales(quant, a_scale, b_scale):
    """The scales as torch._scaled_mm takes them: blockscale A [M, K/128] column-major and B [K/128, N/128];
    ptpc A [M, 1] and B [1, N]."""
    if quant == "ptpc":
        return a_scale.reshape(-1, 1), b_scale.reshape(1, -1)
    return a_scale.t().contiguous().t(), b_scale.t()


def gemm(a, a_scale_mm, b, b_scale_mm):
    return torch._scaled_mm(a, b.t(), scale_a=a_scale_mm, scale_b=b_scale_mm, out_dtype=torch.bfloat16)


class WireConstants:
    """The fp8 wire's constants as device tensors, made once (a CUDA graph cannot copy a host scalar in): 448 and
    fl32(1/448), so that every division is tensor by tensor (a Python scalar numerator is a reciprocal multiply)."""

    def __init__(self, device):
        self.fmax = torch.tensor(FP8_MAX, device=device, dtype=torch.float32)
        self.inv_fmax = torch.tensor(1.0 / FP8_MAX, device=device, dtype=torch.float32)
        self.one = torch.tensor(1.0, device=device, dtype=torch.float32)


def quantize_rows(red, recipe, c):
    """One owner's reduced bf16 rows on the fp8 wire: (codes, row scales [rows], what every peer lands in bf16)."""
    x = red.float()
    amax = x.abs().amax(dim=1, keepdim=True)
    zero = amax == 0
    inv = torch.where(zero, c.one, c.fmax / amax)
    scale = torch.where(zero, c.one, amax * c.inv_fmax if recipe == "mori" else amax / c.fmax)
    scaled = x / scale if recipe == "div-codes" else x * inv
    q = scaled.clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q, scale.reshape(-1), (q.float() * scale).to(torch.bfloat16)


def scatter_fp8_values(part, c):
    """What mori's fp8 scatter delivers of bf16 rows `part` [rows, N]: decode(code) * scale in fp32, one scale per
    row and 256 columns (amax NaN-propagating as the kernel's maximumf; every division tensor by tensor)."""
    x = part.float().reshape(part.shape[0], -1, 256)
    amax = x.abs().amax(dim=2, keepdim=True)
    scale = torch.where(amax == 0, c.one, amax / c.fmax)
    q = (x * (c.one / scale)).to(torch.float8_e4m3fn)
    return (q.float() * scale).reshape(part.shape)


def scatter_leg(rows_bf16, scatter_fp8, c):
    """What the reduce adds of one rank's rows, fp32: the bf16 partial widened, or the fp8 scatter's values."""
    return scatter_fp8_values(rows_bf16, c) if scatter_fp8 else rows_bf16.float()


def skipped_put(world, fault):
    """(receiver, owner) of the put skip-gather drops, or None."""
    if fault != "skip-gather":
        return None
    receiver = min(3, world - 1)
    return receiver, (receiver + 2) % world


def collective(parts, mode, fp8, rows, fault="none", recipe="mori", consts=None, scatter_fp8=False):
    """Every rank's output from every rank's bf16 partial; with the fp8 wire also each owner's (codes, scales).
    scatter_fp8: the partials travel the scatter leg as mori's fp8 scatter (each row slice narrowed once, where it
    is reduced: the per-row scales make that the same as narrowing the whole partial first)."""
    world, m = len(parts), parts[0].shape[0]
    outs = [p.clone() for p in parts]  # in place: a view keeps its partial where nothing lands
    wire = [None] * world
    if mode == "gemm-only":
        return outs, wire
    skip = skipped_put(world, fault)
    for o in range(world):
        sl = slice(o * rows, min(m, (o + 1) * rows))
        acc = scatter_leg(parts[o][sl], scatter_fp8, consts)  # mori's sdma_reduce: acc starts at the owner's own
        for j in range(1, world):
            acc = acc + scatter_leg(parts[(o + j) % world][sl], scatter_fp8, consts)
        red = acc.to(torch.bfloat16)
        outs[o][sl] = red
        landed = red
        if fp8 and fault != "wire-bypassed":
            q, scale, landed = quantize_rows(red, recipe, consts)
            wire[o] = (q, scale)
        for r in range(world):
            if r != o and skip != (r, o):
                outs[r][sl] = landed
    return outs, wire


class Handle:
    def __init__(self, config, shape, device):
        self.config, self.shape, self.device = config, shape, device
        self.fp8 = config["gather_dtype"] == "fp8" and config["mode"] != "split-lsa"
        self.scatter_fp8 = config.get("scatter_dtype", "bf16") == "fp8"
        self.rows = rows_per_owner(shape["m"], shape["world"], config["quant"])
        self.consts = WireConstants(device)


class TorchGemmAr:
    """The implementation protocol of python/gemmar_runner.py (docs/python.md), every rank on one device."""
    name = "torch"
    array = "torch"
    ranks_per_process = "all"
    fault = "none"

    def supports(self, config, shape):
        if config["quant"] not in BLOCK_M or config.get("fuse_quantize") or config.get("fuse_reduce_push"):
            return False
        if config["mode"] not in ("gemm-only", "split-sdma", "split-lsa", "fused-sdma"):
            return False
        if config.get("scatter_dtype", "bf16") == "fp8" and (config["mode"] != "fused-sdma" or shape["n"] % 256):
            return False
        # The op's knobs that change no value on one device, but which this implementation does not model.
        if any(config.get(k) for k in ("chunk_bands", "relaxed_rows", "logical_m")) or \
                config.get("schedule", "none") != "none":
            return False
        return shape["k"] % 128 == 0 and shape["n"] % 128 == 0

    def setup(self, config, shape, rank, device):
        return Handle(config, shape, device)

    def prepare(self, h, a, a_scale, b, b_scale):
        scales = [mm_scales(h.config["quant"], sa, sb) for sa, sb in zip(a_scale, b_scale)]
        return a, [s[0] for s in scales], b, [s[1] for s in scales]

    def call_with_partials(self, h, a, a_scale_mm, b, b_scale_mm):
        parts = [gemm(a[r], a_scale_mm[r], b[r], b_scale_mm[r]) for r in range(len(a))]
        outs, _ = collective(parts, h.config["mode"], h.fp8, h.rows, self.fault, "mori", h.consts,
                             h.scatter_fp8 and self.fault != "scatter-not-narrowed")
        return outs, parts

    def call(self, h, *args):
        return self.call_with_partials(h, *args)[0]

    def self_test(self, h):
        """gemmar's transport self-test in torch: every rank's partial rank + 1, every element of every view must be
        W(W+1)/2 (exactly on the bf16 wires, within 1% on an fp8 wire or the fp8 scatter, as mori's op.py
        self_test)."""
        world, m, n = h.shape["world"], h.shape["m"], h.shape["n"]
        parts = [torch.full((m, n), float(r + 1), device=h.device, dtype=torch.bfloat16) for r in range(world)]
        outs, _ = collective(parts, h.config["mode"], h.fp8, h.rows, self.fault, "mori", h.consts,
                             h.scatter_fp8 and self.fault != "scatter-not-narrowed")
        if h.config["mode"] == "gemm-only":
            return
        want = world * (world + 1) / 2
        for r, out in enumerate(outs):
            err = (out.float() - want).abs() / want
            bad = torch.nonzero(~(err <= (1e-2 if h.fp8 or h.scatter_fp8 else 0.0)))
            if bad.numel():
                row, col = int(bad[0][0]), int(bad[0][1])
                raise RuntimeError("self-test: rank %d's view of slice %d (row %d) holds %g where %g was expected "
                                   "(%d wrong elements on that rank)"
                                   % (r, row // h.rows, row, float(out[row, col]), want, bad.shape[0]))

    def record_fields(self, h):
        return {"gemm_impl": "torch._scaled_mm", "block_m": BLOCK_M[h.config["quant"]]}


def skip_gather():
    impl = TorchGemmAr()
    impl.fault, impl.name = "skip-gather", "torch-skip-gather"
    return impl


def wire_bypassed():
    impl = TorchGemmAr()
    impl.fault, impl.name = "wire-bypassed", "torch-wire-bypassed"
    return impl


def scatter_not_narrowed():
    impl = TorchGemmAr()
    impl.fault, impl.name = "scatter-not-narrowed", "torch-scatter-not-narrowed"
    return impl


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("-m", type=int, default=16384)
    p.add_argument("-n", type=int, default=7168)
    p.add_argument("-k", type=int, default=2048)
    p.add_argument("--world", type=int, default=8)
    p.add_argument("--gather-dtype", default="bf16")
    p.add_argument("--gather-transport", default="sdma")
    p.add_argument("--fault", default="none")
    p.add_argument("--no-wire", action="store_true", help="do not dump the fp8 wire tensors")
    p.add_argument("--wire-recipe", default="mori", choices=["mori", "true-division", "div-codes"],
                   help="how the fp8 wire narrows a row (default mori: scale = amax * fl32(1/448), "
                        "codes = RNE(x * fl32(448/amax)))")
    args = p.parse_args()
    M, N, K, W = args.m, args.n, args.k, args.world
    dev = torch.device("cuda")
    fp8 = args.gather_dtype == "fp8"
    t0 = time.time()

    ops = [gemmar_runner.torch_operands(torch, "blockscale", M, N, K, 1234, r, dev) for r in range(W)]
    parts = []
    for a, sa, b, sb in ops:
        sa_mm, sb_mm = mm_scales("blockscale", sa, sb)
        parts.append(gemm(a, sa_mm, b, sb_mm))
    torch.cuda.synchronize()
    t_gemm = time.time() - t0

    outs, wire = collective(parts, "split-sdma", fp8, rows_per_owner(M, W, "blockscale"), args.fault,
                            args.wire_recipe, WireConstants(dev))
    torch.cuda.synchronize()
    t_coll = time.time() - t0 - t_gemm

    dev_name = torch.cuda.get_device_name(0)
    for r, (a, sa, b, sb) in enumerate(ops):
        extra = {}
        if wire[r] is not None and not args.no_wire:
            extra = dict(wire=wire[r][0], wire_scale=wire[r][1])
        gemmar_dump.dump(args.out + "/", r, W, a, b, sa, sb, outs[r], partial=parts[r],
                         quant="blockscale", mode="split-sdma", gather_dtype=args.gather_dtype,
                         gather_transport=args.gather_transport, device="%s (torch, %d ranks on 1 device)" % (dev_name, W),
                         producer="python/gemmar_torch_impl.py", inject=args.fault, gemm_impl="torch._scaled_mm",
                         profile="h200-1gpu", **extra)
    t_dump = time.time() - t0 - t_gemm - t_coll
    print("gemmar_torch_impl: M=%d N=%d K=%d W=%d %s fault=%s: gemm %.2f s, collective %.2f s, dump %.2f s -> %s"
          % (M, N, K, W, args.gather_dtype, args.fault, t_gemm, t_coll, t_dump, args.out), flush=True)


if __name__ == "__main__":
    main()
