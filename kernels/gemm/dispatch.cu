// launch_gemm: the one dispatch of the op's GEMM, every quant, by the operands' scale layout and the device
// (gemm/heuristics.hpp choose_gemm decides; this file only gathers what it needs and launches its choice).
#include "kernels/device_common.cuh"
#include "kernels/gemm/launch.hpp"

namespace gemmar::kernels::dev {

GemmProblem gemm_problem(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest) {
  GemmProblem p;
  p.scales = gemm_scales(op.quant);
  p.b_scale_rows = scale_block(op.quant, true).rows;
  p.n = op.n;
  p.k = op.k;
  p.m_begin = m_begin;
  p.m_end = m_end;
  p.slice_rows = dest.slice_rows;
  p.concurrent_gemms = dest.concurrent_gemms;
  bool aligned = dest.ldd % 8 == 0;  // 16-byte stores
  for (int i = 0; i < kMaxWorld; ++i) aligned = aligned && reinterpret_cast<uintptr_t>(dest.dst[i]) % 16 == 0;
  const uintptr_t copied_scales = reinterpret_cast<uintptr_t>(op.b_scale) |
                                  (p.scales == GemmScales::PerRow ? reinterpret_cast<uintptr_t>(op.a_scale) : 0);
  p.aligned16 = aligned && copied_scales % 16 == 0;
  p.sm90 = current_device_is_sm90();
  return p;
}

gpuError_t launch_gemm_choice(const GemmChoice& c, const GemmOperands& op, int64_t m_begin, int64_t m_end,
                              const GemmDest& dest, gpuStream_t s) {
  switch (c.family) {
    case GemmFamily::Sm90Wgmma4:
      return launch_sm90_wgmma4(op, m_begin, m_end, dest, s, c.k_blocks, c.group_m, c.cluster);
    case GemmFamily::Sm90Wgmma:
      return launch_sm90_wgmma(op, m_begin, m_end, dest, s);
    case GemmFamily::Portable:
      return gemm_scales(op.quant) == GemmScales::Blockscale ? launch_portable_blockscale(op, m_begin, m_end, dest, s)
                                                             : launch_portable_scaled(op, m_begin, m_end, dest, s);
    case GemmFamily::None:
      break;
  }
  return gpuErrorInvalidValue;
}

gpuError_t launch_gemm(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest, gpuStream_t s) {
  return launch_gemm_choice(choose_gemm(gemm_problem(op, m_begin, m_end, dest)), op, m_begin, m_end, dest, s);
}

const char* gemm_choice_name(const GemmProblem& p, const GemmChoice& c) {
  switch (c.family) {
    case GemmFamily::Sm90Wgmma4:
      if (p.scales == GemmScales::PerStep32)
        return "wgmma m64n64k32 e4m3 halves + TMA/mbarrier, promoted per 32-wide K step through three accumulator "
               "sets, scales staged by the producer, consumer warpgroups 2 K blocks apart, 16-byte stores, persistent, "
               "128x128 tiles (gemm_wgmma4_kernel<16, PerStep32>)";
      if (c.cluster.m == kShareB.m && c.cluster.n == kShareB.n)
        return p.scales == GemmScales::PerRow
                   ? "wgmma m64n128k32 e4m3 + TMA/mbarrier, PerRow (ptpc) epilogue, clusters of two CTAs along M "
                     "sharing B by TMA multicast, consumer warpgroups 2 K blocks apart, 16-byte stores, persistent, "
                     "128x128 tiles (gemm_wgmma4_kernel, ShareBAlongM)"
                   : "wgmma m64n128k32 e4m3 + TMA/mbarrier, clusters of two CTAs along M sharing B by TMA multicast, "
                     "consumer warpgroups 2 K blocks apart, 16-byte stores, persistent, 128x128 tiles "
                     "(gemm_wgmma4_kernel, ShareBAlongM)";
      return p.scales == GemmScales::PerRow
                 ? "wgmma m64n128k32 e4m3 + TMA/mbarrier, dot promoted per 128 K, PerRow (ptpc) epilogue, two "
                   "accumulator sets, consumer warpgroups 2 K blocks apart, 16-byte stores, persistent, 128x128 tiles "
                   "(gemm_wgmma4_kernel)"
                 : "wgmma m64n128k32 e4m3 + TMA/mbarrier, 128x128 tiles, two accumulator sets, consumer warpgroups 2 "
                   "K blocks apart, each storing (16-byte) and releasing on its own, setmaxnreg 40/232, persistent, 6 "
                   "stages, tiles in groups of 4 bands (gemm_wgmma4_kernel)";
    case GemmFamily::Sm90Wgmma:
      switch (p.scales) {
        case GemmScales::PerRow:
          return "wgmma m64n128k32 e4m3 + TMA/mbarrier, dot promoted per 128 K, PerRow (ptpc) epilogue, persistent, "
                 "128x128 tiles (gemm_wgmma_kernel)";
        case GemmScales::PerStep32:
          return "wgmma m64n128k32 e4m3 + TMA/mbarrier, promoted per 32-wide K step with its scales, persistent, "
                 "128x128 tiles (gemm_wgmma_kernel)";
        default:
          return "wgmma m64n128k32 e4m3 + TMA/mbarrier, warp-specialised (1 producer + 2 consumer warpgroups), "
                 "persistent, 128x128x128 tiles, 6 stages (gemm_wgmma_kernel)";
      }
    case GemmFamily::Portable:
      if (p.scales != GemmScales::Blockscale) return "gemm_quant simt 128x128x32 (CUDA cores)";
#if defined(GEMMAR_GPU_HIP)
      return "mfma 32x32x16 fp8 (gfx94x/gfx950), 128x128x128 tiles";
#else
      return "mma.sync m16n8k32 e4m3 + cp.async, 128x128x128 tiles";
#endif
    case GemmFamily::None:
      break;
  }
  return "none (no kernel of this build takes these scales)";
}

}  // namespace gemmar::kernels::dev
