// One run of gemm_ar as the real benchmark reports it (its RESULT_JSON line), plus gemmar's own optional
// fields. This is the unit that `gemmar check` judges and `gemmar run`/`validate` produce.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.hpp"

namespace gemmar {

struct RunRecord {
  std::string source;  // "file:line" (or "run:N") for messages
  // Benchmark fields (SPEC 1.2). Absent optional fields stay nullopt; NaN is kept as NaN.
  Shape shape;
  Config config;
  std::optional<double> max_rank_time_us;
  std::vector<double> per_rank_time_us;
  std::optional<double> rel_l2;     // the benchmark's (minimum over ranks when validated)
  std::optional<bool> validated;
  std::string timing;               // e.g. "graph" / "eager"; informational
  // gemmar's optional fields.
  std::optional<int> pull_blocks;   // defaults to config.pull_blocks (64) when absent
  std::vector<double> per_rank_rel_l2;
  std::map<std::string, double> phases_us;
  std::optional<std::string> profile;
  // Per-slice relL2 (index = owning rank), when the producer knows it (gemmar run / validate).
  std::vector<double> per_slice_rel_l2;
  std::optional<std::string> backend;  // "cpu-emulation" | "gpu"
  nlohmann::json raw;                   // the whole input object, for the report
};

// Throws UsageError with `source` and the field name on a wrong type or a missing required field
// (mode, m, n, k, world_size). NaN / Infinity numbers are accepted.
RunRecord run_record_from_json(const nlohmann::json& j, const std::string& source);
// The benchmark's field names plus gemmar's; NaN written as NaN (like Python's json.dumps).
nlohmann::json run_record_to_json(const RunRecord&);

// Python-json.dumps compatible text: parse accepts the bare tokens NaN, Infinity and -Infinity outside
// strings (nlohmann rejects them); dump writes non-finite numbers back as those tokens (nlohmann would
// write null). Use dump_python_json when printing RESULT_JSON lines. parse throws nlohmann::json::exception:
// parse_error for bad syntax, out_of_range (406) for a number beyond a double (1e999); catch the base class.
nlohmann::json parse_python_json(const std::string& text);
std::string dump_python_json(const nlohmann::json&);

}  // namespace gemmar
