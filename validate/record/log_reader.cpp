#include "validate/record/log_reader.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/errors.hpp"

namespace gemmar {

namespace {

constexpr const char* kMarker = "RESULT_JSON";

// A bare JSON object is a run only when it has one of the benchmark's own keys: logs carry other JSON too
// (configs, torch profiler summaries) that is not ours to judge.
bool looks_like_run(const nlohmann::json& j) {
  if (!j.is_object()) return false;
  for (const char* k : {"mode", "world_size", "max_rank_time_us", "rel_l2"})
    if (j.contains(k)) return true;
  return false;
}

size_t first_non_space(const std::string& s, size_t from = 0) {
  while (from < s.size() && (s[from] == ' ' || s[from] == '\t')) ++from;
  return from;
}

// Where the candidate JSON text starts, or npos when the line is noise; `marked` says RESULT_JSON was seen.
size_t candidate_start(const std::string& line, bool& marked) {
  marked = false;
  const size_t pos = line.find(kMarker);
  if (pos != std::string::npos) {
    marked = true;
    size_t p = pos + std::strlen(kMarker);
    if (p < line.size() && (line[p] == ':' || line[p] == '=')) ++p;
    return first_non_space(line, p);
  }
  const size_t p = first_non_space(line);
  if (p < line.size() && line[p] == '{') return p;
  return std::string::npos;
}

}  // namespace

std::optional<LogEntry> parse_log_line(const std::string& line, const std::string& source) {
  bool marked = false;
  const size_t start = candidate_start(line, marked);
  if (start == std::string::npos) return std::nullopt;
  LogEntry e;
  e.source = source;
  const std::string text = line.substr(start);
  try {
    e.raw = parse_python_json(text);
  } catch (const nlohmann::json::exception& err) {  // parse_error, or out_of_range for 1e999
    // A bare line that merely starts with '{' and is not JSON is noise; after RESULT_JSON it is a broken record.
    if (!marked && text.find("\"mode\"") == std::string::npos) return std::nullopt;
    std::string what = err.what();
    const size_t colon = what.find("parse error");
    if (colon != std::string::npos) what = what.substr(colon);
    e.error = source + ": not a valid JSON object (truncated or malformed line: " + what + ")";
    return e;
  }
  if (!marked && !looks_like_run(e.raw)) return std::nullopt;
  try {
    e.record = run_record_from_json(e.raw, source);
  } catch (const UsageError& err) {
    e.error = err.what();
  }
  return e;
}

LogReadStats read_log(std::istream& in, const std::string& name, const std::function<void(LogEntry&&)>& sink,
                      const LogReadOptions& opt) {
  LogReadStats st;
  std::string line;
  bool overflow = false;
  int64_t lineno = 0;
  std::vector<char> buf(size_t(1) << 16);

  auto finish_line = [&]() {
    ++lineno;
    ++st.lines;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string source = name + ":" + std::to_string(lineno);
    if (overflow) {
      bool marked = false;
      if (candidate_start(line, marked) != std::string::npos) {
        LogEntry e;
        e.source = source;
        e.error = source + ": line longer than the " + std::to_string(opt.max_line_bytes) +
                  "-byte cap, not read as a record (split the output or raise the cap)";
        ++st.invalid;
        sink(std::move(e));
      }
    } else if (auto e = parse_log_line(line, source)) {
      (e->record ? st.records : st.invalid)++;
      sink(std::move(*e));
    }
    line.clear();
    overflow = false;
  };

  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    const std::streamsize got = in.gcount();
    if (got <= 0) break;
    st.bytes += got;
    const char* p = buf.data();
    const char* end = p + got;
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
      const char* stop = nl ? nl : end;
      if (!overflow) {
        const size_t take = size_t(stop - p);
        if (line.size() + take > opt.max_line_bytes) {
          // Keep only the head: enough to tell a record from noise, never the whole line.
          line.append(p, std::min(take, opt.max_line_bytes - line.size()));
          overflow = true;
        } else {
          line.append(p, take);
        }
      }
      if (!nl) break;
      finish_line();
      p = nl + 1;
    }
  }
  if (in.bad()) throw UsageError(name + ": read error after line " + std::to_string(lineno));
  if (!line.empty() || overflow) finish_line();
  return st;
}

LogReadStats read_log_file(const std::string& path, const std::function<void(LogEntry&&)>& sink,
                           const LogReadOptions& opt) {
  if (path == "-") return read_log(std::cin, "stdin", sink, opt);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UsageError(path + ": is a directory, not a log file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError(path + ": cannot open (" + std::strerror(errno) + ")");
  return read_log(f, path, sink, opt);
}

std::vector<LogEntry> read_log_entries(const std::string& path, const LogReadOptions& opt) {
  std::vector<LogEntry> out;
  read_log_file(path, [&](LogEntry&& e) { out.push_back(std::move(e)); }, opt);
  return out;
}

}  // namespace gemmar
