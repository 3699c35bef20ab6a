// The gemm subjects as launches: the op's dispatch and its kernel families forced (kernels/gemm/launch.hpp), and
// the lab's variants of gemm_wgmma4_kernel, each built from the product kernel's template with a policy of the
// lab's (kernels/gemm/sm90_wgmma4.cuh): clusters sharing A along N, or A and B in 2 x 2; the warpgroups in step;
// mxfp8's 32-wide scale steps (PerStep32), with the product's 2-block lag or a 1-block one (not yet measured).
// Measured: along N no faster than no cluster (L2 sectors -5%), 2 x 2 fits only 120 CTAs and is 6% slower, and
// band-major 3-10% slower than groups of 4 bands (H100, docs/results/h100-1gpu-2026-12-06-raster); the warpgroups
// in step 0-3% slower than the 2-block lag (H200, docs/results/h200-1gpu-2026-12-03-gemm4).
#include "kernels/gemm/launch.hpp"
#include "lab/lab_kernels.hpp"

#if defined(GEMMAR_GPU_SM90)
#include "kernels/gemm/sm90_wgmma4.cuh"
#endif

namespace gemmar::lab {

#if defined(GEMMAR_GPU_SM90)
namespace {

using dev::kBlockM;
using dev::kBlockN;
using dev::kStageA;
using dev::kStageB;
namespace ptx = dev::ptx;

constexpr dev::ClusterShape kShareA{1, 2}, kShareAB{2, 2};

// Two tiles side by side along N of one 128-row band share A: each CTA's producer loads 64 of its 128 rows (tm_a's
// box is 64 rows) and multicasts them into both CTAs' stage.
struct ShareAAlongN {
  static constexpr int kM = 1, kN = 2;
  static constexpr int kWriters = 2;  // itself and its neighbour along N
  __device__ __forceinline__ static void load_a(uint8_t* stage_a, const gpuTensorMap* tm_a, uint64_t* full, int kx,
                                                int m0, int rm, int rn) {
    ptx::tma_load_2d_multicast(stage_a + rn * (kStageA / 2), tm_a, full, kx, m0 + rn * (kBlockM / 2),
                               uint16_t(3u << (2 * rm)));
  }
  __device__ __forceinline__ static void load_b(uint8_t* stage_b, const gpuTensorMap* tm_b, uint64_t* full, int kx,
                                                int n0, int, int, uint64_t keep) {
    ptx::tma_load_2d_hinted(stage_b, tm_b, full, kx, n0, keep);
  }
};
// 2 x 2: A shared along N and B along M.
struct ShareAB {
  static constexpr int kM = 2, kN = 2;
  static constexpr int kWriters = 3;  // itself, its neighbour along N (rank ^ 1) and along M (rank ^ 2)
  __device__ __forceinline__ static void load_a(uint8_t* stage_a, const gpuTensorMap* tm_a, uint64_t* full, int kx,
                                                int m0, int rm, int rn) {
    ptx::tma_load_2d_multicast(stage_a + rn * (kStageA / 2), tm_a, full, kx, m0 + rn * (kBlockM / 2),
                               uint16_t(3u << (2 * rm)));
  }
  __device__ __forceinline__ static void load_b(uint8_t* stage_b, const gpuTensorMap* tm_b, uint64_t* full, int kx,
                                                int n0, int rm, int rn, uint64_t keep) {
    ptx::tma_load_2d_multicast_hinted(stage_b + rm * (kStageB / 2), tm_b, full, kx, n0 + rm * (kBlockN / 2),
                                      uint16_t((1u | (1u << kN)) << rn), keep);
  }
};
// The consumer warpgroups 1 K block apart (LaggedWarpgroups: 2), for PerStep32's 2-block main loop iterations.
struct LagOneBlock {
  static constexpr int kBlocks = 1;
  __device__ __forceinline__ static void start(int c, int my_units) {
    if (c == 1 && my_units > 0) ptx::bar_sync<2, 256>();
  }
  __device__ __forceinline__ static void retired(int c, int gi) {
    if (c == 0 && gi == kBlocks - 1) ptx::bar_arrive<2, 256>();
  }
};
// The op's lag with PerStep32's producer at 64 registers (its consumers at 216): no spills, where ptxas reports
// 236 bytes at the product's 56.
struct MxProducer64 : dev::LaggedWarpgroups {
  static constexpr int kMxProducerRegisters = 64;
};
// Both consumer warpgroups start at once and never wait on each other: the lag's comparison.
struct InStep {
  static constexpr int kBlocks = 0;
  __device__ __forceinline__ static void start(int, int) {}
  __device__ __forceinline__ static void retired(int, int) {}
};

}  // namespace
#endif

gpuError_t launch_gemm_subject(Subject s, const dev::GemmOperands& op, int64_t m_begin, int64_t m_end,
                               const dev::GemmDest& dest, gpuStream_t st) {
  if (s == Subject::GemmProduct) return dev::launch_gemm(op, m_begin, m_end, dest, st);
  if (s == Subject::GemmProductShared) {
    dev::GemmDest shared = dest;
    shared.concurrent_gemms = 8;
    return dev::launch_gemm(op, m_begin, m_end, shared, st);
  }
  if (s == Subject::GemmFamilyPortable) {
    dev::GemmChoice c;
    c.family = dev::GemmFamily::Portable;
    return dev::launch_gemm_choice(c, op, m_begin, m_end, dest, st);
  }
  const dev::GemmProblem p = dev::gemm_problem(op, m_begin, m_end, dest);
  if (!p.sm90 || !gemm_applies(s, op.quant, m_end - m_begin, op.n, op.k)) return gpuErrorInvalidValue;
  const int kb = int(op.k / 128);
#if defined(GEMMAR_GPU_SM90)
  using dev::gemm_wgmma4_kernel;
  using dev::kW4Smem;
  switch (s) {
    case Subject::GemmFamilyWgmma:
      return dev::launch_sm90_wgmma(op, m_begin, m_end, dest, st);
    case Subject::GemmWgmma4InStep:
      return dev::launch_tma_gemm(gemm_wgmma4_kernel<16, dev::GemmScales::Blockscale, dev::NoCluster, InStep>, kW4Smem,
                                  op, m_begin, m_end, dest, st, dev::kTileGroupBands, dev::kNoCluster);
    case Subject::GemmWgmma4ShareA:
      return dev::launch_tma_gemm(gemm_wgmma4_kernel<16, dev::GemmScales::Blockscale, ShareAAlongN>, kW4Smem, op,
                                  m_begin, m_end, dest, st, dev::kTileGroupBands, kShareA);
    case Subject::GemmWgmma4ShareAB:
      return dev::launch_tma_gemm(gemm_wgmma4_kernel<16, dev::GemmScales::Blockscale, ShareAB>, kW4Smem, op, m_begin,
                                  m_end, dest, st, dev::kTileGroupBands / 2, kShareAB);
    case Subject::GemmWgmma4ShareB:
      return dev::launch_sm90_wgmma4(op, m_begin, m_end, dest, st, kb, dev::kTileGroupBands / 2, dev::kShareB);
    case Subject::GemmWgmma4BandMajor:
      return dev::launch_sm90_wgmma4(op, m_begin, m_end, dest, st, kb, 1, dev::kNoCluster);
    case Subject::GemmWgmma4MxProducer64:
      return dev::launch_tma_gemm(gemm_wgmma4_kernel<16, dev::GemmScales::PerStep32, dev::NoCluster, MxProducer64>,
                                  dev::kW4SmemMx, op, m_begin, m_end, dest, st, dev::kTileGroupBands, dev::kNoCluster);
    case Subject::GemmWgmma4MxLag1:
      return dev::launch_tma_gemm(gemm_wgmma4_kernel<16, dev::GemmScales::PerStep32, dev::NoCluster, LagOneBlock>,
                                  dev::kW4SmemMx, op, m_begin, m_end, dest, st, dev::kTileGroupBands, dev::kNoCluster);
    default:
      break;
  }
#else
  (void)kb;
#endif
  return gpuErrorInvalidValue;
}

const char* gemm_subject_kernel(Subject s, const dev::GemmOperands& op, const dev::GemmDest& dest) {
  dev::GemmProblem p = dev::gemm_problem(op, 0, op.m, dest);
  switch (s) {
    case Subject::GemmProduct:
      return dev::gemm_choice_name(p, dev::choose_gemm(p));
    case Subject::GemmProductShared:
      p.concurrent_gemms = 8;
      return dev::gemm_choice_name(p, dev::choose_gemm(p));
    case Subject::GemmFamilyWgmma: {
      dev::GemmChoice c;
      c.family = dev::GemmFamily::Sm90Wgmma;
      return dev::gemm_choice_name(p, c);
    }
    case Subject::GemmFamilyPortable: {
      dev::GemmChoice c;
      c.family = dev::GemmFamily::Portable;
      return dev::gemm_choice_name(p, c);
    }
    default:
      return subject_info(s).what;
  }
}

}  // namespace gemmar::lab
