// The portable GEMM of the PerRow and PerStep32 scale layouts (gemm/heuristics.hpp; ptpc and mxfp8 today): the
// simple, correct kernel, one source for CUDA and HIP, run where the sm_90a kernels do not (off compute capability
// 9.x, AMD, tiles that are not whole, B blocks other than 32 rows). CTA tile 128 x 128, 256 threads, K step 32 (one
// mxfp8 scale block); the K step's codes are decoded once into shared memory as fp32 (exact: every e4m3 value is an
// fp32) and each thread owns an 8 x 8 block of the tile, rows ty + 16i and columns tx + 16j, so neither the
// shared-memory reads nor the stores conflict. The fp32 accumulation order inside a K block is the hardware's (as for
// the blockscale kernels, whose MMA order is hardware-defined); the scale is applied at the reference's rounding points
// (numerics_inline.hpp): mxfp8 promotes every 32-wide block with block_accumulate, ptpc applies ptpc_epilogue once to
// the dot over K. The run's check (the output against the fp32 reference, the collective re-emulated bit for bit over
// the partials read back) is what proves it.
#include "kernels/device_common.cuh"
#include "kernels/gemm/launch.hpp"

namespace gemmar::kernels::dev {
namespace {

constexpr int kQThreads = 256;
constexpr int kQTile = 128;     // rows of A and of B per CTA
constexpr int kQK = 32;         // K step: one mxfp8 block
constexpr int kQLds = kQK + 1;  // fp32 row stride of the decoded stage: odd, so column reads spread over banks

template <bool kMx>
__global__ void __launch_bounds__(kQThreads)
    gemm_quant_kernel(const uint8_t* __restrict__ A, const uint8_t* __restrict__ B, const float* __restrict__ SA,
                      const float* __restrict__ SB, int64_t K, int64_t m_begin, int sb_rows, GemmDest dest) {
  __shared__ float sa[kQTile * kQLds];
  __shared__ float sb[kQTile * kQLds];
  const int tid = int(threadIdx.x);
  const int ty = tid / 16, tx = tid % 16;
  const int64_t n0 = int64_t(blockIdx.x) * kQTile;
  const int64_t m0 = m_begin + int64_t(blockIdx.y) * kQTile;
  const int64_t KS = K / kQK;  // mxfp8 scales per row
  // The stage load: thread tid brings 16 codes of row tid/2 of A and of B (the tile is 128 rows x 32 bytes).
  const int lrow = tid >> 1, lcol = (tid & 1) * 16;
  const uint8_t* a_src = A + (m0 + lrow) * K + lcol;
  const uint8_t* b_src = B + (n0 + lrow) * K + lcol;

  float blk[8][8], total[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      blk[i][j] = 0.0f;
      total[i][j] = 0.0f;
    }

  for (int64_t kb = 0; kb < KS; ++kb) {
    const uint4 av = *reinterpret_cast<const uint4*>(a_src + kb * kQK);
    const uint4 bv = *reinterpret_cast<const uint4*>(b_src + kb * kQK);
    const uint32_t aw[4] = {av.x, av.y, av.z, av.w}, bw[4] = {bv.x, bv.y, bv.z, bv.w};
    __syncthreads();  // the previous step's reads of the stage are done
#pragma unroll
    for (int e = 0; e < 16; ++e) {
      sa[lrow * kQLds + lcol + e] = nm::e4m3_to_f32(uint8_t(aw[e / 4] >> (8 * (e % 4))), false);
      sb[lrow * kQLds + lcol + e] = nm::e4m3_to_f32(uint8_t(bw[e / 4] >> (8 * (e % 4))), false);
    }
    __syncthreads();
    if (kMx) {
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) blk[i][j] = 0.0f;
    }
#pragma unroll 4
    for (int kk = 0; kk < kQK; ++kk) {
      float x[8], y[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) x[i] = sa[(ty + 16 * i) * kQLds + kk];
#pragma unroll
      for (int j = 0; j < 8; ++j) y[j] = sb[(tx + 16 * j) * kQLds + kk];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) blk[i][j] += x[i] * y[j];
    }
    if (kMx) {
      float sbv[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) sbv[j] = SB[((n0 + tx + 16 * j) / sb_rows) * KS + kb];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float sav = SA[(m0 + ty + 16 * i) * KS + kb];
#pragma unroll
        for (int j = 0; j < 8; ++j) total[i][j] = nm::block_accumulate(total[i][j], blk[i][j], sav, sbv[j]);
      }
    }
  }
  if (!kMx) {
    float sbv[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) sbv[j] = SB[n0 + tx + 16 * j];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float sav = SA[m0 + ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 8; ++j) total[i][j] = nm::ptpc_epilogue(blk[i][j], sav, sbv[j]);
    }
  }

  // One destination per CTA, its first row's slice's, indexed by absolute row (a tile straddling two slices, relaxed
  // rows: consecutive slices of one buffer, GemmDest); a null destination (the silent-scatter fault) drops the
  // stores, not the count.
  const int slice = int(m0 / dest.slice_rows);
  uint16_t* base = dest.dst[slice];
  if (base) {
    uint16_t* C = base - int64_t(slice) * dest.slice_rows * dest.ldd;
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) C[(m0 + ty + 16 * i) * dest.ldd + n0 + tx + 16 * j] = nm::f32_to_bf16(total[i][j]);
  }
  __syncthreads();
  if (tid == 0 && dest.counters) {
    __threadfence();  // the tile's stores are visible before its count (the release the put waits on)
    count_tiles(dest, slice, tile_last_slice(dest, m0, slice), 1u);  // each slice the tile reaches
  }
}

}  // namespace

gpuError_t launch_portable_scaled(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                                  gpuStream_t s) {
  const GemmScales scales = gemm_scales(op.quant);
  if (scales != GemmScales::PerRow && scales != GemmScales::PerStep32) return gpuErrorInvalidValue;
  if (m_end <= m_begin) return gpuSuccess;
  const int64_t n = op.n, k = op.k;
  if (n % kQTile != 0 || k % kQK != 0 || (m_end - m_begin) % kQTile != 0 || m_begin % kQTile != 0)
    return gpuErrorInvalidValue;
  const dim3 grid(unsigned(n / kQTile), unsigned((m_end - m_begin) / kQTile));
  const int sb_rows = scale_block(op.quant, true).rows;
  if (scales == GemmScales::PerStep32)
    gemm_quant_kernel<true><<<grid, kQThreads, 0, s>>>(op.a, op.b, op.a_scale, op.b_scale, k, m_begin, sb_rows, dest);
  else
    gemm_quant_kernel<false><<<grid, kQThreads, 0, s>>>(op.a, op.b, op.a_scale, op.b_scale, k, m_begin, sb_rows, dest);
  return gpuGetLastError();
}

}  // namespace gemmar::kernels::dev
