// The GEMM kernel families' launchers (inside kernels/: the op reaches them through launch_gemm's choice in
// gemm/dispatch.cu; the lab's testbed calls each directly, so every family is checked on any device it runs on).
// Each takes the operands in their quant's scale layout (gemm/heuristics.hpp gemm_scales) and rows
// [m_begin, m_end) (multiples of 128), enqueues on s and returns the launch status; a family that cannot run the
// operands' scales, or whose kernels this build lacks, returns gpuErrorInvalidValue.
#pragma once
#include "kernels/gemm/heuristics.hpp"
#include "kernels/kernels.hpp"

namespace gemmar::kernels::dev {

// gemm/sm90.cu (sm_90a builds): the tuned kernel at K = 128 * k_blocks (one of kWgmma4KBlocks; Blockscale and
// PerRow scales) with the tile order's groups of group_m bands (fitted to the rows) in clusters `cluster`
// (kNoCluster, or kShareB at k_blocks 16), and the generic kernel at any K (every layout; PerStep32 with 32-row
// B blocks).
gpuError_t launch_sm90_wgmma4(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                              gpuStream_t s, int k_blocks, int group_m, ClusterShape cluster);
gpuError_t launch_sm90_wgmma(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                             gpuStream_t s);
// gemm/blockscale.cu: Blockscale on the mma.sync (NVIDIA), MFMA (gfx942/gfx950) or scalar main loop.
gpuError_t launch_portable_blockscale(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                                      gpuStream_t s);
// gemm/quant.cu: PerRow and PerStep32 on the CUDA cores (one simple 128x128x32 SIMT tile; any B block rows that
// divide 128).
gpuError_t launch_portable_scaled(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                                  gpuStream_t s);

// The problem launch_gemm sees (the current device, the destinations' alignment), and the family it runs.
GemmProblem gemm_problem(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest);
gpuError_t launch_gemm_choice(const GemmChoice& choice, const GemmOperands& op, int64_t m_begin, int64_t m_end,
                              const GemmDest& dest, gpuStream_t s);
// What a choice runs, in words (the bench's and the testbed's `kernel` field).
const char* gemm_choice_name(const GemmProblem& p, const GemmChoice& c);

}  // namespace gemmar::kernels::dev
