// The ptpc and mxfp8 GEMMs (kernels/gemm/quant.cu), beside the blockscale one of gemm/blockscale.cu. Same tile, same
// destinations and counters (kernels.hpp GemmDest), other scale layouts (reference/quant.hpp):
//   ptpc:  a_scale [m] (one per row of A), b_scale [n] (one per row of B); the fp32 dot over all of K, then
//          out = dot * (sa * sb) once in the epilogue (numerics::ptpc_epilogue)
//   mxfp8: a_scale [m, k/32], b_scale [n, k/32] row-major, powers of two (e8m0 values held in fp32); per 32-wide
//          K block the fp32 dot, then total = total + dot * (sa * sb) (numerics::block_accumulate), in the main
//          loop: Hopper has no MX instruction
#pragma once
#include <cstdint>

#include "kernels/kernels.hpp"

namespace gemmar::kernels::dev {

enum class QuantKernel { Ptpc, Mxfp8 };

// C tiles for rows [m_begin, m_end) (multiples of 128; n a multiple of 128, k of 128).
gpuError_t launch_gemm_quant(QuantKernel q, const uint8_t* a, const uint8_t* b, const float* a_scale,
                             const float* b_scale, int64_t m, int64_t n, int64_t k, int64_t m_begin, int64_t m_end,
                             const GemmDest& dest, gpuStream_t s);

}  // namespace gemmar::kernels::dev
