// gemm_wgmma_kernel: the sm_90a GEMM for any K (a multiple of 128) and every scale layout of gemm/heuristics.hpp
// (what runs where gemm_wgmma4_kernel does not: other K, the 32-wide scale steps). Our own design, after the
// structure DeepGEMM and CUTLASS example 67 describe for Hopper fp8 blockscale: CTA tile 128 x 128, K step 128 =
// one scale block, 384 threads = 3 warpgroups: WG0 is the producer (one thread issues TMA loads of the A and B
// tiles, 128B-swizzled, into a ring of shared-memory stages guarded by full/empty mbarriers), WG1 and WG2 are
// consumers, each owning 64 rows x 128 columns; per K block a consumer issues 4 wgmma.m64n128k32 e4m3 (fp32
// accumulate, the first with scale-d = 0, so the block's dot products start from zero) and promotes
// total = numerics::block_accumulate(total, blk, sa[row], sb) (the reference's rounding points); a persistent grid
// (one CTA per SM) walks the tiles band-major (gemm/scheduler.cuh, groups of one band); the epilogue stores bf16
// RNE into the tile's destination and bumps the per-destination counter (the fused modes' release).
//
// The scale layouts (template argument):
//   Blockscale  SA [K/128, M] (M contiguous), SB [N/128, K/128]: each K block's dot promoted with
//               numerics::block_accumulate(total, dot, sa, sb)
//   PerRow      SA [M], SB [N]: each K block's dot promoted unscaled (total + dot, in fp32 on the CUDA cores every
//               128 K, so the tensor cores' accumulation never spans more than one K block) and
//               numerics::ptpc_epilogue applies sa * sb once before the store
//   PerStep32   SA [M, K/32], SB [N/32, K/32] (powers of two; B's per 32x32 block, mori's weight layout): every
//               32-wide K step is its own wgmma, promoted with block_accumulate and that step's scales (Hopper
//               has no MX instruction), two accumulator sets so that step s + 1 runs while step s is promoted;
//               the B scales of the tile's 128 columns for the K block are staged in shared memory per warpgroup
// What was measured against what: docs/results/h200-1gpu-2026-12-03-gemm, h100-1gpu-2026-12-05-kernels6.
#pragma once
#include "kernels/gemm/sm90.cuh"

namespace gemmar::kernels::dev {
namespace {

constexpr int kStagesW = 6;
constexpr int kWgmmaSmem = kStagesW * (kStageA + kStageB) + 1024 /* alignment */ + 256 /* barriers */;
constexpr int kMxSteps = kBlockK / 32;                 // 32-wide scale steps per 128-wide K block
constexpr int kMxBRows = 32;                           // B rows (N) per scale block of PerStep32's Hopper kernel
constexpr int kMxScaleBytes = kMxSteps * kBlockN * 4;  // one warpgroup's staged B scales of a K block
constexpr int kWgmmaSmemMx = kWgmmaSmem + 2 * kMxScaleBytes;

// The producer: one thread loads every K block of every tile of this CTA into the stage ring.
__device__ __forceinline__ void wgmma_produce(const gpuTensorMap& tm_a, const gpuTensorMap& tm_b, uint8_t* sA,
                                              uint8_t* sB, uint64_t* full, uint64_t* empty,
                                              const TileScheduler<>& sched, int64_t m_begin, int KB) {
  int stage = 0;
  uint32_t phase = 0;
  for (int t = blockIdx.x; t < sched.units; t += gridDim.x) {
    int band, nb;
    sched.tile(t, band, nb);
    const int m0 = int(m_begin) + band * kBlockM, n0 = nb * kBlockN;
    for (int kb = 0; kb < KB; ++kb) {
      ptx::mbar_wait(empty + stage, phase ^ 1);
      ptx::mbar_expect_tx(full + stage, kStageA + kStageB);
      ptx::tma_load_2d(sA + stage * kStageA, &tm_a, full + stage, kb * kBlockK, m0);
      ptx::tma_load_2d(sB + stage * kStageB, &tm_b, full + stage, kb * kBlockK, n0);
      if (++stage == kStagesW) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

// PerStep32's K block: four 32-wide steps, each its own wgmma into one of two accumulator sets and promoted with
// that step's scales. my_mx: this warpgroup's staged B scales [step][column].
__device__ __forceinline__ void wgmma_k_block_steps(float (&total)[64], float (&acc)[64], float (&acc2)[64],
                                                    const uint8_t* a_tile, const uint8_t* b_tile, float* my_mx,
                                                    const float* SA, const float* SB, int64_t r0, int64_t n0, int kb,
                                                    int KS, int c, int lt, int tq) {
  // The K block's B scales of the tile's columns, [step][column]: a quad's lanes read adjacent columns.
  for (int i = lt; i < kMxSteps * kBlockN; i += 128) {
    const int col = i % kBlockN, step = i / kBlockN;
    my_mx[i] = SB[((n0 + col) / kMxBRows) * KS + kb * kMxSteps + step];
  }
  ptx::warpgroup_bar(3 + c);
  // The 4 steps' A scales of this thread's two rows, loaded before the first wgmma (16-byte loads: K/32 is a
  // multiple of 4). Two accumulator sets: step s + 1 is issued before step s is waited for and promoted, so the
  // tensor cores run under the promotion (wait_group 1) instead of idling through it.
  static_assert(kMxSteps == 4, "one float4 of A scales per row and K block");
  const float4 sa0v = *reinterpret_cast<const float4*>(SA + r0 * KS + kb * kMxSteps);
  const float4 sa1v = *reinterpret_cast<const float4*>(SA + (r0 + 8) * KS + kb * kMxSteps);
  const float sa0s[4] = {sa0v.x, sa0v.y, sa0v.z, sa0v.w}, sa1s[4] = {sa1v.x, sa1v.y, sa1v.z, sa1v.w};
  auto issue = [&](int ks, float(&d)[64]) {
    ptx::wgmma_fence();
    ptx::wgmma_m64n128k32_e4m3_zero(d, ptx::smem_desc(a_tile + ks * 32), ptx::smem_desc(b_tile + ks * 32));
    ptx::wgmma_commit();
    ptx::wgmma_fence_operands(d);
  };
  auto promote = [&](int ks, float(&d)[64]) {
    ptx::wgmma_fence_operands(d);
    const float* sbs = my_mx + ks * kBlockN + 2 * tq;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const float sb0 = sbs[8 * j], sb1 = sbs[8 * j + 1];
      total[4 * j + 0] = nm::block_accumulate(total[4 * j + 0], d[4 * j + 0], sa0s[ks], sb0);
      total[4 * j + 1] = nm::block_accumulate(total[4 * j + 1], d[4 * j + 1], sa0s[ks], sb1);
      total[4 * j + 2] = nm::block_accumulate(total[4 * j + 2], d[4 * j + 2], sa1s[ks], sb0);
      total[4 * j + 3] = nm::block_accumulate(total[4 * j + 3], d[4 * j + 3], sa1s[ks], sb1);
    }
  };
  issue(0, acc);
  issue(1, acc2);
  ptx::wgmma_wait1();
  promote(0, acc);
  issue(2, acc);
  ptx::wgmma_wait1();
  promote(1, acc2);
  issue(3, acc2);
  ptx::wgmma_wait1();
  promote(2, acc);
  ptx::wgmma_wait0();
  promote(3, acc2);
  ptx::warpgroup_bar(3 + c);  // every lane read the staged scales
}

// The tile's end: PerRow's scales applied once, bf16 stores into the tile's destination, both consumer warpgroups
// met, then one count of the tile (a release after a fence).
template <GemmScales kScales>
__device__ __forceinline__ void wgmma_store_tile(float (&total)[64], const float* SA, const float* SB,
                                                 const GemmDest& dest, int64_t m0, int64_t n0, int64_t r0, int tq,
                                                 int tid) {
  if constexpr (kScales == GemmScales::PerRow) {
    const float sa0 = SA[r0], sa1 = SA[r0 + 8];
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int64_t col = n0 + 8 * j + 2 * tq;
      const float sb0 = SB[col], sb1 = SB[col + 1];
      total[4 * j + 0] = nm::ptpc_epilogue(total[4 * j + 0], sa0, sb0);
      total[4 * j + 1] = nm::ptpc_epilogue(total[4 * j + 1], sa0, sb1);
      total[4 * j + 2] = nm::ptpc_epilogue(total[4 * j + 2], sa1, sb0);
      total[4 * j + 3] = nm::ptpc_epilogue(total[4 * j + 3], sa1, sb1);
    }
  }
  int slice = 0;
  uint16_t* C = tile_dest(dest, m0, slice);
  if (C) {
    const int64_t ldd = dest.ldd;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int64_t col = n0 + 8 * j + 2 * tq;
      *reinterpret_cast<uint32_t*>(C + r0 * ldd + col) = pack_bf16x2(total[4 * j + 0], total[4 * j + 1]);
      *reinterpret_cast<uint32_t*>(C + (r0 + 8) * ldd + col) = pack_bf16x2(total[4 * j + 2], total[4 * j + 3]);
    }
  }
  ptx::consumer_bar();  // both consumer warpgroups stored the tile
  if (tid == 128 && dest.counters) {
    __threadfence();
    count_tiles(dest, slice, tile_last_slice(dest, m0, slice), 1u);  // each slice the tile reaches
  }
}

template <GemmScales kScales>
__global__ void __launch_bounds__(kWThreads, 1)
    gemm_wgmma_kernel(const __grid_constant__ gpuTensorMap tm_a, const __grid_constant__ gpuTensorMap tm_b,
                      const float* __restrict__ SA, const float* __restrict__ SB, int64_t M, int64_t N, int64_t K,
                      int64_t m_begin, int64_t m_end, GemmDest dest) {
#if defined(GEMMAR_SM90A_PASS)
  constexpr bool kPerRow = kScales == GemmScales::PerRow, kSteps = kScales == GemmScales::PerStep32;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* sA = smem;
  uint8_t* sB = smem + kStagesW * kStageA;
  uint64_t* full = reinterpret_cast<uint64_t*>(sB + kStagesW * kStageB);
  uint64_t* empty = full + kStagesW;
  // kSteps: [2 warpgroups][kMxSteps][kBlockN], after the 256 bytes of barriers (kWgmmaSmemMx)
  float* sMx = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(full) + 256);
  const int tid = threadIdx.x;
  const int wg = tid / 128;
  if (tid == 0) {
    for (int s = 0; s < kStagesW; ++s) {
      ptx::mbar_init(full + s, 1);
      ptx::mbar_init(empty + s, 256);
    }
    ptx::fence_mbar_init();
  }
  __syncthreads();
  const int KB = int(K / kBlockK);
  const int KS = int(K / 32);  // kSteps: scales per row
  const TileScheduler<> sched(m_begin, m_end, N, 1, 0u);

  // PerStep32 keeps two accumulator sets and the total (192 floats) per consumer thread: the producer hands its
  // registers over (setmaxnreg, as gemm_wgmma4_kernel), or ptxas spills and serializes every wgmma (C7512).
  if (wg == 0) {  // producer
    if constexpr (kSteps) ptx::producer_registers();
    if (tid == 0) wgmma_produce(tm_a, tm_b, sA, sB, full, empty, sched, m_begin, KB);
    return;
  }

  // consumers: warpgroup c = wg - 1 owns rows [64c, 64c + 64) of the tile
  if constexpr (kSteps) ptx::consumer_registers();
  const int c = wg - 1;
  const int lt = tid - 128 * wg;  // thread within the warpgroup
  const int w = lt / 32, lane = lt % 32;
  const int g = lane >> 2, tq = lane & 3;
  float* my_mx = sMx + c * kMxSteps * kBlockN;
  int stage = 0;
  uint32_t phase = 0;
  for (int t = blockIdx.x; t < sched.units; t += gridDim.x) {
    int band, nb;
    sched.tile(t, band, nb);
    const int64_t m0 = m_begin + int64_t(band) * kBlockM;
    const int64_t n0 = int64_t(nb) * kBlockN;
    const int64_t r0 = m0 + 64 * c + 16 * w + g;  // this thread's rows r0 and r0 + 8
    const float* sb_row = kScales == GemmScales::Blockscale ? SB + (n0 / kBlockN) * KB : SB;
    float total[64], acc[64], acc2[kSteps ? 64 : 1];  // acc2: PerStep32's second accumulator set
    (void)acc2;
#pragma unroll
    for (int i = 0; i < 64; ++i) total[i] = 0.0f;
    for (int kb = 0; kb < KB; ++kb) {
      ptx::mbar_wait(full + stage, phase);
      const uint8_t* a_tile = sA + stage * kStageA + 64 * c * kBlockK;
      const uint8_t* b_tile = sB + stage * kStageB;
      if constexpr (kSteps) {
        wgmma_k_block_steps(total, acc, acc2, a_tile, b_tile, my_mx, SA, SB, r0, n0, kb, KS, c, lt, tq);
        ptx::mbar_arrive(empty + stage);
        if (++stage == kStagesW) {
          stage = 0;
          phase ^= 1;
        }
        continue;
      }
      const float sa0 = kPerRow ? 1.0f : SA[int64_t(kb) * M + r0], sa1 = kPerRow ? 1.0f : SA[int64_t(kb) * M + r0 + 8];
      const float sbv = kPerRow ? 1.0f : sb_row[kb];
      ptx::wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < kBlockK / 32; ++ks)
        ptx::wgmma_m64n128k32_e4m3(acc, ptx::smem_desc(a_tile + ks * 32), ptx::smem_desc(b_tile + ks * 32),
                                   ks > 0 ? 1 : 0);
      ptx::wgmma_commit();
      ptx::wgmma_wait0();
      ptx::wgmma_fence_operands(acc);  // no read of acc above the wait
      ptx::mbar_arrive(empty + stage);
      if (++stage == kStagesW) {
        stage = 0;
        phase ^= 1;
      }
      promote_block(total, acc, sa0, sa1, sbv);
    }
    wgmma_store_tile<kScales>(total, SA, SB, dest, m0, n0, r0, tq, tid);
  }
#else
  (void)SA, (void)SB, (void)M, (void)N, (void)K, (void)m_begin, (void)m_end, (void)dest, (void)tm_a, (void)tm_b;
  __trap();
#endif
}

}  // namespace
}  // namespace gemmar::kernels::dev
