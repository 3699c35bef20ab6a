// gemmar report's inputs, normalised in C++: every results file (benchmark / `gemmar run` logs with
// RESULT_JSON lines, `gemmar check --json`, `gemmar validate`'s results.json, `gemmar model [sweep] --json`)
// is read here with the record layer's readers and turned into ONE document that reports/gemmar_report
// only draws (docs/report.md, "The report document"). Records that cannot be read are skipped and listed
// with file:line and why; runs are aggregated per config and shape (count, median, min-max, findings).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gemmar::report {

inline constexpr const char* kDocumentFormat = "gemmar-report/1";

struct ReadOptions {
  size_t max_line_bytes = size_t(1) << 20;  // longer log lines are skipped records, never buffered whole
  std::vector<std::string> display_names;   // per file, what the page calls it (default: the path given)
  // --trace [RUN=]FILE: kernel traces (rocprofv3 CSV, Chrome trace) whose kernels become their run's timeline;
  // RUN is a run's source or 1-based index, else the one run whose config runs the trace's phases.
  std::vector<std::string> traces;
};

// Reads every file in order. Throws UsageError (exit 2) naming the file when one cannot be read at all:
// absent or unreadable, empty, a JSON document of no known kind, a log with no RESULT_JSON line and no
// JSON object, or when all inputs together hold no run, model or sweep (the first skipped record's reason
// is quoted), or when a --trace cannot be read or matches no single run. A bad record inside a readable file is
// skipped and listed in the document's "skipped".
nlohmann::json build_report_document(const std::vector<std::string>& files, const ReadOptions& = {});

}  // namespace gemmar::report
