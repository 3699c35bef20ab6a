// The sm_90a GEMMs' host side: the operands' TMA descriptors (cached) and the launches of the tuned kernel
// (gemm/sm90_wgmma4.cuh) and the generic one (gemm/sm90_wgmma.cuh). Empty in a build without them (HIP).
#include "kernels/gemm/launch.hpp"

#if defined(GEMMAR_GPU_SM90)
#include <iterator>

#include "kernels/gemm/sm90_wgmma.cuh"
#include "kernels/gemm/sm90_wgmma4.cuh"

namespace gemmar::kernels::dev {
namespace {

// rows x k e4m3 row-major, boxes of box_rows rows x 128 bytes, 128-byte swizzle.
bool encode_tile_map(gpuTensorMap* map, const uint8_t* base, int64_t rows, int64_t k, uint32_t box_rows) {
  return gemmar::gpu::encode_tensor_map_2d(map, base, true, uint64_t(k), uint64_t(rows), uint64_t(k), 128, box_rows);
}
// The A scales [k/128, m] fp32 (m contiguous): boxes of `box` scales (the tile's rows) of one K block.
bool encode_scale_map(gpuTensorMap* map, const float* base, int64_t m, int64_t kb, uint32_t box_rows) {
  return gemmar::gpu::encode_tensor_map_2d(map, base, false, uint64_t(m), uint64_t(kb), uint64_t(m) * 4, box_rows, 1);
}
// PerStep32's A scales [m, ks] fp32 (ks = k / 32 contiguous): boxes of one K block's 4 steps of 128 rows.
bool encode_step_scale_map(gpuTensorMap* map, const float* base, int64_t m, int64_t ks) {
  return gemmar::gpu::encode_tensor_map_2d(map, base, false, uint64_t(ks), uint64_t(m), uint64_t(ks) * 4, 4,
                                           uint32_t(kBlockM));
}
// Encoding is host work between the launch's events; the maps of recently used operands are kept (the map
// depends only on the address, the extents and the kind, never on the contents). kind > 0: an e4m3 tile map
// with boxes of `kind` rows; kind < 0: an A-scale map with boxes of -kind scales; kind 0: a step-scale map.
bool cached_map(gpuTensorMap* map, const void* base, int64_t rows, int64_t cols, int kind) {
  struct Entry {
    const void* base;
    int64_t rows, cols;
    int kind;
    gpuTensorMap map;
  };
  static std::mutex mu;
  static std::vector<Entry> cache;
  static size_t next = 0;
  std::lock_guard<std::mutex> lock(mu);
  for (const Entry& e : cache)
    if (e.base == base && e.rows == rows && e.cols == cols && e.kind == kind) {
      *map = e.map;
      return true;
    }
  const bool ok = kind > 0   ? encode_tile_map(map, static_cast<const uint8_t*>(base), rows, cols, uint32_t(kind))
                  : kind < 0 ? encode_scale_map(map, static_cast<const float*>(base), rows, cols, uint32_t(-kind))
                             : encode_step_scale_map(map, static_cast<const float*>(base), rows, cols);
  if (!ok) return false;
  const Entry e{base, rows, cols, kind, *map};
  if (cache.size() < 256)
    cache.push_back(e);
  else
    cache[next++ % cache.size()] = e;
  return true;
}

// gemm_wgmma4_kernel<kb, kPerRow> for kb in kWgmma4KBlocks (ptxas keeps each at 168 registers, no serialized
// wgmma); gpuErrorInvalidValue for any other kb.
template <GemmScales kScales, size_t... I>
gpuError_t launch_wgmma4_kb(int kb, const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                            gpuStream_t s, int group_m, std::index_sequence<I...>) {
  gpuError_t e = gpuErrorInvalidValue;
  (void)((kb == kWgmma4KBlocks[I] && (e = launch_tma_gemm(gemm_wgmma4_kernel<kWgmma4KBlocks[I], kScales>, kW4Smem, op,
                                                          m_begin, m_end, dest, s, group_m, kNoCluster),
                                      true)) ||
         ...);
  return e;
}

template <GemmScales kScales>
gpuError_t launch_wgmma_scales(int smem, const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                               gpuStream_t s) {
  if (const gpuError_t e = set_smem_once(gemm_wgmma_kernel<kScales>, smem); e != gpuSuccess) return e;
  if (m_end <= m_begin) return gpuSuccess;
  gpuTensorMap ta, tb;
  if (!make_tile_map(&ta, op.a, op.m, op.k) || !make_tile_map(&tb, op.b, op.n, op.k)) return gpuErrorInvalidValue;
  const int64_t tiles = ((m_end - m_begin) / kBlockM) * (op.n / kBlockN);
  const int grid = int(std::min<int64_t>(tiles, sm_count_cached()));
  gemm_wgmma_kernel<kScales><<<unsigned(grid), kWThreads, size_t(smem), s>>>(ta, tb, op.a_scale, op.b_scale, op.m, op.n,
                                                                             op.k, m_begin, m_end, dest);
  return gpuGetLastError();
}

}  // namespace

bool make_tile_map(gpuTensorMap* map, const uint8_t* base, int64_t rows, int64_t k, int box_rows) {
  return cached_map(map, base, rows, k, box_rows);
}
bool make_scale_map(gpuTensorMap* map, const float* base, int64_t m, int64_t kb, int box_rows) {
  return cached_map(map, base, m, kb, -box_rows);
}
bool make_step_scale_map(gpuTensorMap* map, const float* base, int64_t m, int64_t ks) {
  return cached_map(map, base, m, ks, 0);
}

gpuError_t launch_sm90_wgmma4(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                              gpuStream_t s, int k_blocks, int group_m, ClusterShape cluster) {
  const GemmScales scales = gemm_scales(op.quant);
  if (scales == GemmScales::PerStep32) {  // mxfp8: instantiated at K = 2048, no cluster, 32 x 32 B scale blocks
    if (k_blocks != 16 || cluster.m != 1 || cluster.n != 1 || scale_block(op.quant, true).rows != kMxBRows)
      return gpuErrorInvalidValue;
    return launch_tma_gemm(gemm_wgmma4_kernel<16, GemmScales::PerStep32>, kW4SmemMx, op, m_begin, m_end, dest, s,
                           group_m, kNoCluster);
  }
  if (scales != GemmScales::Blockscale && scales != GemmScales::PerRow) return gpuErrorInvalidValue;
  const bool per_row = scales == GemmScales::PerRow;
  if (cluster.m == kShareB.m && cluster.n == kShareB.n) {  // B multicast along M: instantiated at K = 2048 only
    if (k_blocks != 16) return gpuErrorInvalidValue;
    return per_row ? launch_tma_gemm(gemm_wgmma4_kernel<16, GemmScales::PerRow, ShareBAlongM>, kW4Smem, op, m_begin,
                                     m_end, dest, s, group_m, kShareB)
                   : launch_tma_gemm(gemm_wgmma4_kernel<16, GemmScales::Blockscale, ShareBAlongM>, kW4Smem, op, m_begin,
                                     m_end, dest, s, group_m, kShareB);
  }
  if (cluster.m != 1 || cluster.n != 1) return gpuErrorInvalidValue;
  const auto kbs = std::make_index_sequence<std::size(kWgmma4KBlocks)>{};
  return per_row ? launch_wgmma4_kb<GemmScales::PerRow>(k_blocks, op, m_begin, m_end, dest, s, group_m, kbs)
                 : launch_wgmma4_kb<GemmScales::Blockscale>(k_blocks, op, m_begin, m_end, dest, s, group_m, kbs);
}

gpuError_t launch_sm90_wgmma(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                             gpuStream_t s) {
  switch (gemm_scales(op.quant)) {
    case GemmScales::Blockscale:
      return launch_wgmma_scales<GemmScales::Blockscale>(kWgmmaSmem, op, m_begin, m_end, dest, s);
    case GemmScales::PerRow:
      return launch_wgmma_scales<GemmScales::PerRow>(kWgmmaSmem, op, m_begin, m_end, dest, s);
    case GemmScales::PerStep32:
      if (scale_block(op.quant, true).rows != kMxBRows) return gpuErrorInvalidValue;
      return launch_wgmma_scales<GemmScales::PerStep32>(kWgmmaSmemMx, op, m_begin, m_end, dest, s);
    case GemmScales::Unsupported:
      break;
  }
  return gpuErrorInvalidValue;
}

}  // namespace gemmar::kernels::dev

#else  // no sm_90a kernels in this build

namespace gemmar::kernels::dev {
gpuError_t launch_sm90_wgmma4(const GemmOperands&, int64_t, int64_t, const GemmDest&, gpuStream_t, int, int,
                              ClusterShape) {
  return gpuErrorInvalidValue;
}
gpuError_t launch_sm90_wgmma(const GemmOperands&, int64_t, int64_t, const GemmDest&, gpuStream_t) {
  return gpuErrorInvalidValue;
}
}  // namespace gemmar::kernels::dev

#endif
