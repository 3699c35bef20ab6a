// The fp8 wire's element conversions (mori's recipe: per-row amax, scale = amax * fl32(1/448), e4m3fn codes
// RNE(fl32(x * fl32(448/amax)))), shared by the reduce's fused narrowing (collective/legs.cu) and the standalone
// quantize, widen and selftest (convert/convert.cu).
#pragma once
#include "kernels/device_common.cuh"

namespace gemmar::kernels::dev {
namespace {

// Block-wide NaN-propagating amax (numerics::amax_step is the combine, so a NaN anywhere reaches the scale).
__device__ float block_amax(float v) {
  __shared__ float part[kThreads / GEMMAR_WARP_SIZE];
  for (int o = GEMMAR_WARP_SIZE / 2; o > 0; o >>= 1) v = nm::amax_step(v, gemmar::gpu::shfl_xor(v, o));
  const int w = threadIdx.x / GEMMAR_WARP_SIZE, l = threadIdx.x % GEMMAR_WARP_SIZE;
  if (l == 0) part[w] = v;
  __syncthreads();
  float r = 0.0f;
  for (int i = 0; i < int(blockDim.x) / GEMMAR_WARP_SIZE; ++i) r = nm::amax_step(r, part[i]);
  __syncthreads();
  return r;
}

__device__ __forceinline__ void unpack8(const uint4& x, float (&f)[8]) {
  const uint32_t w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = nm::bf16_to_f32(uint16_t(w[i] & 0xffffu));
    f[2 * i + 1] = nm::bf16_to_f32(uint16_t(w[i] >> 16));
  }
}

// One row of the fp8 wire with mori's recipe: amax, scale, codes (numerics::wire_scale / wire_inv_scale /
// quantize_scaled). `acc_amax`: this thread's NaN-propagating amax of the reduce's fp32 accumulator
// (fuse_quantize, as mori's sdma_reduce_quant), or a negative value to take the amax over the bf16 row.
[[maybe_unused]] __device__ void quantize_row(const uint16_t* in, int64_t n, uint8_t* q, float* scale_out,
                                              float acc_amax = -1.0f) {
  const int64_t nv = n / 8;
  float amax = acc_amax < 0.0f ? 0.0f : acc_amax;  // a NaN acc_amax is kept (NaN < 0 is false)
  if (acc_amax < 0.0f)
    for (int64_t v = threadIdx.x; v < nv; v += blockDim.x) {
      float f[8];
      unpack8(reinterpret_cast<const uint4*>(in)[v], f);
#pragma unroll
      for (int e = 0; e < 8; ++e) amax = nm::amax_step(amax, f[e]);
    }
  amax = block_amax(amax);
  const float inv = nm::wire_inv_scale(amax, false);
  for (int64_t v = threadIdx.x; v < nv; v += blockDim.x) {
    float f[8];
    unpack8(reinterpret_cast<const uint4*>(in)[v], f);
    uint32_t lo = 0, hi = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) lo |= uint32_t(nm::quantize_scaled(f[e], inv, false)) << (8 * e);
#pragma unroll
    for (int e = 0; e < 4; ++e) hi |= uint32_t(nm::quantize_scaled(f[e + 4], inv, false)) << (8 * e);
    reinterpret_cast<uint2*>(q)[v] = make_uint2(lo, hi);
  }
  if (threadIdx.x == 0) *scale_out = nm::wire_scale(amax, false);
}

// ---- fp8 wire conversions: hardware on NVIDIA sm_89+ (cvt e4m3x2 <-> f16x2/f32), numerics_inline.hpp elsewhere.
// Both give the bits of nm::quantize_scaled / nm::wire_dequantize for every input (exhaustively checked on the
// device by `gemmar_gpu_bench selftest`): RNE, saturation to +-448 (infinities too), NaN -> 0x7f (sign
// dropped), bf16 NaN -> 0x7fc0.
#if defined(GEMMAR_GPU_CUDA) && defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 890)
#define GEMMAR_HW_FP8_CVT 1
#endif

// Any NaN code (S.1111.111) becomes 0x7f: satfinite never yields 0x7f/0xff for a number, so a byte whose low
// 7 bits are all ones was a NaN, and only its sign bit must go.
[[maybe_unused]] __device__ __forceinline__ uint32_t canon_nan_e4m3x4(uint32_t w) {
  const uint32_t t = (w & 0x7f7f7f7fu) ^ 0x7f7f7f7fu;                         // zero byte <=> NaN code
  const uint32_t z = ~(((t & 0x7f7f7f7fu) + 0x7f7f7f7fu) | t | 0x7f7f7f7fu);  // 0x80 in exactly the zero bytes
  return w & ~z;
}

// Four fp32 (already multiplied by the inverse scale, one rounding) -> four e4m3fn codes, byte i = x[i].
__device__ __forceinline__ uint32_t e4m3x4_from_f32(float x0, float x1, float x2, float x3) {
#if defined(GEMMAR_HW_FP8_CVT)
  uint16_t lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(x1), "f"(x0));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(x3), "f"(x2));
  return canon_nan_e4m3x4(uint32_t(lo) | (uint32_t(hi) << 16));
#else
  return uint32_t(nm::f32_to_e4m3(x0, false)) | (uint32_t(nm::f32_to_e4m3(x1, false)) << 8) |
         (uint32_t(nm::f32_to_e4m3(x2, false)) << 16) | (uint32_t(nm::f32_to_e4m3(x3, false)) << 24);
#endif
}

// bf16 pair (lo = a, hi = b) with the canonical NaN 0x7fc0 of nm::f32_to_bf16.
[[maybe_unused]] __device__ __forceinline__ uint32_t bf16x2_from_f32(float a, float b) {
#if defined(GEMMAR_HW_FP8_CVT)
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return bf16x2_canon_nan(r);
#else
  return uint32_t(nm::f32_to_bf16(a)) | (uint32_t(nm::f32_to_bf16(b)) << 16);
#endif
}

// Four e4m3fn codes (byte i) times the row scale -> four bf16 (nm::wire_dequantize), as two bf16x2 words.
__device__ __forceinline__ void dequant4(uint32_t w, float scale, uint32_t& o01, uint32_t& o23) {
#if defined(GEMMAR_HW_FP8_CVT)
  uint32_t h01, h23;  // f16x2: e4m3 -> f16 is exact (every e4m3fn value, NaN -> f16 NaN)
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h01) : "h"(uint16_t(w & 0xffffu)));
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h23) : "h"(uint16_t(w >> 16)));
  float f0, f1, f2, f3;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f0) : "h"(uint16_t(h01 & 0xffffu)));
  asm("cvt.f32.f16 %0, %1;" : "=f"(f1) : "h"(uint16_t(h01 >> 16)));
  asm("cvt.f32.f16 %0, %1;" : "=f"(f2) : "h"(uint16_t(h23 & 0xffffu)));
  asm("cvt.f32.f16 %0, %1;" : "=f"(f3) : "h"(uint16_t(h23 >> 16)));
  o01 = bf16x2_from_f32(nm::mul_rn(f0, scale), nm::mul_rn(f1, scale));
  o23 = bf16x2_from_f32(nm::mul_rn(f2, scale), nm::mul_rn(f3, scale));
#else
  o01 = uint32_t(nm::wire_dequantize(uint8_t(w), scale, false)) |
        (uint32_t(nm::wire_dequantize(uint8_t(w >> 8), scale, false)) << 16);
  o23 = uint32_t(nm::wire_dequantize(uint8_t(w >> 16), scale, false)) |
        (uint32_t(nm::wire_dequantize(uint8_t(w >> 24), scale, false)) << 16);
#endif
}

// Eight bf16 (one 16-byte load) times the inverse scale -> eight e4m3fn codes (8 bytes).
__device__ __forceinline__ uint2 quant8(const uint4& x, float inv) {
  float f[8];
  unpack8(x, f);
#pragma unroll
  for (int e = 0; e < 8; ++e) f[e] = nm::mul_rn(f[e], inv);
  return make_uint2(e4m3x4_from_f32(f[0], f[1], f[2], f[3]), e4m3x4_from_f32(f[4], f[5], f[6], f[7]));
}

// Four e4m3fn codes (byte i of w) times the row scale -> four bf16 (nm::wire_dequantize) without the conversion
// unit: a code's 7 magnitude bits placed at fp32 bits 26..20 (sign at 31) are its value times 2^-120 exactly
// (e4m3 subnormals become fp32 subnormals), so (bits * 2^120) * scale is decode(code) * scale with the one
// rounding of the reference; then bf16x2 RNE. Valid for finite scales and codes that are not NaN (the product
// is then finite or infinite, never NaN): has_nan_code() routes the rest to dequant4.
__device__ __forceinline__ void dequant4_int(uint32_t w, float scale, uint32_t& o01, uint32_t& o23) {
  float f[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t top = __byte_perm(w, 0u, 0x0444u | (uint32_t(i) << 12));  // code i in bits 31..24
    const uint32_t bits = uint32_t(int32_t(top) >> 4) & 0x87f00000u;
    f[i] = nm::mul_rn(nm::mul_rn(__uint_as_float(bits), 0x1p120f), scale);
  }
#if defined(GEMMAR_HW_FP8_CVT)
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(o01) : "f"(f[1]), "f"(f[0]));
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(o23) : "f"(f[3]), "f"(f[2]));
#else
  o01 = uint32_t(nm::f32_to_bf16(f[0])) | (uint32_t(nm::f32_to_bf16(f[1])) << 16);
  o23 = uint32_t(nm::f32_to_bf16(f[2])) | (uint32_t(nm::f32_to_bf16(f[3])) << 16);
#endif
}
// Nonzero iff one of the four codes of w is a NaN code (S.1111.111): a zero byte of (w & 0x7f..) ^ 0x7f..
__device__ __forceinline__ uint32_t has_nan_code(uint32_t w) {
  const uint32_t t = (w & 0x7f7f7f7fu) ^ 0x7f7f7f7fu;
  return (t - 0x01010101u) & ~t & 0x80808080u;
}
// Eight codes (two words) -> eight bf16 (16 bytes): the integer decode unless a code is NaN or the scale is not
// finite (then the conversion-unit path, bit-identical for every input).
__device__ __forceinline__ uint4 dequant8(uint32_t w0, uint32_t w1, float scale, bool scale_finite) {
  uint4 o;
  if (scale_finite && !(has_nan_code(w0) | has_nan_code(w1))) {
    dequant4_int(w0, scale, o.x, o.y);
    dequant4_int(w1, scale, o.z, o.w);
  } else {
    dequant4(w0, scale, o.x, o.y);
    dequant4(w1, scale, o.z, o.w);
  }
  return o;
}

}  // namespace

}  // namespace gemmar::kernels::dev
