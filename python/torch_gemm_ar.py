"""A torch implementation of gemm_ar on one device: an independent op for the guard's device measurement
(scripts/device_guard_python.py) and, from the command line, dumped for `gemmar verify` (docs/verify.md).

W ranks live on one GPU as separate tensors. Each rank's partial is its GEMM, fp32 accumulated and rounded to bf16:
blockscale through torch._scaled_mm with blockwise scales (A: one fp32 scale per 1x128 block, B: one per 128x128
block); mxfp8 (e8m0 scales, exact powers of two) as a bf16 GEMM of the exactly dequantized operands with fp32
accumulation (torch._scaled_mm's MX path needs sm_100). The benchmark's operands (ROCm/mori bench_gemm_ar.py
@d5443336 make_operands): randn/8 cast to e4m3fn, seed 1234 + rank; blockscale scales rand*0.01+0.01, mxfp8 e8m0
bytes uniform in {120, 121, 122} (2^-7 .. 2^-5). The collective is docs/spec.md 1.1 in torch: every owner sums its
slice of the W partials in fp32 in peer order (owner+j)%W starting from its own, rounds to bf16, and gathers it
(bf16 wire: copies; fp8 wire: per-row amax, then --wire-recipe, peers write bf16(decode(q)*scale); the owner's rows
are never quantized). The fp8 scatter (mori's --scatter-dtype fp8, /work notes fp8-scatter: kernels_fused.py
@f3bff0ae) narrows every rank's bf16 partial per row per 256 columns (scale = amax/448, a true division;
inv = fl32(1/scale); codes = RNE(x*inv)), its own slice included, and the reduce widens fl32(decode(q)*scale).

    python3 torch_gemm_ar.py OUT_DIR [-m 16384] [--gather-dtype bf16|fp8] [--fault none|skip-gather|wire-bypassed]

Faults, to show `gemmar verify` finding them in a real implementation's tensors:
    skip-gather    rank 3 never receives slice 5 (keeps its own partial there): a silent put
    wire-bypassed  an fp8-wire config that gathers bf16 (the wire never engaged)
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

FP8_MAX = 448.0
SCATTER_COLS = 256  # the fp8 scatter's segment: mori's BLOCK_N (layout.py scatter_scale_n)


def _fp8(x):
    return x.clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)


def operands(rank, m, n, k, quant="blockscale", device="cuda", seed=1234, with_b=True):
    """One rank's operands as the benchmark draws them. Returns a dict: a [m, k] e4m3fn, a_scale as the op takes it
    (blockscale: fp32 [K/128, M] flat, mori's physical order; mxfp8: e8m0 bytes [M, K/32]), b [n, k] e4m3fn and
    b_scale (blockscale: fp32 [N/128, K/128]; mxfp8: e8m0 bytes [N/32, K/32])."""
    g = torch.Generator(device=device)
    g.manual_seed(seed + rank)
    o = {"a": _fp8(torch.randn(m, k, device=device, generator=g) / 8)}
    if with_b:
        o["b"] = _fp8(torch.randn(n, k, device=device, generator=g) / 8)
    if quant == "blockscale":
        sa = torch.rand(m, k // 128, device=device, generator=g) * 0.01 + 0.01  # logical [M, K/128]
        o["a_scale"] = sa.t().contiguous().reshape(-1)
        if with_b:
            o["b_scale"] = torch.rand(n // 128, k // 128, device=device, generator=g) * 0.01 + 0.01
    elif quant == "mxfp8":
        o["a_scale"] = torch.randint(120, 123, (m, k // 32), device=device, generator=g, dtype=torch.uint8)
        if with_b:
            o["b_scale"] = torch.randint(120, 123, (n // 32, k // 32), device=device, generator=g, dtype=torch.uint8)
    else:
        raise ValueError(f"torch_gemm_ar: quant {quant!r}")
    return o


def weights(rank, n, k, quant="blockscale", device="cuda", seed=1234):
    """One rank's weights alone (the benchmark's distributions, their own generator: fixed across calls):
    b [n, k] e4m3fn and b_scale as operands() gives them."""
    g = torch.Generator(device=device)
    g.manual_seed(seed + rank)
    b = _fp8(torch.randn(n, k, device=device, generator=g) / 8)
    if quant == "blockscale":
        return b, torch.rand(n // 128, k // 128, device=device, generator=g) * 0.01 + 0.01
    return b, torch.randint(120, 123, (n // 32, k // 32), device=device, generator=g, dtype=torch.uint8)


def activations(m, k, quant="blockscale", device="cuda", seed=1):
    """One rank's A of one call (the benchmark's distributions): a [m, k] e4m3fn and a_scale as operands()."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    a = _fp8(torch.randn(m, k, device=device, generator=g) / 8)
    if quant == "blockscale":
        return a, (torch.rand(m, k // 128, device=device, generator=g) * 0.01 + 0.01).t().contiguous().reshape(-1)
    return a, torch.randint(120, 123, (m, k // 32), device=device, generator=g, dtype=torch.uint8)


def mori_packed_a_scale(e):
    """e8m0 A scales [M, K/32] (bytes) in the order mori's mxfp8 kernel reads (ROCm/mori python/mori/ops/gemm_ar/
    _shuffle.py @bc802ffe preshuffle_a_scale): byte (row, kb) at kb * M + row / 64 * 64 + row % 16 * 4 + row % 64 / 16,
    as int32, flat (what GemmAllReduceOp takes for quant="mxfp8")."""
    m, kb = e.shape
    row = torch.arange(m, device=e.device)
    dst = (torch.arange(kb, device=e.device)[None, :] * m + (row // 64 * 64 + row % 16 * 4 + row % 64 // 16)[:, None])
    out = torch.empty(m * kb, dtype=torch.uint8, device=e.device)
    out[dst.reshape(-1)] = e.to(torch.uint8).reshape(-1)
    return out.view(torch.int32)


def _e8m0(e):
    return torch.exp2(e.float() - 127.0)


def partial(a, a_scale, b, b_scale, quant="blockscale"):
    """This rank's GEMM: fp32 accumulation, bf16 out."""
    m, k = a.shape
    if quant == "blockscale":
        sa = a_scale.reshape(k // 128, m).t()  # [M, K/128] column-major, as torch._scaled_mm takes it
        return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=b_scale.t(), out_dtype=torch.bfloat16)
    # mxfp8: e4m3 times a power of two is exact in bf16; the bf16 GEMM accumulates in fp32
    ad = (a.float() * _e8m0(a_scale).repeat_interleave(32, 1)).to(torch.bfloat16)
    bd = (b.float() * _e8m0(b_scale).repeat_interleave(32, 0).repeat_interleave(32, 1)).to(torch.bfloat16)
    return ad @ bd.t()


def scatter_widen(p, scale_factor=1.0):
    """mori's fp8 scatter of one bf16 partial as the reduce sees it: per row per 256 columns scale = fl32(amax /
    448), inv = fl32(1 / scale), q = RNE(fl32(x * inv)); widened fl32(decode(q) * scale). scale_factor (the
    wrong-scale fault) multiplies the scale the reduce widens with."""
    m, n = p.shape
    x = p.float().view(m, n // SCATTER_COLS, SCATTER_COLS)
    amax = x.abs().amax(dim=2, keepdim=True)
    zero = amax == 0
    one = torch.ones_like(amax)
    scale = torch.where(zero, one, amax / torch.full_like(amax, FP8_MAX))
    inv = torch.where(zero, one, one / scale)
    q = _fp8(x * inv)
    return (q.float() * (scale * scale_factor)).view(m, n)


def wire(red, recipe="mori", scale_factor=1.0):
    """The fp8 gather of a reduced bf16 slice: (view bf16, codes, row scales); scale_factor multiplies the scale
    the receivers widen with (the wrong-scale fault)."""
    x = red.float()
    amax = x.abs().amax(dim=1, keepdim=True)
    zero = amax == 0
    one = torch.ones_like(amax)
    fmax = torch.full_like(amax, FP8_MAX)
    inv = torch.where(zero, one, fmax / amax)  # tensor by tensor: `448.0 / amax` would be reciprocal(amax) * 448
    if recipe == "mori":
        scale = torch.where(zero, one, amax * torch.tensor(1.0 / FP8_MAX, device=red.device, dtype=torch.float32))
    else:
        scale = torch.where(zero, one, amax / fmax)
    q = _fp8(x / scale if recipe == "div-codes" else x * inv)
    return (q.float() * (scale * scale_factor)).to(torch.bfloat16), q, scale.reshape(-1)


def gemm_ar(parts, gather_dtype="bf16", scatter_dtype="bf16", recipe="mori", drop_peer=None, wrong_scale_slice=None):
    """The collective on the W bf16 partials -> every rank's bf16 output [M, N] (a list). drop_peer: that rank's
    puts never land (every owner reduces without it; its own slice keeps its own partial). wrong_scale_slice: on the
    fp8 gather every non-owner widens that slice with twice its scale; on the fp8 scatter (bf16 gather) the next
    rank's contribution to it is widened with twice its segments' scales."""
    W = len(parts)
    m, n = parts[0].shape
    S = m // W
    outs = [p.clone() for p in parts]  # in place: each output starts as its local partial
    for o in range(W):
        rows = slice(o * S, (o + 1) * S)
        acc = None
        for j in range(W):  # mori's sdma_reduce: acc starts at the owner's own value
            q = (o + j) % W
            if q == drop_peer and q != o:
                continue
            p = parts[q][rows]
            if scatter_dtype == "fp8":
                f = 2.0 if (wrong_scale_slice == o and gather_dtype == "bf16" and q == (o + 1) % W) else 1.0
                v = scatter_widen(p, f)
            else:
                v = p.float()
            acc = v if acc is None else acc + v
        red = acc.to(torch.bfloat16)
        outs[o][rows] = red
        if gather_dtype == "fp8":
            landed = wire(red, recipe, 2.0 if wrong_scale_slice == o else 1.0)[0]
        else:
            landed = red
        for r in range(W):
            if r != o:
                outs[r][rows] = landed
    return outs


def main():
    import gemmar_dump
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
    S = M // W
    fp8 = args.gather_dtype == "fp8"
    t0 = time.time()
    ops = [operands(r, M, N, K) for r in range(W)]
    parts = [partial(o["a"], o["a_scale"], o["b"], o["b_scale"]) for o in ops]
    torch.cuda.synchronize()
    t_gemm = time.time() - t0

    outs = gemm_ar(parts, "bf16")  # the bf16 wire; the fp8 wire's slices are replaced below, with their codes
    wire_q, wire_scale = [None] * W, [None] * W
    for o in range(W):
        rows = slice(o * S, (o + 1) * S)
        red = outs[o][rows]
        landed = red
        if fp8 and args.fault != "wire-bypassed":
            landed, wire_q[o], wire_scale[o] = wire(red, args.wire_recipe)
        for r in range(W):
            if r == o:
                continue
            if args.fault == "skip-gather" and r == 3 and o == 5:
                outs[r][rows] = parts[r][rows]  # the put never landed: the in-place buffer keeps the local partial
            else:
                outs[r][rows] = landed
    torch.cuda.synchronize()
    t_coll = time.time() - t0 - t_gemm

    dev_name = torch.cuda.get_device_name(0)
    for r in range(W):
        extra = {}
        if fp8 and wire_q[r] is not None and not args.no_wire:
            extra = dict(wire=wire_q[r], wire_scale=wire_scale[r])
        sa = ops[r]["a_scale"].reshape(K // 128, M)  # stored [K/128, M], the dump's blockscale layout
        gemmar_dump.dump(args.out + "/", r, W, ops[r]["a"], ops[r]["b"], sa, ops[r]["b_scale"], outs[r],
                         partial=parts[r], quant="blockscale", mode="split-sdma", gather_dtype=args.gather_dtype,
                         gather_transport=args.gather_transport,
                         device="%s (torch, %d ranks on 1 device)" % (dev_name, W), producer="python/torch_gemm_ar.py",
                         inject=args.fault, gemm_impl="torch._scaled_mm", profile="h200-1gpu", **extra)
    t_dump = time.time() - t0 - t_gemm - t_coll
    print("torch_gemm_ar: M=%d N=%d K=%d W=%d %s fault=%s: gemm %.2f s, collective %.2f s, dump %.2f s -> %s"
          % (M, N, K, W, args.gather_dtype, args.fault, t_gemm, t_coll, t_dump, args.out), flush=True)


if __name__ == "__main__":
    main()
