// --baseline FILE for check, run and validate: the runs a new run is compared with (REGRESSION, QUANT_MISMATCH).
// A FILE is a benchmark log or a gemmar RESULT_JSON log (runs.log), or a gemmar results.json (`gemmar validate
// --out DIR` / `check --json`: {"runs": [{"record": {...}}, ...]}), so a previous validate's output is a baseline.
#pragma once
#include <string>
#include <vector>

#include "validate/record/log_reader.hpp"

namespace gemmar::cli {

// Every valid run of the files. Invalid entries are skipped and counted on stderr (prefixed by `command`);
// UsageError naming --baseline when a file is unreadable or holds no valid run.
std::vector<RunRecord> read_baseline_runs(const std::vector<std::string>& paths, const LogReadOptions&,
                                          const std::string& command);

}  // namespace gemmar::cli
