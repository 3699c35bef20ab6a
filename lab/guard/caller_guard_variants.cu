// The caller guard's lab variants (lab/guard/caller_guard_variants.hpp): each one concern of the product's kernels
// (kernels/check/caller_guard_kernels.cuh) replaced, the rest the product's own code.
//   guard-predict-split-k  one listed row per prediction block, its K walked by all 128 threads (two steps at
//                          K = 2048 where the product's warp takes eight), each step the product's predict_step;
//                          another summation order: checked against the CPU reference, not the product's bits.
//   guard-judge-tree       the product's judge before 2026-12-07: the ranks' records read in a loop with the world
//                          from the layout (a square root between one rank's loads and the next), the threads' cells
//                          merged by a tree of 8 rounds over shared memory (16-word cells at a 16-word stride, a
//                          barrier a round; the judge's TreeMerge); another merge order (zsum's roundings): checked
//                          against the CPU reference.
//   guard-view-rows-8      view blocks of 8 listed rows (their loads in one round trip, 4 times the blocks) in place
//                          of the product's 32 (4 rounds): the same sums, the same bits.
// Promoted and retired (docs/results/h100-1gpu-2026-12-07-guard-cost/): guard-predict-preload (the product's
// predict_step since), guard-judge-world (the judge's ranks unrolled: no faster), guard-both,
// guard-split-k-judge-world. Then (docs/results/h100-1gpu-2026-12-08-guard/): guard-wire-per-block (the product's
// wire_sums since: 1.24-1.51x a call on the fp8 gather), guard-predict-a-steps (a row's 8 K steps of codes loaded
// first: 0.56-0.63x, its prediction 24 us against 15), guard-next (the three together).
#include <type_traits>

#include "kernels/check/caller_guard_kernels.cuh"
#include "lab/guard/caller_guard_variants.hpp"

namespace gemmar::lab {
namespace {

// One listed row per block: the block's 128 threads walk the row's K together (thread t: 8 consecutive k from
// 8 t, 1024 k a step, two steps at K = 2048 where the product's warp takes eight), each step the product's
// predict_step; the warps' partial sums added in warp order from zero. Another summation order than the
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
      predict_step(p, row, kc, b0, live, s, sa, sq);
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

// The product's judge merge before 2026-12-07 (guard-judge-tree): every thread's cell into shared memory, then a
// tree of log2(threads) rounds, a barrier each.
struct TreeMerge {
  __device__ cg::Cell operator()(const cg::Cell& mine) const {
    __shared__ uint4 storage[(kJudgeThreads * sizeof(cg::Cell) + 15) / 16];  // raw: Cell has initializers
    cg::Cell* part = reinterpret_cast<cg::Cell*>(storage);
    const int t = int(threadIdx.x);
    part[t] = mine;
    __syncthreads();
    for (int half = kJudgeThreads / 2; half > 0; half >>= 1) {
      if (t < half) cg::cell_merge(part[t], part[t + half]);
      __syncthreads();
    }
    return part[0];
  }
};

template <typename Predict, typename Wire = ProductWire>
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
  if (blocks > 0) caller_sums_kernel<Predict, Wire><<<unsigned(blocks), kThreads, 0, stream>>>(p);
  return true;
}

}  // namespace

bool guard_sums(Subject s, const gg_sums_args& a, int kinds, gpuStream_t stream) {
  SumsParams p = sums_params(a);
  switch (s) {
    case Subject::GuardProduct:
    case Subject::GuardJudgeTree:
      return launch_kinds<ProductPredict>(p, kinds, stream);
    case Subject::GuardPredictSplitK:
      return launch_kinds<PredictSplitK>(p, kinds, stream);
    case Subject::GuardViewRows8:
      set_view_rows(p, 8);
      return launch_kinds<ProductPredict>(p, kinds, stream);
    default:
      return false;
  }
}

bool guard_judge(Subject s, const gg_judge_args& a, gpuStream_t stream) {
  const cg::Layout l = judge_layout(a);
  const cg::Consts k = consts_of(a.consts);
  const auto* records = static_cast<const float*>(a.records);
  auto* cells = static_cast<cg::Cell*>(a.cells);
  auto* call = static_cast<unsigned long long*>(a.call);
  switch (s) {
    case Subject::GuardProduct:
    case Subject::GuardPredictSplitK:
    case Subject::GuardViewRows8:
      launch_judge(l, k, records, cells, call, stream);
      return true;
    case Subject::GuardJudgeTree:
      caller_judge_kernel<0, TreeMerge>
          <<<unsigned(l.world * l.world), kJudgeThreads, 0, stream>>>(l, k, records, cells, call);
      return true;
    default:
      return false;
  }
}

}  // namespace gemmar::lab
