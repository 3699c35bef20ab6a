// The pipeline's number conversions, written once and compiled for the host (the CPU emulation) and for
// the GPU kernels (hipcc / nvcc include this same header), so both round bit for bit identically.
// Only <cstdint> and plain integer/float operations (and the fmaf builtin): no std:: library calls, no memcpy.
//
// On device the float multiplies/adds/divides that define a rounding point use the explicit *_rn intrinsics
// so the compiler cannot contract them into FMAs (nvcc and hipcc contract by default); the host build is
// ISO C++ (-std=c++20, no GNU extensions), where GCC does not contract across statements either.
#pragma once
#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define GEMMAR_HD __host__ __device__
#else
#define GEMMAR_HD
#endif

#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define GEMMAR_DEVICE_PASS 1
#endif

namespace gemmar::numerics {

// ---- bit casts -------------------------------------------------------------------------------------
GEMMAR_HD inline uint32_t f32_bits(float f) {
#ifdef GEMMAR_DEVICE_PASS
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(uint32_t, f);
#endif
}
GEMMAR_HD inline float bits_f32(uint32_t u) {
#ifdef GEMMAR_DEVICE_PASS
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}

// ---- rounding points that must not be fused ---------------------------------------------------------
GEMMAR_HD inline float mul_rn(float a, float b) {
#ifdef GEMMAR_DEVICE_PASS
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
GEMMAR_HD inline float add_rn(float a, float b) {
#ifdef GEMMAR_DEVICE_PASS
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
// a * b + c rounded once: one instruction on every GPU and on x86 with FMA (elsewhere libm's exact fmaf)
GEMMAR_HD inline float fma_rn(float a, float b, float c) {
#ifdef GEMMAR_DEVICE_PASS
  return __fmaf_rn(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}
GEMMAR_HD inline float div_rn(float a, float b) {
#ifdef GEMMAR_DEVICE_PASS
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
GEMMAR_HD inline float abs_f32(float f) { return bits_f32(f32_bits(f) & 0x7fffffffu); }
GEMMAR_HD inline bool is_nan_f32(float f) { return (f32_bits(f) & 0x7fffffffu) > 0x7f800000u; }
// NaN-propagating max of magnitudes, as an amax reduction must be (a NaN row must not look finite).
GEMMAR_HD inline float amax_step(float amax, float x) {
  const float a = abs_f32(x);
  if (is_nan_f32(a) || is_nan_f32(amax)) return bits_f32(0x7fc00000u);
  return a > amax ? a : amax;
}

// ---- bf16 ----------------------------------------------------------------------------------------------
// Round to nearest even; overflow rounds to infinity as IEEE RNE does. NaN becomes the canonical quiet NaN
// 0x7fc0: host and device produce NaNs with different signs and payloads (x86's default NaN is negative),
// and a bit-for-bit comparison must not trip on that.
GEMMAR_HD inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t(0x7fc0u);
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(rounded >> 16);
}
GEMMAR_HD inline float bf16_to_f32(uint16_t h) { return bits_f32(uint32_t(h) << 16); }
GEMMAR_HD inline float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

// ---- e4m3: fn (OCP, bias 7, max 448, NaN S.1111.111, has -0) and fnuz (bias 8, max 240, NaN 0x80 only) --
// fnuz = false -> e4m3fn, true -> e4m3fnuz.
GEMMAR_HD inline float fp8_max(bool fnuz) { return fnuz ? 240.0f : 448.0f; }

GEMMAR_HD inline uint8_t f32_to_e4m3(float f, bool fnuz) {
  const uint32_t u = f32_bits(f);
  const uint32_t sign = u >> 31;
  const uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return fnuz ? uint8_t(0x80) : uint8_t(0x7f);  // canonical NaN, sign dropped
  const uint32_t max_code = fnuz ? 0x7fu : 0x7eu;                      // 240 = 2^7*1.875 (fnuz), 448 = 2^8*1.75 (fn)
  uint32_t code;
  if (mag >= 0x44800000u) {  // |f| >= 1024 (and infinity): far above either max, saturate
    code = max_code;
  } else if ((mag >> 23) == 0) {  // fp32 subnormal: below half the smallest e4m3 subnormal
    code = 0;
  } else {
    const int bias = fnuz ? 8 : 7;
    const int emin = 1 - bias;  // exponent of the smallest normal
    const int e = int(mag >> 23) - 127;
    const uint32_t m = (mag & 0x7fffffu) | 0x800000u;  // 24-bit significand, value = m * 2^(e-23)
    const int te = e > emin ? e : emin;                // the binade whose quantum applies: 2^(te-3)
    const int shift = te - e + 20;                     // m * 2^(e-23) / 2^(te-3) = m >> shift
    uint32_t q;
    if (shift >= 25) {
      q = 0;  // m < 2^24 <= half of 2^shift: rounds to zero
    } else {
      q = m >> shift;
      const uint32_t rem = m & ((1u << shift) - 1u);
      const uint32_t half = 1u << (shift - 1);
      if (rem > half || (rem == half && (q & 1u))) ++q;
    }
    // q in [8, 16] for normals, [0, 8] for subnormals; a carry to 16 (or 8) lands in the next exponent.
    code = (uint32_t(te - emin) << 3) + q;
    if (code > max_code) code = max_code;
  }
  if (fnuz && code == 0) return 0;  // fnuz has no negative zero
  return uint8_t((sign << 7) | code);
}

GEMMAR_HD inline float e4m3_to_f32(uint8_t c, bool fnuz) {
  const uint32_t sign = c >> 7;
  const uint32_t e = (c >> 3) & 0xfu;
  const uint32_t m = c & 0x7u;
  if (fnuz ? (c == 0x80) : ((c & 0x7f) == 0x7f)) return bits_f32(0x7fc00000u);
  const int bias = fnuz ? 8 : 7;
  // value = (e ? 8 + m : m) * 2^((e ? e : 1) - bias - 3), exact in fp32
  const int p = (e ? int(e) : 1) - bias - 3;
  const float mant = float(e ? 8u + m : m);
  const float v = mant * bits_f32(uint32_t(p + 127) << 23);
  return sign ? -v : v;
}

// ---- amax scaling: operand quantization with kind `normal` ----------------------------------------------
// scale = amax / max (1.0 for an all-zero block), codes = RNE(x * (max / amax)): the inverse is formed once
// per block and each element is multiplied by it (one rounding), then narrowed (second rounding).
GEMMAR_HD inline float amax_scale(float amax, bool fnuz) { return amax > 0.0f ? div_rn(amax, fp8_max(fnuz)) : 1.0f; }
GEMMAR_HD inline float amax_inv_scale(float amax, bool fnuz) {
  return amax > 0.0f ? div_rn(fp8_max(fnuz), amax) : 1.0f;
}
GEMMAR_HD inline uint8_t quantize_scaled(float x, float inv_scale, bool fnuz) {
  return f32_to_e4m3(mul_rn(x, inv_scale), fnuz);
}

// ---- the fp8 wire, as mori computes it ---------------------------------------------------------------------
// ROCm/mori python/mori/ops/gemm_ar/kernels_sdma.py (quantize_gather, sdma_reduce_quant; read at commit
// 046391f6): scale = amax * fl32(1/448), a multiply by the rounded constant (not amax / 448: the two differ in
// the last bit for about half the rows), inv = fl32(448 / amax), a true fp32 division; an all-zero row has
// scale = inv = 1.0. A NaN amax (a NaN in the row) gives a NaN scale and inverse: the whole row is NaN on the
// peers, as on the device. The fnuz wire uses 240 in place of 448.
GEMMAR_HD inline float fp8_inv_max(bool fnuz) { return fnuz ? 1.0f / 240.0f : 1.0f / 448.0f; }  // fl32(1/max)
GEMMAR_HD inline float wire_scale(float amax, bool fnuz) {
  return amax == 0.0f ? 1.0f : mul_rn(amax, fp8_inv_max(fnuz));
}
GEMMAR_HD inline float wire_inv_scale(float amax, bool fnuz) {
  return amax == 0.0f ? 1.0f : div_rn(fp8_max(fnuz), amax);
}
// The fp8 wire's receive side: decode, times the row scale in fp32, rounded to bf16.
GEMMAR_HD inline uint16_t wire_dequantize(uint8_t q, float scale, bool fnuz) {
  return f32_to_bf16(mul_rn(e4m3_to_f32(q, fnuz), scale));
}
// Operand dequantization (the reference's inputs): decode times scale in fp32, kept fp32.
GEMMAR_HD inline float dequantize_operand(uint8_t q, float scale, bool fnuz) {
  return mul_rn(e4m3_to_f32(q, fnuz), scale);
}

// ---- the fp8 scatter, as mori computes it (--scatter-dtype fp8) ----------------------------------------------
// ROCm/mori python/mori/ops/gemm_ar/kernels_fused.py @f3bff0ae (compile_fused_gemm_scatter, the epilogue's
// `if const_expr(fp8_scatter):`): every finished tile's partial is stored as bf16 first, re-read, and narrowed per
// row per kScatterScaleCols = 256 columns (BLOCK_N; layout.py scatter_scale_n), the owner's own slice included.
// amax over the segment's bf16 values; scale = fl32(amax / 448), a true division (the gather multiplies by
// fl32(1/448)); inv = fl32(1 / scale), the reciprocal of the rounded scale (the gather divides 448 by the amax);
// q = RNE(fl32(x * inv)). An all-zero segment has scale = 1 and so inv = 1; a NaN in it makes the scale NaN.
// kernels_sdma.py sdma_reduce widens each slot with its own segment's scale, fl32(decode(q) * scale), and sums the
// widened values as reduce_sum does. mori's scatter is e4m3fn only; the fnuz wire uses 240 in place of 448.
inline constexpr int kScatterScaleCols = 256;
GEMMAR_HD inline float scatter_scale(float amax, bool fnuz) {
  return amax == 0.0f ? 1.0f : div_rn(amax, fp8_max(fnuz));
}
GEMMAR_HD inline float scatter_inv_scale(float scale) { return div_rn(1.0f, scale); }
// The reduce's widening of one received code (no bf16 rounding: the sum is formed in fp32).
GEMMAR_HD inline float scatter_widen(uint8_t q, float scale, bool fnuz) { return mul_rn(e4m3_to_f32(q, fnuz), scale); }

// ---- the GEMM's scale application ------------------------------------------------------------------
// blockscale / mxfp8: per K block, acc = fma(dot, scale_a * scale_b, acc); ptpc: out = dot * (scale_a * scale_b)
// once, in the epilogue. The scale product is formed first (one rounding), then applied with one more: the
// promotion is one FFMA / v_fma_f32 per element and K block, as DeepGEMM's (a multiply then an add costs one
// more: docs/results/h100-1gpu-2026-12-06-fma). mori's own GEMM never promotes: it
// rescales its MFMA accumulator by s_{k-1} / s_k between K blocks, an order no CPU can replay, so its output is
// judged against the floor, not bit for bit.
GEMMAR_HD inline float block_accumulate(float acc, float dot, float scale_a, float scale_b) {
  return fma_rn(dot, mul_rn(scale_a, scale_b), acc);
}
GEMMAR_HD inline float ptpc_epilogue(float dot, float scale_a, float scale_b) {
  return mul_rn(dot, mul_rn(scale_a, scale_b));
}

// ---- the reduce -------------------------------------------------------------------------------------
// The owner sums the W bf16 slots of one element in fp32 in peer order (rank + j) % W, j = 0..W-1, and stores
// bf16. `slot(p)` returns the bf16 bits received from peer p.
// reduce_sum is the fp32 accumulator before the bf16 store (mori's sdma_reduce_quant takes the fp8 wire's amax
// from it when the narrowing is fused into the reduce).
// reduce_sum_f32 is the same sum over contributions already in fp32 (`value(p)`: the fp8 scatter's widened codes).
template <typename ValueFn>
GEMMAR_HD inline float reduce_sum_f32(int owner, int world, ValueFn value) {
  // acc starts at the owner's own value, as mori's sdma_reduce (`acc = v if acc is None else acc + v`): 0 + x would
  // turn an all -0 element into +0.
  float acc = value(owner);
  for (int j = 1; j < world; ++j) acc = add_rn(acc, value((owner + j) % world));
  return acc;
}
template <typename SlotFn>
GEMMAR_HD inline float reduce_sum(int owner, int world, SlotFn slot) {
  // reduce_sum_f32 over bf16_to_f32(slot(p)), written out: no lambda in a function the device passes compile
  float acc = bf16_to_f32(slot(owner));
  for (int j = 1; j < world; ++j) acc = add_rn(acc, bf16_to_f32(slot((owner + j) % world)));
  return acc;
}
template <typename SlotFn>
GEMMAR_HD inline uint16_t reduce_element(int owner, int world, SlotFn slot) {
  return f32_to_bf16(reduce_sum(owner, world, slot));
}

}  // namespace gemmar::numerics
