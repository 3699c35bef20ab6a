// Reads benchmark output (any log) line by line: `RESULT_JSON {...}` lines and bare JSON-object lines become
// run records, everything else is ignored. Streams with a per-line cap, so memory stays bounded by the cap
// (plus the records kept) however large the log is.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/record/run_record.hpp"

namespace gemmar {

struct LogEntry {
  std::string source;               // "file:line" ("stdin:line" for '-')
  std::optional<RunRecord> record;  // set when the line is a valid run record
  std::string error;                // otherwise: why it is not (one sentence naming the field)
  nlohmann::json raw;               // the parsed object when the line was valid JSON
};

struct LogReadOptions {
  size_t max_line_bytes = size_t(1) << 20;  // longer lines are not buffered: INVALID_RECORD if a candidate
};

struct LogReadStats {
  int64_t lines = 0;
  int64_t records = 0;  // valid
  int64_t invalid = 0;
  int64_t bytes = 0;
};

// Calls `sink` once per candidate line, in order. `name` is what sources are prefixed with.
LogReadStats read_log(std::istream& in, const std::string& name, const std::function<void(LogEntry&&)>& sink,
                      const LogReadOptions& = {});
// "-" reads stdin. UsageError (exit 2) naming the path when it cannot be opened or read.
LogReadStats read_log_file(const std::string& path, const std::function<void(LogEntry&&)>& sink,
                           const LogReadOptions& = {});
std::vector<LogEntry> read_log_entries(const std::string& path, const LogReadOptions& = {});

// One line: nullopt when it is not a candidate (noise); else the entry. Exposed for tests and fuzzing.
std::optional<LogEntry> parse_log_line(const std::string& line, const std::string& source);

}  // namespace gemmar
