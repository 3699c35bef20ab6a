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
  kWidenHw16 = 0,     // 16-byte code loads, the conversion-unit chain (dequant4), two 16-byte stores 32 bytes apart
  kWidenInt16 = 1,    // the same accesses, the integer decode (dequant8)
  kWidenInt8 = 2,     // 8-byte code loads, the integer decode, one 16-byte store: each warp store is contiguous
  kWidenCeiling = 3,  // 8-byte loads, 16-byte stores of the codes zero-extended, no arithmetic: this access
                      // pattern's memory ceiling (measurement only; its output is not a dequantize)
};

#if defined(GEMMAR_GPU_CUDA) && defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define GEMMAR_WIDEN_BULK_STORE 1
#endif
constexpr int kBulkVecs = 14;  // code vectors per lane per round, as int8's 112 bytes of loads in flight
// A warp's round of bf16: 7 KiB (224 KiB for 32 warps).
[[maybe_unused]] constexpr int kBulkStageBytes = kBulkVecs * 32 * 16;

// The pull with its stores through the TMA. A pull's grid is smaller than the device (mori's 64 blocks), and an SM
// stores through its load/store path at a fixed rate: on the H100, 16-byte stores alone on 64 blocks of 1024
// threads move 2450-2498 GB/s where loads alone move 3110-3137, so int8's pull (two bytes written per byte read)
// was held to 0.82 of cudaMemcpy by its stores. Here each warp converts a round of int8's row (14 code vectors per
// lane, the same loads) into its own 7 KiB of shared memory (lane-contiguous 16-byte stores: no bank conflicts)
// and lane 0 sends that run to global memory with one bulk copy, which leaves the SM by the TMA, not the
// load/store path (docs/results/h100-1gpu-2026-12-06-pull). Before the next round
// overwrites the stage, lane 0 waits until the copy has read it (wait_group.read), not for the global write.
// An empty body where there is no TMA: the launcher runs int8 there.
__global__ void __launch_bounds__(kWidenThreadsPull)
    widen_bulk_store_kernel(Fp8Sources src, int count, int rows, int n) {
#if defined(GEMMAR_WIDEN_BULK_STORE)
  extern __shared__ __align__(128) uint4 stage_all[];
  const int nv = n / 8;
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int warps = int(blockDim.x) / 32;
  uint4* stage = stage_all + warp * (kBulkStageBytes / 16);
  const uint32_t stage_s = static_cast<uint32_t>(__cvta_generic_to_shared(stage));
  const int units = count * rows;
  for (int unit = int(blockIdx.x) * warps + warp; unit < units; unit += int(gridDim.x) * warps) {
    const int s = unit / rows, row = unit - s * rows;
    const uint2* qp = reinterpret_cast<const uint2*>(src.q[s] + int64_t(row) * n);
    uint4* op = reinterpret_cast<uint4*>(src.out[s] + int64_t(row) * n);
    const float sc = src.scale[s][row];
    const bool sc_finite = (__float_as_uint(sc) & 0x7f800000u) != 0x7f800000u;
    for (int base = 0; base < nv; base += 32 * kBulkVecs) {
      uint2 q[kBulkVecs];
#pragma unroll
      for (int j = 0; j < kBulkVecs; ++j) {
        const int v = base + lane + 32 * j;
        if (v < nv) q[j] = qp[v];
      }
      if (lane == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
      __syncwarp();
#pragma unroll
      for (int j = 0; j < kBulkVecs; ++j) {
        const int v = base + lane + 32 * j;
        if (v < nv) stage[lane + 32 * j] = dequant8(q[j].x, q[j].y, sc, sc_finite);
      }
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      __syncwarp();
      if (lane == 0) {
        const int bytes = min(32 * kBulkVecs, nv - base) * 16;
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(op + base), "r"(stage_s),
                     "r"(bytes)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      }
    }
  }
  if (lane == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
  (void)src, (void)count, (void)rows, (void)n;
#endif
}

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
// The TMA-store pull on compute capability 9.x (what the sm_90a build runs); false (nothing launched) elsewhere.
bool launch_widen_bulk_store(const Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks, gpuStream_t s) {
#if defined(GEMMAR_GPU_CUDA)
  if (!current_device_is_hopper()) return false;
  static bool attr_set[kMaxWorld] = {};  // per device, as the GEMM launchers set theirs
  int dev = 0;
  if (gpuGetDevice(&dev) != gpuSuccess || dev < 0 || dev >= kMaxWorld) return false;
  if (!attr_set[dev]) {
    // For the largest block (the pull's 1024 threads); the local grid's 256-thread blocks need less.
    if (gpuFuncSetAttribute(widen_bulk_store_kernel, gpuFuncAttributeMaxDynamicSharedMemorySize,
                            kWidenThreadsPull / 32 * kBulkStageBytes) != gpuSuccess)
      return false;
    attr_set[dev] = true;
  }
  const int threads = blocks > 0 ? kWidenThreadsPull : kWidenThreadsLocal;
  const int64_t warps = threads / 32, units = int64_t(count) * rows;
  const int grid =
      blocks > 0 ? blocks : int(std::min<int64_t>((units + warps - 1) / warps, int64_t(sm_count_cached()) * 8));
  widen_bulk_store_kernel<<<unsigned(grid), threads, int(warps) * kBulkStageBytes, s>>>(src, count, int(rows), int(n));
  return true;
#else
  (void)src, (void)count, (void)rows, (void)n, (void)blocks, (void)s;
  return false;
#endif
}

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
    case WidenKernel::BulkStore:
      if (!launch_widen_bulk_store(src, count, rows, n, blocks, s))
        launch_widen_kind<kWidenInt8>(src, count, rows, n, blocks, s);
      break;
    case WidenKernel::Int8Registers:
      launch_widen_kind<kWidenInt8>(src, count, rows, n, blocks, s);
      break;
    case WidenKernel::Int8:  // the TMA's stores for a pull on part of the device, else registers' (docs/kernels.md)
      if (blocks > 0 && blocks < sm_count_cached() && launch_widen_bulk_store(src, count, rows, n, blocks, s)) break;
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
