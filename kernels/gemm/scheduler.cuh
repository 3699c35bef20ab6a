// The one tile walk of the persistent GEMMs (gemm/sm90_wgmma.cuh, gemm/sm90_wgmma4.cuh and the lab's variants of
// them): which 128 x 128 output tile a CTA takes for each unit of work. A unit is one tile, or a cluster's
// kClusterM x kClusterN adjacent tiles (one per CTA of the cluster, rank = kClusterN rm + rn). Units run in groups
// of group_m 128-row bands (of cluster units), the band changing fastest within a group and the N tile next:
// the CTAs at work at once share B tiles as well as A bands. group_m 1 is band-major (n-fastest). The launcher
// makes group_m divide the bands and each destination slice's bands (gemm/heuristics.hpp fit_group_m), so a
// slice's tiles stay consecutive in every CTA's order (the counted runs; fused-sdma's puts wait on whole slices).
#pragma once
#include <cstdint>

#include "kernels/kernels.hpp"

namespace gemmar::kernels::dev {

template <int kClusterM = 1, int kClusterN = 1>
struct TileScheduler {
  int units_n;  // unit columns: N / 128 / kClusterN
  int units;    // every unit of the rows [m_begin, m_end)
  int group_m;  // bands (of units) per group
  int rm, rn;   // this CTA's place in its cluster

  __device__ __forceinline__ TileScheduler(int64_t m_begin, int64_t m_end, int64_t n, int group, uint32_t rank)
      : units_n(int(n / kBlockN) / kClusterN),
        units(int((m_end - m_begin) / kBlockM) / kClusterM * (int(n / kBlockN) / kClusterN)),
        group_m(group),
        rm(int(rank) / kClusterN),
        rn(int(rank) % kClusterN) {}

  // Unit u's tile for this CTA: its 128-row band (counted from m_begin) and its N tile.
  __device__ __forceinline__ void tile(int u, int& band, int& nb) const {
    const int g = u / (group_m * units_n), r = u - g * (group_m * units_n);
    band = (g * group_m + r % group_m) * kClusterM + rm;
    nb = (r / group_m) * kClusterN + rn;
  }
};

}  // namespace gemmar::kernels::dev
