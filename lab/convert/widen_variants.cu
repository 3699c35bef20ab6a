// The widen subjects as launches: the op's launch_widen, its two ways of storing forced at every grid, and the
// lab's codecs of the same row walk (kernels/convert/widen.cuh): 16-byte code loads with the integer decode or with
// the conversion unit, and the walk's accesses without the decode (a memory ceiling). Measured: the TMA's stores
// 2% slower than registers' where the grid holds a block per SM (H100, docs/results/h100-1gpu-2026-12-06-pull);
// hw16 and int16 at 0.45-0.64 of cudaMemcpy where int8 reached 0.74-0.90 (H200, docs/results/
// h200-1gpu-2026-12-03-gemm4). Also the fp8 wire's exhaustive conversion selftest.
#include "kernels/convert/widen.cuh"
#include "lab/lab_kernels.hpp"

namespace gemmar::lab {
namespace {

using dev::dequant4;
using dev::dequant8;

// 16-byte code loads, the integer decode, two 16-byte stores 32 bytes apart.
struct Int16Codec {
  static constexpr int kCodeBytes = 16;
  using Code = uint4;
  __device__ __forceinline__ static void store(uint4* op, int v, const uint4& x, float sc, bool sc_finite) {
    op[2 * v] = dequant8(x.x, x.y, sc, sc_finite);
    op[2 * v + 1] = dequant8(x.z, x.w, sc, sc_finite);
  }
};
// 16-byte code loads, the conversion-unit chain (dequant4).
struct Hw16Codec {
  static constexpr int kCodeBytes = 16;
  using Code = uint4;
  __device__ __forceinline__ static void store(uint4* op, int v, const uint4& x, float sc, bool) {
    uint4 a, b;
    dequant4(x.x, sc, a.x, a.y);
    dequant4(x.y, sc, a.z, a.w);
    dequant4(x.z, sc, b.x, b.y);
    dequant4(x.w, sc, b.z, b.w);
    op[2 * v] = a;
    op[2 * v + 1] = b;
  }
};
// int8's loads and stores, the codes zero-extended into the bf16 slots: no arithmetic.
struct CeilingCodec {
  static constexpr int kCodeBytes = 8;
  using Code = uint2;
  __device__ __forceinline__ static void store(uint4* op, int v, const uint2& x, float, bool) {
    op[v] = make_uint4(__byte_perm(x.x, 0u, 0x4140u), __byte_perm(x.x, 0u, 0x4342u), __byte_perm(x.y, 0u, 0x4140u),
                       __byte_perm(x.y, 0u, 0x4342u));
  }
};

// Exhaustive check of the wire's conversions against numerics_inline.hpp: every fp32 bit pattern through the
// quantize path (x * inv then e4m3) and, every 65536th input, one code at several scales through the dequantize
// paths (dequant4 and the widen's dequant8). Counts mismatches into *bad and records the first input in *first.
__global__ void fp8_selftest_kernel(uint64_t begin, uint64_t count, float inv, unsigned long long* bad,
                                    unsigned long long* first) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint32_t u = uint32_t(begin + i);
    const float x = dev::nm::bits_f32(u);
    const float y = dev::nm::mul_rn(x, inv);
    const uint32_t hw = dev::e4m3x4_from_f32(y, y, y, y) & 0xffu;
    const uint32_t sw = dev::nm::quantize_scaled(x, inv, false);
    bool ok = hw == sw;
    if ((u & 0xffffu) == 0) {  // every 65536th input also checks the dequantize of code (u >> 16) & 0xff
      const uint32_t code = (u >> 16) & 0xffu;
      const float scale = dev::nm::bits_f32(0x3c000000u + (u >> 24) * 0x00123457u);
      uint32_t o01, o23;
      dequant4(code * 0x01010101u, scale, o01, o23);
      ok = ok && (o01 & 0xffffu) == dev::nm::wire_dequantize(uint8_t(code), scale, false) && o01 == o23;
      // dequant8 (integer decode, or dequant4 for NaN codes and non-finite scales) at that scale and at
      // 2^(e - 127) for e = u >> 24 (0: a zero scale, 255: +inf; subnormal and overflowing products included),
      // and at NaN: one of the eight codes is this one, the others vary.
      const uint32_t other = (code * 0x9e3779b1u) >> 8;
      const float scales[3] = {scale, dev::nm::bits_f32((u >> 24) << 23), dev::nm::bits_f32(0x7fc00000u)};
      for (const float sc : scales) {
        const bool fin = (__float_as_uint(sc) & 0x7f800000u) != 0x7f800000u;
        const uint4 o = dequant8(code | (other << 8), other, sc, fin);
        const uint32_t words[2] = {code | (other << 8), other};
        const uint32_t outs[4] = {o.x, o.y, o.z, o.w};
        for (int e = 0; e < 8; ++e) {
          const uint8_t c = uint8_t(words[e / 4] >> (8 * (e % 4)));
          ok = ok && uint16_t(outs[e / 2] >> (16 * (e % 2))) == dev::nm::wire_dequantize(c, sc, false);
        }
      }
    }
    if (!ok) {
      if (atomicAdd(bad, 1ull) == 0) *first = u;
    }
  }
}

}  // namespace

gpuError_t launch_widen_subject(Subject s, const dev::Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks,
                                gpuStream_t st) {
  if (s == Subject::WidenProduct) return dev::launch_widen(src, count, rows, n, blocks, st);
  if (count <= 0) return gpuSuccess;
  if (!dev::widen_shape_ok(count, rows, n)) return gpuErrorInvalidValue;
  switch (s) {
    case Subject::WidenRegisters:
      dev::launch_widen_rows<dev::Int8Codec>(src, count, rows, n, blocks, st);
      break;
    case Subject::WidenBulkStore:  // registers where there is no TMA
      if (!dev::launch_widen_bulk_store(src, count, rows, n, blocks, st))
        dev::launch_widen_rows<dev::Int8Codec>(src, count, rows, n, blocks, st);
      break;
    case Subject::WidenInt16:
      dev::launch_widen_rows<Int16Codec>(src, count, rows, n, blocks, st);
      break;
    case Subject::WidenHw16:
      dev::launch_widen_rows<Hw16Codec>(src, count, rows, n, blocks, st);
      break;
    case Subject::WidenCeiling:
      dev::launch_widen_rows<CeilingCodec>(src, count, rows, n, blocks, st);
      break;
    default:
      return gpuErrorInvalidValue;
  }
  return gpuGetLastError();
}

gpuError_t launch_fp8_selftest(uint64_t begin, uint64_t count, float inv, unsigned long long* bad,
                               unsigned long long* first, gpuStream_t s) {
  fp8_selftest_kernel<<<unsigned(dev::sm_count_cached() * 8), 256, 0, s>>>(begin, count, inv, bad, first);
  return gpuGetLastError();
}

}  // namespace gemmar::lab
