// The ptpc and mxfp8 GEMMs (kernels/gemm/quant.cu), beside the blockscale one of gemm/blockscale.cu. Same tile, same
// destinations and counters (kernels.hpp GemmDest), other scale layouts (reference/quant.hpp):
//   ptpc:  a_scale [m] (one per row of A), b_scale [n] (one per row of B); the fp32 dot over all of K, then
//          out = dot * (sa * sb) once in the epilogue (numerics::ptpc_epilogue)
//   mxfp8: a_scale [m, k/32], b_scale [n/32, k/32] (one per 32x32 block, as mori's weights) row-major, powers
//          of two (e8m0 values held in fp32); per 32-wide K block the fp32 dot, then total = total + dot * (sa * sb)
//          (numerics::block_accumulate), in the main loop: Hopper has no MX instruction
#pragma once
#include <cstdint>

#include "kernels/kernels.hpp"

namespace gemmar::kernels::dev {

// C tiles for rows [m_begin, m_end) (multiples of 128; n a multiple of 128, k of 128). The kernel follows the
// quant's scale block: one scale over the whole K (ptpc's epilogue) or one per 32-wide K block (mxfp8's main
// loop); any other layout (blockscale) is gpuErrorInvalidValue.
// `variant`: GemmKernel::Wgmma keeps ptpc on the generic wgmma kernel (the comparison); any other runs
// gemm_wgmma4_kernel where it applies (kernels.hpp wgmma4_k: K = 1024, 2048, ...).
gpuError_t launch_gemm_quant(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                             gpuStream_t s, GemmKernel variant = GemmKernel::Wgmma4);
// ptpc and mxfp8 on the tensor cores (sm_90a: gemm_wgmma.cuh's wgmma main loop with the quant's scales: ptpc's
// unscaled dot promoted per 128-wide K block and scaled once in the epilogue, mxfp8's promoted per 32-wide K step
// with that step's scales; gemm/blockscale.cu), where quant_wgmma_runs (CUDA on Hopper, K and N multiples of
// 128): launch_gemm_quant runs it there and the simple kernel elsewhere.
bool quant_wgmma_runs(const GemmOperands& op, int64_t m_begin, int64_t m_end);
gpuError_t launch_gemm_quant_wgmma(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                                   gpuStream_t s, GemmKernel variant);
// The kernel launch_gemm_quant runs for these operands and variant on the current device (the bench's name).
const char* gemm_quant_kernel_name(const GemmOperands& op, GemmKernel variant);

}  // namespace gemmar::kernels::dev
