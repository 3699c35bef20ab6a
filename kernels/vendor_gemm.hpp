// The vendor's scaled fp8 GEMM (cuBLASLt on NVIDIA) as a GEMM implementation of the pipeline
// (`--gemm-impl cublaslt`, blockscale) and as the device's measured GEMM ceiling (`gemmar_gpu_bench ceilings`,
// `gemm M N K ptpc`). Same operands and layouts as our kernels (dev::GemmOperands): A [m, k] e4m3fn row-major,
// B [n, k] e4m3fn row-major, blockscale's A scales [k/128, m] (index kb*m + row, 1x128 blocks), B scales
// [n/128, k/128] row-major (128x128 blocks), D [m, n] bf16 row-major. AMD: not wired (hipBLASLt),
// vendor_gemm_available() is false and vendor_gemm() throws UsageError.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/gemm_ar.hpp"
#include "kernels/gpu_compat.hpp"
#include "kernels/kernels.hpp"

namespace gemmar::kernels {

// vendor_gemm_available / vendor_gemm_supports / vendor_gemm_name: kernels/gemm_ar.hpp (the public API).
// ptpc's scales (issue 25): cuBLASLt's outer-vector fp32 scaling, a_scale [m], b_scale [n].

// D = the vendor's GEMM of op.quant on stream s (current device). The first call for a (device, m, n, k, quant)
// picks the fastest of cuBLASLt's heuristic algorithms by timing each on these buffers (synchronizes; D is
// overwritten), later calls only enqueue. Throws UsageError for a quant it does not support, EnvironmentError
// (file:line) when cuBLASLt refuses the problem. ptpc: the vendor comparison of gemmar_gpu_bench only.
void vendor_gemm(const dev::GemmOperands& op, uint16_t* d, gpuStream_t s);

}  // namespace gemmar::kernels
