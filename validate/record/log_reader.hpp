// Reads benchmark output (any log) line by line: `RESULT_JSON {...}` lines, bare JSON-object lines and the
// benchmark's human summary line (`[gemm_ar] mode=... validated=...`) become run records; lines that show the
// benchmark itself failed (a Python traceback, torchrun's ChildFailedError, a rank's non-zero exit code, the
// stale-queue hsaKmtCreateQueueExt failure) are collected as failures; everything else is ignored. ANSI colour
// escapes are stripped and torchrun's `[rankN]:` prefixes are read, so W ranks printing the same line are one
// run. Streams with a per-line cap, so memory stays bounded by the cap (plus the records kept) however large
// the log is.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/record/log_findings.hpp"
#include "validate/record/run_record.hpp"

namespace gemmar {

struct LogEntry {
  std::string source;               // "file:line" ("stdin:line" for '-')
  std::optional<RunRecord> record;  // set when the line is a valid run record
  std::string error;                // otherwise: why it is not (one sentence naming the field)
  nlohmann::json raw;               // the parsed object when the line was valid JSON
  // "result_json" | "bare" | "human" (the `[gemm_ar] mode=...` line) | "json_block" (a multi-line object or
  // an array element, e.g. --json-out) | "other" (a RESULT_JSON object that is no run: the op worker's
  // `{"case": ...}` records; neither record nor error, judged by their own fields)
  std::string kind;
  std::optional<int> rank;  // the torchrun prefix's rank ([rank3]: / [default3]:), when present
  // `[rank R] (GEMM )VALIDATION FAILED` lines printed since the previous record: they belong to this one
  // (bench_gemm_ar.py prints them before rank 0's RESULT_JSON). Also in record->raw["rank_validation_failures"].
  std::vector<RankValidationFailure> rank_failures;
};

// A line showing that the benchmark run itself failed, whatever its RESULT_JSON lines say.
struct LogFailure {
  std::string source;            // "file:line"
  std::string kind;              // "traceback" | "child_failed" | "exit_code" | "stale_queue" | "signal"
  std::string what;              // one sentence: what it means and what to do
  std::string line;              // the line itself (colour-stripped, at most 200 bytes)
  std::optional<int> exit_code;  // kind exit_code: the code, and the rank torchrun names, when it does
  std::optional<int> exit_rank;
  std::string exception;  // kind traceback / child_failed: the exception line that ends the traceback
};

struct LogReadOptions {
  size_t max_line_bytes = size_t(1) << 20;  // longer lines are not buffered: INVALID_RECORD if a candidate
  RecordDefaults defaults;                  // world_size for records without one (--world)
};

struct LogReadStats {
  int64_t lines = 0;
  int64_t records = 0;  // valid
  int64_t invalid = 0;
  int64_t bytes = 0;
  int64_t rank_duplicates = 0;  // lines another rank had already printed (merged into that run)
  int64_t human_echoes = 0;     // `[gemm_ar]` lines that repeat the RESULT_JSON line before them
  std::vector<LogFailure> failures;
  LogContext context;  // sweep stdout, rank validation lines, unread [gemm_ar] lines, embedded records
};

// The reader fed as bytes arrive: each line is handled when its newline comes, so `sink` sees a record as soon as its
// line (or its JSON block) is complete, however long the stream runs. read_log and read_log_fd feed one.
class LogStream {
 public:
  LogStream(std::string name, std::function<void(LogEntry&&)> sink, LogReadOptions = {});
  ~LogStream();
  LogStream(const LogStream&) = delete;
  LogStream& operator=(const LogStream&) = delete;
  void feed(const char* data, size_t n);
  int64_t lines() const;  // lines finished so far
  // The last line (without its newline) and a JSON block left open, then the stats.
  LogReadStats finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Calls `sink` once per candidate line, in order. `name` is what sources are prefixed with.
LogReadStats read_log(std::istream& in, const std::string& name, const std::function<void(LogEntry&&)>& sink,
                      const LogReadOptions& = {});
// "-" reads stdin. UsageError (exit 2) naming the path when it cannot be opened or read.
LogReadStats read_log_file(const std::string& path, const std::function<void(LogEntry&&)>& sink,
                           const LogReadOptions& = {});
// Reads a file descriptor with read(2), which returns what a pipe holds (`bench | gemmar check -`): each line is
// handled as soon as it arrives, not when a buffer fills. `tee`, when given, gets every chunk read before its lines
// are handled (`gemmar check --tee`). UsageError naming `name` on a read error.
LogReadStats read_log_fd(int fd, const std::string& name, const std::function<void(LogEntry&&)>& sink,
                         const LogReadOptions& = {}, const std::function<void(const char*, size_t)>& tee = {});
std::vector<LogEntry> read_log_entries(const std::string& path, const LogReadOptions& = {});

// One line: nullopt when it is not a candidate (noise); else the entry. Stateless (no cross-rank merging).
// Exposed for tests and fuzzing.
std::optional<LogEntry> parse_log_line(const std::string& line, const std::string& source, const LogReadOptions& = {});
// One line: the failure it shows, if any (after colour stripping). Exposed for tests.
std::optional<LogFailure> failure_in_line(const std::string& line, const std::string& source);
// Removes ANSI escape sequences (SGR colours and other CSI sequences).
std::string strip_ansi(const std::string&);

}  // namespace gemmar
