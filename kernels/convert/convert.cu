// The fp8 wire's standalone conversions: the quantize (bf16 -> codes + row scales), the widen (codes -> bf16, both
// the local dequantize and the pull over peer pointers) and the exhaustive device selftest of both.
#include <algorithm>
#include <type_traits>

#include "kernels/convert/fp8_wire.cuh"

namespace gemmar::kernels::dev {
namespace {

constexpr int kQuantThreads = 128;
constexpr int kQuantVecs = 8;  // 16-byte vectors per thread held in registers: rows up to 128*8*8 = 8192 columns

// One row per block, read once: the row stays in registers (kQuantVecs x 16 B per thread) across the block's
// NaN-propagating amax, then is scaled and narrowed from there. Rows wider than 8192 columns take the
// two-pass quantize_row.
__global__ void __launch_bounds__(kQuantThreads)
    quantize_kernel(const uint16_t* in, int64_t n, uint8_t* q_out, float* q_scale) {
  const int64_t row = blockIdx.x;
  const uint16_t* rp = in + row * n;
  const int nv = int(n / 8);
  if (nv > kQuantThreads * kQuantVecs) {
    quantize_row(rp, n, q_out + row * n, q_scale + row);
    return;
  }
  uint4 x[kQuantVecs];
#pragma unroll
  for (int i = 0; i < kQuantVecs; ++i) {
    const int v = int(threadIdx.x) + i * kQuantThreads;
    x[i] = v < nv ? reinterpret_cast<const uint4*>(rp)[v] : make_uint4(0u, 0u, 0u, 0u);
  }
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kQuantVecs; ++i) {
    float f[8];
    unpack8(x[i], f);
#pragma unroll
    for (int e = 0; e < 8; ++e) amax = nm::amax_step(amax, f[e]);
  }
  amax = block_amax(amax);
  const float inv = nm::wire_inv_scale(amax, false);
  uint2* qp = reinterpret_cast<uint2*>(q_out + row * n);
#pragma unroll
  for (int i = 0; i < kQuantVecs; ++i) {
    const int v = int(threadIdx.x) + i * kQuantThreads;
    if (v < nv) qp[v] = quant8(x[i], inv);
  }
  if (threadIdx.x == 0) q_scale[row] = nm::wire_scale(amax, false);
}

constexpr int kWidenThreadsLocal = 256;  // the local dequantize: many small blocks, several per SM
constexpr int kWidenThreadsPull = 1024;  // the pull: its grid is fixed by --pull-blocks, so each block is as
                                         // large as a block can be (bytes in flight per block, Little's law)
// How a lane reads a row (the template side of kernel_options.hpp's WidenKernel, default int8).
enum WidenKind : int {
  kWidenHw16 = 0,    // 16-byte code loads, the conversion-unit chain (dequant4), two 16-byte stores 32 bytes apart
  kWidenInt16 = 1,   // the same accesses, the integer decode (dequant8)
  kWidenInt8 = 2,    // 8-byte code loads, the integer decode, one 16-byte store: each warp store is contiguous
  kWidenCeiling = 3  // 8-byte loads, 16-byte stores of the codes zero-extended, no arithmetic: this access
                     // pattern's memory ceiling (measurement only; its output is not a dequantize)
};

// The fp8 wire's receive side (dequantize, and the pull over peer pointers): one warp per (source, row) at a
// time, the rows of all `count` sources walked grid-stride by the warps, so every warp runs on its own (no
// block barrier: loads of one warp overlap the conversions of another). A lane takes the row's code vectors
// lane + 32j, issues 112 bytes of loads before it converts any, then stores. 32-bit indices
// (checked by the launcher).
template <int kKind>
__global__ void __launch_bounds__(kWidenThreadsPull) widen_kernel(Fp8Sources src, int count, int rows, int n) {
  constexpr int kCodeBytes = kKind == kWidenHw16 || kKind == kWidenInt16 ? 16 : 8;
  constexpr int kVecs = 112 / kCodeBytes;  // loads in flight per lane
  using CodeVec = typename std::conditional<kCodeBytes == 16, uint4, uint2>::type;
  const int nv = n / kCodeBytes;
  const int lane = int(threadIdx.x) % GEMMAR_WARP_SIZE;
  const int warps = int(blockDim.x) / GEMMAR_WARP_SIZE;
  const int units = count * rows;
  for (int unit = int(blockIdx.x) * warps + int(threadIdx.x) / GEMMAR_WARP_SIZE; unit < units;
       unit += int(gridDim.x) * warps) {
    const int s = unit / rows, row = unit - s * rows;
    const CodeVec* qp = reinterpret_cast<const CodeVec*>(src.q[s] + int64_t(row) * n);
    uint4* op = reinterpret_cast<uint4*>(src.out[s] + int64_t(row) * n);
    const float sc = src.scale[s][row];
    const bool sc_finite = (__float_as_uint(sc) & 0x7f800000u) != 0x7f800000u;
    for (int v0 = lane; v0 < nv; v0 += GEMMAR_WARP_SIZE * kVecs) {
      CodeVec q[kVecs];
#pragma unroll
      for (int j = 0; j < kVecs; ++j) {
        const int v = v0 + GEMMAR_WARP_SIZE * j;
        if (v < nv) q[j] = qp[v];
      }
#pragma unroll
      for (int j = 0; j < kVecs; ++j) {
        const int v = v0 + GEMMAR_WARP_SIZE * j;
        if (v >= nv) break;
        if constexpr (kCodeBytes == 16) {
          const uint4 x = q[j];
          uint4 a, b;
          if constexpr (kKind == kWidenHw16) {
            dequant4(x.x, sc, a.x, a.y);
            dequant4(x.y, sc, a.z, a.w);
            dequant4(x.z, sc, b.x, b.y);
            dequant4(x.w, sc, b.z, b.w);
          } else {
            a = dequant8(x.x, x.y, sc, sc_finite);
            b = dequant8(x.z, x.w, sc, sc_finite);
          }
          op[2 * v] = a;
          op[2 * v + 1] = b;
        } else if constexpr (kKind == kWidenInt8) {
          op[v] = dequant8(q[j].x, q[j].y, sc, sc_finite);
        } else {
          const uint2 x = q[j];
          op[v] = make_uint4(__byte_perm(x.x, 0u, 0x4140u), __byte_perm(x.x, 0u, 0x4342u),
                             __byte_perm(x.y, 0u, 0x4140u), __byte_perm(x.y, 0u, 0x4342u));
        }
      }
    }
  }
}

// Exhaustive check of the conversions above against numerics_inline.hpp: every fp32 bit pattern through the
// quantize path (x * 1.0 then e4m3; plus x * inv for a few scales) and every code x several scales through
// the dequantize path. Counts mismatches into *bad and records the first offending input in *first.
__global__ void fp8_selftest_kernel(uint64_t begin, uint64_t count, float inv, unsigned long long* bad,
                                    unsigned long long* first) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint32_t u = uint32_t(begin + i);
    const float x = nm::bits_f32(u);
    const float y = nm::mul_rn(x, inv);
    const uint32_t hw = e4m3x4_from_f32(y, y, y, y) & 0xffu;
    const uint32_t sw = nm::quantize_scaled(x, inv, false);
    bool ok = hw == sw;
    if ((u & 0xffffu) == 0) {  // every 65536th input also checks the dequantize of code (u >> 16) & 0xff
      const uint32_t code = (u >> 16) & 0xffu;
      const float scale = nm::bits_f32(0x3c000000u + (u >> 24) * 0x00123457u);
      uint32_t o01, o23;
      dequant4(code * 0x01010101u, scale, o01, o23);
      ok = ok && (o01 & 0xffffu) == nm::wire_dequantize(uint8_t(code), scale, false) && o01 == o23;
      // The widen kernel's dequant8 (integer decode, or dequant4 for NaN codes and non-finite scales) at that
      // scale and at 2^(e - 127) for e = u >> 24 (0: a zero scale, 255: +inf; subnormal and overflowing
      // products included), and at NaN: one of the eight codes is this one, the others vary.
      const uint32_t other = (code * 0x9e3779b1u) >> 8;
      const float scales[3] = {scale, nm::bits_f32((u >> 24) << 23), nm::bits_f32(0x7fc00000u)};
      for (const float sc : scales) {
        const bool fin = (__float_as_uint(sc) & 0x7f800000u) != 0x7f800000u;
        const uint4 o = dequant8(code | (other << 8), other, sc, fin);
        const uint32_t words[2] = {code | (other << 8), other};
        const uint32_t outs[4] = {o.x, o.y, o.z, o.w};
        for (int e = 0; e < 8; ++e) {
          const uint8_t c = uint8_t(words[e / 4] >> (8 * (e % 4)));
          ok = ok && uint16_t(outs[e / 2] >> (16 * (e % 2))) == nm::wire_dequantize(c, sc, false);
        }
      }
    }
    if (!ok) {
      if (atomicAdd(bad, 1ull) == 0) *first = u;
    }
  }
}

}  // namespace

gpuError_t launch_quantize(const uint16_t* in, int64_t rows, int64_t n, uint8_t* q_out, float* q_scale, gpuStream_t s) {
  quantize_kernel<<<unsigned(rows), kQuantThreads, 0, s>>>(in, n, q_out, q_scale);
  return gpuGetLastError();
}

namespace {
template <int kKind>
void launch_widen_kind(const Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks, gpuStream_t s) {
  if (blocks > 0) {
    widen_kernel<kKind><<<unsigned(blocks), kWidenThreadsPull, 0, s>>>(src, count, int(rows), int(n));
  } else {
    const int64_t warps = kWidenThreadsLocal / GEMMAR_WARP_SIZE, units = int64_t(count) * rows;  // a warp each
    const int grid = int(std::min<int64_t>((units + warps - 1) / warps, int64_t(sm_count_cached()) * 8));
    widen_kernel<kKind><<<unsigned(grid), kWidenThreadsLocal, 0, s>>>(src, count, int(rows), int(n));
  }
}
}  // namespace

gpuError_t launch_widen(const Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks, WidenKernel kind,
                        gpuStream_t s) {
  if (count <= 0) return gpuSuccess;
  if (int64_t(count) * rows >= (int64_t(1) << 31) || n >= (int64_t(1) << 31) || n % 16 != 0)
    return gpuErrorInvalidValue;
  switch (kind) {
    case WidenKernel::Hw16:
      launch_widen_kind<kWidenHw16>(src, count, rows, n, blocks, s);
      break;
    case WidenKernel::Int16:
      launch_widen_kind<kWidenInt16>(src, count, rows, n, blocks, s);
      break;
    case WidenKernel::Ceiling:
      launch_widen_kind<kWidenCeiling>(src, count, rows, n, blocks, s);
      break;
    case WidenKernel::Int8:
      launch_widen_kind<kWidenInt8>(src, count, rows, n, blocks, s);
      break;
  }
  return gpuGetLastError();
}

gpuError_t launch_fp8_selftest(uint64_t begin, uint64_t count, float inv, unsigned long long* bad,
                               unsigned long long* first, gpuStream_t s) {
  fp8_selftest_kernel<<<unsigned(sm_count_cached() * 8), 256, 0, s>>>(begin, count, inv, bad, first);
  return gpuGetLastError();
}

}  // namespace gemmar::kernels::dev
