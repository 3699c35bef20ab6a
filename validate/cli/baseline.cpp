#include "validate/cli/baseline.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/errors.hpp"

namespace gemmar::cli {

namespace {

// A whole-file JSON document with a "runs" array of {"record": {...}}: gemmar's results.json. Returns false
// when the file is not one (then it is read as a log).
bool read_results_json(const std::string& path, const LogReadOptions& ro, std::vector<RunRecord>& out,
                       int64_t& skipped) {
  std::ifstream in(path, std::ios::binary);
  GEMMAR_USAGE_CHECK(in.good(), "--baseline ", path, ": cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("runs") || !doc["runs"].is_array()) return false;
  for (size_t i = 0; i < doc["runs"].size(); ++i) {
    const nlohmann::json& run = doc["runs"][i];
    if (!run.is_object() || !run.contains("record") || !run["record"].is_object()) {
      ++skipped;
      continue;
    }
    try {
      out.push_back(run_record_from_json(run["record"], path + ":runs[" + std::to_string(i) + "]", ro.defaults));
    } catch (const Error&) {
      ++skipped;
    }
  }
  return true;
}

}  // namespace

std::vector<RunRecord> read_baseline_runs(const std::vector<std::string>& paths, const LogReadOptions& ro,
                                          const std::string& command) {
  std::vector<RunRecord> runs;
  for (const auto& path : paths) {
    int64_t skipped = 0;
    GEMMAR_USAGE_CHECK(path == "-" || !std::filesystem::is_directory(path), "--baseline ", path,
                       ": is a directory (name its results.json or runs.log)");
    if (path == "-" || !read_results_json(path, ro, runs, skipped)) {
      read_log_file(
          path,
          [&](LogEntry&& e) {
            if (e.record)
              runs.push_back(std::move(*e.record));
            else
              ++skipped;
          },
          ro);
    }
    if (skipped) std::cerr << command << ": --baseline " << path << ": skipped " << skipped << " invalid record(s)\n";
  }
  GEMMAR_USAGE_CHECK(!runs.empty(), "--baseline: no valid runs in the baseline file(s)");
  return runs;
}

}  // namespace gemmar::cli
