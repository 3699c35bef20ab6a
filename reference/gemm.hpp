// GEMMs of the reference. All matrices row-major; A is [m, k], B is [n, k] (as the op holds them), C = A B^T.
#pragma once
#include <cstdint>
#include <vector>

#include "common/config.hpp"
#include "reference/operands.hpp"

namespace gemmar::reference {

// fp32 GEMM through Eigen (OpenMP-parallel when OpenMP is enabled; threads = omp_get_max_threads()).
void gemm_f32(const float* a, const float* b, int64_t m, int64_t n, int64_t k, float* c);
// fp64 "truth".
void gemm_f64(const double* a, const double* b, int64_t m, int64_t n, int64_t k, double* c);

// The fp32 reference partial of one rank: dequantized A times dequantized B^T, [a_rows, N].
std::vector<float> reference_partial(const RankOperands&, Quant, Fp8Format);
// The same in fp64 on the same dequantized values.
std::vector<double> truth_partial(const RankOperands&, Quant, Fp8Format);

// The GPU's partial as the pipeline computes it (docs/spec.md 1.2): blockscale: per 128-wide K block an fp32 dot
// of the decoded codes, then acc = acc + dot * (scale_a * scale_b); mxfp8: the same per 32-wide block;
// ptpc: the fp32 dot over all K, then dot * (scale_a * scale_b) in the epilogue. `decode_as` is the
// format the kernel reads the codes in (normally the operands' own; the fnuz-read-as-fn fault differs).
std::vector<float> emulated_partial(const RankOperands&, Quant, Fp8Format decode_as);

struct GemmBenchResult {
  int64_t m = 0, n = 0, k = 0;
  int threads = 0;
  int repetitions = 0;
  double seconds_best = 0;  // fastest repetition
  double gflops = 0;        // 2mnk / seconds_best
  // Process CPU time of the fastest repetition (all threads): on a shared machine, flops / cpu_seconds is the
  // rate per core while scheduled, free of time lost to other processes.
  double cpu_seconds_best = 0;
  double gflops_per_cpu_second = 0;
};
GemmBenchResult bench_gemm_f32(int64_t m, int64_t n, int64_t k, int repetitions);

}  // namespace gemmar::reference
