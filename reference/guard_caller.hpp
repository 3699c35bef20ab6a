// THE CALLER GUARD on the CPU (docs/guard.md "The guard from what the caller holds"): the per-call check of
// gemm_ar from what a serving process holds (each rank's A and its scales, its weights B and its output view), with
// no partials. reference/guard_caller_inline.hpp has the judge's math, shared with the device library
// (kernels/check/caller_guard.cu); this file computes what the device computes, on the CPU: the weights' checksum
// and norms once, each rank's record of a call, the judge's cells and the findings. The partial-based checks of
// reference/guard.hpp stay where partials exist (gemmar's own pipeline, `gemmar run --guard`).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "common/config.hpp"
#include "reference/guard.hpp"
#include "reference/guard_caller_inline.hpp"
#include "reference/quant.hpp"

namespace gemmar::reference {

// The weights' checksum of one rank, taken once at weight load from B as the GEMM reads it (dequantized, [N, K]):
// per column block b, w[b * K + k] = sum over the block's columns n of B[n, k]; c_gemm[b] and c_part[b] turn
// ||A_row||_2 into bounds of the GEMM's fp32 error and of the partial's norm over the block:
//   c_gemm = gamma(n_g + 2) ||B_b||_F      (per element |error| <= gamma |A_row| . |B[n, :]|, Cauchy-Schwarz)
//   c_part = ||B_b||_2 + (u_fp32 + gamma(n_g + 2)) ||B_b||_F   (||partial_b|| <= ||B_b||_2 ||A_row|| + the error)
// both rounded up to fp32. ||B_b||_2 is the largest singular value (the Gram matrix's largest eigenvalue in double,
// with a 1e-6 relative margin for its own rounding).
struct CallerWeights {
  int64_t n = 0, k = 0;
  int nb = 0;
  std::vector<float> w;               // [nb][k]
  std::vector<float> c_gemm, c_part;  // [nb]
};
CallerWeights caller_weights(const std::vector<float>& b_deq, int64_t n, int64_t k, int64_t gemm_roundings);

// What the caller guard knows of the op: the shape (m: the padded rows the op runs), the wires, the sample.
struct CallerConfig {
  int world = 8;
  int64_t m = 0, n = 0, k = 0;
  int64_t stride = 32;  // one listed row per aligned stratum of `stride` rows (reference/guard_sample.hpp)
  bool fp8_gather = false, fp8_scatter = false;
  Fp8Format wire_format = Fp8Format::E4M3FN;
  // The fp8 gather's recipe, when known: the owner re-quantizes its listed rows as the wire does and every
  // non-owner must hold those bits. nullopt: the owner and the views are compared within the wire's bound.
  std::optional<WireRecipe> recipe = WireRecipe::Mori;
  int64_t gemm_roundings = 0;  // guard_gemm_roundings(quant, k)
  double alpha = 1e-9;         // the per-call false-alarm probability the thresholds are set for
};

struct CallerPlan {
  CallerConfig config;
  caller_guard::Layout layout;
  caller_guard::Consts consts;
  int64_t checks = 0;  // per-check tests per call (Bonferroni's count), and cells
  int64_t cells = 0;
};
CallerPlan caller_plan(const CallerConfig&);

// lambda with P(|X| >= lambda sigma) <= p for X 1-sub-Gaussian: sqrt(2 ln(2 / p)).
double caller_lambda(double p);
// The aggregate test's threshold: the least t > n with (t / n)^(n/2) exp(-(t - n) / 2) <= p.
double caller_agg_threshold(int64_t n, double p);

// The rows one call lists (ascending), from the group's seed and the call number.
std::vector<int64_t> caller_rows(const CallerPlan&, uint64_t seed, uint64_t call);

// One rank's record of one call (what the device's caller_sums writes): a_deq [L][K] its A's listed rows
// dequantized, out [L][N] its view's listed rows, both in caller_rows' order.
std::vector<float> caller_rank_record(const CallerPlan&, int rank, uint32_t call, const std::vector<float>& a_deq,
                                      const std::vector<uint16_t>& out, const CallerWeights&);

// Every (view, slice) cell of one call from the gathered records ([world][layout.floats]): index v * world + s.
std::vector<caller_guard::Cell> caller_judge(const CallerPlan&, const std::vector<float>& records);

// The findings of one call (empty: clean), at most one per code, each naming its cell, row and bound:
// GUARD_REDUCE  a view's block sums off the sum over the ranks of A . checksum(B), per check or in aggregate
// GUARD_GATHER  a view differs bitwise from the one it must equal (bf16: the owner's; fp8: the other non-owners')
// GUARD_WIRE    fp8 gather: the non-owners alike off the wire's re-quantization of the owner's rows (or beyond the
//               wire's bound), or a non-owner holding the owner's exact bf16 (the fp8 wire never engaged)
std::vector<GuardFinding> caller_findings(const CallerPlan&, const std::vector<caller_guard::Cell>&,
                                          const std::vector<int64_t>& rows);

}  // namespace gemmar::reference
