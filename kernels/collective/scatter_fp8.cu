// mori's fp8 scatter (--scatter-dtype fp8) on the device: the sender's narrowing of its bf16 partial, per row per
// 256 columns, before the put, and the owner's reduce that widens every slot with its own scales and sums in fp32.
// The recipe is reference/numerics_inline.hpp's (scatter_scale, scatter_inv_scale, quantize_scaled, scatter_widen,
// reduce_sum_f32), the one the CPU emulation runs (reference/quant.cpp scatter_quantize_row), so the two agree bit
// for bit. mori's source: python/mori/ops/gemm_ar/kernels_fused.py @f3bff0ae (compile_fused_gemm_scatter, the
// epilogue's `if const_expr(fp8_scatter):` block: 16 lanes per 256-column row segment, amax by a butterfly over
// them, scale = amax / 448, inv = 1 / scale) and kernels_sdma.py @f3bff0ae sdma_reduce (j = 0 the owner's own
// codes, then the recv slots of (rank + j) % W, `acc = v if acc is None else acc + v`, one bf16 store).
#include "kernels/convert/fp8_wire.cuh"

namespace gemmar::kernels::dev {
namespace {

// 8 bf16 per lane (one 16-byte load): 32 lanes own one 256-column segment, so a 64-lane CDNA wave owns two and a
// 32-lane warp one; the butterfly's offsets (< 32) stay inside the segment's lanes on both.
constexpr int kSegLanes = numerics::kScatterScaleCols / 8;
static_assert(kSegLanes == 32 && GEMMAR_WARP_SIZE % kSegLanes == 0, "a segment's lanes lie in one warp");

// units = rows * (n / 256) segments of a row-major [rows, n] bf16 block; unit u's 256 elements start at u * 256 and
// its scale is scales[u] (mori's input_scale_off layout, row * (N / BLOCK_N) + block_n).
__global__ void __launch_bounds__(kThreads)
    scatter_quantize_kernel(const uint16_t* in, int64_t units, uint8_t* codes, float* scales) {
  const int lane = int(threadIdx.x) % kSegLanes;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x / kSegLanes;
  for (int64_t u = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kSegLanes; u < units; u += stride) {
    const int64_t at = u * numerics::kScatterScaleCols + lane * 8;
    const uint4 x = *reinterpret_cast<const uint4*>(in + at);
    float f[8];
    unpack8(x, f);
    float amax = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) amax = nm::amax_step(amax, f[e]);
    // The max is order-free for numbers; any NaN makes amax NaN whatever the order (amax_step), as mori's maximumf.
    for (int o = kSegLanes / 2; o > 0; o >>= 1) amax = nm::amax_step(amax, gemmar::gpu::shfl_xor(amax, o));
    const float scale = nm::scatter_scale(amax, false);
    *reinterpret_cast<uint2*>(codes + at) = quant8(x, nm::scatter_inv_scale(scale));
    if (lane == 0) scales[u] = scale;
  }
}

// Eight codes times their segment's scale, fp32 (nm::scatter_widen: the exact decode, one rounding). The integer
// decode of dequant4_int where the codes and the scale are finite, else the reference's scalar path.
__device__ __forceinline__ void widen8_f32(uint2 w, float scale, float (&f)[8]) {
  const bool fast = (__float_as_uint(scale) & 0x7f800000u) != 0x7f800000u && !(has_nan_code(w.x) | has_nan_code(w.y));
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const uint32_t word = i < 4 ? w.x : w.y;
    const int b = i & 3;
    if (fast) {
      const uint32_t top = __byte_perm(word, 0u, 0x0444u | (uint32_t(b) << 12));  // code b in bits 31..24
      const uint32_t bits = uint32_t(int32_t(top) >> 4) & 0x87f00000u;
      f[i] = nm::mul_rn(nm::mul_rn(__uint_as_float(bits), 0x1p120f), scale);
    } else {
      f[i] = nm::scatter_widen(uint8_t(word >> (8 * b)), scale, false);
    }
  }
}

// One block per owned row: numerics::reduce_sum_f32 over the W slots' widened codes, 8 columns per lane (a lane's
// 8 columns lie in one 256-column segment), bf16 RNE store; q_out: the fp8 gather's narrowing folded in, its amax
// over the fp32 accumulator (fuse_quantize), as reduce_kernel does.
__global__ void __launch_bounds__(kThreads)
    reduce_fp8_scatter_kernel(Fp8ScatterSlots slots, int owner, int world, int64_t n, uint16_t* out, uint8_t* q_out,
                              float* q_scale) {
  const int64_t row = blockIdx.x;
  const int64_t nv = n / 8, segs = n / numerics::kScatterScaleCols;
  uint16_t* orow = out + row * n;
  float acc_amax = 0.0f;
  for (int64_t v = threadIdx.x; v < nv; v += blockDim.x) {
    const int64_t seg = row * segs + v / kSegLanes;
    float acc[8];
    widen8_f32(reinterpret_cast<const uint2*>(slots.q[owner] + row * n)[v], slots.scale[owner][seg], acc);
    for (int j = 1; j < world; ++j) {
      const int p = (owner + j) % world;
      float f[8];
      widen8_f32(reinterpret_cast<const uint2*>(slots.q[p] + row * n)[v], slots.scale[p][seg], f);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = nm::add_rn(acc[e], f[e]);
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) acc_amax = nm::amax_step(acc_amax, acc[e]);
    uint4 o;
    o.x = pack_bf16x2(acc[0], acc[1]);
    o.y = pack_bf16x2(acc[2], acc[3]);
    o.z = pack_bf16x2(acc[4], acc[5]);
    o.w = pack_bf16x2(acc[6], acc[7]);
    reinterpret_cast<uint4*>(orow)[v] = o;
  }
  if (q_out) {
    __syncthreads();  // the block's own global stores are visible to it after the barrier
    quantize_row(orow, n, q_out + row * n, q_scale + row, acc_amax);
  }
}

}  // namespace

gpuError_t launch_scatter_quantize(const uint16_t* in, int64_t rows, int64_t n, uint8_t* codes, float* scales,
                                   gpuStream_t s) {
  if (rows <= 0) return gpuSuccess;
  if (n % numerics::kScatterScaleCols) return gpuErrorInvalidValue;
  const int64_t units = rows * (n / numerics::kScatterScaleCols);
  scatter_quantize_kernel<<<unsigned(grid_for(units * kSegLanes, kThreads)), kThreads, 0, s>>>(in, units, codes,
                                                                                               scales);
  return gpuGetLastError();
}

gpuError_t launch_reduce_fp8_scatter(const Fp8ScatterSlots& slots, int owner, int world, int64_t rows, int64_t n,
                                     uint16_t* out, uint8_t* q_out, float* q_scale, gpuStream_t s) {
  if (rows <= 0) return gpuSuccess;
  if (n % numerics::kScatterScaleCols) return gpuErrorInvalidValue;
  reduce_fp8_scatter_kernel<<<unsigned(rows), kThreads, 0, s>>>(slots, owner, world, n, out, q_out, q_scale);
  return gpuGetLastError();
}

}  // namespace gemmar::kernels::dev
