// gemmar verify: another implementation's real tensors, dumped one safetensors file per rank (docs/verify.md), are
// checked against the emulated pipeline and turned into a RunRecord for the same judge as check and run:
//   - shapes, dtypes, layouts and metadata of the W files, with one clear error naming the file and tensor;
//   - with the partials: the collective re-emulated over them (reference::emulate_collective) must reproduce
//     every rank's output bit for bit (wrong_elements, per rank and per slice, the first mismatches listed);
//   - always: relL2 of every rank's view against the fp32 reference computed from the dumped operands themselves
//     (reference::reference_partial, decoded in the file's fp8 format, scales per the quant's layout), per rank
//     and per slice, judged against the floor the reference predicts for that wire;
//   - diagnoses beside the findings: the fp8 format mix-up, ranks whose outputs disagree where the collective
//     makes them equal, a rank whose own GEMM partial is off, the fp8 wire's quantize and gather legs.
// Rows are sampled and read through mmap (only their pages are touched), as `gemmar run --check-rows` does.
//
// `gemmar run --dump DIR` writes the same format (dump_backend_result), so that a dump of gemmar's own run
// verifies with the verdict that run gave.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/harness/run_driver.hpp"
#include "validate/record/run_record.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar {

// The value of the "format" metadata key; "version" is kDumpVersion.
inline constexpr const char* kDumpFormat = "gemmar-dump";
inline constexpr const char* kDumpVersion = "1";

struct VerifyOptions {
  int64_t check_rows = 256;  // sampled rows (stratified over the slices); 0 = every row. A row-subset dump: its rows
  uint64_t seed = 1234;      // the row sampling
  JudgeOptions judge;        // --profile, --floors-at-run-m; timing is never judged (a dump has no times)
  size_t mismatches_listed = 10;
};

struct Mismatch {
  int rank = 0;
  int64_t row = 0, col = 0;
  uint16_t got = 0, expected = 0;  // bf16 bits
};

struct VerifyResult {
  std::string source;               // the directory, or the first file
  std::vector<std::string> files;   // by rank
  RunRecord record;
  Verdict verdict;
  bool has_partials = false, has_wire = false, row_subset = false;
  std::vector<int64_t> rows;        // the global rows checked
  // Bit-exactness against the collective over the dumped partials (empty without partials).
  std::vector<int64_t> wrong_by_rank, wrong_by_slice;
  std::vector<Mismatch> first_mismatches;
  std::vector<double> partial_rel_l2;  // each rank's dumped partial against its own fp32 reference partial
  // Elements where a rank disagrees with the others although the collective makes them equal (every view on a
  // bf16 wire; every view but the owner's on an fp8 wire), per rank.
  std::vector<int64_t> disagreeing_by_rank;
  std::optional<int64_t> wire_quantize_mismatches, wire_gather_mismatches;
  std::optional<double> output_to_reference_ratio;  // least-squares scale of the output against the reference
  std::vector<std::string> diagnoses;
  double seconds_read = 0, seconds_reference = 0, seconds_total = 0;
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

// ---- Writing dumps --------------------------------------------------------------------------------------

// What one rank's file holds. Row-subset dumps (`rows` non-empty) hold A, its scales, the output and the partial
// for those global rows only; B is always whole.
struct RankDump {
  int rank = 0;
  Shape shape;
  Config config;
  Fp8Format fp8_format = Fp8Format::E4M3FN;
  std::vector<int64_t> rows;                   // empty: every row 0..M-1
  const std::vector<uint8_t>* a_codes = nullptr;  // [R, K]
  const std::vector<float>* a_scales = nullptr;   // the quant's A layout over the R rows (quant.hpp)
  const std::vector<uint8_t>* b_codes = nullptr;  // [N, K]
  const std::vector<float>* b_scales = nullptr;
  const std::vector<uint16_t>* out = nullptr;     // [R, N] bf16 bits
  const std::vector<uint16_t>* partial = nullptr; // [R, N] bf16 bits, optional
  std::map<std::string, std::string> extra_metadata;  // seed, inject, device, profile, producer, pull_blocks
};
void write_rank_dump(const std::string& path, const RankDump&);

// `gemmar run --dump`: writes DIR/rank<r>.safetensors for every rank from what the backend returned (its rows:
// every row with --check-rows 0, else the sampled rows, as a row-subset dump), the operands regenerated for
// those rows (the same pure functions the run used), and the backend's partials rounded to bf16.
void dump_backend_result(const std::string& dir, const RunRequest&, const BackendResult&);

}  // namespace gemmar
