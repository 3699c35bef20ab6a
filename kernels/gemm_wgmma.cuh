// wgmma (QGMMA) + TMA + mbarrier blockscale GEMM for sm_90a, included by kernels.cu on the NVIDIA build only.
// Design (our own; after the structure DeepGEMM and CUTLASS example 67 describe for Hopper fp8 blockscale):
//   - CTA tile 128 x 128, K step 128 = one scale block; 384 threads = 3 warpgroups: WG0 is the producer (one
//     thread issues TMA loads of the A and B tiles, 128B-swizzled, into a kStagesW-deep ring of shared-memory
//     stages guarded by full/empty mbarriers), WG1 and WG2 are consumers, each owning 64 rows x 128 columns.
//   - per K block a consumer issues 4 wgmma.m64n128k32 e4m3 (fp32 accumulate, the first with scale-d = 0, so
//     the block's dot products start from zero), waits for them, releases the stage, then promotes:
//     total = numerics::block_accumulate(total, blk, sa[row], sb) (the reference's rounding points).
//   - persistent grid (one CTA per SM) walking the tiles n-fastest, so concurrent CTAs share A's row band and B
//     stays in L2; the epilogue stores bf16 RNE into the tile's destination and bumps the per-destination
//     counter (the fused modes' release), exactly as the mma.sync kernel does.
#pragma once

namespace gemmar::kernels::dev {
namespace {

constexpr int kWThreads = 384;
constexpr int kStagesW = 6;
constexpr int kStageA = kBlockM * kBlockK;  // 16 KiB of e4m3
constexpr int kStageB = kBlockN * kBlockK;
constexpr int kWgmmaSmem = kStagesW * (kStageA + kStageB) + 1024 /* alignment */ + 256 /* barriers */;

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}
// K-major operand in shared memory, 128-byte swizzle: rows of 128 B, 8-row (1 KiB) swizzle atoms.
__device__ __forceinline__ uint64_t smem_desc(const void* p) {
  const uint64_t addr = smem_u32(p);
  return ((addr & 0x3ffffull) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
__device__ __forceinline__ void consumer_bar() { asm volatile("bar.sync 1, 256;" ::: "memory"); }

__device__ __forceinline__ void wgmma_m64n128k32_e4m3(float (&d)[64], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// The first wgmma of a K block: d = A*B (scale-d 0), d written only (no read of the previous contents).
__device__ __forceinline__ void wgmma_m64n128k32_e4m3_zero(float (&d)[64], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15]), "=f"(d[16]), "=f"(d[17]), "=f"(d[18]), "=f"(d[19]), "=f"(d[20]), "=f"(d[21]), "=f"(d[22]), "=f"(d[23]), "=f"(d[24]), "=f"(d[25]), "=f"(d[26]), "=f"(d[27]), "=f"(d[28]), "=f"(d[29]), "=f"(d[30]), "=f"(d[31]), "=f"(d[32]), "=f"(d[33]), "=f"(d[34]), "=f"(d[35]), "=f"(d[36]), "=f"(d[37]), "=f"(d[38]), "=f"(d[39]), "=f"(d[40]), "=f"(d[41]), "=f"(d[42]), "=f"(d[43]), "=f"(d[44]), "=f"(d[45]), "=f"(d[46]), "=f"(d[47]), "=f"(d[48]), "=f"(d[49]), "=f"(d[50]), "=f"(d[51]), "=f"(d[52]), "=f"(d[53]), "=f"(d[54]), "=f"(d[55]), "=f"(d[56]), "=f"(d[57]), "=f"(d[58]), "=f"(d[59]), "=f"(d[60]), "=f"(d[61]), "=f"(d[62]), "=f"(d[63])
      : "l"(desc_a), "l"(desc_b));
}

__global__ void __launch_bounds__(kWThreads, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                      const float* __restrict__ SA, const float* __restrict__ SB, int64_t M, int64_t N, int64_t K,
                      int64_t m_begin, int64_t m_end, GemmDest dest) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* sA = smem;
  uint8_t* sB = smem + kStagesW * kStageA;
  uint64_t* full = reinterpret_cast<uint64_t*>(sB + kStagesW * kStageB);
  uint64_t* empty = full + kStagesW;
  const int tid = threadIdx.x;
  const int wg = tid / 128;
  if (tid == 0) {
    for (int s = 0; s < kStagesW; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, 256);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int KB = int(K / kBlockK);
  const int tiles_n = int(N / kBlockN);
  const int tiles = int((m_end - m_begin) / kBlockM) * tiles_n;

  if (wg == 0) {  // producer
    if (tid == 0) {
      int stage = 0;
      uint32_t phase = 0;
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int m0 = int(m_begin) + (t / tiles_n) * kBlockM, n0 = (t % tiles_n) * kBlockN;
        for (int kb = 0; kb < KB; ++kb) {
          mbar_wait(empty + stage, phase ^ 1);
          mbar_expect_tx(full + stage, kStageA + kStageB);
          tma_load_2d(sA + stage * kStageA, &tm_a, full + stage, kb * kBlockK, m0);
          tma_load_2d(sB + stage * kStageB, &tm_b, full + stage, kb * kBlockK, n0);
          if (++stage == kStagesW) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
    return;
  }

  // consumers: warpgroup c = wg - 1 owns rows [64c, 64c + 64) of the tile
  const int c = wg - 1;
  const int lt = tid - 128 * wg;  // thread within the warpgroup
  const int w = lt / 32, lane = lt % 32;
  const int g = lane >> 2, tq = lane & 3;
  int stage = 0;
  uint32_t phase = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t m0 = m_begin + int64_t(t / tiles_n) * kBlockM;
    const int64_t n0 = int64_t(t % tiles_n) * kBlockN;
    const int64_t r0 = m0 + 64 * c + 16 * w + g;  // this thread's rows r0 and r0 + 8
    const float* sb_row = SB + (n0 / kBlockN) * KB;
    float total[64], acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) total[i] = 0.0f;
    for (int kb = 0; kb < KB; ++kb) {
      const float sa0 = SA[int64_t(kb) * M + r0], sa1 = SA[int64_t(kb) * M + r0 + 8];
      const float sbv = sb_row[kb];
      mbar_wait(full + stage, phase);
      const uint8_t* a_tile = sA + stage * kStageA + 64 * c * kBlockK;
      const uint8_t* b_tile = sB + stage * kStageB;
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < kBlockK / 32; ++ks)
        wgmma_m64n128k32_e4m3(acc, smem_desc(a_tile + ks * 32), smem_desc(b_tile + ks * 32), ks > 0 ? 1 : 0);
      wgmma_commit();
      wgmma_wait0();
#pragma unroll
      for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(acc[i])::"memory");  // no read of acc above the wait
      mbar_arrive(empty + stage);
      if (++stage == kStagesW) {
        stage = 0;
        phase ^= 1;
      }
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        total[4 * j + 0] = nm::block_accumulate(total[4 * j + 0], acc[4 * j + 0], sa0, sbv);
        total[4 * j + 1] = nm::block_accumulate(total[4 * j + 1], acc[4 * j + 1], sa0, sbv);
        total[4 * j + 2] = nm::block_accumulate(total[4 * j + 2], acc[4 * j + 2], sa1, sbv);
        total[4 * j + 3] = nm::block_accumulate(total[4 * j + 3], acc[4 * j + 3], sa1, sbv);
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
    consumer_bar();  // both consumer warpgroups stored the tile
    if (tid == 128 && dest.counters) {
      __threadfence();
      atomicAdd(dest.counters + slice, 1u);
    }
  }
#else
  (void)SA; (void)SB; (void)M; (void)N; (void)K; (void)m_begin; (void)m_end; (void)dest; (void)tm_a; (void)tm_b;
  __trap();
#endif
}


// ---------------------------------------------------------------------------------------------------------
// gemm_wgmma2_kernel: CTA tile 256 x 128 (kCluster = 2: a cluster of two CTAs side by side along N shares the
// A tile through TMA multicast, so one cluster computes 256 x 256 and reads A once). 384 threads: WG0 is the
// producer (setmaxnreg 40; one thread issues the TMA loads: its half of A multicast to both CTAs, its B tile,
// and the 256 A scales of the K block), WG1/WG2 the consumers (setmaxnreg 232), each owning 128 rows as two
// 64-row waves of m64n128k32 wgmma. Per K block and wave: 4 wgmma into `acc` (scale-d 0 first), wait, then
// total = block_accumulate(total, acc, sa, sb); the other consumer warpgroup's wgmma runs on the tensor cores
// meanwhile. A stage is released (one arrive per consumer warp on the empty barrier of every CTA of the
// cluster, since the peer's multicast writes into it) after the second wave's wait. Epilogue as above.
constexpr int kW2BlockM = 256;
constexpr int kW2Stages = 4;
constexpr int kW2StageA = kW2BlockM * kBlockK;  // 32 KiB
constexpr int kW2StageB = kBlockN * kBlockK;    // 16 KiB
constexpr int kW2StageS = kW2BlockM * 4;        // the A scales of the K block, 1 KiB
constexpr int kW2Smem = kW2Stages * (kW2StageA + kW2StageB + kW2StageS) + 1024 + 256;

__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Arrive on the barrier at the same shared-memory offset in CTA `cta` of the cluster.
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n}" ::"r"(smem_u32(bar)),
      "r"(cta)
      : "memory");
}
__device__ __forceinline__ void tma_load_2d_mc(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1,
                                               uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(mask)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// kFma (measurement only, GEMMAR_GEMM_KERNEL=wgmma2fma): the promotion as one fma(acc, sa*sb, total) instead
// of block_accumulate's separately rounded multiply and add.
// kOrdered: the two consumer warpgroups take turns on the tensor cores (named barriers 2 and 3 pass a token:
// a warpgroup issues its wave only after the other one's wave completed), so one promotes while the other's
// wgmma run, instead of both finishing together and promoting together.
template <int kCluster, bool kFma = false, bool kOrdered = false>
__global__ void __launch_bounds__(kWThreads, 1)
    gemm_wgmma2_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                       const __grid_constant__ CUtensorMap tm_sa, const float* __restrict__ SB, int64_t N, int64_t K,
                       int64_t m_begin, int64_t m_end, GemmDest dest) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* sA = smem;
  uint8_t* sB = sA + kW2Stages * kW2StageA;
  float* sS = reinterpret_cast<float*>(sB + kW2Stages * kW2StageB);
  uint64_t* full = reinterpret_cast<uint64_t*>(reinterpret_cast<uint8_t*>(sS) + kW2Stages * kW2StageS);
  uint64_t* empty = full + kW2Stages;
  const int tid = threadIdx.x;
  const int wg = __shfl_sync(0xffffffffu, tid / 128, 0);
  const uint32_t rank = kCluster > 1 ? cluster_ctarank() : 0;
  if (tid == 0) {
    for (int s = 0; s < kW2Stages; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, 8 * kCluster);  // one arrive per consumer warp of every CTA of the cluster
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (kCluster > 1) cluster_sync_all();
  else __syncthreads();
  const int KB = int(K / kBlockK);
  const int tiles_n = int(N / kBlockN);
  const int pairs_n = tiles_n / kCluster;
  const int units = int((m_end - m_begin) / kW2BlockM) * pairs_n;
  const int cid = int(blockIdx.x) / kCluster, nclusters = int(gridDim.x) / kCluster;

  if (wg == 0) {  // producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (tid == 0) {
      tma_prefetch_desc(&tm_a);
      tma_prefetch_desc(&tm_b);
      tma_prefetch_desc(&tm_sa);
      int stage = 0;
      uint32_t phase = 0;
      for (int u = cid; u < units; u += nclusters) {
        const int m0 = int(m_begin) + (u / pairs_n) * kW2BlockM;
        const int n0 = ((u % pairs_n) * kCluster + int(rank)) * kBlockN;
        for (int kb = 0; kb < KB; ++kb) {
          mbar_wait(empty + stage, phase ^ 1);
          mbar_expect_tx(full + stage, kW2StageA + kW2StageB + kW2StageS);
          if (kCluster > 1) {
            tma_load_2d_mc(sA + stage * kW2StageA + int(rank) * (kW2StageA / 2), &tm_a, full + stage, kb * kBlockK,
                           m0 + int(rank) * (kW2BlockM / 2), uint16_t((1u << kCluster) - 1));
          } else {
            tma_load_2d(sA + stage * kW2StageA, &tm_a, full + stage, kb * kBlockK, m0);
            tma_load_2d(sA + stage * kW2StageA + kW2StageA / 2, &tm_a, full + stage, kb * kBlockK, m0 + kW2BlockM / 2);
          }
          tma_load_2d(sB + stage * kW2StageB, &tm_b, full + stage, kb * kBlockK, n0);
          tma_load_2d(sS + stage * (kW2StageS / 4), &tm_sa, full + stage, m0, kb);
          if (++stage == kW2Stages) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    // consumers: warpgroup c owns rows [128c, 128c + 128) of the tile, as waves h = 0, 1 of 64 rows
    const int c = wg - 1;
    const int lt = tid - 128 * wg;
    const int w = lt / 32, lane = lt % 32;
    const int g = lane >> 2, tq = lane & 3;
    const int lrow = 128 * c + 16 * w + g;  // this thread's rows in the tile: lrow + 64h and lrow + 64h + 8
    int stage = 0;
    uint32_t phase = 0;
    const int my_units = cid < units ? (units - cid + nclusters - 1) / nclusters : 0;
    const int waves_total = my_units * KB * 2;
    int wave_no = 0;
    for (int u = cid; u < units; u += nclusters) {
      const int64_t m0 = m_begin + int64_t(u / pairs_n) * kW2BlockM;
      const int nb = (u % pairs_n) * kCluster + int(rank);
      const int64_t n0 = int64_t(nb) * kBlockN;
      const float* sb_row = SB + int64_t(nb) * KB;
      float total[2][64], acc[64];
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int i = 0; i < 64; ++i) total[h][i] = 0.0f;
      float sbv = __ldg(sb_row);
      for (int kb = 0; kb < KB; ++kb) {
        const float sb_cur = sbv;
        if (kb + 1 < KB) sbv = __ldg(sb_row + kb + 1);
        mbar_wait(full + stage, phase);
        const float* ss = sS + stage * (kW2StageS / 4);
        float sa[2][2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          sa[h][0] = ss[lrow + 64 * h];
          sa[h][1] = ss[lrow + 64 * h + 8];
        }
        const uint8_t* b_tile = sB + stage * kW2StageB;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint8_t* a_tile = sA + stage * kW2StageA + (128 * c + 64 * h) * kBlockK;
          if constexpr (kOrdered) {
            if (c == 1 || wave_no > 0) asm volatile("bar.sync %0, 256;" ::"r"(2 + c) : "memory");
          }
          wgmma_fence();
#pragma unroll
          for (int ks = 0; ks < kBlockK / 32; ++ks)
            wgmma_m64n128k32_e4m3(acc, smem_desc(a_tile + ks * 32), smem_desc(b_tile + ks * 32), ks > 0 ? 1 : 0);
          wgmma_commit();
          wgmma_wait0();
#pragma unroll
          for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(acc[i])::"memory");
          if constexpr (kOrdered) {
            // hand the tensor cores to the other warpgroup (warpgroup 1's last wave has nobody to hand to)
            if (c == 0 || wave_no + 1 < waves_total) asm volatile("bar.arrive %0, 256;" ::"r"(3 - c) : "memory");
            ++wave_no;
          }
          if (h == 1) {
            if (kCluster > 1) {
              if (lane < kCluster) mbar_arrive_cluster(empty + stage, uint32_t(lane));
            } else if (lane == 0) {
              mbar_arrive(empty + stage);
            }
          }
          if constexpr (kFma) {
            const float s0 = sa[h][0] * sb_cur, s1 = sa[h][1] * sb_cur;
#pragma unroll
            for (int j = 0; j < 16; ++j) {
              total[h][4 * j + 0] = fmaf(acc[4 * j + 0], s0, total[h][4 * j + 0]);
              total[h][4 * j + 1] = fmaf(acc[4 * j + 1], s0, total[h][4 * j + 1]);
              total[h][4 * j + 2] = fmaf(acc[4 * j + 2], s1, total[h][4 * j + 2]);
              total[h][4 * j + 3] = fmaf(acc[4 * j + 3], s1, total[h][4 * j + 3]);
            }
          } else {
#pragma unroll
            for (int j = 0; j < 16; ++j) {
              total[h][4 * j + 0] = nm::block_accumulate(total[h][4 * j + 0], acc[4 * j + 0], sa[h][0], sb_cur);
              total[h][4 * j + 1] = nm::block_accumulate(total[h][4 * j + 1], acc[4 * j + 1], sa[h][0], sb_cur);
              total[h][4 * j + 2] = nm::block_accumulate(total[h][4 * j + 2], acc[4 * j + 2], sa[h][1], sb_cur);
              total[h][4 * j + 3] = nm::block_accumulate(total[h][4 * j + 3], acc[4 * j + 3], sa[h][1], sb_cur);
            }
          }
        }
        if (++stage == kW2Stages) {
          stage = 0;
          phase ^= 1;
        }
      }
      int slice = 0;
      uint16_t* C = tile_dest(dest, m0, slice);
      if (C) {
        const int64_t ldd = dest.ldd;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          uint16_t* c0 = C + (m0 + lrow + 64 * h) * ldd + n0 + 2 * tq;
#pragma unroll
          for (int j = 0; j < 16; ++j) {
            *reinterpret_cast<uint32_t*>(c0 + 8 * j) = pack_bf16x2(total[h][4 * j + 0], total[h][4 * j + 1]);
            *reinterpret_cast<uint32_t*>(c0 + 8 * ldd + 8 * j) = pack_bf16x2(total[h][4 * j + 2], total[h][4 * j + 3]);
          }
        }
      }
      consumer_bar();  // both consumer warpgroups stored the tile
      if (tid == 128 && dest.counters) {
        __threadfence();
        atomicAdd(dest.counters + slice, unsigned(kW2BlockM / kBlockM));  // counted in 128-row tiles
      }
    }
  }
  // No CTA leaves while its peer may still multicast into it or arrive on its barriers.
  if (kCluster > 1) cluster_sync_all();
#else
  (void)SB; (void)N; (void)K; (void)m_begin; (void)m_end; (void)dest; (void)tm_a; (void)tm_b; (void)tm_sa;
  __trap();
#endif
}


// ---------------------------------------------------------------------------------------------------------
// gemm_wgmma3_kernel: CTA tile 128 x 128 (kCluster = 2: two CTAs side by side along N share A by TMA
// multicast, 64 rows each), 1 producer + 2 consumer warpgroups (64 rows each), setmaxnreg 40/232, 6 stages.
// The consumers keep the tensor cores fed across the promotion: two accumulator sets; K block g+1's four
// wgmma are issued into one set before K block g's result (the other set) is waited for (wait_group 1) and
// promoted, so each warpgroup always has the next block queued. The stream of K blocks runs across tile
// boundaries, so a tile's epilogue also overlaps the next tile's first wgmma.
// bf16 pair (lo = a, hi = b), RNE, NaN -> 0x7fc0: nm::f32_to_bf16 bit for bit (the hardware conversion was
// checked against it on all 2^32 inputs on the H200, gemmar_gpu_bench selftest).
__device__ __forceinline__ uint32_t bf16x2_rn(float a, float b) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  if ((r & 0x7fffu) > 0x7f80u) r = (r & 0xffff0000u) | 0x7fc0u;
  if (((r >> 16) & 0x7fffu) > 0x7f80u) r = (r & 0x0000ffffu) | 0x7fc00000u;
  return r;
}

constexpr int kW3Stages = 6;
constexpr int kW3StageA = kBlockM * kBlockK;  // 16 KiB
constexpr int kW3StageB = kBlockN * kBlockK;  // 16 KiB
constexpr int kW3StageS = kBlockM * 4;        // 512 B of A scales
constexpr int kW3Smem = kW3Stages * (kW3StageA + kW3StageB + kW3StageS) + 1024 + 256;

__device__ __forceinline__ void wgmma_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); }

template <int kCluster, int kKB>
__global__ void __launch_bounds__(kWThreads, 1)
    gemm_wgmma3_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                       const __grid_constant__ CUtensorMap tm_sa, const float* __restrict__ SB, int64_t N, int64_t K,
                       int64_t m_begin, int64_t m_end, GemmDest dest) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* sA = smem;
  uint8_t* sB = sA + kW3Stages * kW3StageA;
  float* sS = reinterpret_cast<float*>(sB + kW3Stages * kW3StageB);
  uint64_t* full = reinterpret_cast<uint64_t*>(reinterpret_cast<uint8_t*>(sS) + kW3Stages * kW3StageS);
  uint64_t* empty = full + kW3Stages;
  const int tid = threadIdx.x;
  const int wg = __shfl_sync(0xffffffffu, tid / 128, 0);
  const uint32_t rank = kCluster > 1 ? cluster_ctarank() : 0;
  if (tid == 0) {
    for (int s = 0; s < kW3Stages; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, 8 * kCluster);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (kCluster > 1) cluster_sync_all();
  else __syncthreads();
  constexpr int KB = kKB;  // K / 128, checked by the launcher
  (void)K;
  const int tiles_n = int(N / kBlockN);
  const int pairs_n = tiles_n / kCluster;
  const int units = int((m_end - m_begin) / kBlockM) * pairs_n;
  const int cid = int(blockIdx.x) / kCluster, nclusters = int(gridDim.x) / kCluster;

  if (wg == 0) {  // producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (tid == 0) {
      tma_prefetch_desc(&tm_a);
      tma_prefetch_desc(&tm_b);
      tma_prefetch_desc(&tm_sa);
      int stage = 0;
      uint32_t phase = 0;
      for (int u = cid; u < units; u += nclusters) {
        const int m0 = int(m_begin) + (u / pairs_n) * kBlockM;
        const int n0 = ((u % pairs_n) * kCluster + int(rank)) * kBlockN;
        for (int kb = 0; kb < KB; ++kb) {
          mbar_wait(empty + stage, phase ^ 1);
          mbar_expect_tx(full + stage, kW3StageA + kW3StageB + kW3StageS);
          if (kCluster > 1)
            tma_load_2d_mc(sA + stage * kW3StageA + int(rank) * (kW3StageA / 2), &tm_a, full + stage, kb * kBlockK,
                           m0 + int(rank) * (kBlockM / 2), uint16_t((1u << kCluster) - 1));
          else
            tma_load_2d(sA + stage * kW3StageA, &tm_a, full + stage, kb * kBlockK, m0);
          tma_load_2d(sB + stage * kW3StageB, &tm_b, full + stage, kb * kBlockK, n0);
          tma_load_2d(sS + stage * (kW3StageS / 4), &tm_sa, full + stage, m0, kb);
          if (++stage == kW3Stages) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int c = wg - 1;  // rows [64c, 64c + 64) of the tile
    const int lt = tid - 128 * wg;
    const int w = lt / 32, lane = lt % 32;
    const int g8 = lane >> 2, tq = lane & 3;
    const int lrow = 64 * c + 16 * w + g8;  // this thread's rows in the tile: lrow, lrow + 8
    const int my_units = cid < units ? (units - cid + nclusters - 1) / nclusters : 0;
    float total[64], acc0[64], acc1[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) total[i] = 0.0f;
    const float* sb_row = SB;  // the current tile's B scales
    int64_t m0 = 0, n0 = 0;     // the current tile's origin
    // Waits for K block gi's stage, reads its scales, issues its four wgmma into `a`.
    auto issue = [&](int gi, int kb, float(&a)[64]) {
      const int st = gi % kW3Stages;
      const uint32_t ph = uint32_t(gi / kW3Stages) & 1u;
      (void)kb;
      mbar_wait(full + st, ph);
      const uint8_t* a_tile = sA + st * kW3StageA + 64 * c * kBlockK;
      const uint8_t* b_tile = sB + st * kW3StageB;
      wgmma_fence();
      wgmma_m64n128k32_e4m3_zero(a, smem_desc(a_tile), smem_desc(b_tile));
#pragma unroll
      for (int ks = 1; ks < kBlockK / 32; ++ks)
        wgmma_m64n128k32_e4m3(a, smem_desc(a_tile + ks * 32), smem_desc(b_tile + ks * 32), 1);
      wgmma_commit();
#pragma unroll
      for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(a[i])::"memory");
    };
    // K block gi (in `a`, issued earlier) is finished: release its stage, promote, and store at a tile's end.
    // The scales are read here (the stage is still held), not carried from the issue: fewer live registers.
    auto retire = [&](int gi, int kb, bool last, float(&a)[64]) {
#pragma unroll
      for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(a[i])::"memory");
      const int st = gi % kW3Stages;
      float sbv;
      asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(sbv) : "l"(sb_row + kb));
      const float sa0 = sS[st * (kW3StageS / 4) + lrow], sa1 = sS[st * (kW3StageS / 4) + lrow + 8];
      if (kCluster > 1) {
        if (lane < kCluster) mbar_arrive_cluster(empty + st, uint32_t(lane));
      } else if (lane == 0) {
        mbar_arrive(empty + st);
      }
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        total[4 * j + 0] = nm::block_accumulate(total[4 * j + 0], a[4 * j + 0], sa0, sbv);
        total[4 * j + 1] = nm::block_accumulate(total[4 * j + 1], a[4 * j + 1], sa0, sbv);
        total[4 * j + 2] = nm::block_accumulate(total[4 * j + 2], a[4 * j + 2], sa1, sbv);
        total[4 * j + 3] = nm::block_accumulate(total[4 * j + 3], a[4 * j + 3], sa1, sbv);
      }
      if (last) {
        uint32_t packed[32];  // the tile's bf16 first: frees `total` before any address arithmetic
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          packed[2 * j] = bf16x2_rn(total[4 * j + 0], total[4 * j + 1]);
          packed[2 * j + 1] = bf16x2_rn(total[4 * j + 2], total[4 * j + 3]);
        }
#pragma unroll
        for (int i = 0; i < 64; ++i) total[i] = 0.0f;
        int slice = 0;
        uint16_t* C = tile_dest(dest, m0, slice);
        if (C) {
          const int64_t ldd = dest.ldd;
          uint16_t* c0 = C + (m0 + lrow) * ldd + n0 + 2 * tq;
#pragma unroll
          for (int j = 0; j < 16; ++j) {
            *reinterpret_cast<uint32_t*>(c0 + 8 * j) = packed[2 * j];
            *reinterpret_cast<uint32_t*>(c0 + 8 * ldd + 8 * j) = packed[2 * j + 1];
          }
        }
        consumer_bar();  // both consumer warpgroups stored the tile
        if (tid == 128 && dest.counters) {
          __threadfence();
          atomicAdd(dest.counters + slice, 1u);
        }
      }
    };
    // One tile per iteration, its kKB K blocks unrolled: every wgmma group is waited for inside the iteration
    // (ptxas serializes all wgmma (C7514) when a group stays in flight across a loop's back edge).
    for (int gt = 0; gt < my_units; ++gt) {
      const int u = cid + gt * nclusters;
      const int nb = (u % pairs_n) * kCluster + int(rank);
      m0 = m_begin + int64_t(u / pairs_n) * kBlockM;
      n0 = int64_t(nb) * kBlockN;
      sb_row = SB + int64_t(nb) * KB;
      const int g0 = gt * kKB;
      issue(g0, 0, acc0);
#pragma unroll
      for (int kb = 0; kb < kKB; kb += 2) {
        if (kb + 1 < kKB) {
          issue(g0 + kb + 1, kb + 1, acc1);
          wgmma_wait1();
        } else {
          wgmma_wait0();
        }
        retire(g0 + kb, kb, kb + 1 == kKB, acc0);
        if (kb + 1 < kKB) {
          if (kb + 2 < kKB) {
            issue(g0 + kb + 2, kb + 2, acc0);
            wgmma_wait1();
          } else {
            wgmma_wait0();
          }
          retire(g0 + kb + 1, kb + 1, kb + 2 == kKB, acc1);
        }
      }
    }
  }
  if (kCluster > 1) cluster_sync_all();
#else
  (void)SB; (void)N; (void)K; (void)m_begin; (void)m_end; (void)dest; (void)tm_a; (void)tm_b; (void)tm_sa;
  __trap();
#endif
}

}  // namespace
}  // namespace gemmar::kernels::dev
