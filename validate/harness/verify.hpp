// gemmar verify: another implementation's real tensors, dumped one safetensors file per rank (docs/verify.md), are
// checked against the emulated pipeline and turned into a RunRecord for the same judge as check and run:
//   - shapes, dtypes, layouts and metadata of the W files, with one clear error naming the file and tensor;
//   - with the partials: the collective re-emulated over them (reference::emulate_collective) must reproduce
//     every rank's output bit for bit (wrong_elements, per rank and per slice, the first mismatches listed); the
//     fp8 wire's gathered views are judged against the quantization recipes (mori's, then the named variants,
//     then mori's own tolerance), with or without partials;
//   - every element: NaN/inf, and the agreement of the views the collective makes equal (RANK_DISAGREEMENT);
//   - always: relL2 of every rank's view against the fp32 reference computed from the dumped operands themselves
//     (reference::reference_partial, decoded in the file's fp8 format, scales per the quant's layout), per rank
//     and per slice, judged against the floor the reference predicts for that wire;
//   - diagnoses beside the findings: the fp8 format mix-up, a rank whose own GEMM partial is off, the fp8 wire's
//     quantize and gather legs (when the wire tensors were dumped).
// Files are read through mmap and streamed in row chunks (the pages of a chunk are dropped once it is checked):
// the element checks cover every element; only the fp32-reference relL2 samples rows (--check-rows).
// Split by concern: verify_files.cpp (the files), output_check.cpp (the checks, shared with `gemmar run`),
// verify.cpp (the pipeline and the diagnoses), verify_report.cpp (text and JSON).
//
// `gemmar run --dump DIR` writes the same format (dump_write.hpp), so that a dump of gemmar's own run
// verifies with the verdict that run gave.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/harness/output_check.hpp"
#include "validate/record/run_record.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar {

struct VerifyOptions {
  // Rows of the fp32-reference relL2 (stratified over the slices); 0 = every row. The element checks (bit-exact
  // collective, NaN/inf, rank agreement, the fp8 wire's recipes) always cover every element the dump holds.
  int64_t check_rows = 256;
  uint64_t seed = 1234;  // the row sampling
  JudgeOptions judge;    // --profile, --floors-at-run-m; timing is never judged (a dump has no times)
  size_t mismatches_listed = 10;
};

using Mismatch = output_check::Mismatch;

struct VerifyResult {
  std::string source;              // the directory, or the first file
  std::vector<std::string> files;  // by rank
  RunRecord record;
  Verdict verdict;
  bool has_partials = false, has_wire = false, row_subset = false;
  bool has_scatter = false;   // the fp8 scatter's codes and scales were dumped
  std::vector<int64_t> rows;  // the global rows of the fp32-reference relL2
  int64_t element_rows = 0;   // rows the element checks covered (every row the dump holds)
  // Bit-exactness against the collective over the dumped partials (the fp8 wire's gathered views: against the
  // quantization recipes, mori's tolerance); also without partials on the fp8 wire (the owner's rows are the
  // reduce's, never quantized). Empty when no element comparison ran.
  std::vector<int64_t> wrong_by_rank, wrong_by_slice;
  std::vector<Mismatch> first_mismatches;
  std::string wire_recipe;          // the fp8 wire's recipe that matched (output_check::ElementChecks)
  std::string scatter_recipe;       // the fp8 scatter's (ElementChecks::scatter_recipe)
  int64_t scatter_wrong_codes = 0;  // dumped scatter codes and scales nothing explains (among the wrong elements)
  std::vector<int64_t> scatter_wrong_by_rank;
  std::vector<double> partial_rel_l2;  // each rank's dumped partial against its own fp32 reference partial
  // Elements where a rank disagrees with the others although the collective makes them equal (every view on a
  // bf16 wire; every view but the owner's on an fp8 wire), per rank and per slice; the first ones.
  std::vector<int64_t> disagreeing_by_rank, disagreeing_by_slice;
  std::vector<Mismatch> first_disagreements;  // `expected`: the majority's value
  int64_t nonfinite_elements = 0;             // NaN or inf, every element of every view
  std::optional<int64_t> wire_quantize_mismatches, wire_gather_mismatches;
  std::optional<double> output_to_reference_ratio;  // least-squares scale of the output against the reference
  std::vector<std::string> diagnoses;
  double seconds_read = 0, seconds_reference = 0, seconds_elements = 0, seconds_total = 0;
};

// The dumps named on the command line, grouped into runs: a file list is one run; a directory holding
// *.safetensors files is one run; a directory holding none but subdirectories that do is one run per
// subdirectory (what `gemmar run --dump DIR` writes for several configs). UsageError naming the path otherwise.
std::vector<std::vector<std::string>> dump_groups(const std::vector<std::string>& inputs);

// Reads one run's W files and checks them. UsageError (exit 2) naming the file and tensor for anything that is
// not a consistent dump of one run.
VerifyResult verify_dump(const std::vector<std::string>& files, const VerifyOptions&);

// {"runs": [...verdicts...], "summary": ..., "verify": [{per run: files, rows, wrong_by_rank, ...}]}
nlohmann::json verify_results_to_json(const std::vector<VerifyResult>&);
// The human text printed before the verdict table: one block per run.
std::string verify_text(const VerifyResult&);

}  // namespace gemmar
