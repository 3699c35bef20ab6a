// gemm_wgmma4_kernel: the tuned sm_90a GEMM, where K / 128 is one of gemm/heuristics.hpp's kWgmma4KBlocks (a
// tile's K blocks are unrolled; mori's K are 1024 and 2048). 128 x 128 tiles, 1 producer (setmaxnreg 40) + 2
// consumer warpgroups of 64 rows (232), 6 stages, a persistent grid walking gemm/scheduler.cuh's groups of bands.
// The consumers keep the tensor cores fed across the promotion: two accumulator sets; K block g+1's four wgmma are
// issued into one set before K block g's result (the other set) is waited for (wait_group 1) and promoted. A
// tile's kKB K blocks are unrolled and every group is waited for within the tile (ptxas serializes all wgmma,
// C7514, when a group stays in flight across a loop's back edge). The tile end is taken off the tensor cores'
// critical path:
//   - the consumer warpgroups run 2 K blocks apart (LaggedWarpgroups: warpgroup 1 starts once warpgroup 0 has
//     retired 2 blocks), so one warpgroup's drain and stores overlap the other's wgmma instead of both idling;
//   - each warpgroup stores and counts on its own (no barrier between them): per run of consecutive tiles of one
//     destination slice, the second warpgroup to count it adds the run's tiles to the destination counter (a
//     shared-memory count per run, after each warpgroup's fence where a put waits on the counter);
//   - the stores are 16 bytes wide (a 4 x 4 transpose within each quad of lanes: 8 stores per thread, whole
//     32-byte sectors) and the bf16 NaN canonicalisation is one test per tile;
//   - no global load between a wgmma wait and the promotion: the A scales come with each stage, the tile's B
//     scales with its first K block (one bulk copy into a shared-memory slot; the producer loads none itself:
//     a per-K-block `__ldg` of the B scale cost 1.4-6% of the time, docs/results/h100-1gpu-2026-12-06-l2).
//
// kPerRow: the PerRow scales (SA [M], SB [N]): each K block's dot is promoted with unit scales (total + dot, as
// gemm_wgmma_kernel<PerRow>; the stages' scale slots hold 1.0f, set once, so the consumers' main loop is
// Blockscale's: PerRow-specific code there pushed ptxas past the 168 registers, spilling and serializing every
// wgmma, C7512; so did a plain add in place of the unit-scale promotion), tm_sa is not read, and
// numerics::ptpc_epilogue applies sa * sb once before the store. The tile's 128 A and 128 B scales come with its
// first K block into a shared-memory slot (two bulk copies by the producer), so the epilogue reads no global
// memory: with its 34 global loads per thread the GEMM took 2-12% longer (docs/results/h100-1gpu-2026-12-06-l2).
// Otherwise Blockscale (SA through tm_sa).
//
// kScales PerStep32 (mxfp8: SA [M, K/32], SB [N/32, K/32], B's scales per 32 x 32 block; kKB <= 16, no cluster),
// the op's mxfp8 kernel at K = 2048 (heuristics.cpp choose_gemm): the reference promotes every 32-wide K step
// (emulated_partial: total = fma(dot32, sa * sb, total)), so each step is its own wgmma with fresh accumulators. The
// promotion is then one fma per element per 32 of K, the CUDA cores' whole issue rate at the tensor cores' k = 32 rate,
// so the design keeps every other instruction off that path: each step is issued as two m64n64k32 halves into three
// 32-register sets (half-step h + 2 in flight while h is promoted, wait_group 2; 64 + 96 registers, where a second
// m64n128 set left too few to load the scales and ptxas serialized every wgmma, C7512); a K block's 4 steps of A scales
// come with its stage ([row][step], a 16-byte TMA box row per row of tm_sa), the tile's B scales with its first K block
// (4 bulk copies, [block of 32 columns][step]); a half-step's 4 products sa * sb (mul_rn, exactly the
// reference's) are taken once per (row, column block) and loaded while its wgmma runs. The main loop runs
// kMxUnroll K blocks per iteration, every group waited for within it (C7514); the lag, stores and counts are the
// tile end above. Its output is meant to be gemm_wgmma_kernel<PerStep32>'s bit for bit (a k = 32 wgmma dot from
// zero, the same fma in the same step order); the testbed checks that (same_bits).
//
// Cluster: a policy for the CTAs that share a stage's operand (the shape kM x kN of adjacent tiles, rank = kN rm +
// rn, and each CTA's producer's share of the A and B loads). NoCluster, or ShareBAlongM: the tiles of two adjacent
// bands in one column share B (tm_b's box is 64 rows: each CTA's producer loads 64 of B's 128 rows and multicasts
// them into both CTAs' stage); where several GEMMs share the device the K = 2048 GEMM from 12288 rows runs it
// (gemm/heuristics.hpp share_b_along_m). A stage is refilled only once the consumers of every CTA its producer
// writes into released it (each warp arrives on the empty barriers of its own CTA and of the CTAs that write into
// it), and no CTA exits while a peer may still write into it. The launcher checks the shapes (whole pairs of
// tiles) and sizes the grid by the clusters the device holds.
// Lag: a policy for when the consumer warpgroups start and hand over (LaggedWarpgroups).
//
// L2 priorities: the output (M x N bf16, 235 MB at 16384 x 7168) is stored evict-first and B (14.7 MB at N = 7168,
// read again by every group of bands) is loaded evict-last, so the output streaming through L2 does not push B out:
// 0-1% less time than without the hints, no shape slower beyond the run-to-run spread
// (docs/results/h100-1gpu-2026-12-06-l2).
// The lab's variants of this kernel (other clusters, the warpgroups in step, the band-major order, PerStep32) are
// lab/gemm/.
#pragma once
#include <type_traits>

#include "kernels/gemm/sm90.cuh"

namespace gemmar::kernels::dev {
namespace {

constexpr int kW4Stages = 6;
constexpr int kW4TileScaleSlots = 4;  // a tile's scales, by tile number % 4 (1 KiB each)
// A stage's scale bytes: the K block's A scales, then PerRow's unit B scale (TMA: 128-B aligned); PerStep32: the
// K block's 4 steps of A scales of the tile's 128 rows ([row][step], one 16-byte TMA box row per row).
template <GemmScales kScales>
constexpr int kW4StageScaleBytes = kScales == GemmScales::PerStep32 ? kBlockM * 4 * 4 : kBlockM * 4 + 128;
__host__ __device__ constexpr int w4_smem_bytes(int stage_scale_bytes) {
  return kW4Stages * (kStageA + kStageB + stage_scale_bytes) + 1024 + 256 + kW4TileScaleSlots * 1024;
}
constexpr int kW4Smem = w4_smem_bytes(kW4StageScaleBytes<GemmScales::Blockscale>);
constexpr int kW4SmemMx = w4_smem_bytes(kW4StageScaleBytes<GemmScales::PerStep32>);
// PerStep32's steps per K block, and the largest kKB whose B scales (4 blocks of 32 columns x 4 kKB steps) fit one
// tile scale slot of 256 floats.
constexpr int kW4MxSteps = kBlockK / 32;
constexpr int kW4MxMaxKB = 256 / (4 * kW4MxSteps);
constexpr int kMxUnroll = 2;  // PerStep32: K blocks per iteration of a tile's main loop
// PerStep32's registers: its producer (4 bulk copies of B scales per tile) spilled at 40; the consumers keep the
// total (64) and three half-step sets (96) in what is left (224). ptxas still reports 236 bytes of spills at 56 (and
// at 48; none at 64, whose consumers get 216): the lab's `wgmma4-mx-producer-64` times that against this.
constexpr int kMxProducerRegisters = 56;
// The producer's registers under PerStep32: the lag policy's kMxProducerRegisters where it names one (a lab
// variant's), else kMxProducerRegisters.
template <typename Lag, typename = void>
struct MxProducerRegisters {
  static constexpr int value = kMxProducerRegisters;
};
template <typename Lag>
struct MxProducerRegisters<Lag, std::void_t<decltype(Lag::kMxProducerRegisters)>> {
  static constexpr int value = Lag::kMxProducerRegisters;
};

// ---- the cluster policies -----------------------------------------------------------------------------------
struct NoCluster {
  static constexpr int kM = 1, kN = 1;
  static constexpr int kWriters = 1;  // the CTAs whose producers write into a CTA's stages: itself
  __device__ __forceinline__ static void load_a(uint8_t* stage_a, const gpuTensorMap* tm_a, uint64_t* full, int kx,
                                                int m0, int, int) {
    ptx::tma_load_2d(stage_a, tm_a, full, kx, m0);
  }
  __device__ __forceinline__ static void load_b(uint8_t* stage_b, const gpuTensorMap* tm_b, uint64_t* full, int kx,
                                                int n0, int, int, uint64_t keep) {
    ptx::tma_load_2d_hinted(stage_b, tm_b, full, kx, n0, keep);
  }
};
struct ShareBAlongM {
  static constexpr int kM = 2, kN = 1;
  static constexpr int kWriters = 2;  // itself and its neighbour along M
  __device__ __forceinline__ static void load_a(uint8_t* stage_a, const gpuTensorMap* tm_a, uint64_t* full, int kx,
                                                int m0, int, int) {
    ptx::tma_load_2d(stage_a, tm_a, full, kx, m0);
  }
  // This CTA's 64 rows of B into its column's two CTAs.
  __device__ __forceinline__ static void load_b(uint8_t* stage_b, const gpuTensorMap* tm_b, uint64_t* full, int kx,
                                                int n0, int rm, int rn, uint64_t keep) {
    ptx::tma_load_2d_multicast_hinted(stage_b + rm * (kStageB / 2), tm_b, full, kx, n0 + rm * (kBlockN / 2),
                                      uint16_t((1u | (1u << kN)) << rn), keep);
  }
};

// ---- the warpgroups' lag --------------------------------------------------------------------------------------
// The consumer warpgroups 2 K blocks apart: warpgroup 1 waits (named barrier 2) until warpgroup 0 has retired its
// second K block, so one warpgroup's tile end overlaps the other's wgmma.
struct LaggedWarpgroups {
  static constexpr int kBlocks = 2;
  __device__ __forceinline__ static void start(int c, int my_units) {
    if (c == 1 && my_units > 0) ptx::bar_sync<2, 256>();  // start kBlocks behind
  }
  __device__ __forceinline__ static void retired(int c, int gi) {
    if (c == 0 && gi == kBlocks - 1) ptx::bar_arrive<2, 256>();
  }
};

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

// The shared memory of one CTA: the stage ring (A, B, the K block's A scales), the barriers, the run counts and
// the tile scale slots.
struct W4Smem {
  uint8_t *sA, *sB, *sS;
  uint64_t *full, *empty;
  uint32_t* tile_arrivals;  // [4], by flush number % 4
  // [kW4TileScaleSlots][256] floats, a tile's scales, filled by the producer with the tile's first K block (on that
  // stage's full barrier): PerRow's 128 A then 128 B scales, read by the epilogue; Blockscale's kKB B scales, read
  // by each K block's promotion. The producer refills slot t % 4 for tile t once the stage last holding K block
  // t * kKB - kW4Stages was released, i.e. both warpgroups are in tile t - 2 or later (kKB >= 3): tile t - 4, the
  // slot's last user, is done with it.
  float* tile_scales;
};

// The producer: one thread loads each of this CTA's units' K blocks (its share of A and B, and the scales) into
// the stage ring.
template <int kKB, GemmScales kScales, class Cluster>
__device__ __forceinline__ void wgmma4_produce(const W4Smem& sm, const gpuTensorMap& tm_a, const gpuTensorMap& tm_b,
                                               const gpuTensorMap& tm_sa, const float* SA, const float* SB,
                                               const TileScheduler<Cluster::kM, Cluster::kN>& sched, int64_t m_begin,
                                               int first, int stride) {
  constexpr bool kPerRow = kScales == GemmScales::PerRow, kMx = kScales == GemmScales::PerStep32;
  constexpr int kStageS = kW4StageScaleBytes<kScales>;
  ptx::tma_prefetch_desc(&tm_a);
  ptx::tma_prefetch_desc(&tm_b);
  if (!kPerRow) ptx::tma_prefetch_desc(&tm_sa);
  int stage = 0;
  uint32_t phase = 0;
  const uint64_t keep_b = ptx::l2_policy_evict_last();  // B is read again by every group of bands
  for (int u = first, gt = 0; u < sched.units; u += stride, ++gt) {
    int band, nb;
    sched.tile(u, band, nb);
    const int64_t tile_m0 = m_begin + int64_t(band) * kBlockM;
    const int m0 = int(tile_m0);
    for (int kb = 0; kb < kKB; ++kb) {
      ptx::mbar_wait(sm.empty + stage, phase ^ 1);
      uint8_t* ss = sm.sS + stage * kStageS;
      // The tile's scales ride with its first K block: PerRow's 128 A and 128 B scales, Blockscale's kKB B scales
      // (one per K block of the tile's 128 columns; its A scales come per K block through tm_sa), PerStep32's B
      // scales of the tile's 4 blocks of 32 columns, each its 4 kKB steps ([block][step]; A's per K block through
      // tm_sa, [row][step]).
      constexpr uint32_t kTileScaleBytes = kPerRow ? 2 * kBlockM * 4 : kMx ? 4 * kW4MxSteps * kKB * 4 : kKB * 4;
      constexpr uint32_t kBlockScaleBytes = kPerRow ? 0 : kMx ? kStageS : kBlockM * 4;
      const uint32_t tile_scale_bytes = kb == 0 ? kTileScaleBytes : 0;
      ptx::mbar_expect_tx(sm.full + stage, kStageA + kStageB + kBlockScaleBytes + tile_scale_bytes);
      if (kb == 0) {
        float* slot = sm.tile_scales + (gt % kW4TileScaleSlots) * 256;
        if constexpr (kMx) {
          constexpr int kRow = kW4MxSteps * kKB;  // a block of 32 columns' steps in the tile's K
#pragma unroll
          for (int i = 0; i < 4; ++i)
            ptx::bulk_load(slot + i * kRow, SB + (int64_t(nb) * 4 + i) * kRow, kRow * 4, sm.full + stage);
        } else if constexpr (kPerRow) {
          ptx::bulk_load(slot, SA + m0, kBlockM * 4, sm.full + stage);
          ptx::bulk_load(slot + kBlockM, SB + int64_t(nb) * kBlockN, kBlockN * 4, sm.full + stage);
        } else {
          ptx::bulk_load(slot, SB + int64_t(nb) * kKB, kKB * 4, sm.full + stage);
        }
      }
      Cluster::load_a(sm.sA + stage * kStageA, &tm_a, sm.full + stage, kb * kBlockK, m0, sched.rm, sched.rn);
      Cluster::load_b(sm.sB + stage * kStageB, &tm_b, sm.full + stage, kb * kBlockK, nb * kBlockN, sched.rm, sched.rn,
                      keep_b);
      if constexpr (kMx)
        ptx::tma_load_2d(ss, &tm_sa, sm.full + stage, kb * kW4MxSteps, m0);
      else if constexpr (!kPerRow)
        ptx::tma_load_2d(ss, &tm_sa, sm.full + stage, m0, kb);
      if (++stage == kW4Stages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

// A consumer warpgroup c: rows [64c, 64c + 64) of each of this CTA's units' tiles.
template <int kKB, GemmScales kScales, class Cluster, class Lag>
__device__ __forceinline__ void wgmma4_consume(const W4Smem& sm, const GemmDest& dest,
                                               const TileScheduler<Cluster::kM, Cluster::kN>& sched, int64_t m_begin,
                                               int first, int stride, int my_units, int tid, int wg, uint32_t rank) {
  constexpr bool kPerRow = kScales == GemmScales::PerRow, kMx = kScales == GemmScales::PerStep32;
  constexpr int kStageS = kW4StageScaleBytes<kScales>;
  constexpr int kCluster = Cluster::kM * Cluster::kN;
  const int c = wg - 1;  // rows [64c, 64c + 64) of the tile
  const int lt = tid - 128 * wg;
  const int w = lt / 32, lane = lt % 32;
  const int g8 = lane >> 2, tq = lane & 3;
  const int lrow = 64 * c + 16 * w + g8;  // this thread's rows in the tile: lrow, lrow + 8
  float total[64], acc0[64], acc1[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) total[i] = 0.0f;
  const uint64_t stream_out = ptx::l2_policy_evict_first();  // the output passes through L2 once
  int64_t m0 = 0, n0 = 0;                                    // the current tile's origin
  int tile_no = 0;                                           // this CTA's tile count (PerRow: its scale slot)
  // This warpgroup's stored tiles not yet counted: the open run of consecutive tiles of one destination slice.
  // Both warpgroups store the same tiles in the same order, so their runs and flush numbers match. run_reach: the
  // run's tiles that also reach the next slice (relaxed rows: a tile straddling two slices counts for both,
  // device_common.cuh tile_last_slice), counted after the run.
  int run_slice = -1, run_tiles = 0, run_reach = 0, flush_no = 0;
  Lag::start(c, my_units);
  const uint64_t desc_a = ptx::smem_desc(sm.sA + 64 * c * kBlockK), desc_b = ptx::smem_desc(sm.sB);  // stage 0
  auto issue = [&](int gi, float(&a)[64]) {
    const int st = gi % kW4Stages;
    const uint32_t ph = uint32_t(gi / kW4Stages) & 1u;
    ptx::mbar_wait(sm.full + st, ph);
    const uint64_t da = ptx::smem_desc_advance(desc_a, uint32_t(st * kStageA));
    const uint64_t db = ptx::smem_desc_advance(desc_b, uint32_t(st * kStageB));
    ptx::wgmma_fence();
    ptx::wgmma_m64n128k32_e4m3_zero(a, da, db);
#pragma unroll
    for (int ks = 1; ks < kBlockK / 32; ++ks)
      ptx::wgmma_m64n128k32_e4m3(a, ptx::smem_desc_advance(da, ks * 32), ptx::smem_desc_advance(db, ks * 32), 1);
    ptx::wgmma_commit();
    ptx::wgmma_fence_operands(a);
  };
  // Counts a run of stored tiles of one slice. A gpu-scope fence right after a tile's stores waits for them to
  // reach L2 while this warpgroup issues nothing (its next wgmma are warpgroup-wide): once per tile it cost 6-11%
  // of the GEMM phase in the pipeline (8 ranks at M = 16384 on an H100: docs/results/h100-1gpu-2026-12-05-kernels6).
  // So a count leaves once per run (a slice's tiles are consecutive in the tile order: about 7 fences per CTA
  // instead of 54 at M = 16384), when the first tile of another slice is about to be stored: the run's last stores
  // were issued a whole main loop earlier and have reached L2, so the fence waits on nothing in flight
  // (docs/results/h100-1gpu-2026-12-06-release). Where nothing waits on the count (dest.counters_release false)
  // it is a tally and takes no fence at all.
  auto count_run = [&](int slice, int tiles) {
    const bool release = dest.counters_release;
    if (release) ptx::warpgroup_bar(3 + c);  // this warpgroup's stores are issued
    if (lt == 0) {
      // A CTA-scope release before the shared count, and the gpu-scope fence only in the warpgroup that counts
      // second: both warpgroups' stores are then in its causal past (cumulativity), so one fence per run and
      // CTA waits on the memory system, not three.
      if (release) asm volatile("fence.acq_rel.cta;" ::: "memory");
      if (atomicAdd(sm.tile_arrivals + (flush_no & 3), 1u) == 1u) {
        sm.tile_arrivals[flush_no & 3] = 0;
        if (release) asm volatile("fence.acq_rel.gpu;" ::: "memory");
        atomicAdd(dest.counters + slice, unsigned(tiles));  // the release the put waits on: both halves stored
      }
    }
    ++flush_no;
  };
  auto store_tile = [&]() {
    if constexpr (kPerRow) {  // one column pair at a time, the tile's scales from its shared-memory slot
      const float* slot = sm.tile_scales + (tile_no % kW4TileScaleSlots) * 256;
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
      packed[2 * j] = ptx::bf16x2_rn(total[4 * j + 0], total[4 * j + 1]);
      packed[2 * j + 1] = ptx::bf16x2_rn(total[4 * j + 2], total[4 * j + 3]);
    }
    uint32_t nan_probe = packed[0];
#pragma unroll
    for (int i = 1; i < 32; ++i) nan_probe = ptx::bf16x2_max_nan(nan_probe, packed[i]);
    if (((nan_probe & 0x7fff7fffu) + 0x007f007fu) & 0x80008000u) {  // a half above 0x7f80 in magnitude
#pragma unroll
      for (int i = 0; i < 32; ++i) packed[i] = bf16x2_canon_nan(packed[i]);
    }
#pragma unroll
    for (int i = 0; i < 64; ++i) total[i] = 0.0f;
    if (run_tiles > 0 && slice != run_slice) {  // the run of the previous slice is closed: count it now
      if (dest.counters) count_run(run_slice, run_tiles);
      if (dest.counters && run_reach > 0) count_run(run_slice + 1, run_reach);
      run_tiles = 0;
      run_reach = 0;
    }
    run_slice = slice;
    ++run_tiles;
    run_reach += tile_last_slice(dest, m0, slice) != slice;
    if (C) {
      const int64_t ldd = dest.ldd;
      uint4* row0 = reinterpret_cast<uint4*>(C + (m0 + lrow) * ldd + n0) + tq;
      uint4* row8 = reinterpret_cast<uint4*>(C + (m0 + lrow + 8) * ldd + n0) + tq;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        ptx::st_global_v4_hinted(
            row0 + 4 * i, quad_transpose4(packed[8 * i], packed[8 * i + 2], packed[8 * i + 4], packed[8 * i + 6], tq),
            stream_out);
        ptx::st_global_v4_hinted(
            row8 + 4 * i,
            quad_transpose4(packed[8 * i + 1], packed[8 * i + 3], packed[8 * i + 5], packed[8 * i + 7], tq),
            stream_out);
      }
    }
  };
  // K block gi (in `a`, issued earlier) is finished: release its stage, promote, and store at a tile's end.
  auto retire = [&](int gi, bool last, float(&a)[64]) {
    ptx::wgmma_fence_operands(a);
    const int st = gi % kW4Stages;
    const float* ss = reinterpret_cast<const float*>(sm.sS + st * kStageS);
    // kPerRow: 1.0f, set once; Blockscale: the B scale from the tile's slot
    const float sa0 = ss[lrow], sa1 = ss[lrow + 8],
                sbv = kPerRow ? ss[kBlockM] : sm.tile_scales[(gi / kKB) % kW4TileScaleSlots * 256 + gi % kKB];
    if constexpr (kCluster > 1) {
      // The producers writing here: lane 0 this CTA, lane 1 its one neighbour (rank ^ 1: along N, or along M in
      // a 2 x 1 cluster), lane 2 (2 x 2) its neighbour along M (rank ^ 2)
      if (lane < Cluster::kWriters) ptx::mbar_arrive_cluster(sm.empty + st, rank ^ uint32_t(lane == 2 ? 2 : lane));
    } else if (lane == 0) {
      ptx::mbar_arrive(sm.empty + st);
    }
    promote_block(total, a, sa0, sa1, sbv);
    Lag::retired(c, gi);
    if (last) store_tile();
  };
  // PerStep32 (a K block is 4 steps x 2 halves of 64 columns): half `half` of step ks of the K block in stage st
  // alone (one wgmma m64n64k32) into `a`. Each half-step has its own 32 accumulators, so three are in flight
  // (96 registers) where a second m64n128 set beside the total (192) left ptxas too few registers to load the
  // scales without serializing every wgmma (C7512).
  auto issue_half = [&](int st, int ks, int half, float(&a)[32]) {
    const uint64_t da = ptx::smem_desc_advance(desc_a, uint32_t(st * kStageA + ks * 32));
    const uint64_t db = ptx::smem_desc_advance(desc_b, uint32_t(st * kStageB + half * (kStageB / 2) + ks * 32));
    ptx::wgmma_fence();
    ptx::wgmma_m64n64k32_e4m3_zero(a, da, db);
    ptx::wgmma_commit();
    ptx::wgmma_fence_operands(a);
  };
  // A half-step's scale products: p[2r + i] = sa(row lrow + 8r) * sb(block 2 half + i of 32 columns), the reference's
  // mul_rn(scale_a, scale_b) of block_accumulate, once per (row, column block) instead of per element. `slot`: the
  // tile's B scales [block][step of the tile's K].
  auto half_scales = [&](int st, const float* slot, int kb, int ks, int half, float(&p)[4]) {
    const float* ss = reinterpret_cast<const float*>(sm.sS + st * kStageS);
    const float* sb = slot + kb * kW4MxSteps + ks + 2 * half * (kW4MxSteps * kKB);
    const float sa0 = ss[lrow * kW4MxSteps + ks], sa1 = ss[(lrow + 8) * kW4MxSteps + ks];
    const float sb0 = sb[0], sb1 = sb[kW4MxSteps * kKB];
    p[0] = nm::mul_rn(sa0, sb0);
    p[1] = nm::mul_rn(sa0, sb1);
    p[2] = nm::mul_rn(sa1, sb0);
    p[3] = nm::mul_rn(sa1, sb1);
  };
  // The half-step in `a` is finished: total = fma(dot, sa * sb, total) for its 32 elements (block_accumulate's one
  // rounding per 32-wide step, as the reference's emulated_partial). The m64n64 layout is the m64n128 one's first
  // 8 column groups: group j of the half is the total's group 8 half + j.
  auto retire_half = [&](int half, float(&a)[32], const float(&p)[4]) {
    ptx::wgmma_fence_operands(a);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int t = 4 * (8 * half + j);
      total[t + 0] = nm::fma_rn(a[4 * j + 0], p[j / 4], total[t + 0]);
      total[t + 1] = nm::fma_rn(a[4 * j + 1], p[j / 4], total[t + 1]);
      total[t + 2] = nm::fma_rn(a[4 * j + 2], p[2 + j / 4], total[t + 2]);
      total[t + 3] = nm::fma_rn(a[4 * j + 3], p[2 + j / 4], total[t + 3]);
    }
  };
  float hacc[3][32];     // PerStep32's half-step accumulator sets
  int ist = 0, rst = 0;  // PerStep32: the stage of the next K block to issue, of the next to retire
  uint32_t iph = 0;      // and the phase of the next to issue
  // One tile per iteration, its kKB K blocks unrolled: every wgmma group is waited for inside the iteration
  // (ptxas serializes all wgmma (C7514) when a group stays in flight across a loop's back edge).
  for (int gt = 0; gt < my_units; ++gt) {
    tile_no = gt;
    int band, nb;
    sched.tile(first + gt * stride, band, nb);
    m0 = m_begin + int64_t(band) * kBlockM;
    n0 = int64_t(nb) * kBlockN;
    const int g0 = gt * kKB;
    if constexpr (kMx) {
      // kMxUnroll K blocks per iteration, their 8 kMxUnroll half-steps in turn through three accumulator sets:
      // half-step h + 2 is issued before h is waited for (wait_group 2) and promoted, so the tensor cores run
      // under the promotions; each iteration waits for all of its groups (no group across the back edge, C7514).
      constexpr int kH = 2 * kW4MxSteps * kMxUnroll;
      const float* slot = sm.tile_scales + (gt % kW4TileScaleSlots) * 256;
      for (int kb0 = 0; kb0 < kKB; kb0 += kMxUnroll) {
#pragma unroll
        for (int h = -2; h < kH; ++h) {
          const int hi = h + 2;  // the half-step to issue
          if (hi < kH) {
            if (hi % (2 * kW4MxSteps) == 0) ptx::mbar_wait(sm.full + ist, iph);
            issue_half(ist, (hi / 2) % kW4MxSteps, hi % 2, hacc[hi % 3]);
            if (hi % (2 * kW4MxSteps) == 2 * kW4MxSteps - 1 && ++ist == kW4Stages) {
              ist = 0;
              iph ^= 1u;
            }
          }
          if (h < 0) continue;
          float p[4];
          half_scales(rst, slot, kb0 + h / (2 * kW4MxSteps), (h / 2) % kW4MxSteps, h % 2, p);
          if (h + 2 < kH)
            ptx::wgmma_wait2();
          else if (h + 1 < kH)
            ptx::wgmma_wait1();
          else
            ptx::wgmma_wait0();
          retire_half(h % 2, hacc[h % 3], p);
          if (h % (2 * kW4MxSteps) == 2 * kW4MxSteps - 1) {  // the K block's last half-step: release its stage
            if (lane == 0) ptx::mbar_arrive(sm.empty + rst);
            if (++rst == kW4Stages) rst = 0;
            Lag::retired(c, g0 + kb0 + h / (2 * kW4MxSteps));
          }
        }
      }
      store_tile();
      continue;
    }
    issue(g0, acc0);
#pragma unroll
    for (int kb = 0; kb < kKB; kb += 2) {
      if (kb + 1 < kKB) {
        issue(g0 + kb + 1, acc1);
        ptx::wgmma_wait1();
      } else {
        ptx::wgmma_wait0();
      }
      retire(g0 + kb, kb + 1 == kKB, acc0);
      if (kb + 1 < kKB) {
        if (kb + 2 < kKB) {
          issue(g0 + kb + 2, acc0);
          ptx::wgmma_wait1();
        } else {
          ptx::wgmma_wait0();
        }
        retire(g0 + kb + 1, kb + 2 == kKB, acc1);
      }
    }
  }
  if (dest.counters && run_tiles > 0) count_run(run_slice, run_tiles);  // the open run
  if (dest.counters && run_reach > 0) count_run(run_slice + 1, run_reach);
}

// group_m: the tile order's groups of bands (gemm/scheduler.cuh; the launcher fits it to the rows and slices).
template <int kKB, GemmScales kScales, class Cluster = NoCluster, class Lag = LaggedWarpgroups>
__global__ void __launch_bounds__(kWThreads, 1)
    gemm_wgmma4_kernel(const __grid_constant__ gpuTensorMap tm_a, const __grid_constant__ gpuTensorMap tm_b,
                       const __grid_constant__ gpuTensorMap tm_sa, const float* __restrict__ SA,
                       const float* __restrict__ SB, int64_t N, int64_t K, int64_t m_begin, int64_t m_end,
                       GemmDest dest, int group_m) {
#if defined(GEMMAR_SM90A_PASS)
  static_assert(Lag::kBlocks >= 0 && Lag::kBlocks < kKB && Lag::kBlocks <= kW4Stages - 3,
                "the lag must leave the producer stages to fill");
  static_assert((Cluster::kM == 1 || Cluster::kM == 2) && (Cluster::kN == 1 || Cluster::kN == 2),
                "clusters of up to 2 x 2");
  static_assert(kKB >= 3, "the tile scale slots are reused 4 tiles apart");
  static_assert(kScales == GemmScales::Blockscale || kScales == GemmScales::PerRow || kScales == GemmScales::PerStep32,
                "the scale layouts of gemm/heuristics.hpp this kernel takes");
  constexpr bool kPerRow = kScales == GemmScales::PerRow, kMx = kScales == GemmScales::PerStep32;
  constexpr int kStageS = kW4StageScaleBytes<kScales>;
  constexpr int kCluster = Cluster::kM * Cluster::kN;
  static_assert(!kMx || (kCluster == 1 && kKB <= kW4MxMaxKB && kKB % kMxUnroll == 0),
                "PerStep32: no cluster, and the tile's B scales in one tile scale slot");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  W4Smem sm;
  sm.sA = smem;
  sm.sB = sm.sA + kW4Stages * kStageA;
  sm.sS = sm.sB + kW4Stages * kStageB;  // per stage: 128 A scales, then (PerRow) the unit B scale
  sm.full = reinterpret_cast<uint64_t*>(sm.sS + kW4Stages * kStageS);
  sm.empty = sm.full + kW4Stages;
  sm.tile_arrivals = reinterpret_cast<uint32_t*>(sm.empty + kW4Stages);
  sm.tile_scales = reinterpret_cast<float*>(sm.sS + kW4Stages * kStageS + 256);
  const int tid = threadIdx.x;
  const int wg = __shfl_sync(0xffffffffu, tid / 128, 0);
  if (tid == 0) {
    for (int s = 0; s < kW4Stages; ++s) {
      ptx::mbar_init(sm.full + s, 1);
      // one arrive per consumer warp of every CTA this producer writes into
      ptx::mbar_init(sm.empty + s, 8 * Cluster::kWriters);
    }
    for (int i = 0; i < 4; ++i) sm.tile_arrivals[i] = 0;
    ptx::fence_mbar_init();
  }
  if (kPerRow)  // every stage's scales 1.0f once (the producer never writes them): the Blockscale promotion with
                // unit scales is PerRow's unscaled total + dot, and the consumers' code stays Blockscale's
    for (int i = tid; i < kW4Stages * kStageS / 4; i += kWThreads) reinterpret_cast<float*>(sm.sS)[i] = 1.0f;
  __syncthreads();
  if constexpr (kCluster > 1) ptx::cluster_sync_all();  // the peer's barriers are initialised before any remote arrive
  (void)K;
  (void)SA;  // Blockscale reads its A scales through tm_sa
  const uint32_t rank = kCluster > 1 ? ptx::cluster_ctarank() : 0u;
  const TileScheduler<Cluster::kM, Cluster::kN> sched(m_begin, m_end, N, group_m, rank);
  const int first = int(blockIdx.x) / kCluster, stride = int(gridDim.x) / kCluster;
  const int my_units = first < sched.units ? (sched.units - first + stride - 1) / stride : 0;

  if (wg == 0) {  // producer
    if constexpr (kMx)
      ptx::producer_registers_n<MxProducerRegisters<Lag>::value>();
    else
      ptx::producer_registers();
    if (tid == 0) wgmma4_produce<kKB, kScales, Cluster>(sm, tm_a, tm_b, tm_sa, SA, SB, sched, m_begin, first, stride);
  } else {
    if constexpr (kMx)
      ptx::consumer_registers_n<MxProducerRegisters<Lag>::value>();
    else
      ptx::consumer_registers();
    wgmma4_consume<kKB, kScales, Cluster, Lag>(sm, dest, sched, m_begin, first, stride, my_units, tid, wg, rank);
  }
  if constexpr (kCluster > 1) {  // no CTA leaves while its peer may still write into it
    __syncwarp();                // the producer warp's lanes meet again before the aligned cluster barrier
    ptx::cluster_sync_all();
  }
#else
  (void)SA, (void)SB, (void)N, (void)K, (void)m_begin, (void)m_end, (void)dest, (void)group_m, (void)tm_a, (void)tm_b,
      (void)tm_sa;
  __trap();
#endif
}

}  // namespace
}  // namespace gemmar::kernels::dev
