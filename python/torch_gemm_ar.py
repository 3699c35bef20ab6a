"""A torch implementation of gemm_ar on one device, dumped for `gemmar verify` (docs/verify.md).

W ranks live on one GPU as separate tensors. Each rank's partial is torch._scaled_mm with blockwise scales (A: one
fp32 scale per 1x128 block, B: one per 128x128 block; the benchmark's operands: randn/8 cast to e4m3fn, scales
rand*0.01+0.01, seed 1234+rank), bf16 out. The collective is docs/spec.md 1.1 in torch: every owner sums its slice of
the W bf16 partials in fp32 in peer order (owner+j)%W starting from 0, rounds to bf16, and gathers it (bf16 wire:
copies; fp8 wire: per-row amax, then --wire-recipe, peers write bf16(decode(q)*scale); the owner's rows are never
quantized). Every rank is dumped with gemmar_dump.dump.

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
import gemmar_dump  # noqa: E402


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
    S = M // W
    dev = "cuda"
    fp8 = args.gather_dtype == "fp8"
    t0 = time.time()

    a, b, sa, sb, parts = [], [], [], [], []
    g = torch.Generator(device=dev)
    for r in range(W):
        g.manual_seed(1234 + r)
        A = (torch.randn(M, K, device=dev, generator=g) / 8).to(torch.float8_e4m3fn)
        B = (torch.randn(N, K, device=dev, generator=g) / 8).to(torch.float8_e4m3fn)
        SA = torch.rand(M, K // 128, device=dev, generator=g) * 0.01 + 0.01  # logical [M, K/128]
        SB = torch.rand(N // 128, K // 128, device=dev, generator=g) * 0.01 + 0.01
        C = torch._scaled_mm(A, B.t(), scale_a=SA.t().contiguous().t(), scale_b=SB.t(), out_dtype=torch.bfloat16)
        a.append(A), b.append(B), sa.append(SA), sb.append(SB), parts.append(C)
    torch.cuda.synchronize()
    t_gemm = time.time() - t0

    outs = [torch.empty(M, N, device=dev, dtype=torch.bfloat16) for _ in range(W)]
    wire = [None] * W
    wire_scale = [None] * W
    for o in range(W):
        rows = slice(o * S, (o + 1) * S)
        acc = parts[o][rows].float()  # mori's sdma_reduce: acc starts at the owner's own value
        for j in range(1, W):
            acc = acc + parts[(o + j) % W][rows].float()
        red = acc.to(torch.bfloat16)
        outs[o][rows] = red
        if fp8 and args.fault != "wire-bypassed":
            x = red.float()
            amax = x.abs().amax(dim=1, keepdim=True)
            fmax = torch.full_like(amax, 448.0)
            zero = amax == 0
            one = torch.ones_like(amax)
            # Tensor by tensor: `448.0 / amax` with a Python scalar numerator is reciprocal(amax) * 448 in torch.
            inv = torch.where(zero, one, fmax / amax)
            if args.wire_recipe == "mori":
                scale = torch.where(zero, one, amax * torch.tensor(1.0 / 448.0, device=dev, dtype=torch.float32))
            else:
                scale = torch.where(zero, one, amax / fmax)
            scaled = x / scale if args.wire_recipe == "div-codes" else x * inv
            q = scaled.clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
            wire[o], wire_scale[o] = q, scale.reshape(-1)
            landed = (q.float() * scale).to(torch.bfloat16)
        else:
            landed = red
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
        if fp8 and wire[r] is not None and not args.no_wire:
            extra = dict(wire=wire[r], wire_scale=wire_scale[r])
        gemmar_dump.dump(args.out + "/", r, W, a[r], b[r], sa[r], sb[r], outs[r], partial=parts[r],
                         quant="blockscale", mode="split-sdma", gather_dtype=args.gather_dtype,
                         gather_transport=args.gather_transport, device="%s (torch, %d ranks on 1 device)" % (dev_name, W),
                         producer="python/torch_gemm_ar.py", inject=args.fault, gemm_impl="torch._scaled_mm",
                         profile="h200-1gpu", **extra)
    t_dump = time.time() - t0 - t_gemm - t_coll
    print("torch_gemm_ar: M=%d N=%d K=%d W=%d %s fault=%s: gemm %.2f s, collective %.2f s, dump %.2f s -> %s"
          % (M, N, K, W, args.gather_dtype, args.fault, t_gemm, t_coll, t_dump, args.out), flush=True)


if __name__ == "__main__":
    main()
