// The blockscale fp8 GEMM (one source for HIP and CUDA) and its launcher: the mma.sync / MFMA / scalar main loops
// below, the sm_90a wgmma + TMA kernels of gemm/gemm_wgmma.cuh, and the choice between them.
#include <algorithm>

#include "kernels/device_common.cuh"
#include "kernels/gemm/quant.hpp"

#if defined(GEMMAR_GPU_CUDA)
#include <iterator>
#include <mutex>
#include <utility>
#include <vector>
#endif

namespace gemmar::kernels::dev {
namespace {

constexpr int kLds = kBlockK + 16;          // smem row stride (bytes): 16 B pad keeps ldmatrix conflict-free
constexpr int kTileBytes = kBlockM * kLds;  // one 128 x 128 fp8 tile (+pad)
#if defined(GEMMAR_GPU_HIP)
constexpr int kStages = 1;  // gfx942 has 64 KiB of LDS per workgroup
#else
constexpr int kStages = 3;  // cp.async pipeline depth
#endif
constexpr int kGemmSmem = kStages * 2 * kTileBytes;

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
#include "kernels/gemm/gemm_wgmma.cuh"
#endif
namespace gemmar::kernels::dev {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Blockscale GEMM. CTA tile 128 x 128, K step 128 (one scale block). Per K block the MMA accumulates the
// unscaled fp8 dot products in `blk`; then total = fma(blk, sa * sb, total) (numerics::block_accumulate).
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
    gpu::cp_async_16(sa + row * kLds + col16 * 16, t.A + (t.m0 + row) * t.K + int64_t(kb) * kBlockK + col16 * 16);
    gpu::cp_async_16(sbm + row * kLds + col16 * 16, t.B + (t.n0 + row) * t.K + int64_t(kb) * kBlockK + col16 * 16);
  }
}

__device__ __forceinline__ void sm89_mma_block(int tid, const uint8_t* sa, const uint8_t* sbm, BlockscaleAcc& blk) {
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
      gpu::ldmatrix_x4(
          af[mt], sa + (wm * 64 + mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kLds + kk * 32 + (lane >> 4) * 16);
#pragma unroll
    for (int np = 0; np < 2; ++np)
      gpu::ldmatrix_x4(
          bfr[np], sbm + (wn * 32 + np * 16 + (lane & 7) + (lane >> 4) * 8) * kLds + kk * 32 + ((lane >> 3) & 1) * 16);
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
__device__ __forceinline__ void blockscale_main_loop(const BlockscaleTile& t, uint8_t* smem, BlockscaleAcc& total) {
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

__device__ __forceinline__ void mfma_mma_block(int tid, const uint8_t* sa, const uint8_t* sbm, BlockscaleAcc& blk) {
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
      af[mt] = *reinterpret_cast<const long*>(sa + (wm * 64 + mt * 32 + lane % 32) * kLds + ks * 16 + (lane / 32) * 8);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
      bfr[nt] =
          *reinterpret_cast<const long*>(sbm + (wn * 64 + nt * 32 + lane % 32) * kLds + ks * 16 + (lane / 32) * 8);
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

__device__ __forceinline__ void blockscale_main_loop(const BlockscaleTile& t, uint8_t* smem, BlockscaleAcc& total) {
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

__device__ __forceinline__ void simt_dot_block(int tid, const uint8_t* sa, const uint8_t* sbm, BlockscaleAcc& blk) {
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

__device__ __forceinline__ void blockscale_main_loop(const BlockscaleTile& t, uint8_t* smem, BlockscaleAcc& total) {
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
    gemm_blockscale_kernel(const uint8_t* __restrict__ A, const uint8_t* __restrict__ B, const float* __restrict__ SA,
                           const float* __restrict__ SB, int64_t M, int64_t N, int64_t K, int64_t m_begin,
                           GemmDest dest) {
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

}  // namespace

#if defined(GEMMAR_GPU_CUDA)
namespace {
// The wgmma kernels run on compute capability 9.x (this build targets sm_90a): elsewhere the requested variant
// (kernel_options.hpp) falls back to the mma.sync kernel.
GemmKernel effective_kernel(GemmKernel requested) { return current_device_is_hopper() ? requested : GemmKernel::Mma; }

// rows x k e4m3 row-major, boxes of 128 rows x 128 bytes, 128-byte swizzle (what smem_desc() describes).
bool encode_tile_map(gpuTensorMap* map, const uint8_t* base, int64_t rows, int64_t k, uint32_t box_rows) {
  return gemmar::gpu::encode_tensor_map_2d(map, base, true, uint64_t(k), uint64_t(rows), uint64_t(k), 128, box_rows);
}
// The A scales [k/128, m] fp32 (m contiguous): boxes of `box` scales (the tile's rows) of one K block.
bool encode_scale_map(gpuTensorMap* map, const float* base, int64_t m, int64_t kb, uint32_t box_rows) {
  return gemmar::gpu::encode_tensor_map_2d(map, base, false, uint64_t(m), uint64_t(kb), uint64_t(m) * 4, box_rows, 1);
}
// Encoding is host work between the launch's events; the maps of recently used operands are kept (the map
// depends only on the address, the extents and the kind, never on the contents). kind > 0: an e4m3 tile map
// with boxes of `kind` rows; kind < 0: an A-scale map with boxes of -kind scales.
bool cached_map(gpuTensorMap* map, const void* base, int64_t rows, int64_t cols, int kind) {
  struct Entry {
    const void* base;
    int64_t rows, cols;
    int kind;
    gpuTensorMap map;
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
  if (cache.size() < 256)
    cache.push_back(e);
  else
    cache[next++ % cache.size()] = e;
  return true;
}
bool make_tile_map(gpuTensorMap* map, const uint8_t* base, int64_t rows, int64_t k, int box_rows = 128) {
  return cached_map(map, base, rows, k, box_rows);
}
bool make_scale_map(gpuTensorMap* map, const float* base, int64_t m, int64_t kb, int box_rows) {
  return cached_map(map, base, m, kb, -box_rows);
}

// gemm_wgmma4_kernel's conditions: K one of its instantiations (kernels.hpp wgmma4_k: a tile's K blocks are
// unrolled), 16-byte aligned destinations, and 16-byte aligned scales where its producer bulk-copies a tile's
// scales into shared memory (B's; ptpc's A's too). The number of K blocks, or 0 where it does not run.
int wgmma4_kblocks(const GemmOperands& op, const GemmDest& dest) {
  bool aligned = dest.ldd % 8 == 0;  // 16-byte stores
  for (int i = 0; i < kMaxWorld; ++i) aligned = aligned && reinterpret_cast<uintptr_t>(dest.dst[i]) % 16 == 0;
  const uintptr_t copied_scales =
      reinterpret_cast<uintptr_t>(op.b_scale) | (op.quant == Quant::Ptpc ? reinterpret_cast<uintptr_t>(op.a_scale) : 0);
  aligned = aligned && copied_scales % 16 == 0;
  return aligned && wgmma4_k(op.k) ? int(op.k / kBlockK) : 0;
}

// gemm_wgmma4_kernel<..., m, n>'s clusters of m x n CTAs on adjacent tiles; 1 x 1 is no cluster.
struct ClusterShape {
  int m = 1, n = 1;
};
// The rows [m_begin, m_end), their start, each destination slice and N's tiles in whole cluster units.
bool cluster_fits(ClusterShape c, int64_t n, int64_t m_begin, int64_t m_end, const GemmDest& dest) {
  const int64_t unit_rows = c.m * kBlockM;
  return (n / kBlockN) % c.n == 0 && (m_end - m_begin) % unit_rows == 0 && m_begin % unit_rows == 0 &&
         dest.slice_rows % unit_rows == 0;
}

// group_m: the tile order's groups of bands (reduced here until they fit). A cluster shares A along N (its map in
// boxes of 64 rows) and B along M (likewise), and the grid holds as many clusters as the device runs at once: a
// persistent grid must not wait for a second wave.
template <typename Kern>
gpuError_t launch_tma_gemm(Kern kern, int smem, const GemmOperands& op, int64_t m_begin, int64_t m_end,
                           const GemmDest& dest, gpuStream_t s, int group_m = 1, ClusterShape c = {}) {
  const int cluster = c.m * c.n;
  const int64_t m = op.m, n = op.n, k = op.k;
  static std::mutex mu;
  static std::vector<std::pair<const void*, int>> attr_done;                     // (kernel, device)
  static std::vector<std::pair<std::pair<const void*, int>, int>> max_clusters;  // ((kernel, device), clusters)
  int devno = 0;
  if (gpuGetDevice(&devno) != gpuSuccess) devno = 0;
  const std::pair<const void*, int> key{reinterpret_cast<const void*>(kern), devno};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (std::find(attr_done.begin(), attr_done.end(), key) == attr_done.end()) {
      const gpuError_t e = gpuFuncSetAttribute(kern, gpuFuncAttributeMaxDynamicSharedMemorySize, smem);
      if (e != gpuSuccess) return e;
      attr_done.push_back(key);
    }
  }
  if (m_end <= m_begin) return gpuSuccess;
  // ptpc's A scales are one per row, read in the epilogue: its kernel takes no scale map (A's stands in, unread).
  const bool scale_map = op.quant == Quant::Blockscale;
  gpuTensorMap ta, tb, tsa;
  if (!make_tile_map(&ta, op.a, m, k, kBlockM / c.n) || !make_tile_map(&tb, op.b, n, k, kBlockN / c.m) ||
      (scale_map && !make_scale_map(&tsa, op.a_scale, m, k / kBlockK, kBlockM)))
    return gpuErrorInvalidValue;
  if (!scale_map) tsa = ta;
  const int64_t tiles = ((m_end - m_begin) / kBlockM) * (n / kBlockN);
  // A group of bands must not straddle a destination slice (fused-sdma's puts wait on whole slices, in order). A
  // cluster of c.m along M takes c.m bands at a time: its groups count such units.
  const int64_t bands = (m_end - m_begin) / kBlockM, slice_bands = dest.slice_rows / kBlockM;
  const int64_t unit = c.m;
  while (group_m > 1 && (bands % (unit * group_m) != 0 || (slice_bands > 0 && slice_bands % (unit * group_m) != 0) ||
                         (m_begin / kBlockM) % (unit * group_m) != 0))
    group_m /= 2;
  if (cluster == 1) {
    const int grid = int(std::min<int64_t>(tiles, sm_count_cached()));
    kern<<<unsigned(grid), kWThreads, size_t(smem), s>>>(ta, tb, tsa, op.a_scale, op.b_scale, n, k, m_begin, m_end,
                                                         dest, group_m);
    return gpuGetLastError();
  }
#if defined(GEMMAR_GPU_CUDA)
  if (!cluster_fits(c, n, m_begin, m_end, dest)) return gpuErrorInvalidValue;
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = unsigned(cluster);  // a cluster's CTAs are consecutive: the kernel reads rm, rn
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.blockDim = dim3(kWThreads);
  cfg.dynamicSmemBytes = size_t(smem);
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int fit = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& e : max_clusters)
      if (e.first == key) fit = e.second;
    if (fit == 0) {
      cfg.gridDim = dim3(unsigned(sm_count_cached() / cluster * cluster));
      const gpuError_t e = cudaOccupancyMaxActiveClusters(&fit, kern, &cfg);
      if (e != gpuSuccess) return e;
      if (fit <= 0) return gpuErrorInvalidValue;
      max_clusters.push_back({key, fit});
    }
  }
  cfg.gridDim = dim3(unsigned(std::min<int64_t>(tiles / cluster, fit) * cluster));
  const gpuError_t e =
      cudaLaunchKernelEx(&cfg, kern, ta, tb, tsa, op.a_scale, op.b_scale, n, k, m_begin, m_end, dest, group_m);
  return e != gpuSuccess ? e : gpuGetLastError();
#else
  return gpuErrorInvalidValue;
#endif
}

// gemm_wgmma4_kernel<kb, kLag, kPtpc> for kb in kWgmma4KBlocks (ptxas keeps each at 168 registers, no
// serialized wgmma); gpuErrorInvalidValue for any other kb.
template <int kLag, bool kPtpc, size_t... I>
gpuError_t launch_wgmma4(int kb, const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                         gpuStream_t s, int group_m, std::index_sequence<I...>) {
  gpuError_t e = gpuErrorInvalidValue;
  (void)((kb == kWgmma4KBlocks[I] && (e = launch_tma_gemm(gemm_wgmma4_kernel<kWgmma4KBlocks[I], kLag, kPtpc>, kW4Smem,
                                                          op, m_begin, m_end, dest, s, group_m),
                                      true)) ||
         ...);
  return e;
}
// The tile order's groups: 4 bands of 128 rows, the band changing fastest within a group: 3-10% less time than the
// band-major order (group 1), groups of 8 and 16 slower, of 2 within 2% (docs/results/h100-1gpu-2026-12-06-raster).
constexpr int kTileGroupBands = 4;
// Clusters of two CTAs along M sharing B by TMA multicast (gemm_wgmma4_kernel<16, 2, kPtpc, 2, 1>) at K = 2048
// from 12288 rows, where several GEMMs share the device (GemmDest::concurrent_gemms): eight GEMMs at once share
// the L2 and run faster with them, a GEMM alone 5-7% slower (blockscale and ptpc alike;
// docs/results/h100-1gpu-2026-12-06-epilogue, h100-1gpu-2026-12-06-l2).
constexpr int64_t kShareBFromRows = 12288;
constexpr ClusterShape kShareB{2, 1}, kShareA{1, 2}, kShareBoth{2, 2};
// Whether the K = 2048 GEMM (blockscale or ptpc) runs in those clusters: forced by GEMMAR_GEMM_KERNEL=wgmma4mcm
// wherever they fit, or the default where several GEMMs share the device.
bool share_b_along_m(GemmKernel kind, int64_t n, int64_t m_begin, int64_t m_end, const GemmDest& dest) {
  if (!cluster_fits(kShareB, n, m_begin, m_end, dest)) return false;
  return kind == GemmKernel::Wgmma4ClusterM ||
         (kind == GemmKernel::Wgmma4 && dest.concurrent_gemms > 1 && m_end - m_begin >= kShareBFromRows);
}
template <int kLag, bool kPtpc>
gpuError_t launch_wgmma4(int kb, const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                         gpuStream_t s, int group_m = kTileGroupBands) {
  return launch_wgmma4<kLag, kPtpc>(kb, op, m_begin, m_end, dest, s, group_m,
                                    std::make_index_sequence<std::size(kWgmma4KBlocks)>{});
}
}  // namespace
#endif

gpuError_t launch_gemm(GemmKernel variant, const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                       gpuStream_t s) {
  if (op.quant == Quant::Blockscale) return launch_gemm_blockscale(variant, op, m_begin, m_end, dest, s);
  return launch_gemm_quant(op, m_begin, m_end, dest, s, variant);
}

gpuError_t launch_gemm_blockscale(GemmKernel variant, const GemmOperands& op, int64_t m_begin, int64_t m_end,
                                  const GemmDest& dest, gpuStream_t s) {
  if (op.quant != Quant::Blockscale) return gpuErrorInvalidValue;
  const uint8_t *a = op.a, *b = op.b;
  const float *a_scale = op.a_scale, *b_scale = op.b_scale;
  const int64_t m = op.m, n = op.n, k = op.k;
  static bool attr_set[kMaxWorld] = {};  // the attribute is per device
  int devno = 0;
  if (gpuGetDevice(&devno) != gpuSuccess || devno < 0 || devno >= kMaxWorld) devno = 0;
#if !defined(GEMMAR_GPU_CUDA)
  (void)variant;
#else
  const GemmKernel kind = effective_kernel(variant);
  const int kb = wgmma4_kblocks(op, dest);
  if (kind == GemmKernel::Wgmma4InStep && kb == 16)  // the lag-free measurement variant: K = 2048 only
    return launch_tma_gemm(gemm_wgmma4_kernel<16, 0>, kW4Smem, op, m_begin, m_end, dest, s, kTileGroupBands);
  if (kind == GemmKernel::Wgmma4Cluster && kb == 16 && (n / kBlockN) % 2 == 0)  // A multicast: K = 2048 only
    return launch_tma_gemm(gemm_wgmma4_kernel<16, 2, false, 1, 2>, kW4Smem, op, m_begin, m_end, dest, s,
                           kTileGroupBands, kShareA);
  if (kind == GemmKernel::Wgmma4Cluster2x2 && kb == 16 && (n / kBlockN) % 2 == 0)  // A and B multicast
    return launch_tma_gemm(gemm_wgmma4_kernel<16, 2, false, 2, 2>, kW4Smem, op, m_begin, m_end, dest, s,
                           kTileGroupBands / 2, kShareBoth);
  if (kb == 16 && share_b_along_m(kind, n, m_begin, m_end, dest))  // B multicast along M
    return launch_tma_gemm(gemm_wgmma4_kernel<16, 2, false, 2, 1>, kW4Smem, op, m_begin, m_end, dest, s,
                           kTileGroupBands / 2, kShareB);
  if (kind == GemmKernel::Wgmma4BandMajor && kb > 0)  // the tile order before the groups (measurement)
    return launch_wgmma4<2, false>(kb, op, m_begin, m_end, dest, s, 1);
  if (kind == GemmKernel::Wgmma4 && kb > 0) return launch_wgmma4<2, false>(kb, op, m_begin, m_end, dest, s);
  if (kind != GemmKernel::Mma) {
    static bool wattr_set[kMaxWorld] = {};
    if (!wattr_set[devno]) {
      const gpuError_t e = gpuFuncSetAttribute(gemm_wgmma_kernel<WgmmaScales::Blockscale>,
                                               gpuFuncAttributeMaxDynamicSharedMemorySize, kWgmmaSmem);
      if (e != gpuSuccess) return e;
      wattr_set[devno] = true;
    }
    if (m_end <= m_begin) return gpuSuccess;
    gpuTensorMap ta, tb;
    if (!make_tile_map(&ta, a, m, k) || !make_tile_map(&tb, b, n, k)) return gpuErrorInvalidValue;
    const int64_t tiles = ((m_end - m_begin) / kBlockM) * (n / kBlockN);
    const int grid = int(std::min<int64_t>(tiles, sm_count_cached()));
    gemm_wgmma_kernel<WgmmaScales::Blockscale>
        <<<unsigned(grid), kWThreads, kWgmmaSmem, s>>>(ta, tb, a_scale, b_scale, m, n, k, m_begin, m_end, dest);
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

bool quant_wgmma_runs(const GemmOperands& op, int64_t m_begin, int64_t m_end) {
#if !defined(GEMMAR_GPU_CUDA)
  (void)op, (void)m_begin, (void)m_end;
  return false;
#else
  return (op.quant == Quant::Ptpc || op.quant == Quant::Mxfp8) &&
         effective_kernel(GemmKernel::Wgmma) == GemmKernel::Wgmma && op.k % kBlockK == 0 && op.n % kBlockN == 0 &&
         m_begin % kBlockM == 0 && (m_end - m_begin) % kBlockM == 0 &&
         (op.quant != Quant::Mxfp8 || scale_block(op.quant, true).rows == kMxBRows);
#endif
}

#if defined(GEMMAR_GPU_CUDA)
namespace {
template <WgmmaScales kScales>
gpuError_t launch_quant_wgmma(int smem, const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                              gpuStream_t s) {
  static std::mutex mu;
  static std::vector<int> attr_done;  // devices
  int devno = 0;
  if (gpuGetDevice(&devno) != gpuSuccess) devno = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (std::find(attr_done.begin(), attr_done.end(), devno) == attr_done.end()) {
      const gpuError_t e =
          gpuFuncSetAttribute(gemm_wgmma_kernel<kScales>, gpuFuncAttributeMaxDynamicSharedMemorySize, smem);
      if (e != gpuSuccess) return e;
      attr_done.push_back(devno);
    }
  }
  if (m_end <= m_begin) return gpuSuccess;
  gpuTensorMap ta, tb;
  if (!make_tile_map(&ta, op.a, op.m, op.k) || !make_tile_map(&tb, op.b, op.n, op.k)) return gpuErrorInvalidValue;
  const int64_t tiles = ((m_end - m_begin) / kBlockM) * (op.n / kBlockN);
  const int grid = int(std::min<int64_t>(tiles, sm_count_cached()));
  gemm_wgmma_kernel<kScales><<<unsigned(grid), kWThreads, size_t(smem), s>>>(ta, tb, op.a_scale, op.b_scale, op.m, op.n,
                                                                             op.k, m_begin, m_end, dest);
  return gpuGetLastError();
}
}  // namespace
#endif

gpuError_t launch_gemm_quant_wgmma(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                                   gpuStream_t s, GemmKernel variant) {
  if (!quant_wgmma_runs(op, m_begin, m_end)) return gpuErrorInvalidValue;
#if defined(GEMMAR_GPU_CUDA)
  if (op.quant == Quant::Ptpc) {
    // K in wgmma4_k: the tuned kernel's tile end (warpgroups 2 K blocks apart, 16-byte stores), scaled in its
    // epilogue; GEMMAR_GEMM_KERNEL=wgmma keeps the generic kernel (the comparison).
    const int kb = variant == GemmKernel::Wgmma ? 0 : wgmma4_kblocks(op, dest);
    if (kb == 16 && share_b_along_m(effective_kernel(variant), op.n, m_begin, m_end, dest))
      return launch_tma_gemm(gemm_wgmma4_kernel<16, 2, true, 2, 1>, kW4Smem, op, m_begin, m_end, dest, s,
                             kTileGroupBands / 2, kShareB);
    if (kb > 0) return launch_wgmma4<2, true>(kb, op, m_begin, m_end, dest, s);
    return launch_quant_wgmma<WgmmaScales::Ptpc>(kWgmmaSmem, op, m_begin, m_end, dest, s);
  }
  return launch_quant_wgmma<WgmmaScales::Mx>(kWgmmaSmemMx, op, m_begin, m_end, dest, s);
#else
  (void)dest, (void)s, (void)variant;
  return gpuErrorInvalidValue;
#endif
}

const char* gemm_kernel_name(GemmKernel variant, int64_t k) {
#if defined(GEMMAR_GPU_HIP)
  (void)variant, (void)k;
  return "mfma 32x32x16 fp8 (gfx94x/gfx950), 128x128x128 tiles";
#else
  GemmKernel kind = effective_kernel(variant);
  // What launch_gemm_blockscale runs at this K (16-byte aligned destinations assumed, as the bench's).
  if (((kind == GemmKernel::Wgmma4 || kind == GemmKernel::Wgmma4BandMajor) && !wgmma4_k(k)) ||
      ((kind == GemmKernel::Wgmma4InStep || kind == GemmKernel::Wgmma4Cluster || kind == GemmKernel::Wgmma4Cluster2x2 ||
        kind == GemmKernel::Wgmma4ClusterM) &&
       k != 16 * kBlockK))
    kind = GemmKernel::Wgmma;
  switch (kind) {
    case GemmKernel::Wgmma4:
      return "wgmma m64n128k32 e4m3 + TMA/mbarrier, 128x128 tiles, two accumulator sets, consumer warpgroups 2 K "
             "blocks apart, each storing (16-byte) and releasing on its own, setmaxnreg 40/232, persistent, 6 stages, "
             "tiles in groups of 4 bands (gemm_wgmma4_kernel<K / 128, 2>); where several GEMMs share the device, "
             "at K = 2048 from 12288 rows, clusters of two CTAs along M sharing B by TMA multicast";
    case GemmKernel::Wgmma4InStep:
      return "wgmma4 with the consumer warpgroups in step (no lag; measurement)";
    case GemmKernel::Wgmma4Cluster:
      return "wgmma4 in clusters of two CTAs along N sharing A by TMA multicast (measurement)";
    case GemmKernel::Wgmma4Cluster2x2:
      return "wgmma4 in clusters of 2 x 2 CTAs sharing A along N and B along M by TMA multicast (measurement)";
    case GemmKernel::Wgmma4ClusterM:
      return "wgmma4 in clusters of two CTAs along M sharing B by TMA multicast (measurement)";
    case GemmKernel::Wgmma4BandMajor:
      return "wgmma4 with the tiles in band-major order (no groups; measurement)";
    case GemmKernel::Wgmma:
      return "wgmma m64n128k32 e4m3 + TMA/mbarrier, warp-specialised (1 producer + 2 consumer warpgroups), "
             "persistent, 128x128x128 tiles, 6 stages";
    default:
      break;
  }
  return "mma.sync m16n8k32 e4m3 + cp.async, 128x128x128 tiles";
#endif
}

}  // namespace gemmar::kernels::dev
