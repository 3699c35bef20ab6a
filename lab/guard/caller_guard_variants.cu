// The caller guard's lab variants (lab/guard/caller_guard_variants.hpp): each one concern of the product's kernels
// (kernels/check/caller_guard_kernels.cuh) replaced, the rest the product's own code.
//   guard-predict-preload  the prediction blocks issue the 16 weight loads of a K step (8 column blocks x 2 float4)
//                          before any of its FMAs, and two K steps at a time: the product's loop loads a column
//                          block's weights after the previous block's FMAs (its `break` on the live blocks keeps
//                          the compiler from hoisting them), so a step waits for up to 8 L2 round trips in turn. The
//                          FMAs run in the product's order: the same bits.
//   guard-judge-world      the judge with the world fixed when compiled (8 or 4, else the product's): the ranks'
//                          loop of check_terms unrolled, its 5 x W record loads issued together; the same sums in the
//                          same order: the same bits.
//   guard-both             both.
//   guard-predict-split-k  one listed row per prediction block, its K walked by all 128 threads (two steps at
//                          K = 2048 where the product's warp takes eight), the loads as guard-predict-preload's;
//                          another summation order: checked against the CPU reference, not the product's bits.
//   guard-split-k-judge-world  guard-predict-split-k's sums and guard-judge-world's judge.
#include <type_traits>

#include "kernels/check/caller_guard_kernels.cuh"
#include "lab/guard/caller_guard_variants.hpp"

namespace gemmar::lab {
namespace {

// One K step of 8 consecutive k from kc of one row: its 16 weight loads (8 column blocks x 2 float4) issued before
// any of its FMAs, which run in the product's order (caller_guard_kernels.cuh predict). A dead block (past the live
// ones) re-reads the last live one, so no branch stands before a load; its sums are never written.
__device__ __forceinline__ void preload_step(const SumsParams& p, int64_t row, int64_t kc, int b0, int live,
                                             float (&s)[kPredBlocks], float (&sa)[kPredBlocks], float& sq) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p.a + row * p.k + kc);
  const float sc = a_scale_of(p, row, kc / p.a_scale_k);
  float4 lo[kPredBlocks], hi[kPredBlocks];
#pragma unroll
  for (int bl = 0; bl < kPredBlocks; ++bl) {
    const float4* wp = reinterpret_cast<const float4*>(p.w + int64_t(b0 + (bl < live ? bl : live - 1)) * p.k + kc);
    lo[bl] = wp[0];
    hi[bl] = wp[1];
  }
  float av[kPredKVec];
  dequantize8(p, raw, sc, av, sq);
#pragma unroll
  for (int bl = 0; bl < kPredBlocks; ++bl) {
    const float wv[kPredKVec] = {lo[bl].x, lo[bl].y, lo[bl].z, lo[bl].w, hi[bl].x, hi[bl].y, hi[bl].z, hi[bl].w};
#pragma unroll
    for (int e = 0; e < kPredKVec; ++e) {
      s[bl] = fmaf(av[e], wv[e], s[bl]);
      sa[bl] = fmaf(nm::abs_f32(av[e]), nm::abs_f32(wv[e]), sa[bl]);
    }
  }
}

struct PredictPreload {
  __device__ void operator()(const SumsParams& p, uint64_t call, int64_t i0, int b0) const {
    const int warp = int(threadIdx.x) / GEMMAR_WARP_SIZE, lane = int(threadIdx.x) % GEMMAR_WARP_SIZE;
    const int64_t i = i0 + warp;
    if (i >= p.l.L) return;
    const int64_t row = listed_row(p, call, i);
    const int live = p.l.nb - b0 < kPredBlocks ? p.l.nb - b0 : kPredBlocks;
    float s[kPredBlocks] = {}, sa[kPredBlocks] = {}, sq = 0;
#pragma unroll 2
    for (int64_t kc = int64_t(lane) * kPredKVec; kc < p.k; kc += int64_t(GEMMAR_WARP_SIZE) * kPredKVec) {
      preload_step(p, row, kc, b0, live, s, sa, sq);
    }
    write_prediction(p, lane, i, b0, live, s, sa, sq);
  }
};

// One listed row per block: the block's 128 threads walk the row's K together (thread t: 8 consecutive k from
// 8 t, 1024 k a step, two steps at K = 2048 where the product's warp takes eight), each step's 16 weight loads
// issued before its FMAs; the warps' partial sums added in warp order from zero. Another summation order than the
// product's: its records are checked against the CPU's, not the product's bits (the bound's det_pred is
// gamma(K + 3), any order's). Launched with one row group per listed row (launch_kinds): i0 / kPredRows is the row.
struct PredictSplitK {
  __device__ void operator()(const SumsParams& p, uint64_t call, int64_t i0, int b0) const {
    __shared__ float part_s[kWarps][kPredBlocks], part_a[kWarps][kPredBlocks], part_q[kWarps];
    const int t = int(threadIdx.x), warp = t / GEMMAR_WARP_SIZE, lane = t % GEMMAR_WARP_SIZE;
    const int64_t i = i0 / kPredRows;
    const int64_t row = listed_row(p, call, i);
    const int live = p.l.nb - b0 < kPredBlocks ? p.l.nb - b0 : kPredBlocks;
    float s[kPredBlocks] = {}, sa[kPredBlocks] = {}, sq = 0;
    for (int64_t kc = int64_t(t) * kPredKVec; kc < p.k; kc += int64_t(kThreads) * kPredKVec) {
      preload_step(p, row, kc, b0, live, s, sa, sq);
    }
#pragma unroll
    for (int bl = 0; bl < kPredBlocks; ++bl) {
      const float v = warp_sum(s[bl]), va = warp_sum(sa[bl]);
      if (lane == 0) {
        part_s[warp][bl] = v;
        part_a[warp][bl] = va;
      }
    }
    sq = warp_sum(sq);
    if (lane == 0) part_q[warp] = sq;
    __syncthreads();
    if (t < live) {
      float v = 0.0f, va = 0.0f;
      for (int w = 0; w < kWarps; ++w) {
        v = nm::add_rn(v, part_s[w][t]);
        va = nm::add_rn(va, part_a[w][t]);
      }
      p.rec[p.l.pred + i * p.l.nb + b0 + t] = v;
      p.rec[p.l.pabs + i * p.l.nb + b0 + t] = va;
    }
    if (t == 0 && b0 == 0) {
      float q = 0.0f;
      for (int w = 0; w < kWarps; ++w) q = nm::add_rn(q, part_q[w]);
      p.rec[p.l.asq + i] = q;
    }
  }
};

template <typename Predict>
bool launch_kinds(SumsParams p, int kinds, gpuStream_t stream) {
  if (std::is_same<Predict, PredictSplitK>::value) {  // one row group (block) per listed row
    p.pred_row_groups = int(p.l.L);
    p.pred_blocks = int(p.l.L) * ((p.l.nb + kPredBlocks - 1) / kPredBlocks);
  }
  int blocks = 0;
  if (kinds == kGuardAllKinds) {
    blocks = p.pred_blocks + p.view_blocks + p.wire_blocks;
  } else if (kinds == kGuardPredict) {
    blocks = p.pred_blocks;
  } else if (kinds == kGuardView) {
    blocks = p.view_blocks;
    p.pred_blocks = 0;
  } else if (kinds == kGuardWire) {
    blocks = p.wire_blocks;
    p.pred_blocks = p.view_blocks = 0;
  } else {
    return false;
  }
  if (blocks > 0) caller_sums_kernel<Predict><<<unsigned(blocks), kThreads, 0, stream>>>(p);
  return true;
}

template <int kWorld>
void launch_judge_world(const gg_judge_args& a, gpuStream_t stream) {
  cg::Layout l = cg::make_layout(a.world, a.m, a.n, a.stride);
  if (a.records_ld) l.ld = a.records_ld;
  caller_judge_kernel<kWorld><<<unsigned(l.world * l.world), kJudgeThreads, 0, stream>>>(
      l, consts_of(a.consts), static_cast<const float*>(a.records), static_cast<cg::Cell*>(a.cells),
      static_cast<unsigned long long*>(a.call));
}

void judge_fixed_world(const gg_judge_args& a, gpuStream_t stream) {
  if (a.world == 8)
    launch_judge_world<8>(a, stream);
  else if (a.world == 4)
    launch_judge_world<4>(a, stream);
  else
    launch_judge_world<0>(a, stream);
}

}  // namespace

bool guard_sums(Subject s, const gg_sums_args& a, int kinds, gpuStream_t stream) {
  const SumsParams p = sums_params(a);
  switch (s) {
    case Subject::GuardProduct:
    case Subject::GuardJudgeWorld:
      return launch_kinds<ProductPredict>(p, kinds, stream);
    case Subject::GuardPredictPreload:
    case Subject::GuardBoth:
      return launch_kinds<PredictPreload>(p, kinds, stream);
    case Subject::GuardPredictSplitK:
    case Subject::GuardSplitKJudgeWorld:
      return launch_kinds<PredictSplitK>(p, kinds, stream);
    default:
      return false;
  }
}

bool guard_judge(Subject s, const gg_judge_args& a, gpuStream_t stream) {
  switch (s) {
    case Subject::GuardProduct:
    case Subject::GuardPredictPreload:
    case Subject::GuardPredictSplitK:
      launch_judge_world<0>(a, stream);
      return true;
    case Subject::GuardJudgeWorld:
    case Subject::GuardBoth:
    case Subject::GuardSplitKJudgeWorld:
      judge_fixed_world(a, stream);
      return true;
    default:
      return false;
  }
}

}  // namespace gemmar::lab
