// What the sm_90a GEMMs (gemm/sm90_wgmma.cuh, gemm/sm90_wgmma4.cuh) and their host launchers share, and what the
// lab's variants of them (lab/gemm/) build on: the tile and thread shape, the TMA descriptors of the operands
// (cached: encoding is host work between a launch's events), and the persistent launch, with or without CTA
// clusters. CUDA only (GEMMAR_GPU_SM90).
#pragma once
#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "kernels/device_common.cuh"
#include "kernels/gemm/heuristics.hpp"
#include "kernels/gemm/ptx.cuh"
#include "kernels/gemm/scheduler.cuh"

namespace gemmar::kernels::dev {

constexpr int kWThreads = 384;              // 3 warpgroups: one producer, two consumers of 64 rows each
constexpr int kStageA = kBlockM * kBlockK;  // 16 KiB of e4m3
constexpr int kStageB = kBlockN * kBlockK;

// total = numerics::block_accumulate(total, dot, sa, sb) (the reference's rounding points) for a consumer thread's 64
// accumulators of an m64n128 wgmma: rows r0 (A scale sa0) and r0 + 8 (sa1), one B scale for the tile's columns.
__device__ __forceinline__ void promote_block(float (&total)[64], const float (&dot)[64], float sa0, float sa1,
                                              float sb) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    total[4 * j + 0] = nm::block_accumulate(total[4 * j + 0], dot[4 * j + 0], sa0, sb);
    total[4 * j + 1] = nm::block_accumulate(total[4 * j + 1], dot[4 * j + 1], sa0, sb);
    total[4 * j + 2] = nm::block_accumulate(total[4 * j + 2], dot[4 * j + 2], sa1, sb);
    total[4 * j + 3] = nm::block_accumulate(total[4 * j + 3], dot[4 * j + 3], sa1, sb);
  }
}

// rows x k e4m3 row-major in boxes of box_rows rows x 128 bytes, 128-byte swizzle (what ptx::smem_desc describes);
// a cluster sharing an operand loads half a tile per CTA (box_rows 64).
bool make_tile_map(gpuTensorMap* map, const uint8_t* base, int64_t rows, int64_t k, int box_rows = kBlockM);
// Blockscale's A scales [k/128, m] fp32 (m contiguous) in boxes of box_rows scales of one K block.
bool make_scale_map(gpuTensorMap* map, const float* base, int64_t m, int64_t kb, int box_rows);
// PerStep32's A scales [m, ks] fp32 (ks = k / 32 contiguous) in boxes of a K block's 4 steps of kBlockM rows.
bool make_step_scale_map(gpuTensorMap* map, const float* base, int64_t m, int64_t ks);

// How many clusters of `cluster` CTAs of `kern` the device holds at once, asked once per (kernel, device).
template <typename Kern>
gpuError_t max_active_clusters_once(Kern kern, int smem, int cluster, int* fit) {
  static std::mutex mu;
  static std::vector<std::pair<std::pair<const void*, int>, int>> known;  // ((kernel, device), clusters)
  int dev = 0;
  if (gpuGetDevice(&dev) != gpuSuccess) dev = 0;
  const std::pair<const void*, int> key{reinterpret_cast<const void*>(kern), dev};
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& e : known)
    if (e.first == key) {
      *fit = e.second;
      return gpuSuccess;
    }
  const gpuError_t e = gpu::max_active_clusters(kern, unsigned(sm_count_cached() / cluster * cluster), kWThreads,
                                                size_t(smem), unsigned(cluster), fit);
  if (e != gpuSuccess) return e;
  if (*fit <= 0) return gpuErrorInvalidValue;
  known.push_back({key, *fit});
  return gpuSuccess;
}

// One persistent launch of a gemm_wgmma4_kernel-shaped kernel (tm_a, tm_b, tm_sa, SA, SB, N, K, m_begin, m_end,
// dest, group_m) over the rows [m_begin, m_end): the operands' descriptors (a cluster sharing A along N loads it in
// boxes of 64 rows, sharing B along M likewise), group_m fitted to the rows and slices (fit_group_m), and a grid of
// as many CTAs (clusters) as the device runs at once: a persistent grid must not wait for a second wave.
template <typename Kern>
gpuError_t launch_tma_gemm(Kern kern, int smem, const GemmOperands& op, int64_t m_begin, int64_t m_end,
                           const GemmDest& dest, gpuStream_t s, int group_m, ClusterShape c) {
  const int cluster = c.m * c.n;
  const int64_t m = op.m, n = op.n, k = op.k;
  if (const gpuError_t e = set_smem_once(kern, smem); e != gpuSuccess) return e;
  if (m_end <= m_begin) return gpuSuccess;
  // PerRow's A scales are one per row, read in the epilogue: its kernel takes no scale map (A's stands in, unread).
  const GemmScales scales = gemm_scales(op.quant);
  gpuTensorMap ta, tb, tsa = {};
  if (!make_tile_map(&ta, op.a, m, k, kBlockM / c.n) || !make_tile_map(&tb, op.b, n, k, kBlockN / c.m) ||
      (scales == GemmScales::Blockscale && !make_scale_map(&tsa, op.a_scale, m, k / kBlockK, kBlockM)) ||
      (scales == GemmScales::PerStep32 && !make_step_scale_map(&tsa, op.a_scale, m, k / 32)))
    return gpuErrorInvalidValue;
  if (scales == GemmScales::PerRow) tsa = ta;
  const int64_t tiles = ((m_end - m_begin) / kBlockM) * (n / kBlockN);
  group_m = fit_group_m(group_m, c.m, m_begin, m_end, dest.slice_rows);
  if (cluster == 1) {
    const int grid = int(std::min<int64_t>(tiles, sm_count_cached()));
    kern<<<unsigned(grid), kWThreads, size_t(smem), s>>>(ta, tb, tsa, op.a_scale, op.b_scale, n, k, m_begin, m_end,
                                                         dest, group_m);
    return gpuGetLastError();
  }
  if (!cluster_fits(c, n, m_begin, m_end, dest.slice_rows)) return gpuErrorInvalidValue;
  int fit = 0;
  if (const gpuError_t e = max_active_clusters_once(kern, smem, cluster, &fit); e != gpuSuccess) return e;
  const unsigned grid = unsigned(std::min<int64_t>(tiles / cluster, fit) * cluster);
  // A cluster's CTAs are consecutive along x: the kernel reads its place from its cluster rank.
  const gpuError_t e = gpu::launch_clustered(kern, grid, kWThreads, size_t(smem), s, unsigned(cluster), ta, tb, tsa,
                                             op.a_scale, op.b_scale, n, k, m_begin, m_end, dest, group_m);
  return e != gpuSuccess ? e : gpuGetLastError();
}

}  // namespace gemmar::kernels::dev
