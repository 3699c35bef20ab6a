// The checks of an op's output tensors, written once for `gemmar run` (run_driver.cpp run_and_check) and
// `gemmar verify` (verify.cpp):
//   - the rows of the fp32-reference relL2 (sampled, stratified over the slices) and relL2 over the views;
//   - element by element, streamed over row chunks (every element of every rank by default): the comparison
//     against the collective re-emulated over the run's partials, the NaN/inf scan, the agreement of the views
//     the collective makes equal, and on the fp8 wire the gathered views judged against the quantization
//     recipes (reference/quant.hpp WireRecipe) with mori's own tolerance
//     (ROCm/mori tests/python/cco/gemm_ar_wire_reference.py: codes equal or adjacent at a rounding midpoint,
//     the scale within 1e-6 relative);
//   - worst relL2, NaN and `validated` into the record, as the benchmark decides them.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/run_request.hpp"
#include "reference/emulation.hpp"
#include "reference/quant.hpp"
#include "validate/record/run_record.hpp"

namespace gemmar::output_check {

// The rows of the fp32-reference relL2: `check_rows` stratified over the slices (at least one per rank), or
// every real row when check_rows is 0.
std::vector<int64_t> rows_to_check(const Shape&, Quant, int64_t check_rows, uint64_t seed);
// The same under the run's row plan (relaxed rows, the wo_b schedule): what a run checks.
std::vector<int64_t> rows_to_check(const Shape&, const Config&, int64_t check_rows, uint64_t seed);

// relL2 of every rank's view of `rows` (outputs [rank][rows x N]). With a collective: against the one fp32
// reference (`ref`); gemm-only: each rank against its own fp32 partial (`rank_refs`).
struct ViewRelL2 {
  std::vector<double> per_rank, per_slice;
  double all_views = 0, all_views_stderr = 0;
};
ViewRelL2 rel_l2_of_views(const Shape&, const Config& effective, const std::vector<int64_t>& rows,
                          const reference::Bf16Outputs& outputs, const std::vector<float>& ref,
                          const std::vector<std::vector<float>>& rank_refs);

// The same from every view's per-row errors, computed block by block (gemmar verify streams its rows);
// gemm-only: each rank's relL2 against its own fp32 partial, as given.
ViewRelL2 rel_l2_of_row_errors(const Shape&, const Config& effective, const std::vector<int64_t>& rows,
                               const std::vector<reference::RowErrors>& views,
                               const std::vector<double>& gemm_only_per_rank);

// per_rank/per_slice/all-views relL2 into the record, and the benchmark's rel_l2 (the worst rank; NaN when any
// rank's is, or when `nonfinite` elements were found anywhere: the benchmark's relL2 over the whole output
// would be NaN) and validated (every rank inside the benchmark's acceptance window).
void record_numerics(RunRecord&, const ViewRelL2&, const Config& effective, int64_t nonfinite);

struct Mismatch {
  int rank = 0;
  int64_t row = 0, col = 0;
  uint16_t got = 0, expected = 0;  // bf16 bits
};

// One chunk of consecutive checked rows: every rank's view, and when the run's partials are known every rank's
// bf16 partial of the same rows. The collective's result follows from them row by row: the reduce is
// numerics::reduce_sum in peer order (owner + j) % W, stored bf16 (what reference::emulate_collective computes
// with no fault injected: every mode reduces so), its fp32 accumulator feeding fuse_quantize's amax; gemm-only's
// output is the rank's own partial. On the fp8 scatter the reduce sums every rank's codes widened by their scales
// (numerics::reduce_sum_f32): the codes the chunk carries when dumped (what arrived), else the recipes
// (reference::ScatterRecipe, mori's first) applied to the partials, the one that reproduces the owner's row named.
struct Chunk {
  const std::vector<int64_t>* rows = nullptr;  // global rows of the chunk
  std::vector<const uint16_t*> views;          // per rank, [rows x N]
  std::vector<const uint16_t*> partials;       // per rank, [rows x N]; empty when unknown
  // fp8 scatter, when the run dumped what each rank's scatter leg carried (its whole narrowed partial, its own slice
  // included: mori's input region): per rank, codes [rows x N] and scales [rows x N/256]; empty when unknown.
  std::vector<const uint8_t*> scatter_codes;
  std::vector<const float*> scatter_scales;
};

// Accumulates the element checks over chunks.
class ElementChecks {
 public:
  // wire_leg: judge the fp8 wire's gathered views against the recipes (verify, where another implementation's
  // partials may be absent); `run` compares them bit for bit against the emulation itself and passes false.
  ElementChecks(const Shape&, const Config& effective, Fp8Format wire_format, size_t listed = 10, bool wire_leg = true);
  void add(const Chunk&);
  // Into the record: checked/wrong/nonfinite/disagreeing elements (the scatter's unexplained codes among the wrong
  // ones), wire_recipe.
  void record(RunRecord&) const;
  // The fp8 scatter's recipe, as wire_recipe() names the gather's: the one that reproduced the dumped codes (or the
  // owner's reduced rows, from the partials), "within mori's tolerance: ...", "mixed: ..."; empty when the scatter is
  // bf16 or nothing was compared.
  std::string scatter_recipe() const;
  // The recipe that reproduced the gathered views: the expected one ("mori (...)"), else the recipes that
  // reproduce every other row ("true-division scale (...) = x / scale codes (...)", joined where identical),
  // "within mori's tolerance: ..." or "mixed: ..."; empty off the fp8 wire or when nothing was compared.
  std::string wire_recipe() const;

  int64_t checked = 0, wrong = 0, nonfinite = 0, disagreeing = 0;
  std::vector<int64_t> wrong_by_rank, wrong_by_slice, disagreeing_by_rank, disagreeing_by_slice;
  std::vector<Mismatch> first_mismatches, first_disagreements;
  // fp8 wire, per row of gathered views: rows_first where the expected recipe (mori's; the fp32-accumulator amax
  // under fuse_quantize when the partials are known) reproduces them exactly; rows_other where it does not but
  // another recipe does (rows_by_recipe counts each recipe's exact rows: the expected one's on rows_first, the
  // others' on rows_other); rows accepted within mori's tolerance, and the elements there that differ from every
  // recipe (midpoint flips, scale within 1e-6).
  std::array<int64_t, 4> rows_by_recipe{};
  int64_t rows_first = 0, rows_other = 0, rows_within_tolerance = 0, tolerance_elements = 0;
  // fuse_quantize without partials: rows explained by one fp32-accumulator amax within half a bf16 ulp of the
  // row's (the accumulator is unknown), and their gathered elements that differ from the bf16-amax recipe.
  int64_t rows_acc_window = 0, acc_window_elements = 0;
  int64_t wrong_wire_rows = 0;  // rows whose gathered views hold elements nothing explains (wrong)
  bool compared = false;        // an element check ran (the bit-exact comparison or the wire leg)
  // fp8 scatter, per (rank, row) of the scatter leg: the recipe that reproduces it exactly (from the dumped codes
  // and the partials), else within mori's tolerance (tests/python/cco/gemm_ar_wire_reference.py check_wire: codes
  // adjacent to x / scale's at a rounding midpoint, each 256-column scale within 1e-6 relative), else its codes
  // nothing explains are wrong elements (scatter_wrong_codes, counted in `wrong` too). Without the dumped codes, per
  // owned row: the recipe whose reduce reproduces the owner's row (scatter_rows_unexplained: none did, mori's is
  // then the expected one).
  std::array<int64_t, 3> scatter_by_recipe{};
  int64_t scatter_within_tolerance = 0, scatter_tolerance_codes = 0, scatter_wrong_codes = 0,
          scatter_rows_unexplained = 0;
  std::vector<int64_t> scatter_wrong_by_rank;
  bool scatter_from_codes = false;  // the reduce was rebuilt from the dumped codes

 private:
  void reduce_row(const Chunk&, size_t i, int owner);
  void scatter_reduce_row(const Chunk&, size_t i, int owner);
  void scatter_codes_row(const Chunk&, size_t i);
  void widened_sum(int owner);
  void compare_rows(const Chunk&, size_t i, int owner);
  void wire_row(const Chunk&, size_t i, int owner);
  void agreement_row(const Chunk&, size_t i, int owner);
  void wrong_at(int rank, int64_t row, int64_t col, uint16_t got, uint16_t want);
  int slice_of(int64_t row) const;
  reference::WireRecipe first_recipe() const;
  Shape shape_;
  Config cfg_;
  Fp8Format wire_format_;
  size_t listed_;
  bool collective_, fp8_wire_, fp8_scatter_;
  bool has_acc_ = false;      // the reduce's accumulator rows were given (partials known)
  bool row_reduced_ = false;  // the current row's reduce is known (from the partials or the dumped scatter codes)
  int64_t S_;
  std::vector<uint8_t> codes_;
  std::vector<uint16_t> deq_, reduced_;  // reduced_: the current row's reduce output (partials known)
  std::vector<float> acc_;               // its fp32 accumulator
  std::vector<float> wide_;              // fp8 scatter: every rank's contribution widened, [W x N]
  std::vector<uint8_t> scodes_;          // fp8 scatter: one rank's codes by a recipe
  std::vector<float> sscales_;           // and their scales
  bool wire_leg_;
};

// The per-iteration bit-exact check of `gemmar run` / `gemmar validate` (every checked iteration on its own
// inputs, reference::iteration_input_scale): each iteration's read-back rows against what the collective gives
// over the backend's partials (expected[it % 2]: the two parities' inputs), wrong elements that hold the other
// parity's bits counted as stale, repeats of the same inputs that differ as nondeterministic; and, where the
// backend ran it (GPU), its device-side full compare of every element of every rank (`full`, one per checked
// iteration), which supersedes the sampled count of its iteration (the sampled rows are among its elements).
struct IterationInputs {
  const std::vector<int64_t>* rows = nullptr;
  int64_t n = 0;
  int world = 0;
  const std::vector<int>* iteration_index = nullptr;
  const std::vector<std::vector<std::vector<uint16_t>>>* iteration_outputs = nullptr;
  const reference::Bf16Outputs* expected[2] = {nullptr, nullptr};  // null: no partials (no bit-exact check)
  const std::vector<FullCompare>* full = nullptr;
};
struct IterationChecks {
  int64_t wrong = -1;  // -1: not checked
  std::vector<int64_t> wrong_per_iteration;
  int64_t stale_elements = 0;
  std::vector<NondeterministicIteration> nondeterministic;
  std::string first_wrong;  // "rank r, row i, col c, iteration k"; empty when none
  int64_t full_elements = 0, full_nonfinite = 0, full_bytes = 0;
  double full_us = 0;  // median kernel time over the iterations
};
IterationChecks check_iterations(const IterationInputs&);
// wrong_elements (+ per iteration, stale, first), nondeterministic iterations, and the full compare's coverage
// (checked_elements, nonfinite_elements: the larger of the sampled and the full count) into the record.
void record_iterations(RunRecord&, const IterationChecks&);

}  // namespace gemmar::output_check
