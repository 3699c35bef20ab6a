// The ptpc and mxfp8 GEMMs (kernels/gemm/quant.cu), beside the blockscale one of gemm/blockscale.cu. Same tile, same
// destinations and counters (kernels.hpp GemmDest), other scale layouts (reference/quant.hpp):
//   ptpc:  a_scale [m] (one per row of A), b_scale [n] (one per row of B); the fp32 dot over all of K, then
//          out = dot * (sa * sb) once in the epilogue (numerics::ptpc_epilogue)
//   mxfp8: a_scale [m, k/32], b_scale [n/32, k/32] (one per 32x32 block, as mori's weights) row-major, powers
//          of two (e8m0 values held in fp32); per 32-wide K block the fp32 dot, then total = total + dot * (sa * sb) (numerics::block_accumulate), in the main
//          loop: Hopper has no MX instruction
#pragma once
#include <cstdint>

#include "kernels/kernels.hpp"

namespace gemmar::kernels::dev {

// C tiles for rows [m_begin, m_end) (multiples of 128; n a multiple of 128, k of 128). The kernel follows the
// quant's scale block: one scale over the whole K (ptpc's epilogue) or one per 32-wide K block (mxfp8's main
// loop); any other layout (blockscale) is gpuErrorInvalidValue.
gpuError_t launch_gemm_quant(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest,
                             gpuStream_t s);

}  // namespace gemmar::kernels::dev
