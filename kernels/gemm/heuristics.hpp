// Every dispatch rule of the GEMMs in one place, plain C++ (no GPU headers: tests/kernels checks them on the CPU):
// which kernel family runs a problem, its K blocks, its tile order's groups and its CTA clusters, and the pull's
// choice of stores. Each rule cites the measurement that chose it. The launchers (gemm/dispatch.cu,
// convert/convert.cu) and the lab's testbed (lab/) read these; nothing else decides.
#pragma once
#include <cstdint>

#include "common/modes.hpp"

namespace gemmar::kernels::dev {

// ---- scale layouts: what a quant's row of common/modes.hpp's table means to the kernels ------------------
// The GEMMs dispatch on the geometry of the scales, never on a quant's name: a new quant whose scale blocks are
// one of these runs with no edit here.
enum class GemmScales {
  Blockscale,  // A one scale per 1 x 128 block, stored [K/128, M]; B one per 128 x 128 block, [N/128, K/128]
  PerRow,      // one scale per row of A and of B over the whole K ([M], [N]): applied once in the epilogue
  PerStep32,   // A one per 1 x 32 block ([M, K/32]); B one per r x 32 block, r dividing 128: applied every 32 of K
  Unsupported,
};
GemmScales gemm_scales(Quant);

// ---- the GEMM kernel families and the choice between them ------------------------------------------------
enum class GemmFamily {
  Sm90Wgmma4,  // gemm/sm90_wgmma4.cuh: the tuned kernel, K one of kWgmma4KBlocks (Blockscale, PerRow)
  Sm90Wgmma,   // gemm/sm90_wgmma.cuh: any K (Blockscale, PerRow, PerStep32 with 32-row B blocks)
  Portable,    // gemm/blockscale.cu (Blockscale: mma.sync, MFMA or scalar) or gemm/quant.cu (PerRow, PerStep32:
               // CUDA cores), off compute capability 9.x and for what the Hopper kernels do not take
  None,        // no kernel of this build runs these scales
};

// The K / 128 that gemm_wgmma4_kernel is instantiated for (a tile's K blocks are unrolled; mori's K are 1024 and
// 2048); wgmma4_k: K is one of them.
inline constexpr int kWgmma4KBlocks[] = {4, 8, 12, 16, 24, 32};
bool wgmma4_k(int64_t k);

// The tile order's groups: 4 bands of 128 rows, the band changing fastest within a group: 3-10% less time than the
// band-major order (group 1), groups of 8 and 16 slower, of 2 within 2% (docs/results/h100-1gpu-2026-12-06-raster).
constexpr int kTileGroupBands = 4;

// gemm_wgmma4_kernel's clusters of m x n CTAs on adjacent tiles; 1 x 1 is no cluster.
struct ClusterShape {
  int m = 1, n = 1;
};
constexpr ClusterShape kNoCluster{1, 1}, kShareB{2, 1};
// The rows [m_begin, m_end), their start, each destination slice and N's tiles in whole cluster units.
bool cluster_fits(ClusterShape c, int64_t n, int64_t m_begin, int64_t m_end, int64_t slice_rows);

// Clusters of two CTAs along M sharing B by TMA multicast (gemm_wgmma4_kernel with ShareBAlongM) at K = 2048 from
// 12288 rows, where several GEMMs share the device (GemmDest::concurrent_gemms): eight GEMMs at once share the L2
// and run faster with them, a GEMM alone 5-7% slower (blockscale and ptpc alike;
// docs/results/h100-1gpu-2026-12-06-epilogue, h100-1gpu-2026-12-06-l2).
constexpr int64_t kShareBFromRows = 12288;
bool share_b_along_m(int64_t n, int64_t m_begin, int64_t m_end, int64_t slice_rows, int concurrent_gemms);

// group_m reduced (halved) until a group of cluster_m-band units divides the rows, their start and each
// destination slice's bands (fused-sdma's puts wait on whole slices, in order).
int fit_group_m(int group_m, int cluster_m, int64_t m_begin, int64_t m_end, int64_t slice_rows);

// One GEMM launch as the dispatch sees it.
struct GemmProblem {
  GemmScales scales = GemmScales::Blockscale;
  int b_scale_rows = 128;  // B's scale block rows (PerStep32: the Hopper kernel takes 32 only)
  int64_t n = 0, k = 0, m_begin = 0, m_end = 0, slice_rows = 0;
  int concurrent_gemms = 1;  // GemmDest::concurrent_gemms
  // 16-byte aligned destinations (gemm_wgmma4_kernel stores 16 bytes) and 16-byte aligned scales where its
  // producer bulk-copies a tile's scales into shared memory (B's; PerRow's A's too)
  bool aligned16 = true;
  bool sm90 = false;  // compute capability 9.x and a build with the sm_90a kernels (CUDA)
};
struct GemmChoice {
  GemmFamily family = GemmFamily::None;
  int k_blocks = 0;  // Sm90Wgmma4: K / 128
  int group_m = 1;   // Sm90Wgmma4: the tile order's groups, before fit_group_m
  ClusterShape cluster = kNoCluster;
};
// The product's choice: the tuned kernel where it runs (in clusters sharing B where share_b_along_m says so), the
// generic wgmma kernel for other K and the 32-wide scale steps, the portable kernels elsewhere.
GemmChoice choose_gemm(const GemmProblem&);

// ---- the fp8 wire's widen (dequantize and pull) ----------------------------------------------------------
// A pull on fewer blocks than the device has SMs stores its bf16 through the TMA (compute capability 9.x): an SM
// stores through its load/store path at a fixed rate, and on the H100 64 blocks' register stores held the pull to
// 0.82 of cudaMemcpy where the TMA's gave 0.90 (docs/results/h100-1gpu-2026-12-06-pull). blocks = 0 is the local
// dequantize's grid, which fills the device: register stores.
bool widen_stores_by_tma(int blocks, int sm_count, bool sm90);

}  // namespace gemmar::kernels::dev
