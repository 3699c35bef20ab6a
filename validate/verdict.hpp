// The verdict engine (issue 4): judge every run against the reference floors and the timing model.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/run_record.hpp"

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
  std::optional<int> pull_blocks;               // overrides the record's
  std::vector<RunRecord> baseline;              // --baseline runs, matched by config and shape
  bool judge_timing = true;                     // false for CPU-emulation runs: times are not GPU times
};

Verdict judge(const RunRecord&, const JudgeOptions&);
std::vector<Verdict> judge_all(const std::vector<RunRecord>&, const JudgeOptions&);

nlohmann::json to_json(const std::vector<Verdict>&);  // {"runs": [...]} as SPEC section 4
std::string verdict_table(const std::vector<Verdict>&);  // the human table

}  // namespace gemmar
