#include "kernels/check/output_compare.hpp"

#include "kernels/kernels.hpp"
#include "reference/numerics_inline.hpp"

namespace gemmar::kernels::dev {

namespace nm = gemmar::numerics;

namespace {

constexpr int kCompareThreads = 256;

__device__ __forceinline__ float reduce_at(const OutputCompareArgs& a, int owner, int64_t srow, int64_t col) {
  // numerics::reduce_sum's order: acc = the owner's own value, then peers (owner + j) % W.
  float acc = nm::bf16_to_f32(a.slices[owner * a.world + owner][srow * a.n + col]);
  for (int j = 1; j < a.world; ++j) {
    const int q = (owner + j) % a.world;
    acc = nm::add_rn(acc, nm::bf16_to_f32(a.slices[q * a.world + owner][srow * a.n + col]));
  }
  return acc;
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
  float scale = 1.0f, inv = 1.0f;
  if (a.fp8_wire) {
    // The row's amax as the pipeline takes it: over the bf16 reduced row, or the fp32 accumulator when fused.
    __shared__ unsigned int amax_bits;
    if (threadIdx.x == 0) amax_bits = 0;
    __syncthreads();
    float amax = 0.0f;
    for (int64_t col = threadIdx.x; col < a.n; col += blockDim.x) {
      const float acc = reduce_at(a, owner, srow, col);
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
    const uint16_t reduced = nm::f32_to_bf16(reduce_at(a, owner, srow, col));
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
  output_compare_kernel<<<dim3(unsigned(a.m)), dim3(kCompareThreads), 0, s>>>(a);
  return gpuGetLastError();
}

}  // namespace gemmar::kernels::dev
