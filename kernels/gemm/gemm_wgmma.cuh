// wgmma (QGMMA) + TMA + mbarrier blockscale GEMMs for sm_90a, included by gemm/blockscale.cu on the NVIDIA build only.
// Our own design, after the structure DeepGEMM and CUTLASS example 67 describe for Hopper fp8 blockscale:
// CTA tile 128 x 128, K step 128 = one scale block, 384 threads = 3 warpgroups: WG0 is the producer (one thread
// issues TMA loads of the A and B tiles, 128B-swizzled, into a ring of shared-memory stages guarded by full/empty
// mbarriers), WG1 and WG2 are consumers, each owning 64 rows x 128 columns; per K block a consumer issues 4
// wgmma.m64n128k32 e4m3 (fp32 accumulate, the first with scale-d = 0, so the block's dot products start from
// zero) and promotes total = numerics::block_accumulate(total, blk, sa[row], sb) (the reference's rounding
// points); a persistent grid (one CTA per SM) walks the tiles n-fastest (gemm_wgmma4_kernel: in groups of
// bands, the band fastest within a group), so concurrent CTAs share A's row bands and B stays in L2; the epilogue
// stores bf16 RNE into the tile's destination and bumps the per-destination counter (the fused modes' release), as the
// mma.sync kernel does.
//   gemm_wgmma4_kernel  the default where K / 128 = kKB is 4, 8, 12, 16, 24 or 32 (the tile's K blocks unrolled;
//                       K = 1024 and 2048 for mori): two accumulator sets, warpgroups kLag K blocks apart, 16-byte
//                       stores (its own comment below)
//   gemm_wgmma_kernel   any K: one accumulator set, each K block waited for before its promotion
// What was measured against what (variants since removed: 256-row tiles, turn-taking warpgroups, the lag-free tile
// end): docs/results/h200-1gpu-2026-12-03-gemm and h200-1gpu-2026-12-03-gemm4; the A multicast and the tile
// groups: docs/results/h100-1gpu-2026-12-06-raster.
#pragma once

namespace gemmar::kernels::dev {
namespace {

constexpr int kWThreads = 384;
constexpr int kStagesW = 6;
constexpr int kStageA = kBlockM * kBlockK;  // 16 KiB of e4m3
constexpr int kStageB = kBlockN * kBlockK;
constexpr int kWgmmaSmem = kStagesW * (kStageA + kStageB) + 1024 /* alignment */ + 256 /* barriers */;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

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
__device__ __forceinline__ void tma_load_2d(void* dst, const gpuTensorMap* map, uint64_t* bar, int c0, int c1) {
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
// The descriptor of the operand `bytes` further on: the start-address field (bits 0-13, address >> 4) is the only
// one that moves, and shared addresses stay below 2^18, so it never carries into the constant fields above it: one
// 32-bit add instead of recomputing the descriptor from the address (mask, shift, or) for each of a K block's
// eight operands.
__device__ __forceinline__ uint64_t smem_desc_advance(uint64_t desc, uint32_t bytes) {
  uint64_t r;
  asm("mov.b64 %0, {%1, %2};" : "=l"(r) : "r"(uint32_t(desc) + (bytes >> 4)), "r"(uint32_t(desc >> 32)));
  return r;
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); }
__device__ __forceinline__ void consumer_bar() { asm volatile("bar.sync 1, 256;" ::: "memory"); }

__device__ __forceinline__ void wgmma_m64n128k32_e4m3(float (&d)[64], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "
      "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, "
      "1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// The first wgmma of a K block: d = A*B (scale-d 0), d written only (no read of the previous contents).
__device__ __forceinline__ void wgmma_m64n128k32_e4m3_zero(float (&d)[64], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "
      "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, "
      "1;\n}\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]),
        "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15]), "=f"(d[16]),
        "=f"(d[17]), "=f"(d[18]), "=f"(d[19]), "=f"(d[20]), "=f"(d[21]), "=f"(d[22]), "=f"(d[23]), "=f"(d[24]),
        "=f"(d[25]), "=f"(d[26]), "=f"(d[27]), "=f"(d[28]), "=f"(d[29]), "=f"(d[30]), "=f"(d[31]), "=f"(d[32]),
        "=f"(d[33]), "=f"(d[34]), "=f"(d[35]), "=f"(d[36]), "=f"(d[37]), "=f"(d[38]), "=f"(d[39]), "=f"(d[40]),
        "=f"(d[41]), "=f"(d[42]), "=f"(d[43]), "=f"(d[44]), "=f"(d[45]), "=f"(d[46]), "=f"(d[47]), "=f"(d[48]),
        "=f"(d[49]), "=f"(d[50]), "=f"(d[51]), "=f"(d[52]), "=f"(d[53]), "=f"(d[54]), "=f"(d[55]), "=f"(d[56]),
        "=f"(d[57]), "=f"(d[58]), "=f"(d[59]), "=f"(d[60]), "=f"(d[61]), "=f"(d[62]), "=f"(d[63])
      : "l"(desc_a), "l"(desc_b));
}

// The scale layouts gemm_wgmma_kernel runs (common/modes.hpp's scale_block of each quant):
//   Blockscale  SA [K/128, M] (M contiguous), SB [N/128, K/128]: each K block's dot promoted with
//               numerics::block_accumulate(total, dot, sa, sb)
//   Ptpc        SA [M], SB [N]: each K block's dot promoted unscaled (total + dot, in fp32 on the CUDA cores every
//               128 K, so the tensor cores' accumulation never spans more than one K block) and
//               numerics::ptpc_epilogue applies sa * sb once before the store
//   Mx          SA [M, K/32], SB [N/32, K/32] (powers of two; B's per 32x32 block, mori's weight layout): every
//               32-wide K step is its own wgmma, promoted with block_accumulate and that step's scales (Hopper
//               has no MX instruction), two accumulator sets so that step s + 1 runs while step s is promoted;
//               the B scales of the tile's 128 columns for the K block are staged in shared memory per warpgroup
enum class WgmmaScales { Blockscale, Ptpc, Mx };
constexpr int kMxSteps = kBlockK / 32;                 // 32-wide scale steps per 128-wide K block
constexpr int kMxBRows = 32;                           // B rows (N) per mxfp8 scale block
constexpr int kMxScaleBytes = kMxSteps * kBlockN * 4;  // one warpgroup's staged B scales of a K block
constexpr int kWgmmaSmemMx = kWgmmaSmem + 2 * kMxScaleBytes;

template <WgmmaScales kScales>
__global__ void __launch_bounds__(kWThreads, 1)
    gemm_wgmma_kernel(const __grid_constant__ gpuTensorMap tm_a, const __grid_constant__ gpuTensorMap tm_b,
                      const float* __restrict__ SA, const float* __restrict__ SB, int64_t M, int64_t N, int64_t K,
                      int64_t m_begin, int64_t m_end, GemmDest dest) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr bool kPtpc = kScales == WgmmaScales::Ptpc, kMx = kScales == WgmmaScales::Mx;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* sA = smem;
  uint8_t* sB = smem + kStagesW * kStageA;
  uint64_t* full = reinterpret_cast<uint64_t*>(sB + kStagesW * kStageB);
  uint64_t* empty = full + kStagesW;
  // kMx: [2 warpgroups][kMxSteps][kBlockN], after the 256 bytes of barriers (kWgmmaSmemMx)
  float* sMx = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(full) + 256);
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
  const int KS = int(K / 32);  // kMx: scales per row
  const int tiles_n = int(N / kBlockN);
  const int tiles = int((m_end - m_begin) / kBlockM) * tiles_n;

  // mxfp8 keeps two accumulator sets and the total (192 floats) per consumer thread: the producer hands its
  // registers over (setmaxnreg, as gemm_wgmma4_kernel), or ptxas spills and serializes every wgmma (C7512).
  if (wg == 0) {  // producer
    if constexpr (kMx) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
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
  if constexpr (kMx) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  const int c = wg - 1;
  const int lt = tid - 128 * wg;  // thread within the warpgroup
  const int w = lt / 32, lane = lt % 32;
  const int g = lane >> 2, tq = lane & 3;
  float* my_mx = sMx + c * kMxSteps * kBlockN;
  int stage = 0;
  uint32_t phase = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t m0 = m_begin + int64_t(t / tiles_n) * kBlockM;
    const int64_t n0 = int64_t(t % tiles_n) * kBlockN;
    const int64_t r0 = m0 + 64 * c + 16 * w + g;  // this thread's rows r0 and r0 + 8
    const float* sb_row = kScales == WgmmaScales::Blockscale ? SB + (n0 / kBlockN) * KB : SB;
    float total[64], acc[64], acc2[kMx ? 64 : 1];  // acc2: mxfp8's second accumulator set
    (void)acc2;
#pragma unroll
    for (int i = 0; i < 64; ++i) total[i] = 0.0f;
    for (int kb = 0; kb < KB; ++kb) {
      mbar_wait(full + stage, phase);
      const uint8_t* a_tile = sA + stage * kStageA + 64 * c * kBlockK;
      const uint8_t* b_tile = sB + stage * kStageB;
      if constexpr (kMx) {
        // The K block's B scales of the tile's columns, [step][column]: a quad's lanes read adjacent columns.
        for (int i = lt; i < kMxSteps * kBlockN; i += 128) {
          const int col = i % kBlockN, step = i / kBlockN;
          my_mx[i] = SB[((n0 + col) / kMxBRows) * KS + kb * kMxSteps + step];
        }
        asm volatile("bar.sync %0, 128;" ::"r"(3 + c) : "memory");
        // The 4 steps' A scales of this thread's two rows, loaded before the first wgmma (16-byte loads: K/32 is
        // a multiple of 4). Two accumulator sets: step s + 1 is issued before step s is waited for and promoted,
        // so the tensor cores run under the promotion (wait_group 1) instead of idling through it.
        static_assert(kMxSteps == 4, "one float4 of A scales per row and K block");
        const float4 sa0v = *reinterpret_cast<const float4*>(SA + r0 * KS + kb * kMxSteps);
        const float4 sa1v = *reinterpret_cast<const float4*>(SA + (r0 + 8) * KS + kb * kMxSteps);
        const float sa0s[4] = {sa0v.x, sa0v.y, sa0v.z, sa0v.w}, sa1s[4] = {sa1v.x, sa1v.y, sa1v.z, sa1v.w};
        auto issue = [&](int ks, float(&d)[64]) {
          wgmma_fence();
          wgmma_m64n128k32_e4m3_zero(d, smem_desc(a_tile + ks * 32), smem_desc(b_tile + ks * 32));
          wgmma_commit();
#pragma unroll
          for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
        };
        auto promote = [&](int ks, float(&d)[64]) {
#pragma unroll
          for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
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
        wgmma_wait1();
        promote(0, acc);
        issue(2, acc);
        wgmma_wait1();
        promote(1, acc2);
        issue(3, acc2);
        wgmma_wait1();
        promote(2, acc);
        wgmma_wait0();
        promote(3, acc2);
        asm volatile("bar.sync %0, 128;" ::"r"(3 + c) : "memory");  // every lane read the staged scales
        mbar_arrive(empty + stage);
        if (++stage == kStagesW) {
          stage = 0;
          phase ^= 1;
        }
        continue;
      }
      const float sa0 = kPtpc ? 1.0f : SA[int64_t(kb) * M + r0], sa1 = kPtpc ? 1.0f : SA[int64_t(kb) * M + r0 + 8];
      const float sbv = kPtpc ? 1.0f : sb_row[kb];
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
    if constexpr (kPtpc) {
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
    consumer_bar();  // both consumer warpgroups stored the tile
    if (tid == 128 && dest.counters) {
      __threadfence();
      atomicAdd(dest.counters + slice, 1u);
    }
  }
#else
  (void)SA;
  (void)SB;
  (void)M;
  (void)N;
  (void)K;
  (void)m_begin;
  (void)m_end;
  (void)dest;
  (void)tm_a;
  (void)tm_b;
  __trap();
#endif
}

__device__ __forceinline__ void tma_prefetch_desc(const gpuTensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// gemm_wgmma4_kernel's clusters: each CTA loads half of a shared tile and multicasts it into its peers' shared
// memory at the same offset.
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Arrive on the barrier at the same shared-memory offset in CTA `cta` of the cluster. The default semantics
// (release at CTA scope), as CUTLASS's ClusterBarrier::arrive: what the arrive orders is the wgmma reads of the
// stage, already complete (wait_group). `.release.cluster` made every arrive wait on this thread's outstanding
// memory operations: the clusters ran at half speed (docs/results/h100-1gpu-2026-12-06-raster).
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}" ::"r"(smem_u32(bar)),
      "r"(cta)
      : "memory");
}
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const gpuTensorMap* map, uint64_t* bar, int c0, int c1,
                                                      uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(cta_mask)
      : "memory");
}

// L2 eviction priorities (createpolicy: the whole access range at the one priority), for the cache-hinted TMA loads
// and stores of gemm_wgmma4_kernel below.
__device__ __forceinline__ uint64_t l2_policy_evict_first() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint64_t l2_policy_evict_last() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ void tma_load_2d_hinted(void* dst, const gpuTensorMap* map, uint64_t* bar, int c0, int c1,
                                                   uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "l"(policy)
      : "memory");
}
__device__ __forceinline__ void tma_load_2d_multicast_hinted(void* dst, const gpuTensorMap* map, uint64_t* bar, int c0,
                                                             int c1, uint16_t cta_mask, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"
      " [%0], [%1, {%3, %4}], [%2], %5, %6;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(cta_mask), "l"(policy)
      : "memory");
}
// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global into this CTA's shared memory, counted on
// bar's transaction count.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(src)), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}
__device__ __forceinline__ void st_global_v4_hinted(void* p, uint4 v, uint64_t policy) {
  asm volatile("st.global.L2::cache_hint.v4.b32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w), "l"(policy)
               : "memory");
}

// ---------------------------------------------------------------------------------------------------------
// gemm_wgmma4_kernel: 128 x 128 tiles, 1 producer (setmaxnreg 40) + 2 consumer warpgroups of 64 rows (232), 6
// stages. The consumers keep the tensor cores fed across the promotion: two accumulator sets; K block g+1's four
// wgmma are issued into one set before K block g's result (the other set) is waited for (wait_group 1) and
// promoted. A tile's kKB K blocks are unrolled and every group is waited for within the tile (ptxas serializes
// all wgmma, C7514, when a group stays in flight across a loop's back edge). The tile end is taken off the
// tensor cores' critical path:
//   - the consumer warpgroups run kLag K blocks apart (warpgroup 1 starts once warpgroup 0 has retired kLag
//     blocks), so one warpgroup's drain and stores overlap the other's wgmma instead of both idling together;
//   - each warpgroup stores and counts on its own (no barrier between them): per run of consecutive tiles of one
//     destination slice, the second warpgroup to count it adds the run's tiles to the destination counter (a
//     shared-memory count per run, after each warpgroup's fence where a put waits on the counter);
//   - the stores are 16 bytes wide (a 4 x 4 transpose within each quad of lanes: 8 stores per thread, whole
//     32-byte sectors) and the bf16 NaN canonicalisation is one test per tile;
//   - no global load between a wgmma wait and the promotion: the A scales come with each stage, the tile's B
//     scales with its first K block (one bulk copy into a shared-memory slot; the producer loads none itself:
//     a per-K-block `__ldg` of the B scale cost 1.4-6% of the time, docs/results/h100-1gpu-2026-12-06-l2).
constexpr int kW4Stages = 6;
constexpr int kW4StageS = kBlockM * 4 + 128;  // the K block's A scales, then ptpc's unit B scale (TMA: 128-B aligned)
constexpr int kW4TileScaleSlots = 4;          // a tile's scales, by tile number % 4 (1 KiB each)
constexpr int kW4Smem = kW4Stages * (kStageA + kStageB + kW4StageS) + 1024 + 256 + kW4TileScaleSlots * 1024;

// bf16 pair (lo = a, hi = b), RNE as cvt.rn.bf16x2.f32; the NaN canonicalisation of nm::f32_to_bf16 is left to
// the caller (bf16x2_max_nan finds the NaNs, bf16x2_canon_nan rewrites them).
__device__ __forceinline__ uint32_t bf16x2_rn(float a, float b) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return r;
}
// max.NaN yields a NaN half wherever either input's half is one: folding a tile's 32 pairs through it finds a NaN
// with one instruction per pair where a mask, add and or take three (docs/results/h100-1gpu-2026-12-06-epilogue).
__device__ __forceinline__ uint32_t bf16x2_max_nan(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

// Lane tq of a quad holds p[k] for k = 0..3: the bf16 pair of one row at columns 8(4i + k) + 2tq. After the
// call it holds the 16 bytes at columns 8(4i + tq) .. 8(4i + tq) + 7 in column order (a 4 x 4 transpose of
// 32-bit words across the quad: two butterfly steps, lane bit 0 then lane bit 1).
__device__ __forceinline__ uint4 quad_transpose4(uint32_t p0, uint32_t p1, uint32_t p2, uint32_t p3, int tq) {
  const bool b0 = tq & 1, b1 = tq & 2;
  {
    uint32_t r = __shfl_xor_sync(0xffffffffu, b0 ? p0 : p1, 1);
    uint32_t n0 = b0 ? r : p0, n1 = b0 ? p1 : r;
    p0 = n0;
    p1 = n1;
    r = __shfl_xor_sync(0xffffffffu, b0 ? p2 : p3, 1);
    n0 = b0 ? r : p2;
    n1 = b0 ? p3 : r;
    p2 = n0;
    p3 = n1;
  }
  {
    uint32_t r = __shfl_xor_sync(0xffffffffu, b1 ? p0 : p2, 2);
    uint32_t n0 = b1 ? r : p0, n2 = b1 ? p2 : r;
    p0 = n0;
    p2 = n2;
    r = __shfl_xor_sync(0xffffffffu, b1 ? p1 : p3, 2);
    uint32_t n1 = b1 ? r : p1, n3 = b1 ? p3 : r;
    p1 = n1;
    p3 = n3;
  }
  return make_uint4(p0, p1, p2, p3);
}

// kPtpc: the ptpc quant (SA [M], SB [N]): each K block's dot is promoted with unit scales (total + dot, as
// gemm_wgmma_kernel<WgmmaScales::Ptpc>; the stages' scale slots hold 1.0f, set once, so the consumers' main loop
// is blockscale's: ptpc-specific code there pushed ptxas past the 168 registers, spilling and serializing every
// wgmma, C7512; so did a plain add in place of the unit-scale promotion), tm_sa is not read, and
// numerics::ptpc_epilogue applies sa * sb once before the store. The tile's 128 A and 128 B scales come with its
// first K block into a shared-memory slot (two bulk copies by the producer), so the epilogue reads no global
// memory: with its 34 global loads per thread the GEMM took 2-12% longer (docs/results/h100-1gpu-2026-12-06-l2).
// Otherwise blockscale (SA through tm_sa).
//
// kClusterM x kClusterN: clusters of CTAs taking adjacent tiles (rank = kClusterN rm + rn). 1 x 2: two tiles side
// by side along N of one 128-row band share A: each CTA's producer loads 64 of its 128 rows (tm_a's box is 64
// rows) and multicasts them into both CTAs' stage. 2 x 1: the tiles of two adjacent bands in one column share B
// the same way (tm_b's box is 64 rows). 2 x 2: A shared along N and B along M. A stage is refilled only once the
// consumers of every CTA its producer writes into released it (each warp arrives on the empty barriers of its own
// CTA and of the CTAs that write into it), and no CTA exits while a peer may still write into it. The launcher
// checks the shapes (whole pairs of tiles) and sizes the grid by the clusters the device holds.
// Along N no faster than no cluster, 2 x 2 slower (it fits only 120 CTAs); along M faster only where several GEMMs
// share the device, so the default runs it only there (docs/results/h100-1gpu-2026-12-06-raster,
// h100-1gpu-2026-12-06-epilogue).
//
// L2 priorities: the output (M x N bf16, 235 MB at 16384 x 7168) is stored evict-first and B (14.7 MB at N = 7168, read
// again by every group of bands) is loaded evict-last, so the output streaming through L2 does not push B out.
// 0-1% less time than without the hints, no shape slower beyond the run-to-run spread
// (docs/results/h100-1gpu-2026-12-06-l2).
//
// group_m: the tile order walks groups of group_m 128-row bands, the band changing fastest within a group and the
// N tile next (group_m 1: band-major, n-fastest). The launcher makes group_m divide the bands and each
// destination slice's bands, so a slice's tiles stay consecutive (the counted runs, fused-sdma's puts).
template <int kKB, int kLag, bool kPtpc = false, int kClusterM = 1, int kClusterN = 1>
__global__ void __launch_bounds__(kWThreads, 1)
    gemm_wgmma4_kernel(const __grid_constant__ gpuTensorMap tm_a, const __grid_constant__ gpuTensorMap tm_b,
                       const __grid_constant__ gpuTensorMap tm_sa, const float* __restrict__ SA,
                       const float* __restrict__ SB, int64_t N, int64_t K, int64_t m_begin, int64_t m_end,
                       GemmDest dest, int group_m) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(kLag >= 0 && kLag < kKB && kLag <= kW4Stages - 3, "the lag must leave the producer stages to fill");
  static_assert((kClusterM == 1 || kClusterM == 2) && (kClusterN == 1 || kClusterN == 2), "clusters of up to 2 x 2");
  static_assert(kKB >= 3, "the tile scale slots are reused 4 tiles apart");
  constexpr int kCluster = kClusterM * kClusterN;
  // The CTAs whose producers write into a CTA's stage: itself and its neighbour along each shared dimension.
  constexpr int kWriters = 1 + (kClusterN > 1) + (kClusterM > 1);
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* sA = smem;
  uint8_t* sB = sA + kW4Stages * kStageA;
  uint8_t* sS = sB + kW4Stages * kStageB;  // per stage: 128 A scales, then (ptpc) the unit B scale
  uint64_t* full = reinterpret_cast<uint64_t*>(sS + kW4Stages * kW4StageS);
  uint64_t* empty = full + kW4Stages;
  uint32_t* tile_arrivals = reinterpret_cast<uint32_t*>(empty + kW4Stages);  // [4], by flush number % 4
  // [kW4TileScaleSlots][256] floats, a tile's scales, filled by the producer with the tile's first K block (on that
  // stage's full barrier): ptpc's 128 A then 128 B scales, read by the epilogue; blockscale's kKB B scales, read by
  // each K block's promotion. The producer refills slot t % 4 for tile t once the stage last holding K block
  // t * kKB - kW4Stages was released, i.e. both warpgroups are in tile t - 2 or later (kKB >= 3): tile t - 4, the
  // slot's last user, is done with it.
  float* tile_scales = reinterpret_cast<float*>(sS + kW4Stages * kW4StageS + 256);
  const int tid = threadIdx.x;
  const int wg = __shfl_sync(0xffffffffu, tid / 128, 0);
  if (tid == 0) {
    for (int s = 0; s < kW4Stages; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, 8 * kWriters);  // one arrive per consumer warp of every CTA this producer writes into
    }
    for (int i = 0; i < 4; ++i) tile_arrivals[i] = 0;
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (kPtpc)  // every stage's scales 1.0f once (the producer never writes them): the blockscale promotion with
              // unit scales is ptpc's unscaled total + dot, and the consumers' code stays blockscale's
    for (int i = tid; i < kW4Stages * kW4StageS / 4; i += kWThreads) reinterpret_cast<float*>(sS)[i] = 1.0f;
  __syncthreads();
  if constexpr (kCluster > 1) cluster_sync_all();  // the peer's barriers are initialised before any remote arrive
  constexpr int KB = kKB;                          // K / 128, checked by the launcher
  (void)K;
  (void)SA;  // blockscale reads its A scales through tm_sa
  const uint32_t rank = kCluster > 1 ? cluster_ctarank() : 0u;
  const int tiles_n = int(N / kBlockN);
  // A unit is the cluster's kClusterM x kClusterN tiles (one tile without a cluster), one per CTA.
  const int rm = int(rank) / kClusterN, rn = int(rank) % kClusterN;
  const int units = int((m_end - m_begin) / kBlockM) / kClusterM * (tiles_n / kClusterN);
  const int first = int(blockIdx.x) / kCluster, stride = int(gridDim.x) / kCluster;
  const int my_units = first < units ? (units - first + stride - 1) / stride : 0;
  // Units in groups of group_m bands (the launcher makes it divide the bands and a slice's bands): within a group
  // the band changes fastest, so the CTAs at work at once share B tiles as well as A bands.
  const int units_n = tiles_n / kClusterN;
  auto unit_tile = [&](int u, int64_t& tile_m0, int& nb) {
    const int g = u / (group_m * units_n), r = u - g * (group_m * units_n);
    tile_m0 = m_begin + int64_t((g * group_m + r % group_m) * kClusterM + rm) * kBlockM;
    nb = (r / group_m) * kClusterN + rn;
  };

  if (wg == 0) {  // producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (tid == 0) {
      tma_prefetch_desc(&tm_a);
      tma_prefetch_desc(&tm_b);
      if (!kPtpc) tma_prefetch_desc(&tm_sa);
      int stage = 0;
      uint32_t phase = 0;
      const uint64_t keep_b = l2_policy_evict_last();  // B is read again by every group of bands
      for (int u = first, gt = 0; u < units; u += stride, ++gt) {
        int64_t tile_m0;
        int nb;
        unit_tile(u, tile_m0, nb);
        const int m0 = int(tile_m0);
        for (int kb = 0; kb < KB; ++kb) {
          mbar_wait(empty + stage, phase ^ 1);
          uint8_t* ss = sS + stage * kW4StageS;
          // The tile's scales ride with its first K block: ptpc's 128 A and 128 B scales, blockscale's kKB B scales
          // (one per K block of the tile's 128 columns; its A scales come per K block through tm_sa).
          constexpr uint32_t kTileScaleBytes = kPtpc ? 2 * kBlockM * 4 : kKB * 4;
          const uint32_t tile_scale_bytes = kb == 0 ? kTileScaleBytes : 0;
          mbar_expect_tx(full + stage, kStageA + kStageB + (kPtpc ? 0 : kBlockM * 4) + tile_scale_bytes);
          if (kb == 0) {
            float* slot = tile_scales + (gt % kW4TileScaleSlots) * 256;
            if constexpr (kPtpc) {
              bulk_load(slot, SA + m0, kBlockM * 4, full + stage);
              bulk_load(slot + kBlockM, SB + int64_t(nb) * kBlockN, kBlockN * 4, full + stage);
            } else {
              bulk_load(slot, SB + int64_t(nb) * kKB, kKB * 4, full + stage);
            }
          }
          if constexpr (kClusterN > 1)  // this CTA's 64 rows of A into its row's two CTAs
            tma_load_2d_multicast(sA + stage * kStageA + rn * (kStageA / 2), &tm_a, full + stage, kb * kBlockK,
                                  m0 + rn * (kBlockM / 2), uint16_t(3u << (2 * rm)));
          else
            tma_load_2d(sA + stage * kStageA, &tm_a, full + stage, kb * kBlockK, m0);
          if constexpr (kClusterM > 1)  // this CTA's 64 rows of B into its column's two CTAs
            tma_load_2d_multicast_hinted(sB + stage * kStageB + rm * (kStageB / 2), &tm_b, full + stage, kb * kBlockK,
                                         nb * kBlockN + rm * (kBlockN / 2), uint16_t((1u | (1u << kClusterN)) << rn),
                                         keep_b);
          else
            tma_load_2d_hinted(sB + stage * kStageB, &tm_b, full + stage, kb * kBlockK, nb * kBlockN, keep_b);
          if (!kPtpc) tma_load_2d(ss, &tm_sa, full + stage, m0, kb);
          if (++stage == kW4Stages) {
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
    float total[64], acc0[64], acc1[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) total[i] = 0.0f;
    const uint64_t stream_out = l2_policy_evict_first();  // the output passes through L2 once
    int64_t m0 = 0, n0 = 0;                               // the current tile's origin
    int tile_no = 0;                                      // this CTA's tile count (ptpc: its scale slot)
    // This warpgroup's stored tiles not yet counted: the open run of consecutive tiles of one destination slice.
    // Both warpgroups store the same tiles in the same order, so their runs and flush numbers match.
    int run_slice = -1, run_tiles = 0, flush_no = 0;
    if (kLag > 0 && c == 1 && my_units > 0) asm volatile("bar.sync 2, 256;" ::: "memory");  // start kLag behind
    const uint64_t desc_a = smem_desc(sA + 64 * c * kBlockK), desc_b = smem_desc(sB);       // stage 0, K step 0
    auto issue = [&](int gi, float(&a)[64]) {
      const int st = gi % kW4Stages;
      const uint32_t ph = uint32_t(gi / kW4Stages) & 1u;
      mbar_wait(full + st, ph);
      const uint64_t da = smem_desc_advance(desc_a, uint32_t(st * kStageA));
      const uint64_t db = smem_desc_advance(desc_b, uint32_t(st * kStageB));
      wgmma_fence();
      wgmma_m64n128k32_e4m3_zero(a, da, db);
#pragma unroll
      for (int ks = 1; ks < kBlockK / 32; ++ks)
        wgmma_m64n128k32_e4m3(a, smem_desc_advance(da, ks * 32), smem_desc_advance(db, ks * 32), 1);
      wgmma_commit();
#pragma unroll
      for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(a[i])::"memory");
    };
    // Counts a run of stored tiles of one slice. A gpu-scope fence right after a tile's stores waits for them to
    // reach L2 while this warpgroup issues nothing (its next wgmma are warpgroup-wide): once per tile it cost 6-11%
    // of the GEMM phase in the pipeline (docs/results/h100-1gpu-2026-12-05-kernels6). So a count
    // leaves once per run (a slice's tiles are consecutive in the tile order: about 7 fences per CTA instead of 54
    // at M = 16384), when the first tile of another slice is about to be stored: the run's last stores were issued
    // a whole main loop earlier and have reached L2, so the fence waits on nothing in flight
    // (docs/results/h100-1gpu-2026-12-06-release). Where
    // nothing waits on the count (dest.counters_release false) it is a tally and takes no fence at all.
    auto count_run = [&](int slice, int tiles) {
      const bool release = dest.counters_release;
      if (release) asm volatile("bar.sync %0, 128;" ::"r"(3 + c) : "memory");  // this warpgroup's stores are issued
      if (lt == 0) {
        // A CTA-scope release before the shared count, and the gpu-scope fence only in the warpgroup that counts
        // second: both warpgroups' stores are then in its causal past (cumulativity), so one fence per run and
        // CTA waits on the memory system, not three.
        if (release) asm volatile("fence.acq_rel.cta;" ::: "memory");
        if (atomicAdd(tile_arrivals + (flush_no & 3), 1u) == 1u) {
          tile_arrivals[flush_no & 3] = 0;
          if (release) asm volatile("fence.acq_rel.gpu;" ::: "memory");
          atomicAdd(dest.counters + slice, unsigned(tiles));  // the release the put waits on: both halves stored
        }
      }
      ++flush_no;
    };
    auto store_tile = [&]() {
      if constexpr (kPtpc) {  // one column pair at a time, the tile's scales from its shared-memory slot
        const float* slot = tile_scales + (tile_no % kW4TileScaleSlots) * 256;
        const float sa0 = slot[lrow], sa1 = slot[lrow + 8];
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          const float2 sb = *reinterpret_cast<const float2*>(slot + kBlockM + 8 * j + 2 * tq);
          total[4 * j + 0] = nm::ptpc_epilogue(total[4 * j + 0], sa0, sb.x);
          total[4 * j + 1] = nm::ptpc_epilogue(total[4 * j + 1], sa0, sb.y);
          total[4 * j + 2] = nm::ptpc_epilogue(total[4 * j + 2], sa1, sb.x);
          total[4 * j + 3] = nm::ptpc_epilogue(total[4 * j + 3], sa1, sb.y);
        }
      }
      int slice = 0;
      uint16_t* C = tile_dest(dest, m0, slice);
      uint32_t packed[32];  // [2j]: row lrow, [2j + 1]: row lrow + 8, columns 8j + 2tq
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        packed[2 * j] = bf16x2_rn(total[4 * j + 0], total[4 * j + 1]);
        packed[2 * j + 1] = bf16x2_rn(total[4 * j + 2], total[4 * j + 3]);
      }
      uint32_t nan_probe = packed[0];
#pragma unroll
      for (int i = 1; i < 32; ++i) nan_probe = bf16x2_max_nan(nan_probe, packed[i]);
      if (((nan_probe & 0x7fff7fffu) + 0x007f007fu) & 0x80008000u) {  // a half above 0x7f80 in magnitude
#pragma unroll
        for (int i = 0; i < 32; ++i) packed[i] = bf16x2_canon_nan(packed[i]);
      }
#pragma unroll
      for (int i = 0; i < 64; ++i) total[i] = 0.0f;
      if (run_tiles > 0 && slice != run_slice) {  // the run of the previous slice is closed: count it now
        if (dest.counters) count_run(run_slice, run_tiles);
        run_tiles = 0;
      }
      run_slice = slice;
      ++run_tiles;
      if (C) {
        const int64_t ldd = dest.ldd;
        uint4* row0 = reinterpret_cast<uint4*>(C + (m0 + lrow) * ldd + n0) + tq;
        uint4* row8 = reinterpret_cast<uint4*>(C + (m0 + lrow + 8) * ldd + n0) + tq;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          st_global_v4_hinted(
              row0 + 4 * i, quad_transpose4(packed[8 * i], packed[8 * i + 2], packed[8 * i + 4], packed[8 * i + 6], tq),
              stream_out);
          st_global_v4_hinted(
              row8 + 4 * i,
              quad_transpose4(packed[8 * i + 1], packed[8 * i + 3], packed[8 * i + 5], packed[8 * i + 7], tq),
              stream_out);
        }
      }
    };
    // K block gi (in `a`, issued earlier) is finished: release its stage, promote, and store at a tile's end.
    auto retire = [&](int gi, bool last, float(&a)[64]) {
#pragma unroll
      for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(a[i])::"memory");
      const int st = gi % kW4Stages;
      const float* ss = reinterpret_cast<const float*>(sS + st * kW4StageS);
      // kPtpc: 1.0f, set once; blockscale: the B scale from the tile's slot
      const float sa0 = ss[lrow], sa1 = ss[lrow + 8],
                  sbv = kPtpc ? ss[kBlockM] : tile_scales[(gi / kKB) % kW4TileScaleSlots * 256 + gi % kKB];
      if constexpr (kCluster > 1) {
        // The producers writing here: lane 0 this CTA, lane 1 its one neighbour (rank ^ 1: along N, or along M in
        // a 2 x 1 cluster), lane 2 (2 x 2) its neighbour along M (rank ^ 2)
        if (lane < kWriters) mbar_arrive_cluster(empty + st, rank ^ uint32_t(lane == 2 ? 2 : lane));
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
      if (kLag > 0 && c == 0 && gi == kLag - 1) asm volatile("bar.arrive 2, 256;" ::: "memory");
      if (last) store_tile();
    };
    // One tile per iteration, its kKB K blocks unrolled: every wgmma group is waited for inside the iteration
    // (ptxas serializes all wgmma (C7514) when a group stays in flight across a loop's back edge).
    for (int gt = 0; gt < my_units; ++gt) {
      tile_no = gt;
      int nb;
      unit_tile(first + gt * stride, m0, nb);
      n0 = int64_t(nb) * kBlockN;
      const int g0 = gt * kKB;
      issue(g0, acc0);
#pragma unroll
      for (int kb = 0; kb < kKB; kb += 2) {
        if (kb + 1 < kKB) {
          issue(g0 + kb + 1, acc1);
          wgmma_wait1();
        } else {
          wgmma_wait0();
        }
        retire(g0 + kb, kb + 1 == kKB, acc0);
        if (kb + 1 < kKB) {
          if (kb + 2 < kKB) {
            issue(g0 + kb + 2, acc0);
            wgmma_wait1();
          } else {
            wgmma_wait0();
          }
          retire(g0 + kb + 1, kb + 2 == kKB, acc1);
        }
      }
    }
    if (dest.counters && run_tiles > 0) count_run(run_slice, run_tiles);  // the open run
  }
  if constexpr (kCluster > 1) {  // no CTA leaves while its peer may still write into it
    __syncwarp();                // the producer warp's lanes meet again before the aligned cluster barrier
    cluster_sync_all();
  }
#else
  (void)SA;
  (void)SB;
  (void)N;
  (void)K;
  (void)m_begin;
  (void)m_end;
  (void)dest;
  (void)group_m;
  (void)tm_a;
  (void)tm_b;
  (void)tm_sa;
  __trap();
#endif
}

}  // namespace
}  // namespace gemmar::kernels::dev
