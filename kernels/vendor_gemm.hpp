// The vendor's blockscale fp8 GEMM (cuBLASLt on NVIDIA) as a GEMM implementation of the pipeline
// (`--gemm-impl cublaslt`) and as the device's measured GEMM ceiling (`gemmar_gpu_bench ceilings`). Same
// operands and layouts as our kernel: A [m, k] e4m3fn row-major, B [n, k] e4m3fn row-major, A scales
// [k/128, m] (index kb*m + row, 1x128 blocks), B scales [n/128, k/128] row-major (128x128 blocks), D [m, n]
// bf16 row-major. AMD: not wired (hipBLASLt), available() is false and run() throws UsageError.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/gpu_compat.hpp"
#include "kernels/kernels.hpp"

namespace gemmar::kernels {

bool vendor_gemm_available();
// What the vendor path is, e.g. "cuBLASLt 130100 blockscale-128 (A 1x128, B 128x128)".
std::string vendor_gemm_name();

// D = blockscale GEMM on stream s (current device). The first call for a (device, m, n, k) picks the fastest
// of cuBLASLt's heuristic algorithms by timing each on these buffers (synchronizes; D is overwritten), later
// calls only enqueue. Throws EnvironmentError (file:line) when cuBLASLt refuses the problem.
void vendor_gemm_blockscale(const dev::GemmOperands& op, uint16_t* d, gpuStream_t s);
// ptpc (issue 25): cuBLASLt's outer-vector fp32 scaling (CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F), a_scale [m],
// b_scale [n]; the same algorithm choice and errors as above. The vendor comparison of gemmar_gpu_bench only.
void vendor_gemm_ptpc(const dev::GemmOperands& op, uint16_t* d, gpuStream_t s);

}  // namespace gemmar::kernels
