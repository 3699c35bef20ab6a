// The caller guard's kernels (docs/guard.md "The guard from what the caller holds"): included by the product library
// (kernels/check/caller_guard.cu, the C ABI of gemmar_guard.h) and by the lab's guard testbed (lab/testbed_guard.cu),
// which checks and times them beside its variants. One source for HIP and CUDA (kernels/gpu_compat.hpp); the
// judge's math is reference/guard_caller_inline.hpp's, the CPU reference's own (reference/guard_caller.cpp).
//
// Per rank and call, two launches on the caller's stream, with the exchange of the records between them:
//  caller_sums_kernel  one grid of three kinds of blocks, each deriving the call's listed rows itself
//                      (reference/guard_sample.hpp, from the seed and the device call counter):
//                        prediction blocks: one listed row per warp, A_row . w_b and |A_row| . |w_b| over 8 column
//                          blocks, and ||A_row||^2 (lane l: 8 consecutive k per step, one 8-byte load of codes)
//                        view blocks: per (chunk of listed rows, column block): each thread 8 columns (one 16-byte
//                          load per row, 4 rows in flight), the block's sums of O, O^2 and |O|
//                        wire blocks (fp8 gather, recipe known): one per owned listed row: its amax, then the row as
//                          the wire carries it, summed in the view blocks' order (so equal data gives equal bits)
//                      No block waits for another: every record value is finished by the block that computes it.
//  caller_judge_kernel one block per (view, slice) cell: every check of the cell (check_one), merged in a fixed
//                      tree; then the call counter advances (the next call lists other rows).
// Every sum a view is compared on bitwise runs in a fixed order, so equal data gives equal bits on every rank.
#pragma once
#include <cstdint>

#include "kernels/check/gemmar_guard.h"
#include "kernels/gpu_compat.hpp"
#include "reference/guard_caller_inline.hpp"
#include "reference/guard_sample.hpp"
#include "reference/numerics_inline.hpp"

namespace {

namespace cg = gemmar::caller_guard;
namespace nm = gemmar::numerics;

constexpr int kThreads = 128;                    // 128 x 8 columns = one 1024-column block
constexpr int kVec = cg::kBlockCols / kThreads;  // columns per thread
constexpr int kWarps = kThreads / GEMMAR_WARP_SIZE;
constexpr int kRowChunk = 32;  // listed rows per view block (a chunk never crosses a slice: Ls is a multiple of 32
                               // or the chunk is gcd(Ls, 32))
constexpr int kRowBatch = 4;   // rows of 16-byte loads in flight per thread
constexpr int kPredRows = kWarps, kPredBlocks = 8, kPredKVec = 8;
constexpr int kJudgeThreads = 256;

struct SumsParams {
  cg::Layout l;
  int rank, stride, a_scale_kind, a_scale_k, a_fnuz, wire_recipe, wire_fnuz;
  int64_t m, n, k, out_ld;
  uint64_t seed;
  const uint8_t* a;
  const void* a_scale;
  const uint16_t* out;
  const float* w;
  float* rec;
  const unsigned long long* call;
  int len, pred_row_groups, pred_blocks, view_blocks, wire_blocks;
};

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = GEMMAR_WARP_SIZE / 2; o > 0; o >>= 1) v = nm::add_rn(v, gemmar::gpu::shfl_xor(v, o));
  return v;
}

__device__ __forceinline__ float e8m0_to_f32(uint8_t e) {
  if (e == 0xff) return nm::bits_f32(0x7fc00000u);
  return e == 0 ? nm::bits_f32(0x00400000u) : nm::bits_f32(uint32_t(e) << 23);  // 2^(e - 127)
}

// A's scale of (row, k block kb), in the layout the caller holds.
__device__ __forceinline__ float a_scale_of(const SumsParams& p, int64_t row, int64_t kb) {
  const int64_t kbs = p.k / p.a_scale_k;
  switch (p.a_scale_kind) {
    case GG_A_SCALE_F32_K_MAJOR:
      return static_cast<const float*>(p.a_scale)[kb * p.m + row];
    case GG_A_SCALE_F32_ROW_MAJOR:
      return static_cast<const float*>(p.a_scale)[row * kbs + kb];
    case GG_A_SCALE_E8M0_ROW_MAJOR:
      return e8m0_to_f32(static_cast<const uint8_t*>(p.a_scale)[row * kbs + kb]);
    default:  // mori's preshuffle_a_scale: [K/32][M], each 64-row group's (4, 16) tiles transposed to (16, 4)
      // (ROCm/mori python/mori/ops/gemm_ar/_shuffle.py @bc802ffe preshuffle_a_scale)
      return e8m0_to_f32(
          static_cast<const uint8_t*>(p.a_scale)[kb * p.m + row / 64 * 64 + row % 16 * 4 + row % 64 / 16]);
  }
}

__device__ __forceinline__ int64_t listed_row(const SumsParams& p, uint64_t call, int64_t pos) {
  return p.stride == 1 ? pos : gemmar::guard_sample::row(p.seed, call, pos, p.stride);
}

// One K step's 8 codes of a row (one 8-byte load) dequantized with their scale, and their squares added to sq.
__device__ __forceinline__ void dequantize8(const SumsParams& p, uint2 raw, float sc, float (&av)[kPredKVec],
                                            float& sq) {
#pragma unroll
  for (int e = 0; e < kPredKVec; ++e) {
    av[e] = nm::dequantize_operand(uint8_t((e < 4 ? raw.x : raw.y) >> (8 * (e % 4))), sc, p.a_fnuz != 0);
    sq = fmaf(av[e], av[e], sq);
  }
}

// A warp's sums of listed row i over column blocks b0 .. b0 + live - 1, reduced over its lanes; lane 0 writes them.
__device__ __forceinline__ void write_prediction(const SumsParams& p, int lane, int64_t i, int b0, int live,
                                                 const float (&s)[kPredBlocks], const float (&sa)[kPredBlocks],
                                                 float sq) {
#pragma unroll
  for (int bl = 0; bl < kPredBlocks; ++bl) {
    const float v = warp_sum(s[bl]), va = warp_sum(sa[bl]);
    if (lane == 0 && bl < live) {
      p.rec[p.l.pred + i * p.l.nb + b0 + bl] = v;
      p.rec[p.l.pabs + i * p.l.nb + b0 + bl] = va;
    }
  }
  sq = warp_sum(sq);
  if (lane == 0 && b0 == 0) p.rec[p.l.asq + i] = sq;
}

// The prediction of listed rows i0 .. i0 + kPredRows - 1 (one per warp) for column blocks b0 .. b0 + 7.
__device__ void predict(const SumsParams& p, uint64_t call, int64_t i0, int b0) {
  const int warp = int(threadIdx.x) / GEMMAR_WARP_SIZE, lane = int(threadIdx.x) % GEMMAR_WARP_SIZE;
  const int64_t i = i0 + warp;
  if (i >= p.l.L) return;
  const int64_t row = listed_row(p, call, i);
  const int live = p.l.nb - b0 < kPredBlocks ? p.l.nb - b0 : kPredBlocks;
  float s[kPredBlocks] = {}, sa[kPredBlocks] = {}, sq = 0;
  for (int64_t kc = int64_t(lane) * kPredKVec; kc < p.k; kc += int64_t(GEMMAR_WARP_SIZE) * kPredKVec) {
    const uint2 raw = *reinterpret_cast<const uint2*>(p.a + row * p.k + kc);
    const float sc = a_scale_of(p, row, kc / p.a_scale_k);
    float av[kPredKVec];
    dequantize8(p, raw, sc, av, sq);
#pragma unroll
    for (int bl = 0; bl < kPredBlocks; ++bl) {
      if (bl >= live) break;
      const float4* wp = reinterpret_cast<const float4*>(p.w + int64_t(b0 + bl) * p.k + kc);
      const float4 lo = wp[0], hi = wp[1];
      const float wv[kPredKVec] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
      for (int e = 0; e < kPredKVec; ++e) {
        s[bl] = fmaf(av[e], wv[e], s[bl]);
        sa[bl] = fmaf(nm::abs_f32(av[e]), nm::abs_f32(wv[e]), sa[bl]);
      }
    }
  }
  write_prediction(p, lane, i, b0, live, s, sa, sq);
}

// One thread's 8 values of one row: its sums of x, x^2 and |x| in column order.
struct Sums3 {
  float s, sq, ab;
};
__device__ __forceinline__ Sums3 sum8(const float (&x)[kVec]) {
  Sums3 r{0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    r.s = nm::add_rn(r.s, x[e]);
    r.sq = nm::fma_rn(x[e], x[e], r.sq);
    r.ab = nm::add_rn(r.ab, nm::abs_f32(x[e]));
  }
  return r;
}

__device__ __forceinline__ void widen8(const uint4& v, float (&x)[kVec]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    x[2 * i] = nm::bf16_to_f32(uint16_t(w[i] & 0xffffu));
    x[2 * i + 1] = nm::bf16_to_f32(uint16_t(w[i] >> 16));
  }
}

// The warps' shares of one row's block sums, added in warp order from zero: the one order every view and the wire
// use, so equal data gives equal bits.
__device__ __forceinline__ float add_warps(const float (*part)[kRowChunk], int i) {
  float v = 0.0f;
  for (int w = 0; w < kWarps; ++w) v = nm::add_rn(v, part[w][i]);
  return v;
}

// Column block b of listed rows first .. first + len - 1 of this rank's view.
__device__ void view_sums(const SumsParams& p, uint64_t call, int64_t first, int b) {
  __shared__ int64_t rows[kRowChunk];
  __shared__ float ps[kWarps][kRowChunk], pq[kWarps][kRowChunk], pa[kWarps][kRowChunk];
  const int t = int(threadIdx.x);
  for (int i = t; i < p.len; i += kThreads) rows[i] = listed_row(p, call, first + i);
  __syncthreads();
  const int64_t col = int64_t(b) * cg::kBlockCols + kVec * t;
  const bool live = col < p.n;  // n is a multiple of 8: a thread's columns are all live or none
  for (int i0 = 0; i0 < p.len; i0 += kRowBatch) {
    uint4 raw[kRowBatch] = {};
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j)
      if (live && i0 + j < p.len) raw[j] = *reinterpret_cast<const uint4*>(p.out + rows[i0 + j] * p.out_ld + col);
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j) {
      if (i0 + j >= p.len) break;
      float x[kVec] = {};
      if (live) widen8(raw[j], x);
      Sums3 r = sum8(x);
      r.s = warp_sum(r.s);
      r.sq = warp_sum(r.sq);
      r.ab = warp_sum(r.ab);
      if (t % GEMMAR_WARP_SIZE == 0) {
        ps[t / GEMMAR_WARP_SIZE][i0 + j] = r.s;
        pq[t / GEMMAR_WARP_SIZE][i0 + j] = r.sq;
        pa[t / GEMMAR_WARP_SIZE][i0 + j] = r.ab;
      }
    }
  }
  __syncthreads();
  for (int i = t; i < p.len; i += kThreads) {
    const int64_t at = (first + i) * p.l.nb + b;
    p.rec[p.l.osum + at] = add_warps(ps, i);
    p.rec[p.l.osq + at] = add_warps(pq, i);
    p.rec[p.l.oabs + at] = add_warps(pa, i);
  }
}

// The owner's listed row i (of its slice) as the fp8 gather carries it: amax over the whole row, the row narrowed
// and widened by the wire's recipe, then summed per block exactly as view_sums sums a view.
__device__ void wire_sums(const SumsParams& p, uint64_t call, int64_t i) {
  __shared__ float red[kWarps];
  __shared__ float part[kWarps][kRowChunk];
  const int t = int(threadIdx.x);
  const bool fnuz = p.wire_fnuz != 0;
  const int64_t pos = int64_t(p.rank) * p.l.Ls + i;
  const uint16_t* row = p.out + listed_row(p, call, pos) * p.out_ld;
  float amax = 0.0f;
  for (int b = 0; b < p.l.nb; ++b) {
    const int64_t col = int64_t(b) * cg::kBlockCols + kVec * t;
    if (col >= p.n) continue;
    float x[kVec];
    widen8(*reinterpret_cast<const uint4*>(row + col), x);
    for (int e = 0; e < kVec; ++e) amax = nm::amax_step(amax, x[e]);
  }
  for (int o = GEMMAR_WARP_SIZE / 2; o > 0; o >>= 1) amax = nm::amax_step(amax, gemmar::gpu::shfl_xor(amax, o));
  if (t % GEMMAR_WARP_SIZE == 0) red[t / GEMMAR_WARP_SIZE] = amax;
  __syncthreads();
  amax = 0.0f;
  for (int w = 0; w < kWarps; ++w) amax = nm::amax_step(amax, red[w]);
  // reference/quant.cpp wire_quantize_row's recipes: mori (scale = amax * fl32(1/max), codes = RNE(x * fl32(max /
  // amax))), true-division (scale = fl32(amax / max), the same codes), div-codes (codes = RNE(x / scale)).
  const float scale =
      p.wire_recipe == 0 ? nm::wire_scale(amax, fnuz) : (amax == 0.0f ? 1.0f : nm::div_rn(amax, nm::fp8_max(fnuz)));
  const float inv = nm::wire_inv_scale(amax, fnuz);
  for (int b = 0; b < p.l.nb; ++b) {
    const int64_t col = int64_t(b) * cg::kBlockCols + kVec * t;
    float x[kVec] = {};
    if (col < p.n) {
      widen8(*reinterpret_cast<const uint4*>(row + col), x);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const uint8_t q =
            p.wire_recipe == 2 ? nm::f32_to_e4m3(nm::div_rn(x[e], scale), fnuz) : nm::quantize_scaled(x[e], inv, fnuz);
        x[e] = nm::bf16_to_f32(nm::wire_dequantize(q, scale, fnuz));
      }
    }
    const float s = warp_sum(sum8(x).s);
    if (t % GEMMAR_WARP_SIZE == 0) part[t / GEMMAR_WARP_SIZE][0] = s;
    __syncthreads();
    if (t == 0) p.rec[p.l.wsum + i * p.l.nb + b] = add_warps(part, 0);
    __syncthreads();
  }
  if (t == 0) p.rec[p.l.wscale + i] = scale;
}

// The prediction blocks' code as a type: the lab's variants of it (lab/guard/) plug into the same kernel.
struct ProductPredict {
  __device__ void operator()(const SumsParams& p, uint64_t call, int64_t i0, int b0) const { predict(p, call, i0, b0); }
};

template <typename Predict = ProductPredict>
__global__ void __launch_bounds__(kThreads) caller_sums_kernel(SumsParams p) {
  const uint64_t call = *reinterpret_cast<const volatile unsigned long long*>(p.call);
  int blk = int(blockIdx.x);
  if (blk == 0 && threadIdx.x == 0) {
    p.rec[0] = nm::bits_f32(uint32_t(call));
    p.rec[1] = nm::bits_f32(1u);  // the implementation: this library (the torch fallback writes 2)
  }
  if (blk < p.pred_blocks) {
    Predict{}(p, call, int64_t(blk % p.pred_row_groups) * kPredRows, (blk / p.pred_row_groups) * kPredBlocks);
    return;
  }
  blk -= p.pred_blocks;
  if (blk < p.view_blocks) {
    view_sums(p, call, int64_t(blk / p.l.nb) * p.len, blk % p.l.nb);
    return;
  }
  wire_sums(p, call, blk - p.view_blocks);
}

// kWorld: guard_caller_inline.hpp check_terms' (0: the world read from the layout).
template <int kWorld = 0>
__global__ void __launch_bounds__(kJudgeThreads)
    caller_judge_kernel(cg::Layout l, cg::Consts c, const float* base, cg::Cell* cells, unsigned long long* call) {
  __shared__ uint4 storage[(kJudgeThreads * sizeof(cg::Cell) + 15) / 16];  // raw: Cell has initializers
  cg::Cell* part = reinterpret_cast<cg::Cell*>(storage);
  const int v = int(blockIdx.x) / l.world, s = int(blockIdx.x) % l.world, t = int(threadIdx.x);
  cg::Cell mine;
  const int64_t checks = l.Ls * l.nb;
  for (int64_t idx = t; idx < checks; idx += kJudgeThreads) {
    const int64_t i = idx / l.nb;
    const int b = int(idx % l.nb);
    cg::cell_add(mine, cg::check_one<kWorld>(l, c, base, v, s, int64_t(s) * l.Ls + i, b), uint32_t(idx));
  }
  part[t] = mine;
  __syncthreads();
  for (int half = kJudgeThreads / 2; half > 0; half >>= 1) {
    if (t < half) cg::cell_merge(part[t], part[t + half]);
    __syncthreads();
  }
  if (t == 0) {
    cg::Cell out = part[0];
    out.other = uint32_t(cg::other_non_owner(l.world, v, s));
    cells[blockIdx.x] = out;
  }
  // The call number the sums drew their rows for, for the host's messages; then the next call's.
  if (blockIdx.x == 0 && t == 0) {
    cg::Cell tail;
    const uint32_t bits = gemmar::numerics::f32_bits(base[0]);
    tail.checks = bits;
    cells[l.world * l.world] = tail;
    if (call) *call = *call + 1;
  }
}

// ---- the host's side of the launches (the library's ABI and the lab's testbed) ----------------------------------

// The sums kernel's parameters of one gg_sums call (validated by the caller).
inline SumsParams sums_params(const gg_sums_args& a) {
  SumsParams p{};
  p.l = cg::make_layout(a.world, a.m, a.n, a.stride);
  p.rank = a.rank;
  p.stride = a.stride;
  p.a_scale_kind = a.a_scale_kind;
  p.a_scale_k = a.a_scale_k;
  p.a_fnuz = a.a_fnuz;
  p.wire_recipe = a.wire_recipe;
  p.wire_fnuz = a.wire_fnuz;
  p.m = a.m;
  p.n = a.n;
  p.k = a.k;
  p.out_ld = a.out_ld;
  p.seed = a.seed;
  p.a = static_cast<const uint8_t*>(a.a);
  p.a_scale = a.a_scale;
  p.out = static_cast<const uint16_t*>(a.out);
  p.w = static_cast<const float*>(a.w);
  p.rec = static_cast<float*>(a.record);
  p.call = static_cast<const unsigned long long*>(a.call);
  // A chunk of listed rows never crosses a slice: its length divides Ls.
  int len = kRowChunk;
  while (p.l.Ls % len) len /= 2;
  p.len = len;
  p.pred_row_groups = int((p.l.L + kPredRows - 1) / kPredRows);
  p.pred_blocks = p.pred_row_groups * ((p.l.nb + kPredBlocks - 1) / kPredBlocks);
  p.view_blocks = int(p.l.L / len) * p.l.nb;
  p.wire_blocks = p.wire_recipe >= 0 ? int(p.l.Ls) : 0;
  return p;
}

inline void launch_sums(const SumsParams& p, gpuStream_t stream) {
  caller_sums_kernel<><<<unsigned(p.pred_blocks + p.view_blocks + p.wire_blocks), kThreads, 0, stream>>>(p);
}

inline cg::Consts consts_of(const gg_consts& k) {
  cg::Consts c;
  c.lambda = k.lambda;
  c.agg_threshold = k.agg_threshold;
  c.det_pred = k.det_pred;
  c.k_asq = k.k_asq;
  c.part2 = k.part2;
  c.reduce = k.reduce;
  c.out2 = k.out2;
  c.wire_rel = k.wire_rel;
  c.wire_sub = k.wire_sub;
  c.underflow = k.underflow;
  c.fp8_gather = k.fp8_gather;
  c.recipe_known = k.recipe_known;
  return c;
}

inline void launch_judge(const cg::Layout& l, const cg::Consts& c, const float* records, cg::Cell* cells,
                         unsigned long long* call, gpuStream_t stream) {
  caller_judge_kernel<><<<unsigned(l.world * l.world), kJudgeThreads, 0, stream>>>(l, c, records, cells, call);
}

}  // namespace
