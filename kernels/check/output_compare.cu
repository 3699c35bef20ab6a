#include "kernels/check/output_compare.hpp"

#include "kernels/kernels.hpp"
#include "reference/numerics_inline.hpp"

namespace gemmar::kernels::dev {

namespace nm = gemmar::numerics;

namespace {

constexpr int kCompareThreads = 256;

// fp8 scatter: the scale of sender q's segment (this row, the 256 columns this block's threads cover now).
struct SegmentScales {
  float scale[kMaxWorld];
  float inv[kMaxWorld];
};

// What sender q's partial contributes to the reduce: its bf16 value, or (fp8 scatter) that value narrowed with its
// segment's inverse scale and widened with its scale (numerics::quantize_scaled, scatter_widen).
__device__ __forceinline__ float contribution(const OutputCompareArgs& a, const SegmentScales* seg, int q, int owner,
                                              int64_t srow, int64_t col) {
  const float x = nm::bf16_to_f32(a.slices[q * a.world + owner][srow * a.n + col]);
  if (!seg) return x;
  return nm::scatter_widen(nm::quantize_scaled(x, seg->inv[q], false), seg->scale[q], false);
}

__device__ __forceinline__ float reduce_at(const OutputCompareArgs& a, const SegmentScales* seg, int owner,
                                           int64_t srow, int64_t col) {
  // numerics::reduce_sum's order: acc = the owner's own value, then peers (owner + j) % W.
  float acc = contribution(a, seg, owner, owner, srow, col);
  for (int j = 1; j < a.world; ++j)
    acc = nm::add_rn(acc, contribution(a, seg, (owner + j) % a.world, owner, srow, col));
  return acc;
}

// fp8 scatter: every sender's segment scale for the 256 columns starting at col0 (the block's 256 threads hold one
// column each); a barrier before and after, so every thread of the block must call it.
__device__ void segment_scales(const OutputCompareArgs& a, SegmentScales& seg, unsigned* amax_bits, int owner,
                               int64_t srow, int64_t col0) {
  __syncthreads();
  for (int q = threadIdx.x; q < a.world; q += blockDim.x) amax_bits[q] = 0;
  __syncthreads();
  const int64_t col = col0 + threadIdx.x;
  for (int q = 0; q < a.world; ++q) {
    const float amax = nm::amax_step(0.0f, nm::bf16_to_f32(a.slices[q * a.world + owner][srow * a.n + col]));
    // |amax| bits order as the magnitudes do, and a NaN's above infinity: the max keeps a NaN.
    atomicMax(&amax_bits[q], nm::f32_bits(amax) & 0x7fffffffu);
  }
  __syncthreads();
  for (int q = threadIdx.x; q < a.world; q += blockDim.x) {
    seg.scale[q] = nm::scatter_scale(nm::bits_f32(amax_bits[q]), false);
    seg.inv[q] = nm::scatter_inv_scale(seg.scale[q]);
  }
  __syncthreads();
}

// Counts go to the block's shared counters first and to global memory once per block and rank: on a run where
// nearly every element is wrong (a silent gather) per-element global atomics serialised the compare
// (docs/results/h200-1gpu-2026-12-03-session5).
struct BlockCounts {
  unsigned long long wrong[kMaxWorld];
  unsigned long long nonfinite[kMaxWorld];
  unsigned long long first[kMaxWorld];
};

__device__ __forceinline__ void judge(const OutputCompareArgs& a, BlockCounts& c, int r, int64_t row, int64_t col,
                                      uint16_t want) {
  const uint16_t got = a.outputs[r][row * a.n + col];
  if ((got & 0x7f80) == 0x7f80) atomicAdd(&c.nonfinite[r], 1ull);
  if (got != want) {
    atomicAdd(&c.wrong[r], 1ull);
    atomicMin(&c.first[r], static_cast<unsigned long long>(row * a.n + col));
  }
}

__global__ void __launch_bounds__(kCompareThreads) output_compare_kernel(OutputCompareArgs a) {
  const int64_t row = blockIdx.x;
  const int owner = int(row / a.slice_rows) < a.world ? int(row / a.slice_rows) : a.world - 1;
  const int64_t srow = row - int64_t(owner) * a.slice_rows;
  __shared__ BlockCounts counts;
  for (int r = threadIdx.x; r < a.world; r += blockDim.x) {
    counts.wrong[r] = counts.nonfinite[r] = 0;
    counts.first[r] = ~0ull;
  }
  __syncthreads();
  __shared__ SegmentScales seg_s;
  __shared__ unsigned seg_amax[kMaxWorld];
  const SegmentScales* seg = a.fp8_scatter ? &seg_s : nullptr;
  float scale = 1.0f, inv = 1.0f;
  if (a.fp8_wire) {
    // The row's amax as the pipeline takes it: over the bf16 reduced row, or the fp32 accumulator when fused.
    __shared__ unsigned int amax_bits;
    if (threadIdx.x == 0) amax_bits = 0;
    __syncthreads();
    float amax = 0.0f;
    for (int64_t col = threadIdx.x; col < a.n; col += blockDim.x) {
      if (seg) segment_scales(a, seg_s, seg_amax, owner, srow, col - threadIdx.x);
      const float acc = reduce_at(a, seg, owner, srow, col);
      amax = nm::amax_step(amax, a.fuse_quantize ? acc : nm::round_bf16(acc));
    }
    // |amax| bits order as the magnitudes do, and a NaN's above infinity: the max keeps a NaN.
    atomicMax(&amax_bits, nm::f32_bits(amax) & 0x7fffffffu);
    __syncthreads();
    amax = nm::bits_f32(amax_bits);
    scale = nm::wire_scale(amax, false);
    inv = nm::wire_inv_scale(amax, false);
  }
  for (int64_t col = threadIdx.x; col < a.n; col += blockDim.x) {
    if (seg) segment_scales(a, seg_s, seg_amax, owner, srow, col - threadIdx.x);
    const uint16_t reduced = nm::f32_to_bf16(reduce_at(a, seg, owner, srow, col));
    const uint16_t wire =
        a.fp8_wire ? nm::wire_dequantize(nm::quantize_scaled(nm::bf16_to_f32(reduced), inv, false), scale, false)
                   : reduced;
    for (int r = 0; r < a.world; ++r) judge(a, counts, r, row, col, r == owner ? reduced : wire);
  }
  __syncthreads();
  for (int r = threadIdx.x; r < a.world; r += blockDim.x) {
    if (counts.nonfinite[r]) atomicAdd(&a.counts[a.world + r], counts.nonfinite[r]);
    if (counts.wrong[r]) {
      atomicAdd(&a.counts[r], counts.wrong[r]);
      atomicMin(&a.counts[2 * a.world + r], counts.first[r]);
    }
  }
}

}  // namespace

gpuError_t launch_output_compare(const OutputCompareArgs& a, gpuStream_t s) {
  if (a.m <= 0) return gpuSuccess;
  // fp8 scatter: one 256-column segment per pass of the block (segment_scales' barriers need every thread).
  static_assert(kCompareThreads == nm::kScatterScaleCols, "a block's pass is one scatter segment");
  if (a.fp8_scatter && a.n % kCompareThreads) return gpuErrorInvalidValue;
  output_compare_kernel<<<dim3(unsigned(a.m)), dim3(kCompareThreads), 0, s>>>(a);
  return gpuGetLastError();
}

}  // namespace gemmar::kernels::dev
