#include "kernels/gemm/heuristics.hpp"

namespace gemmar::kernels::dev {

namespace {
constexpr int64_t kTile = 128;  // the GEMMs' tile (kernels.hpp kBlockM = kBlockN = kBlockK)
}  // namespace

GemmScales gemm_scales(Quant q) {
  const ScaleBlock& a = scale_block(q, false);
  const ScaleBlock& b = scale_block(q, true);
  if (a.rows == 1 && a.k == kTile && a.k_major && b.rows == kTile && b.k == kTile && !b.k_major)
    return GemmScales::Blockscale;
  if (a.k_major || b.k_major || a.rows != 1 || a.k != b.k || b.rows < 1) return GemmScales::Unsupported;
  if (a.k == 0 && b.rows == 1) return GemmScales::PerRow;
  if (a.k == 32 && kTile % b.rows == 0) return GemmScales::PerStep32;
  return GemmScales::Unsupported;
}

bool wgmma4_k(int64_t k) {
  for (const int kb : kWgmma4KBlocks)
    if (k == int64_t(kb) * kTile) return true;
  return false;
}

bool cluster_fits(ClusterShape c, int64_t n, int64_t m_begin, int64_t m_end, int64_t slice_rows) {
  const int64_t unit_rows = c.m * kTile;
  return (n / kTile) % c.n == 0 && (m_end - m_begin) % unit_rows == 0 && m_begin % unit_rows == 0 &&
         slice_rows % unit_rows == 0;
}

bool share_b_along_m(int64_t n, int64_t m_begin, int64_t m_end, int64_t slice_rows, int concurrent_gemms) {
  return cluster_fits(kShareB, n, m_begin, m_end, slice_rows) && concurrent_gemms > 1 &&
         m_end - m_begin >= kShareBFromRows;
}

int fit_group_m(int group_m, int cluster_m, int64_t m_begin, int64_t m_end, int64_t slice_rows) {
  const int64_t bands = (m_end - m_begin) / kTile, slice_bands = slice_rows / kTile;
  const int64_t unit = cluster_m;
  while (group_m > 1 && (bands % (unit * group_m) != 0 || (slice_bands > 0 && slice_bands % (unit * group_m) != 0) ||
                         (m_begin / kTile) % (unit * group_m) != 0))
    group_m /= 2;
  return group_m;
}

GemmChoice choose_gemm(const GemmProblem& p) {
  const bool whole_tiles =
      p.k % kTile == 0 && p.n % kTile == 0 && p.m_begin % kTile == 0 && (p.m_end - p.m_begin) % kTile == 0;
  GemmChoice c;
  switch (p.scales) {
    case GemmScales::Blockscale:
    case GemmScales::PerRow: {
      // Blockscale on the sm_90a kernels whatever the shape (the op's shapes are whole tiles); PerRow where the
      // tiles are whole, else the CUDA cores.
      if (!p.sm90 || (p.scales == GemmScales::PerRow && !whole_tiles)) {
        c.family = GemmFamily::Portable;
        return c;
      }
      const int kb = p.aligned16 && wgmma4_k(p.k) ? int(p.k / kTile) : 0;
      if (kb == 16 && share_b_along_m(p.n, p.m_begin, p.m_end, p.slice_rows, p.concurrent_gemms))
        return {GemmFamily::Sm90Wgmma4, kb, kTileGroupBands / 2, kShareB};
      if (kb > 0) return {GemmFamily::Sm90Wgmma4, kb, kTileGroupBands, kNoCluster};
      c.family = GemmFamily::Sm90Wgmma;
      return c;
    }
    case GemmScales::PerStep32:
      // mxfp8: the tuned kernel promotes each 32-wide K step in its own accumulator sets at K = 2048 (3.3x the
      // one-accumulator kernel on an H100, docs/results/h100-1gpu-2026-12-07-issue45); other K on that kernel.
      if (!p.sm90 || !whole_tiles || p.b_scale_rows != 32) {
        c.family = GemmFamily::Portable;
        return c;
      }
      if (p.aligned16 && p.k == 16 * kTile) return {GemmFamily::Sm90Wgmma4, 16, kTileGroupBands, kNoCluster};
      c.family = GemmFamily::Sm90Wgmma;
      return c;
    case GemmScales::Unsupported:
      break;
  }
  return c;
}

bool widen_stores_by_tma(int blocks, int sm_count, bool sm90) { return sm90 && blocks > 0 && blocks < sm_count; }

}  // namespace gemmar::kernels::dev
