// The verdict engine (issue 4): judge every run against the reference floors and the timing model.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/record/run_record.hpp"

namespace gemmar {

enum class Severity { Warning, Error };

struct Finding {
  std::string code;  // SILENT_TRANSFER, NUMERICS_ABOVE_FLOOR, WIRE_NOT_USED, RANK_DIVERGENCE, NOT_VALIDATED,
                     // FASTER_THAN_PHYSICS, SLOWER_THAN_MODEL, GRID_OFF_OPTIMUM, QUANT_MISMATCH, REGRESSION,
                     // INVALID_RECORD, ...
  Severity severity = Severity::Error;
  std::string message;  // one sentence a kernel engineer can act on
};

struct Verdict {
  std::string source;
  bool pass = true;
  std::vector<Finding> findings;
  RunRecord record;
  nlohmann::json context;  // floors, model prediction, band used: what the verdict was judged against
};

struct JudgeOptions {
  std::optional<std::string> profile;           // overrides the record's; default mi355x
  std::optional<int> pull_blocks;               // for records that carry no pull_blocks (else 64)
  std::vector<RunRecord> baseline;              // --baseline runs, matched by config and shape
  bool judge_timing = true;                     // false for CPU-emulation runs: times are not GPU times
  bool floors_at_run_m = false;                 // derive floors at the run's own M, not kFloorCanonicalM
};

Verdict judge(const RunRecord&, const JudgeOptions&);
std::vector<Verdict> judge_all(const std::vector<RunRecord>&, const JudgeOptions&);

nlohmann::json to_json(const std::vector<Verdict>&);  // {"runs": [...]} as SPEC section 4
std::string verdict_table(const std::vector<Verdict>&);  // the human table

// A record that could not be read (bad JSON, missing or wrong-typed field): a failing verdict with one
// INVALID_RECORD finding carrying `message`; `raw` is kept when the line parsed as JSON.
Verdict invalid_record_verdict(const std::string& source, const std::string& message,
                               const nlohmann::json& raw = nullptr);

std::string to_string(Severity);  // "error" | "warning"

// The thresholds the rules use (docs/check.md explains each); exposed so tests and reports quote the same.
namespace verdict_rules {
inline constexpr double kBf16AcceptMax = 3e-3;     // the benchmark's own bf16 bound (outer guard)
inline constexpr double kFp8AcceptMin = 5e-3;      // the benchmark's fp8 bounds (outer guard)
inline constexpr double kFp8AcceptMax = 4e-2;
inline constexpr double kFloorMargin = 0.20;       // relative allowance above/below the derived floor
inline constexpr double kFloorSigmas = 4.0;        // floor stderr multiples, when larger than the margin
inline constexpr double kSilentMinRelL2 = 0.25;    // ten times the fp8 floor: order-one error
inline constexpr double kSilentPatternTol = 0.10;  // |rel_l2 - sqrt(j/W)| within 10% for j missing slices
inline constexpr double kNotThisRunMargin = 0.05;  // every slice off and rel_l2 > 1 + this: not this run's data
inline constexpr double kSliceOffRelL2 = 0.4;      // a slice with this error never arrived (W=2 silent gather: 0.5)
inline constexpr double kRankSpreadRel = 0.10;     // per-rank relL2 spread, relative to the floor
inline constexpr double kRankTimeSpreads = 3.0;    // per-rank time: this many run-to-run spreads
inline constexpr int64_t kFloorCanonicalM = 16384;  // floors are per-row statistics: derived once at this M
}  // namespace verdict_rules

}  // namespace gemmar
