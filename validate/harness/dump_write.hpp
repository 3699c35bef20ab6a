// `gemmar run --dump DIR` and the tests: tensors written in `gemmar verify`'s dump format, one safetensors file
// per rank (docs/verify.md); verify_files.hpp reads them.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "reference/formats.hpp"
#include "validate/harness/run_driver.hpp"

namespace gemmar {

// The value of the "format" metadata key; "version" is kDumpVersion.
inline constexpr const char* kDumpFormat = "gemmar-dump";
inline constexpr const char* kDumpVersion = "1";

// What one rank's file holds. Row-subset dumps (`rows` non-empty) hold A, its scales, the output and the partial
// for those global rows only; B is always whole.
struct RankDump {
  int rank = 0;
  Shape shape;
  Config config;
  Fp8Format fp8_format = Fp8Format::E4M3FN;
  std::vector<int64_t> rows;                      // empty: every row 0..M-1
  const std::vector<uint8_t>* a_codes = nullptr;  // [R, K]
  const std::vector<float>* a_scales = nullptr;   // the quant's A layout over the R rows (quant.hpp)
  const std::vector<uint8_t>* b_codes = nullptr;  // [N, K]
  const std::vector<float>* b_scales = nullptr;
  const std::vector<uint16_t>* out = nullptr;         // [R, N] bf16 bits
  const std::vector<uint16_t>* partial = nullptr;     // [R, N] bf16 bits, optional
  std::map<std::string, std::string> extra_metadata;  // seed, inject, device, profile, producer, pull_blocks
};
void write_rank_dump(const std::string& path, const RankDump&);

// `gemmar run --dump`: writes DIR/rank<r>.safetensors for every rank from what the backend returned (its rows:
// every row with --check-rows 0, else the sampled rows, as a row-subset dump), the operands regenerated for
// those rows (the same pure functions the run used), and the backend's partials rounded to bf16.
void dump_backend_result(const std::string& dir, const RunRequest&, const BackendResult&);

}  // namespace gemmar
