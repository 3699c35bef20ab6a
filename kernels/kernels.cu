// The device kernels of gemm_ar, one source for HIP and CUDA (kernels/gpu_compat.hpp). Every rounding point of
// the collective (bf16 stores, the fp32 reduce, the fp8 wire) calls reference/numerics_inline.hpp, the same
// header the CPU emulation uses, so the two agree bit for bit. Only the GEMM's fp32 accumulation order is
// hardware-defined; that is why the driver re-emulates the collective from the partials read back here.
#include "kernels/kernels.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "reference/no_release_pattern.hpp"
#include "reference/numerics_inline.hpp"

#if defined(GEMMAR_GPU_CUDA)
#include <cuda.h>  // CUtensorMap (types only: the encoder is fetched from the driver at run time)
#include <cudaTypedefs.h>

#include <mutex>
#include <vector>
#endif

namespace gemmar::kernels::dev {
namespace {

namespace nm = gemmar::numerics;

constexpr int kThreads = 256;
constexpr int kLds = kBlockK + 16;           // smem row stride (bytes): 16 B pad keeps ldmatrix conflict-free
constexpr int kTileBytes = kBlockM * kLds;   // one 128 x 128 fp8 tile (+pad)
#if defined(GEMMAR_GPU_HIP)
constexpr int kStages = 1;                   // gfx942 has 64 KiB of LDS per workgroup
#else
constexpr int kStages = 3;                   // cp.async pipeline depth
#endif
constexpr int kGemmSmem = kStages * 2 * kTileBytes;

// A bf16 pair whose NaN halves (any payload, as the hardware's cvt.rn.bf16x2.f32 gives them) become the canonical
// 0x7fc0 of nm::f32_to_bf16.
[[maybe_unused]] __device__ __forceinline__ uint32_t bf16x2_canon_nan(uint32_t r) {
  if ((r & 0x7fffu) > 0x7f80u) r = (r & 0xffff0000u) | 0x7fc0u;
  if (((r >> 16) & 0x7fffu) > 0x7f80u) r = (r & 0x0000ffffu) | 0x7fc00000u;
  return r;
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  return uint32_t(nm::f32_to_bf16(lo)) | (uint32_t(nm::f32_to_bf16(hi)) << 16);
}

// The tile's rows all belong to one slice (slice_rows is a multiple of 128), so one destination per CTA.
__device__ __forceinline__ uint16_t* tile_dest(const GemmDest& d, int64_t m0, int& slice) {
  slice = int(m0 / d.slice_rows);
  uint16_t* base = d.dst[slice];
  return base ? base - int64_t(slice) * d.slice_rows * d.ldd : nullptr;  // indexable by absolute row
}

__device__ __forceinline__ void tile_done(const GemmDest& d, int slice) {
  __syncthreads();
  if (threadIdx.x == 0 && d.counters) {
    __threadfence();  // the tile's stores are visible before its count (the release the put waits on)
    atomicAdd(d.counters + slice, 1u);
  }
}

}  // namespace
}  // namespace gemmar::kernels::dev
#if defined(GEMMAR_GPU_CUDA)
#include "kernels/gemm_wgmma.cuh"
#endif
namespace gemmar::kernels::dev {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Blockscale GEMM. CTA tile 128 x 128, K step 128 (one scale block). Per K block the MMA accumulates the
// unscaled fp8 dot products in `blk`; then total = total + blk * (sa * sb) (numerics::block_accumulate).
// Each instruction family below supplies BlockscaleAcc, blockscale_main_loop and blockscale_store_tile. They
// are forceinline and take the accumulators by reference, with every index into them a constant after
// unrolling, so the tile stays in registers as it did when this was one function body.

// What every leg needs of the CTA's tile (operand layouts: kernels.hpp, launch_gemm_blockscale).
struct BlockscaleTile {
  const uint8_t* A;
  const uint8_t* B;
  const float* SA;
  const float* sb_row;  // the tile's 128 columns share one b_scale row: one scale per K block
  int64_t M, K, m0, n0;
  int KB;
  int tid;  // read once: under -nogpulib HIP's threadIdx.x is an opaque call the K loop would repeat
};

#if !defined(GEMMAR_MMA_SM89)
// The MFMA and scalar paths have no async copy: one K block at a time, staged through registers.
__device__ __forceinline__ void load_stage_sync(const BlockscaleTile& t, uint8_t* sa, uint8_t* sbm, int kb) {
  const int tid = t.tid;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = tid + i * kThreads;
    const int row = c >> 3, col16 = c & 7;
    *reinterpret_cast<uint4*>(sa + row * kLds + col16 * 16) =
        *reinterpret_cast<const uint4*>(t.A + (t.m0 + row) * t.K + int64_t(kb) * kBlockK + col16 * 16);
    *reinterpret_cast<uint4*>(sbm + row * kLds + col16 * 16) =
        *reinterpret_cast<const uint4*>(t.B + (t.n0 + row) * t.K + int64_t(kb) * kBlockK + col16 * 16);
  }
}
#endif

#if defined(GEMMAR_MMA_SM89)
// 2 x 4 warps, warp tile 64 x 32 = 4 x 4 m16n8 fragments (PTX ISA 9.7.14.5 for the fragment layouts).
using BlockscaleAcc = float[4][4][4];

__device__ __forceinline__ void sm89_load_stage(const BlockscaleTile& t, uint8_t* smem, int stage, int kb) {
  uint8_t* sa = smem + stage * 2 * kTileBytes;
  uint8_t* sbm = sa + kTileBytes;
  const int tid = t.tid;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = tid + i * kThreads;
    const int row = c >> 3, col16 = c & 7;
    gpu::cp_async_16(sa + row * kLds + col16 * 16,
                     t.A + (t.m0 + row) * t.K + int64_t(kb) * kBlockK + col16 * 16);
    gpu::cp_async_16(sbm + row * kLds + col16 * 16,
                     t.B + (t.n0 + row) * t.K + int64_t(kb) * kBlockK + col16 * 16);
  }
}

__device__ __forceinline__ void sm89_mma_block(int tid, const uint8_t* sa, const uint8_t* sbm,
                                               BlockscaleAcc& blk) {
  const int warp = tid / 32, lane = tid % 32;
  const int wm = warp / 4, wn = warp % 4;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) blk[i][j][e] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    uint32_t af[4][4], bfr[2][4];
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
      gpu::ldmatrix_x4(af[mt], sa + (wm * 64 + mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kLds + kk * 32 +
                                   (lane >> 4) * 16);
#pragma unroll
    for (int np = 0; np < 2; ++np)
      gpu::ldmatrix_x4(bfr[np], sbm + (wn * 32 + np * 16 + (lane & 7) + (lane >> 4) * 8) * kLds + kk * 32 +
                                    ((lane >> 3) & 1) * 16);
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const uint32_t b2[2] = {bfr[nt / 2][(nt % 2) * 2], bfr[nt / 2][(nt % 2) * 2 + 1]};
        gpu::mma_e4m3_16x8x32(blk[mt][nt], af[mt], b2);
      }
  }
}

// Accumulators 0, 1 of an m16n8 fragment sit in row g, 2, 3 in row g + 8.
__device__ __forceinline__ void sm89_promote(const BlockscaleTile& t, int kb, const BlockscaleAcc& blk,
                                             BlockscaleAcc& total) {
  const int tid = t.tid;
  const int wm = tid / 32 / 4, g = (tid % 32) >> 2;
  const float sbv = t.sb_row[kb];
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
    const int64_t r0 = t.m0 + wm * 64 + mt * 16 + g;
    const float sa0 = t.SA[int64_t(kb) * t.M + r0], sa1 = t.SA[int64_t(kb) * t.M + r0 + 8];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      total[mt][nt][0] = nm::block_accumulate(total[mt][nt][0], blk[mt][nt][0], sa0, sbv);
      total[mt][nt][1] = nm::block_accumulate(total[mt][nt][1], blk[mt][nt][1], sa0, sbv);
      total[mt][nt][2] = nm::block_accumulate(total[mt][nt][2], blk[mt][nt][2], sa1, sbv);
      total[mt][nt][3] = nm::block_accumulate(total[mt][nt][3], blk[mt][nt][3], sa1, sbv);
    }
  }
}

// kStages-deep cp.async ring: stage kb + kStages - 1 is in flight while K block kb is multiplied.
__device__ __forceinline__ void blockscale_main_loop(const BlockscaleTile& t, uint8_t* smem,
                                                     BlockscaleAcc& total) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) total[i][j][e] = 0.0f;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < t.KB) sm89_load_stage(t, smem, s, s);
    gpu::cp_async_commit();
  }
  for (int kb = 0; kb < t.KB; ++kb) {
    gpu::cp_async_wait<kStages - 2>();
    __syncthreads();
    const int nk = kb + kStages - 1;
    if (nk < t.KB) sm89_load_stage(t, smem, nk % kStages, nk);
    gpu::cp_async_commit();

    const uint8_t* sa = smem + (kb % kStages) * 2 * kTileBytes;
    BlockscaleAcc blk;
    sm89_mma_block(t.tid, sa, sa + kTileBytes, blk);
    sm89_promote(t, kb, blk, total);
  }
  gpu::cp_async_wait<0>();
}

__device__ __forceinline__ void blockscale_store_tile(const BlockscaleTile& t, uint16_t* C, int64_t ldd,
                                                      const BlockscaleAcc& total) {
  const int tid = t.tid;
  const int warp = tid / 32, lane = tid % 32;
  const int wm = warp / 4, wn = warp % 4;
  const int g = lane >> 2, tq = lane & 3;
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      const int64_t r = t.m0 + wm * 64 + mt * 16 + g;
      const int64_t c = t.n0 + wn * 32 + nt * 8 + 2 * tq;
      *reinterpret_cast<uint32_t*>(C + r * ldd + c) = pack_bf16x2(total[mt][nt][0], total[mt][nt][1]);
      *reinterpret_cast<uint32_t*>(C + (r + 8) * ldd + c) = pack_bf16x2(total[mt][nt][2], total[mt][nt][3]);
    }
}

#elif defined(GEMMAR_MMA_MFMA)
// 2 x 2 waves, wave tile 64 x 64 = 2 x 2 MFMA 32x32 (accumulator layout: gpu_compat.hpp, mfma_e4m3_32x32x16).
using BlockscaleAcc = gpu::f32x16[2][2];

__device__ __forceinline__ int64_t mfma_acc_row(int64_t m0, int wm, int mt, int e, int lane) {
  return m0 + wm * 64 + mt * 32 + 8 * (e / 4) + 4 * (lane / 32) + (e % 4);
}

__device__ __forceinline__ void mfma_mma_block(int tid, const uint8_t* sa, const uint8_t* sbm,
                                               BlockscaleAcc& blk) {
  const int wave = tid / 64, lane = tid % 64;
  const int wm = wave / 2, wn = wave % 2;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 16; ++e) blk[i][j][e] = 0.0f;
#pragma unroll
  for (int ks = 0; ks < kBlockK / 16; ++ks) {
    long af[2], bfr[2];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
      af[mt] = *reinterpret_cast<const long*>(sa + (wm * 64 + mt * 32 + lane % 32) * kLds + ks * 16 +
                                              (lane / 32) * 8);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
      bfr[nt] = *reinterpret_cast<const long*>(sbm + (wn * 64 + nt * 32 + lane % 32) * kLds + ks * 16 +
                                               (lane / 32) * 8);
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) gpu::mfma_e4m3_32x32x16(blk[mt][nt], af[mt], bfr[nt]);
  }
}

__device__ __forceinline__ void mfma_promote(const BlockscaleTile& t, int kb, const BlockscaleAcc& blk,
                                             BlockscaleAcc& total) {
  const int tid = t.tid;
  const int wm = tid / 64 / 2, lane = tid % 64;
  const float sbv = t.sb_row[kb];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int e = 0; e < 16; ++e) {
      const float sav = t.SA[int64_t(kb) * t.M + mfma_acc_row(t.m0, wm, mt, e, lane)];
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
        total[mt][nt][e] = nm::block_accumulate(total[mt][nt][e], blk[mt][nt][e], sav, sbv);
    }
}

__device__ __forceinline__ void blockscale_main_loop(const BlockscaleTile& t, uint8_t* smem,
                                                     BlockscaleAcc& total) {
  uint8_t* sa = smem;
  uint8_t* sbm = smem + kTileBytes;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 16; ++e) total[i][j][e] = 0.0f;
  for (int kb = 0; kb < t.KB; ++kb) {
    load_stage_sync(t, sa, sbm, kb);
    __syncthreads();
    BlockscaleAcc blk;
    mfma_mma_block(t.tid, sa, sbm, blk);
    mfma_promote(t, kb, blk, total);
    __syncthreads();  // the single stage is overwritten by the next K block
  }
}

__device__ __forceinline__ void blockscale_store_tile(const BlockscaleTile& t, uint16_t* C, int64_t ldd,
                                                      const BlockscaleAcc& total) {
  const int tid = t.tid;
  const int wave = tid / 64, lane = tid % 64;
  const int wm = wave / 2, wn = wave % 2;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 16; ++e) {
        const int64_t r = mfma_acc_row(t.m0, wm, mt, e, lane);
        const int64_t c = t.n0 + wn * 64 + nt * 32 + lane % 32;
        C[r * ldd + c] = nm::f32_to_bf16(total[mt][nt][e]);
      }
}

#else  // scalar fallback: each thread owns an 8 x 8 block of the tile
using BlockscaleAcc = float[8][8];

__device__ __forceinline__ void simt_dot_block(int tid, const uint8_t* sa, const uint8_t* sbm,
                                               BlockscaleAcc& blk) {
  const int ty = tid / 16, tx = tid % 16;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) blk[i][j] = 0.0f;
  for (int kk = 0; kk < kBlockK; ++kk) {
    float av[8], bv[8];
    for (int i = 0; i < 8; ++i) av[i] = nm::e4m3_to_f32(sa[(ty * 8 + i) * kLds + kk], false);
    for (int j = 0; j < 8; ++j) bv[j] = nm::e4m3_to_f32(sbm[(tx * 8 + j) * kLds + kk], false);
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) blk[i][j] += av[i] * bv[j];
  }
}

__device__ __forceinline__ void blockscale_main_loop(const BlockscaleTile& t, uint8_t* smem,
                                                     BlockscaleAcc& total) {
  uint8_t* sa = smem;
  uint8_t* sbm = smem + kTileBytes;
  const int ty = t.tid / 16;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) total[i][j] = 0.0f;
  for (int kb = 0; kb < t.KB; ++kb) {
    load_stage_sync(t, sa, sbm, kb);
    __syncthreads();
    BlockscaleAcc blk;
    simt_dot_block(t.tid, sa, sbm, blk);
    const float sbv = t.sb_row[kb];
    for (int i = 0; i < 8; ++i) {
      const float sav = t.SA[int64_t(kb) * t.M + t.m0 + ty * 8 + i];
      for (int j = 0; j < 8; ++j) total[i][j] = nm::block_accumulate(total[i][j], blk[i][j], sav, sbv);
    }
    __syncthreads();
  }
}

__device__ __forceinline__ void blockscale_store_tile(const BlockscaleTile& t, uint16_t* C, int64_t ldd,
                                                      const BlockscaleAcc& total) {
  const int tid = t.tid;
  const int ty = tid / 16, tx = tid % 16;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) C[(t.m0 + ty * 8 + i) * ldd + t.n0 + tx * 8 + j] = nm::f32_to_bf16(total[i][j]);
}
#endif

// A null destination (the injected silent-scatter fault) drops the tile's stores, not its count.
__device__ __forceinline__ void blockscale_epilogue(const BlockscaleTile& t, const GemmDest& dest, uint16_t* C,
                                                    int slice, const BlockscaleAcc& total) {
  if (C) blockscale_store_tile(t, C, dest.ldd, total);
  tile_done(dest, slice);
}

__global__ void __launch_bounds__(kThreads, 1)
    gemm_blockscale_kernel(const uint8_t* __restrict__ A, const uint8_t* __restrict__ B,
                           const float* __restrict__ SA, const float* __restrict__ SB, int64_t M, int64_t N,
                           int64_t K, int64_t m_begin, GemmDest dest) {
  extern __shared__ __align__(16) uint8_t smem[];
  (void)N;
  const int64_t n0 = int64_t(blockIdx.x) * kBlockN;
  const int KB = int(K / kBlockK);
  const int64_t m0 = m_begin + int64_t(blockIdx.y) * kBlockM;
  const BlockscaleTile t{A, B, SA, SB + (n0 / kBlockN) * KB, M, K, m0, n0, KB, int(threadIdx.x)};
  // Ahead of the main loop as before the split: resolved after it, gfx942 needs more AGPRs.
  int slice = 0;
  uint16_t* C = tile_dest(dest, m0, slice);
  BlockscaleAcc total;
  blockscale_main_loop(t, smem, total);
  blockscale_epilogue(t, dest, C, slice, total);
}

// ---------------------------------------------------------------------------------------------------------
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
__device__ void quantize_row(const uint16_t* in, int64_t n, uint8_t* q, float* scale_out, float acc_amax = -1.0f) {
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

__global__ void __launch_bounds__(kThreads) reduce_kernel(SlotSet slots, int owner, int world, int64_t n,
                                                          uint16_t* out, uint8_t* q_out, float* q_scale) {
  const int64_t row = blockIdx.x;
  const int64_t nv = n / 8;
  uint16_t* orow = out + row * n;
  float acc_amax = 0.0f;  // fuse_quantize: the wire's amax over the fp32 accumulator, before the bf16 store
  for (int64_t v = threadIdx.x; v < nv; v += blockDim.x) {
    // numerics::reduce_element, 8 lanes at a time: acc starts at 0, adds peers in order (owner + j) % world.
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int j = 0; j < world; ++j) {
      const int p = (owner + j) % world;
      float f[8];
      unpack8(reinterpret_cast<const uint4*>(slots.slot[p] + row * n)[v], f);
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
  const uint32_t t = (w & 0x7f7f7f7fu) ^ 0x7f7f7f7fu;  // zero byte <=> NaN code
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

constexpr int kQuantThreads = 128;
constexpr int kQuantVecs = 8;  // 16-byte vectors per thread held in registers: rows up to 128*8*8 = 8192 columns

// One row per block, read once: the row stays in registers (kQuantVecs x 16 B per thread) across the block's
// NaN-propagating amax, then is scaled and narrowed from there. Rows wider than 8192 columns take the
// two-pass quantize_row.
__global__ void __launch_bounds__(kQuantThreads) quantize_kernel(const uint16_t* in, int64_t n, uint8_t* q_out,
                                                                 float* q_scale) {
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

constexpr int kWidenThreadsLocal = 256;  // the local dequantize: many small blocks, several per SM
constexpr int kWidenThreadsPull = 1024;  // the pull: its grid is fixed by --pull-blocks, so each block is as
                                         // large as a block can be (bytes in flight per block, Little's law)
// How a lane reads a row (measurement: GEMMAR_WIDEN_KERNEL=hw16|int16|int8|ceiling, default int8).
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

__global__ void __launch_bounds__(kThreads) copy_slices_kernel(Bf16Sources src, int count, int64_t elems) {
  const int64_t nv = elems / 8;
  const int64_t total = nv * count;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int s = int(i / nv);
    const int64_t v = i - int64_t(s) * nv;
    reinterpret_cast<uint4*>(src.out[s])[v] = reinterpret_cast<const uint4*>(src.src[s])[v];
  }
}

// One thread per 64-byte line of every (owner, row) of the set: rows outside the owner's hit bands cost one
// mask test; a stale line is four 16-byte stores (pre-reduce bf16 contents, or fp8 zero codes).
__global__ void __launch_bounds__(kThreads) no_release_kernel(NoReleaseSet set, int count, int receiver, uint64_t seed,
                                                              uint64_t threshold, int64_t slice_rows, int64_t n,
                                                              bool fp8) {
  const int64_t elem_bytes = fp8 ? 1 : 2;
  const int64_t lines = n * elem_bytes / no_release::kLineBytes;
  const int64_t per_src = slice_rows * lines;
  const int64_t total = per_src * count;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int s = int(i / per_src);
    const int64_t rem = i - int64_t(s) * per_src;
    const int64_t lrow = rem / lines, line = rem - lrow * lines;
    const int owner = set.owner[s];
    const int64_t row = int64_t(owner) * slice_rows + lrow;
    if (!((set.band_mask[s] >> no_release::band_of(row, owner, slice_rows)) & 1u)) continue;
    if (!no_release::line_stale(seed, receiver, row, line, threshold)) continue;
    const int64_t byte_off = lrow * n * elem_bytes + line * no_release::kLineBytes;
    uint4* dst = reinterpret_cast<uint4*>(static_cast<uint8_t*>(set.landed[s]) + byte_off);
    if (fp8) {
#pragma unroll
      for (int v = 0; v < 4; ++v) dst[v] = make_uint4(0u, 0u, 0u, 0u);
    } else {
      const uint4* src = reinterpret_cast<const uint4*>(reinterpret_cast<const uint8_t*>(set.pre[s]) + byte_off);
#pragma unroll
      for (int v = 0; v < 4; ++v) dst[v] = src[v];
    }
  }
}

__global__ void count_poison_kernel(const uint16_t* p, int64_t elems, unsigned long long* counter) {
  unsigned long long c = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < elems; i += int64_t(gridDim.x) * blockDim.x)
    c += p[i] == 0xffffu ? 1u : 0u;
  if (c) atomicAdd(counter, c);
}

__global__ void scale_f32_kernel(float* x, int64_t elems, float factor) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < elems; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = nm::mul_rn(x[i], factor);
}

// fn code -> the fnuz code of the same value. fnuz(bits) = fn(bits) / 2, so the fnuz code of v is the fn code
// of 2v: exponent + 1 for normals, significand * 2 for subnormals (which is code * 2); -0 becomes +0.
__global__ void fp8_recode_kernel(uint8_t* x, int64_t elems, bool zero_negzero_only) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < elems; i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t c = x[i];
    const uint32_t sign = c & 0x80u, mag = c & 0x7fu;
    if (zero_negzero_only) {
      if (c == 0x80u) x[i] = 0;
      continue;
    }
    uint32_t out;
    if (mag == 0) out = 0;
    else if ((mag >> 3) == 0) out = sign | (mag * 2u);
    else out = sign | (mag + 8u > 0x7fu ? 0x7fu : mag + 8u);
    x[i] = uint8_t(out);
  }
}

__global__ void copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, int64_t nv) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (; i + 3 * stride < nv; i += 4 * stride) {  // four independent 16-byte loads in flight per thread
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < nv; i += stride) dst[i] = src[i];
}

__global__ void empty_kernel() {}

int sm_count_cached() {
  static int sms = 0;
  if (!sms) {
    int dev = 0;
    gpuDeviceProp prop{};
    if (gpuGetDevice(&dev) == gpuSuccess && gpuGetDeviceProperties(&prop, dev) == gpuSuccess)
      sms = prop.multiProcessorCount;
    if (sms <= 0) sms = 80;
  }
  return sms;
}

int grid_for(int64_t work_items, int per_block) {
  const int64_t want = (work_items + per_block - 1) / per_block;
  const int64_t cap = int64_t(sm_count_cached()) * 8;
  return int(want < 1 ? 1 : (want > cap ? cap : want));
}

}  // namespace

#if defined(GEMMAR_GPU_CUDA)
namespace {
// The wgmma kernels run on compute capability 9.x (this build targets sm_90a). GEMMAR_GEMM_KERNEL selects:
//   (unset) / "wgmma4"  gemm_wgmma4_kernel, warpgroups 2 K blocks apart (K = 2048; other K run "wgmma"): the
//                       fastest measured (H200, 2026-12-03, docs/results/h200-1gpu-2026-12-03-gemm4)
//   "wgmma4l0"          the same with the warpgroups in step (measurement: what the lag buys)
//   "wgmma"             gemm_wgmma_kernel, any K
//   "mma"               the mma.sync kernel (the fallback, and the AMD path's twin)
enum class WgmmaKind { None, V1, V4, V4L0 };
WgmmaKind wgmma_kind() {
  static int v = -1;
  if (v < 0) {
    int dev = 0;
    gpuDeviceProp prop{};
    const char* env = std::getenv("GEMMAR_GEMM_KERNEL");
    const bool hopper = gpuGetDevice(&dev) == gpuSuccess && gpuGetDeviceProperties(&prop, dev) == gpuSuccess &&
                        prop.major == 9;
    const bool known = !env || !*env || std::strcmp(env, "mma") == 0 || std::strcmp(env, "wgmma") == 0 ||
                       std::strcmp(env, "wgmma4") == 0 || std::strcmp(env, "wgmma4l0") == 0;
    if (!known)
      std::fprintf(stderr, "gemmar: GEMMAR_GEMM_KERNEL=%s is not one of wgmma4|wgmma4l0|wgmma|mma: the default runs\n",
                   env);
    if (!hopper || (env && std::strcmp(env, "mma") == 0)) v = int(WgmmaKind::None);
    else if (env && std::strcmp(env, "wgmma") == 0) v = int(WgmmaKind::V1);
    else if (env && std::strcmp(env, "wgmma4l0") == 0) v = int(WgmmaKind::V4L0);
    else v = int(WgmmaKind::V4);  // unset or "wgmma4"
  }
  return WgmmaKind(v);
}

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  return fn;
}

// rows x k e4m3 row-major, boxes of 128 rows x 128 bytes, 128-byte swizzle (what smem_desc() describes).
bool encode_tile_map(CUtensorMap* map, const uint8_t* base, int64_t rows, int64_t k, uint32_t box_rows) {
  const auto enc = tensor_map_encoder();
  if (!enc) return false;
  const cuuint64_t dims[2] = {cuuint64_t(k), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(k)};
  const cuuint32_t box[2] = {128, box_rows};
  const cuuint32_t estr[2] = {1, 1};
  return enc(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t*>(base), dims, strides, box, estr,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
// The A scales [k/128, m] fp32 (m contiguous): boxes of `box` scales (the tile's rows) of one K block.
bool encode_scale_map(CUtensorMap* map, const float* base, int64_t m, int64_t kb, uint32_t box_rows) {
  const auto enc = tensor_map_encoder();
  if (!enc) return false;
  const cuuint64_t dims[2] = {cuuint64_t(m), cuuint64_t(kb)};
  const cuuint64_t strides[1] = {cuuint64_t(m) * 4};
  const cuuint32_t box[2] = {box_rows, 1};
  const cuuint32_t estr[2] = {1, 1};
  return enc(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(base), dims, strides, box, estr,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
// Encoding is host work between the launch's events; the maps of recently used operands are kept (the map
// depends only on the address, the extents and the kind, never on the contents). kind > 0: an e4m3 tile map
// with boxes of `kind` rows; kind < 0: an A-scale map with boxes of -kind scales.
bool cached_map(CUtensorMap* map, const void* base, int64_t rows, int64_t cols, int kind) {
  struct Entry {
    const void* base;
    int64_t rows, cols;
    int kind;
    CUtensorMap map;
  };
  static std::mutex mu;
  static std::vector<Entry> cache;
  static size_t next = 0;
  std::lock_guard<std::mutex> lock(mu);
  for (const Entry& e : cache)
    if (e.base == base && e.rows == rows && e.cols == cols && e.kind == kind) {
      *map = e.map;
      return true;
    }
  const bool ok = kind > 0 ? encode_tile_map(map, static_cast<const uint8_t*>(base), rows, cols, uint32_t(kind))
                           : encode_scale_map(map, static_cast<const float*>(base), rows, cols, uint32_t(-kind));
  if (!ok) return false;
  const Entry e{base, rows, cols, kind, *map};
  if (cache.size() < 256) cache.push_back(e);
  else cache[next++ % cache.size()] = e;
  return true;
}
bool make_tile_map(CUtensorMap* map, const uint8_t* base, int64_t rows, int64_t k, int box_rows = 128) {
  return cached_map(map, base, rows, k, box_rows);
}
bool make_scale_map(CUtensorMap* map, const float* base, int64_t m, int64_t kb, int box_rows) {
  return cached_map(map, base, m, kb, -box_rows);
}

template <typename Kern>
gpuError_t launch_tma_gemm(Kern kern, int smem, const uint8_t* a, const uint8_t* b, const float* a_scale,
                           const float* b_scale, int64_t m, int64_t n, int64_t k, int64_t m_begin, int64_t m_end,
                           const GemmDest& dest, gpuStream_t s) {
  static std::mutex mu;
  static std::vector<std::pair<const void*, int>> attr_done;  // (kernel, device)
  int devno = 0;
  if (gpuGetDevice(&devno) != gpuSuccess) devno = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    const std::pair<const void*, int> key{reinterpret_cast<const void*>(kern), devno};
    if (std::find(attr_done.begin(), attr_done.end(), key) == attr_done.end()) {
      const gpuError_t e = gpuFuncSetAttribute(kern, gpuFuncAttributeMaxDynamicSharedMemorySize, smem);
      if (e != gpuSuccess) return e;
      attr_done.push_back(key);
    }
  }
  if (m_end <= m_begin) return gpuSuccess;
  CUtensorMap ta, tb, tsa;
  if (!make_tile_map(&ta, a, m, k) || !make_tile_map(&tb, b, n, k) ||
      !make_scale_map(&tsa, a_scale, m, k / kBlockK, kBlockM))
    return gpuErrorInvalidValue;
  const int64_t tiles = ((m_end - m_begin) / kBlockM) * (n / kBlockN);
  const int grid = int(std::min<int64_t>(tiles, sm_count_cached()));
  kern<<<unsigned(grid), kWThreads, size_t(smem), s>>>(ta, tb, tsa, b_scale, n, k, m_begin, m_end, dest);
  return gpuGetLastError();
}
}  // namespace
#endif

gpuError_t launch_gemm_blockscale(const uint8_t* a, const uint8_t* b, const float* a_scale, const float* b_scale,
                                  int64_t m, int64_t n, int64_t k, int64_t m_begin, int64_t m_end,
                                  const GemmDest& dest, gpuStream_t s) {
  static bool attr_set[kMaxWorld] = {};  // the attribute is per device
  int devno = 0;
  if (gpuGetDevice(&devno) != gpuSuccess || devno < 0 || devno >= kMaxWorld) devno = 0;
#if defined(GEMMAR_GPU_CUDA)
  const WgmmaKind kind = wgmma_kind();
  if (kind == WgmmaKind::V4 || kind == WgmmaKind::V4L0) {
    bool aligned = dest.ldd % 8 == 0;  // 16-byte stores
    for (int i = 0; i < kMaxWorld; ++i) aligned = aligned && reinterpret_cast<uintptr_t>(dest.dst[i]) % 16 == 0;
    if (k == 16 * kBlockK && aligned)  // K = 2048: the 16 K blocks of a tile are unrolled
      return launch_tma_gemm(kind == WgmmaKind::V4L0 ? gemm_wgmma4_kernel<16, 0> : gemm_wgmma4_kernel<16, 2>,
                             kW4Smem, a, b, a_scale, b_scale, m, n, k, m_begin, m_end, dest, s);
  }
  if (kind != WgmmaKind::None) {
    static bool wattr_set[kMaxWorld] = {};
    if (!wattr_set[devno]) {
      const gpuError_t e = gpuFuncSetAttribute(gemm_wgmma_kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, kWgmmaSmem);
      if (e != gpuSuccess) return e;
      wattr_set[devno] = true;
    }
    if (m_end <= m_begin) return gpuSuccess;
    CUtensorMap ta, tb;
    if (!make_tile_map(&ta, a, m, k) || !make_tile_map(&tb, b, n, k)) return gpuErrorInvalidValue;
    const int64_t tiles = ((m_end - m_begin) / kBlockM) * (n / kBlockN);
    const int grid = int(std::min<int64_t>(tiles, sm_count_cached()));
    gemm_wgmma_kernel<<<unsigned(grid), kWThreads, kWgmmaSmem, s>>>(ta, tb, a_scale, b_scale, m, n, k, m_begin, m_end, dest);
    return gpuGetLastError();
  }
#endif
  if (!attr_set[devno]) {
    const gpuError_t e =
        gpuFuncSetAttribute(gemm_blockscale_kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, kGemmSmem);
    if (e != gpuSuccess) return e;
    attr_set[devno] = true;
  }
  if (m_end <= m_begin) return gpuSuccess;
  const dim3 grid(unsigned(n / kBlockN), unsigned((m_end - m_begin) / kBlockM));
  gemm_blockscale_kernel<<<grid, kThreads, kGemmSmem, s>>>(a, b, a_scale, b_scale, m, n, k, m_begin, dest);
  return gpuGetLastError();
}

gpuError_t launch_reduce(const SlotSet& slots, int owner, int world, int64_t rows, int64_t n, uint16_t* out,
                         uint8_t* q_out, float* q_scale, gpuStream_t s) {
  reduce_kernel<<<unsigned(rows), kThreads, 0, s>>>(slots, owner, world, n, out, q_out, q_scale);
  return gpuGetLastError();
}

gpuError_t launch_quantize(const uint16_t* in, int64_t rows, int64_t n, uint8_t* q_out, float* q_scale,
                           gpuStream_t s) {
  quantize_kernel<<<unsigned(rows), kQuantThreads, 0, s>>>(in, n, q_out, q_scale);
  return gpuGetLastError();
}

namespace {
int widen_kind() {
  static int k = -1;
  if (k < 0) {
    const char* env = std::getenv("GEMMAR_WIDEN_KERNEL");
    k = !env || !*env                      ? kWidenInt8
        : std::strcmp(env, "hw16") == 0    ? kWidenHw16
        : std::strcmp(env, "int16") == 0   ? kWidenInt16
        : std::strcmp(env, "ceiling") == 0 ? kWidenCeiling
        : std::strcmp(env, "int8") == 0    ? kWidenInt8
                                           : -1;
    if (k < 0) {
      std::fprintf(stderr, "gemmar: GEMMAR_WIDEN_KERNEL=%s is not one of int8|int16|hw16|ceiling: int8 runs\n", env);
      k = kWidenInt8;
    }
  }
  return k;
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

gpuError_t launch_widen(const Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks, gpuStream_t s,
                        bool ceiling) {
  if (count <= 0) return gpuSuccess;
  if (int64_t(count) * rows >= (int64_t(1) << 31) || n >= (int64_t(1) << 31) || n % 16 != 0)
    return gpuErrorInvalidValue;
  switch (ceiling ? int(kWidenCeiling) : widen_kind()) {
    case kWidenHw16: launch_widen_kind<kWidenHw16>(src, count, rows, n, blocks, s); break;
    case kWidenInt16: launch_widen_kind<kWidenInt16>(src, count, rows, n, blocks, s); break;
    case kWidenCeiling: launch_widen_kind<kWidenCeiling>(src, count, rows, n, blocks, s); break;
    default: launch_widen_kind<kWidenInt8>(src, count, rows, n, blocks, s); break;
  }
  return gpuGetLastError();
}

gpuError_t launch_copy_slices(const Bf16Sources& src, int count, int64_t elems, int blocks, gpuStream_t s) {
  if (count <= 0) return gpuSuccess;
  const int grid = blocks > 0 ? blocks : grid_for(int64_t(count) * (elems / 8), kThreads);
  copy_slices_kernel<<<unsigned(grid), kThreads, 0, s>>>(src, count, elems);
  return gpuGetLastError();
}

gpuError_t launch_no_release(const NoReleaseSet& set, int count, int receiver, uint64_t seed, uint64_t line_threshold,
                             int64_t slice_rows, int64_t n, bool fp8, gpuStream_t s) {
  if (count <= 0) return gpuSuccess;
  const int64_t lines = n * (fp8 ? 1 : 2) / no_release::kLineBytes;
  const int grid = grid_for(int64_t(count) * slice_rows * lines, kThreads);
  no_release_kernel<<<unsigned(grid), kThreads, 0, s>>>(set, count, receiver, seed, line_threshold, slice_rows, n, fp8);
  return gpuGetLastError();
}

gpuError_t launch_count_poison(const uint16_t* p, int64_t elems, unsigned long long* counter, gpuStream_t s) {
  count_poison_kernel<<<unsigned(grid_for(elems, kThreads * 8)), kThreads, 0, s>>>(p, elems, counter);
  return gpuGetLastError();
}

gpuError_t launch_scale_f32(float* x, int64_t elems, float factor, gpuStream_t s) {
  scale_f32_kernel<<<unsigned(grid_for(elems, kThreads * 4)), kThreads, 0, s>>>(x, elems, factor);
  return gpuGetLastError();
}

gpuError_t launch_fp8_recode(uint8_t* x, int64_t elems, bool zero_negzero_only, gpuStream_t s) {
  fp8_recode_kernel<<<unsigned(grid_for(elems, kThreads * 8)), kThreads, 0, s>>>(x, elems, zero_negzero_only);
  return gpuGetLastError();
}

gpuError_t launch_copy_kernel(void* dst, const void* src, int64_t bytes, gpuStream_t s) {
  const int64_t nv = bytes / 16;
  const int grid = sm_count_cached() * 4;
  copy_kernel<<<unsigned(grid), 512, 0, s>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), nv);
  return gpuGetLastError();
}

gpuError_t launch_fp8_selftest(uint64_t begin, uint64_t count, float inv, unsigned long long* bad,
                               unsigned long long* first, gpuStream_t s) {
  fp8_selftest_kernel<<<unsigned(sm_count_cached() * 8), 256, 0, s>>>(begin, count, inv, bad, first);
  return gpuGetLastError();
}

gpuError_t launch_empty(gpuStream_t s) {
  empty_kernel<<<1, 32, 0, s>>>();
  return gpuGetLastError();
}

const char* gemm_kernel_name() {
#if defined(GEMMAR_GPU_HIP)
  return "mfma 32x32x16 fp8 (gfx94x/gfx950), 128x128x128 tiles";
#else
  switch (wgmma_kind()) {
    case WgmmaKind::V4:
      return "wgmma m64n128k32 e4m3 + TMA/mbarrier, 128x128 tiles, two accumulator sets, consumer warpgroups 2 K "
             "blocks apart, each storing (16-byte) and releasing on its own, setmaxnreg 40/232, persistent, 6 stages";
    case WgmmaKind::V4L0:
      return "wgmma4 with the consumer warpgroups in step (no lag; measurement)";
    case WgmmaKind::V1:
      return "wgmma m64n128k32 e4m3 + TMA/mbarrier, warp-specialised (1 producer + 2 consumer warpgroups), "
             "persistent, 128x128x128 tiles, 6 stages";
    default:
      break;
  }
  return "mma.sync m16n8k32 e4m3 + cp.async, 128x128x128 tiles";
#endif
}

}  // namespace gemmar::kernels::dev
