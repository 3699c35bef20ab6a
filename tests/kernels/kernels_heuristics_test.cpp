// kernels/gemm/heuristics.hpp, the one place the GEMM and widen dispatch is decided: each quant's scale layout, and
// the winner the op runs for the shapes and devices that matter (the tuned kernel at mori's K, clusters sharing B
// only where GEMMs share the device from 12288 rows, the generic kernel for other K, the portable kernels off
// Hopper), the tile order's groups fitted to the slices, and the pull's TMA stores. Plain C++ on the CPU.
#include <gtest/gtest.h>

#include "kernels/gemm/heuristics.hpp"

namespace {

using gemmar::Quant;
using namespace gemmar::kernels::dev;

GemmProblem problem(Quant q, int64_t m, int64_t n, int64_t k, int concurrent = 1) {
  GemmProblem p;
  p.scales = gemm_scales(q);
  p.b_scale_rows = gemmar::scale_block(q, true).rows;
  p.n = n;
  p.k = k;
  p.m_begin = 0;
  p.m_end = m;
  p.slice_rows = m / 8;  // 8 ranks' slices, as the op's destinations
  p.concurrent_gemms = concurrent;
  p.aligned16 = true;
  p.sm90 = true;
  return p;
}

TEST(KernelsHeuristics, EachQuantOfTheTableHasTheScaleLayoutItsKernelsRead) {
  EXPECT_EQ(gemm_scales(Quant::Blockscale), GemmScales::Blockscale);
  EXPECT_EQ(gemm_scales(Quant::Ptpc), GemmScales::PerRow);
  EXPECT_EQ(gemm_scales(Quant::Mxfp8), GemmScales::PerStep32);
  for (const gemmar::QuantTraits& q : gemmar::kQuantTable)
    EXPECT_NE(gemm_scales(q.quant), GemmScales::Unsupported) << q.name;
}

TEST(KernelsHeuristics, MorisBlockscaleShapesRunTheTunedKernelInGroupsOfFourBands) {
  for (const int64_t k : {1024, 2048}) {
    const GemmChoice c = choose_gemm(problem(Quant::Blockscale, 16384, 7168, k));
    EXPECT_EQ(c.family, GemmFamily::Sm90Wgmma4) << k;
    EXPECT_EQ(c.k_blocks, k / 128);
    EXPECT_EQ(c.group_m, kTileGroupBands);
    EXPECT_EQ(c.cluster.m, 1);
    EXPECT_EQ(c.cluster.n, 1);
  }
}

TEST(KernelsHeuristics, ClustersShareBOnlyWhereGemmsShareTheDeviceFrom12288RowsAtK2048) {
  for (const Quant q : {Quant::Blockscale, Quant::Ptpc}) {
    const GemmChoice shared = choose_gemm(problem(q, 12288, 7168, 2048, 8));
    EXPECT_EQ(shared.family, GemmFamily::Sm90Wgmma4);
    EXPECT_EQ(shared.cluster.m, 2);
    EXPECT_EQ(shared.group_m, kTileGroupBands / 2);
    EXPECT_EQ(choose_gemm(problem(q, 12288, 7168, 2048, 1)).cluster.m, 1) << "one GEMM alone";
    EXPECT_EQ(choose_gemm(problem(q, 12288 - 2048, 7168, 2048, 8)).cluster.m, 1) << "below the threshold";
    EXPECT_EQ(choose_gemm(problem(q, 16384, 7168, 1024, 8)).cluster.m, 1) << "K = 1024";
  }
  EXPECT_TRUE(share_b_along_m(7168, 0, kShareBFromRows, kShareBFromRows / 8, 2));
  EXPECT_FALSE(share_b_along_m(7168, 0, kShareBFromRows - 256, (kShareBFromRows - 256) / 8, 2));
}

TEST(KernelsHeuristics, Mxfp8AtK2048RunsTheTunedKernelPromotingEachStepWithoutAClusterOnEitherTarget) {
  for (const int64_t n : {7168, 5120})
    for (const int concurrent : {1, 8}) {
      const GemmChoice c = choose_gemm(problem(Quant::Mxfp8, 16384, n, 2048, concurrent));
      EXPECT_EQ(c.family, GemmFamily::Sm90Wgmma4) << n;
      EXPECT_EQ(c.k_blocks, 16);
      EXPECT_EQ(c.group_m, kTileGroupBands);
      EXPECT_EQ(c.cluster.m, 1) << "the PerStep32 instantiation has no cluster";
      EXPECT_EQ(c.cluster.n, 1);
    }
}

TEST(KernelsHeuristics, OtherKMisalignedBuffersAndMxfp8OffK2048RunTheGenericKernel) {
  EXPECT_EQ(choose_gemm(problem(Quant::Blockscale, 4096, 7168, 640)).family, GemmFamily::Sm90Wgmma);
  GemmProblem p = problem(Quant::Blockscale, 4096, 7168, 2048);
  p.aligned16 = false;
  EXPECT_EQ(choose_gemm(p).family, GemmFamily::Sm90Wgmma);
  EXPECT_EQ(choose_gemm(problem(Quant::Ptpc, 4096, 7168, 640)).family, GemmFamily::Sm90Wgmma);
  EXPECT_EQ(choose_gemm(problem(Quant::Mxfp8, 4096, 7168, 1024)).family, GemmFamily::Sm90Wgmma);
  GemmProblem mx = problem(Quant::Mxfp8, 4096, 5120, 2048);
  mx.aligned16 = false;
  EXPECT_EQ(choose_gemm(mx).family, GemmFamily::Sm90Wgmma);
  for (const int kb : kWgmma4KBlocks) {
    EXPECT_TRUE(wgmma4_k(int64_t(kb) * 128));
    EXPECT_EQ(choose_gemm(problem(Quant::Ptpc, 4096, 7168, int64_t(kb) * 128)).family, GemmFamily::Sm90Wgmma4);
  }
  EXPECT_FALSE(wgmma4_k(640));
}

TEST(KernelsHeuristics, OffHopperAndOffTheTilesThePortableKernelsRun) {
  for (const gemmar::QuantTraits& q : gemmar::kQuantTable) {
    GemmProblem p = problem(q.quant, 4096, 7168, 2048);
    p.sm90 = false;
    EXPECT_EQ(choose_gemm(p).family, GemmFamily::Portable) << q.name;
  }
  GemmProblem odd = problem(Quant::Ptpc, 4096, 7168 + 64, 2048);
  EXPECT_EQ(choose_gemm(odd).family, GemmFamily::Portable);
  GemmProblem wide_b = problem(Quant::Mxfp8, 4096, 7168, 2048);
  wide_b.b_scale_rows = 64;  // a B block the Hopper kernel does not stage
  EXPECT_EQ(choose_gemm(wide_b).family, GemmFamily::Portable);
}

TEST(KernelsHeuristics, TileGroupsShrinkUntilTheyDivideTheRowsAndEverySlice) {
  EXPECT_EQ(fit_group_m(4, 1, 0, 16384, 2048), 4);
  EXPECT_EQ(fit_group_m(4, 1, 0, 2048, 256), 2) << "a slice of two bands";
  EXPECT_EQ(fit_group_m(4, 1, 128, 640, 512), 1) << "rows that start mid-group";
  EXPECT_EQ(fit_group_m(2, 2, 0, 12288, 1536), 2) << "clusters of two bands: units of 256 rows";
  EXPECT_EQ(fit_group_m(2, 2, 0, 1536, 256), 1);
}

TEST(KernelsHeuristics, OnlyAPullOnPartOfTheDeviceStoresThroughTheTma) {
  EXPECT_TRUE(widen_stores_by_tma(64, 132, true));
  EXPECT_FALSE(widen_stores_by_tma(132, 132, true)) << "a block on every SM: register stores";
  EXPECT_FALSE(widen_stores_by_tma(0, 132, true)) << "the dequantize's grid fills the device";
  EXPECT_FALSE(widen_stores_by_tma(64, 132, false)) << "no TMA";
}

}  // namespace
