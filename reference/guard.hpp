// THE GUARD (docs/guard.md): a per-call check of gemm_ar cheap enough for production, by linear invariants.
//
// Every rank r reduces its own bf16 partial and its output, per slice s (the rows rank s owns), to fp32 column
// sums (and abs sums, for the bound), and reduces its partial per row and block of kGuardColumnBlock columns to
// row sums. The W ranks exchange these vectors (W x N floats per array per rank) and every rank can judge:
//  reduce  (GUARD_REDUCE): the owner's output column sums of its slice equal the sum over ranks of that slice's
//          partial column sums, within a bound derived from the rounding model (guard_reduce_bound);
//  gather  (GUARD_GATHER): every non-owner's view of a slice equals the owner's bitwise (bf16 wire: copies of
//          the same bits, summed in the same order), or, on the fp8 wire, the sums of the wire's dequantized
//          slice (every non-owner holds the same bf16(code * scale)), bitwise;
//  wire    (GUARD_WIRE): on the fp8 wire the wire's sums lie within the e4m3 rounding bound of the owner's
//          exact sums, and no non-owner holds the owner's exact sums where the wire would have changed them
//          (an fp8-wire run whose gather moved bf16);
//  gemm    (GUARD_GEMM): each partial row block's sum equals A_row . bsum (bsum[k] = sum over the block's
//          columns of B_deq[n, k], taken once from the weights as loaded, Huang-Abraham ABFT) within the
//          GEMM's rounding bound: a partial computed from other operands than the weights (a wrong scale).
// Row sums of every output localise a failing slice to rows. The same functions judge the CPU emulation's sums
// (guard_rank_sums) and the sums the device computed (kernels/check/guard.cu), so one rounding model serves both.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "reference/operands.hpp"

namespace gemmar::reference {

// Columns per row block of the partial's row sums (the GEMM check's granularity).
constexpr int64_t kGuardColumnBlock = 1024;
int64_t guard_column_blocks(int64_t n);

// The weights' checksum, computed once when the weights are loaded: per column block b and k,
// bsum[b * K + k] = sum over the block's columns n of B_deq[n, k], babs the same over |B_deq|.
struct GuardWeights {
  int64_t k = 0, blocks = 0;
  std::vector<float> bsum, babs;
};
GuardWeights guard_weights(const std::vector<float>& b_deq, int64_t n, int64_t k);

// One rank's checksums of one call: what travels between the ranks. Index conventions: [slice * N + col] for
// column sums over the rows of that slice; [i * blocks + b] and [i] for the i-th row of `rows` (GuardContext).
struct GuardSums {
  std::vector<float> partial_col, partial_col_abs;  // this rank's bf16 partial, per slice
  std::vector<float> out_col, out_col_abs;          // this rank's output, per slice
  std::vector<float> partial_blk, partial_blk_abs;  // this rank's partial per row and column block
  std::vector<float> out_row, out_row_abs;          // this rank's output per row (localisation)
  std::vector<float> gemm_pred, gemm_pred_abs;      // A_row . bsum_b and |A_row| . babs_b (empty: no GEMM check)
  // fp8 wire only, the owner's own slice: column sums of bf16(code * scale) as the wire carries it, and the sum
  // of its row scales (the bound's subnormal term).
  std::vector<float> wire_col;
  float wire_scale_sum = 0;
};

// One call as the device guard read it: the rows it sampled (ascending) and every rank's sums over them.
struct GuardCall {
  std::vector<int64_t> rows;
  std::vector<GuardSums> sums;  // index = rank
};

struct GuardContext {
  Shape shape;
  Config config;  // effective config
  Fp8Format wire_format = Fp8Format::E4M3FN;
  std::vector<int64_t> rows;  // the global padded rows the sums run over, ascending
  // Roundings on the way from the operands to one fp32 partial element (guard_gemm_roundings).
  int64_t gemm_roundings = 0;
};
// K products (each exact or one rounding of A_deq*B_deq), K additions, three roundings per scale block.
int64_t guard_gemm_roundings(Quant, int64_t k);
GuardContext guard_context(const Shape&, const Config&, const std::vector<int64_t>& rows);

// The rows one call reads (reference/guard_sample.hpp): one of every `stride` consecutive rows, drawn from
// (seed, call). `candidates` are the rows that exist to be read, ascending (the device: every padded row; the
// CPU emulation: the rows it holds); each stratum of `stride` rows that holds candidates gives one. Returns
// positions into `candidates`, ascending. stride 1: every candidate.
std::vector<size_t> guard_sample_positions(const std::vector<int64_t>& candidates, int64_t stride, uint64_t seed,
                                           uint64_t call);
// The sample's seed of a run: from its --seed, so a run (and its findings) reproduces; a serving process draws
// its own (python/gemmar_guard.py).
uint64_t guard_sample_seed(uint64_t run_seed);

// The CPU side (the emulation's, or a test's): rank `rank`'s sums over `rows`. `partial` and `output` are its
// bf16 rows [rows.size(), N]. `a_deq` (its A rows dequantized, [rows.size(), K]) and `weights` feed the GEMM
// check (a_deq empty: none). On the fp8 wire the owner quantizes its own output rows as the wire does.
GuardSums guard_rank_sums(const GuardContext&, int rank, const std::vector<uint16_t>& partial,
                          const std::vector<uint16_t>& output, const std::vector<float>& a_deq,
                          const GuardWeights* weights);

struct GuardFinding {
  std::string code;     // GUARD_REDUCE | GUARD_GATHER | GUARD_WIRE | GUARD_GEMM
  std::string message;  // names the slice, ranks, worst column or row, the excess over the bound
};
// Judges one call from every rank's sums (index = rank). Empty: the call is clean. At most one finding per code.
std::vector<GuardFinding> guard_check(const GuardContext&, const std::vector<GuardSums>&);

// The bounds, exposed for tests and docs/guard.md. u_bf16 = 2^-8, u_fp32 = 2^-24, gamma(n) = n u / (1 - n u).
double guard_gamma(int64_t n, double u);
// |sum of the owner's output - sum over ranks of the partials| over `terms` elements (rows of a column, or
// columns of a row): abs_out = the output's abs sum, abs_partials = the partials' abs sums over every rank.
double guard_reduce_bound(double abs_out, double abs_partials, int64_t terms, int world);
// |wire sums - owner's exact sums| over `terms` rows: abs_out the owner's abs sum, scale_sum the sum of the
// row scales.
double guard_wire_bound(double abs_out, double scale_sum, int64_t terms, Fp8Format);
// |partial block sum - prediction| of one row block of `terms` columns.
double guard_gemm_bound(double abs_partial, double abs_pred, int64_t terms, int64_t k, int64_t gemm_roundings);

}  // namespace gemmar::reference
