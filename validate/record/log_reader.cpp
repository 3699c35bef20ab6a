#include "validate/record/log_reader.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "common/errors.hpp"

namespace gemmar {

namespace {

// A shape field of a JSON line as an integer; `absent` when missing, not a number, negative or beyond int64 (a
// fuzzed 1e72 must not be converted: undefined behaviour).
int64_t shape_dim(const nlohmann::json& j, const char* key, int64_t absent) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return absent;
  const double x = it->get<double>();
  return x >= 0 && x < 9.2e18 ? int64_t(x) : absent;
}

constexpr const char* kMarker = "RESULT_JSON";
constexpr const char* kHumanMarker = "[gemm_ar]";
constexpr size_t kMaxFailuresKept = 100;

// A bare JSON object is a run only when it has one of the benchmark's own keys: logs carry other JSON too
// (configs, torch profiler summaries) that is not ours to judge.
bool looks_like_run(const nlohmann::json& j) {
  if (!j.is_object()) return false;
  for (const char* k : {"mode", "world_size", "max_rank_time_us", "rel_l2"})
    if (j.contains(k)) return true;
  return false;
}

// Records of mori's other producers, never gemm_ar runs: the op worker's {"case": ...} self-test lines and the
// {"route": ..., ...} lines of the single-process GEMM benchmarks in benchmark/cco/flydsl/gemm_ar/ (mori's
// "mori-<quant>-1p" from bench_mori_gemm_1p.py, sglang's wo_b routes from bench_sglang_wob.py, aiter's from
// bench_aiter_blockscale.py). Listed as other records, not judged as broken runs.
bool another_producers_record(const nlohmann::json& j) {
  return j.is_object() && !j.contains("mode") && (j.contains("case") || j.contains("route"));
}

size_t first_non_space(const std::string& s, size_t from = 0) {
  while (from < s.size() && (s[from] == ' ' || s[from] == '\t')) ++from;
  return from;
}

// torchrun's per-rank prefix: "[rank3]:" (torch >= 2.2 with --tee / --log-line-prefix-template) or
// "[default3]:" (older). Returns the rank and where the payload starts, or nullopt.
std::optional<int> rank_prefix(const std::string& line, size_t& payload) {
  const size_t p = first_non_space(line);
  for (const char* tag : {"[rank", "[default"}) {
    const size_t n = std::strlen(tag);
    if (line.compare(p, n, tag) != 0) continue;
    size_t i = p + n;
    const size_t d0 = i;
    while (i < line.size() && i - d0 < 6 && line[i] >= '0' && line[i] <= '9') ++i;
    if (i == d0 || i + 1 >= line.size() || line[i] != ']' || line[i + 1] != ':') return std::nullopt;
    payload = i + 2;
    return std::atoi(line.substr(d0, i - d0).c_str());
  }
  return std::nullopt;
}

// Where the candidate JSON text starts, or npos when the line is noise; `marked` says RESULT_JSON was seen.
size_t candidate_start(const std::string& line, bool& marked) {
  marked = false;
  const size_t pos = line.find(kMarker);
  if (pos != std::string::npos) {
    if (embedded_result_json(line, pos)) return std::string::npos;  // a repr quoting another run's output
    marked = true;
    size_t p = pos + std::strlen(kMarker);
    if (p < line.size() && (line[p] == ':' || line[p] == '=')) ++p;
    return first_non_space(line, p);
  }
  const size_t p = first_non_space(line);
  if (p < line.size() && line[p] == '{') return p;
  return std::string::npos;
}

bool is_human_line(const std::string& line) {
  const size_t h = line.find(kHumanMarker);
  return h != std::string::npos && !embedded_result_json(line, h) && line.find(" mode=", h) != std::string::npos;
}

// The first key that appears twice in one object of `text` (already parsed, so well-formed), if any.
// nlohmann keeps the last of duplicate keys silently; a record that says two things is not a record.
std::optional<std::string> duplicate_key(const std::string& text) {
  struct Frame {
    bool object;
    std::set<std::string> keys;
  };
  std::vector<Frame> stack;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' || c == '[') {
      stack.push_back({c == '{', {}});
    } else if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
    } else if (c == '"') {
      std::string s;
      size_t k = i + 1;
      for (; k < text.size() && text[k] != '"'; ++k) {
        if (text[k] == '\\' && k + 1 < text.size()) s += text[k++];
        s += text[k];
      }
      i = k;
      const size_t after = first_non_space(text, k + 1);
      if (after < text.size() && text[after] == ':' && !stack.empty() && stack.back().object &&
          !stack.back().keys.insert(s).second)
        return s;
    }
  }
  return std::nullopt;
}

// `[gemm_ar] mode=fused-sdma m=4096 n=7168 k=1024 max_rank_time=348.52us relL2=2.35e-03 validated=True`, the
// benchmark's human summary, as a record object. UsageError naming the token when a value does not parse.
nlohmann::json human_line_object(const std::string& line, const std::string& source) {
  nlohmann::json j = nlohmann::json::object();
  const size_t h = line.find(kHumanMarker);
  size_t i = h + std::strlen(kHumanMarker);
  auto bad = [&](const std::string& key, const std::string& value, const char* want) {
    throw UsageError(source + ": field '" + key + "' of the [gemm_ar] line is '" + value + "', not " + want);
  };
  while (i < line.size()) {
    i = first_non_space(line, i);
    size_t e = i;
    while (e < line.size() && line[e] != ' ' && line[e] != '\t') ++e;
    const std::string tok = line.substr(i, e - i);
    i = e;
    const size_t eq = tok.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string key = tok.substr(0, eq);
    std::string value = tok.substr(eq + 1);
    if (key == "m" || key == "n" || key == "k" || key == "world_size" || key == "world" || key == "pull_blocks") {
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno) bad(key, value, "an integer");
      j[key] = v;
    } else if (key == "max_rank_time" || key == "max_rank_time_us" || key == "relL2" || key == "rel_l2") {
      if (value.size() > 2 && value.compare(value.size() - 2, 2, "us") == 0) value.resize(value.size() - 2);
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);  // accepts nan and inf as Python prints them
      if (value.empty() || *end != '\0') bad(key, tok.substr(eq + 1), "a number");
      j[key.rfind("max_rank_time", 0) == 0 ? "max_rank_time_us" : "rel_l2"] = v;
    } else if (key == "validated") {
      if (value == "True" || value == "true" || value == "1")
        j[key] = true;
      else if (value == "False" || value == "false" || value == "0")
        j[key] = false;
      else
        bad(key, value, "True or False");
    } else if (key == "mode" || key == "quant" || key == "gather_dtype" || key == "gather_transport" ||
               key == "timing" || key == "stop_after" || key == "fence" || key == "gemm_impl") {
      j[key] = value;
    }
  }
  return j;
}

std::string clip(const std::string& s, size_t n = 200) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

// A JSON value printed over several lines: `json.dump(result, fh, indent=2, sort_keys=True)` (bench_gemm_ar.py
// --json-out), or an array of records. Bracket depth is counted outside strings, across lines.
struct BracketDepth {
  int depth = 0;
  bool in_string = false, escape = false;
  // Reads `c`; true when it is a bracket outside a string (depth then counts it).
  bool step(char c) {
    if (in_string) {
      if (escape)
        escape = false;
      else if (c == '\\')
        escape = true;
      else if (c == '"')
        in_string = false;
      return false;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
      return true;
    } else if (c == '}' || c == ']') {
      --depth;
      return true;
    }
    return false;
  }
};

struct JsonBlock {
  bool active = false;
  bool too_long = false;
  std::string text;
  std::string source;  // where it starts
  BracketDepth brackets;
  int depth() const { return brackets.depth; }
  void feed(const std::string& line, size_t cap) {
    if (text.size() + line.size() + 1 > cap) too_long = true;
    if (!too_long) text += line + "\n";
    for (const char c : line) brackets.step(c);
  }
};

// The elements of an array that closed before its text ends (the file was cut inside the array), in order,
// each as its own text; an element still open at the end is not among them. Strings are skipped as in
// JsonBlock, so a bracket inside one counts for nothing.
std::vector<std::string> closed_array_elements(const std::string& text) {
  std::vector<std::string> out;
  BracketDepth br;
  size_t start = std::string::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!br.step(text[i])) continue;
    if (br.depth == 2 && (text[i] == '{' || text[i] == '[')) start = i;
    if (br.depth == 1 && (text[i] == '}' || text[i] == ']') && start != std::string::npos) {
      out.push_back(text.substr(start, i - start + 1));
      start = std::string::npos;
    }
  }
  return out;
}

// A line that opens a JSON block: `{` or `[` alone (indent=2 output), or `[{` (an array of records on a line).
bool opens_json_block(const std::string& payload) {
  const size_t p = first_non_space(payload);
  if (p != 0) return false;  // json.dump starts in column 0; indented braces belong to something else
  std::string t = payload;
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
  return t == "{" || t == "[" || t.rfind("[{", 0) == 0 || t.rfind("[ {", 0) == 0;
}

// gemmar's own results document (`gemmar validate --out DIR`'s results.json, `check --json`): {"runs": [{"record":
// {...}, ...}, ...], "summary": {...}}; its runs' records, as --baseline reads them. Entries without a record (log
// findings, other producers' records) judged nothing of a run and are not read again.
const nlohmann::json* gemmar_results_runs(const nlohmann::json& j) {
  if (!j.is_object() || looks_like_run(j) || !j.contains("summary")) return nullptr;
  const auto it = j.find("runs");
  return it != j.end() && it->is_array() ? &*it : nullptr;
}

// The run records a finished block holds: the object itself, or each object of an array (source
// "file:line[i]"). Objects without the benchmark's keys are not records; a block mentioning "mode" that does
// not parse is one broken record.
std::vector<LogEntry> json_block_entries(const JsonBlock& b, const LogReadOptions& opt) {
  std::vector<LogEntry> out;
  auto broken = [&](const std::string& why) {
    LogEntry e;
    e.source = b.source;
    e.kind = "json_block";
    e.error = b.source + ": " + why;
    out.push_back(std::move(e));
  };
  if (b.too_long) {
    if (b.text.find("\"mode\"") != std::string::npos)
      broken("a JSON value longer than the " + std::to_string(opt.max_line_bytes) + "-byte cap, not read");
    return out;
  }
  const bool array = b.text.rfind('[', 0) == 0;
  const bool mentions_mode = b.text.find("\"mode\"") != std::string::npos;
  bool cut_array = false;  // an array of records cut short: the records before the cut are read, the cut reported
  nlohmann::json j;
  try {
    j = parse_python_json(b.text);
  } catch (const nlohmann::json::exception&) {
    if (!array || b.depth() <= 0) {
      if (mentions_mode)
        broken(std::string(array ? "a JSON array" : "a JSON object") +
               (b.depth() > 0 ? " that never closes (the file was cut)" : " that does not parse"));
      return out;
    }
    cut_array = true;
    j = nlohmann::json::array();
    for (const std::string& el : closed_array_elements(b.text)) {
      try {
        j.push_back(parse_python_json(el));
      } catch (const nlohmann::json::exception&) {
        j.push_back(nullptr);  // keeps the indices; not a record
      }
    }
  }
  if (const auto dup = duplicate_key(b.text)) {
    broken("field '" + *dup + "' appears twice in one record (which value is meant?)");
    return out;
  }
  auto one = [&](const nlohmann::json& x, const std::string& src) {
    if (!looks_like_run(x) && !another_producers_record(x)) return;
    LogEntry e;
    e.source = src;
    e.raw = x;
    if (another_producers_record(x)) {
      e.kind = "other";
      out.push_back(std::move(e));
      return;
    }
    e.kind = "json_block";
    try {
      e.record = run_record_from_json(x, src, opt.defaults);
    } catch (const UsageError& err) {
      e.error = err.what();
    }
    out.push_back(std::move(e));
  };
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) one(j[i], b.source + "[" + std::to_string(i) + "]");
  } else if (const nlohmann::json* runs = gemmar_results_runs(j)) {
    for (size_t i = 0; i < runs->size(); ++i)
      if ((*runs)[i].is_object() && (*runs)[i].contains("record"))
        one((*runs)[i]["record"], b.source + ":runs[" + std::to_string(i) + "]");
  } else {
    one(j, b.source);
  }
  if (cut_array && mentions_mode)
    broken("a JSON array that never closes (the file was cut" +
           (j.empty() ? std::string(")")
                      : " after element [" + std::to_string(j.size() - 1) + "]; the " + std::to_string(j.size()) +
                            " element(s) before the cut are read)") +
           ": whatever followed is lost");
  return out;
}

// The exception line that ends a Python traceback: the first line in column 0 after it that is not another
// traceback header. Tracebacks of one rank are followed by that rank's lines.
bool ends_traceback(const std::string& payload) {
  if (payload.empty() || payload[0] == ' ' || payload[0] == '\t' || payload[0] == '^' || payload[0] == '~')
    return false;
  for (const char* skip : {"Traceback (most recent call last)", "During handling of", "The above exception"})
    if (payload.rfind(skip, 0) == 0) return false;
  return true;
}

// A record object built from a print that is not JSON (test_gemm_ar_bench.py's lines): an entry of `kind`.
LogEntry printed_entry(const char* kind, nlohmann::json raw, const std::string& source, const LogReadOptions& opt) {
  LogEntry e;
  e.source = source;
  e.kind = kind;
  e.raw = std::move(raw);
  try {
    e.record = run_record_from_json(e.raw, source, opt.defaults);
  } catch (const UsageError& err) {
    e.error = err.what();
  }
  return e;
}

// test_gemm_ar_bench.py's `-s` line of one mode (mori_lines.hpp), or nullopt.
std::optional<LogEntry> pytest_entry(const std::string& line, const std::string& source, const LogReadOptions& opt) {
  auto j = pytest_bench_record(line);
  if (!j) return std::nullopt;
  return printed_entry("pytest", std::move(*j), source, opt);
}

}  // namespace

std::string strip_ansi(const std::string& s) {
  if (s.find('\x1b') == std::string::npos) return s;
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\x1b') {
      out += s[i];
      continue;
    }
    if (i + 1 < s.size() && s[i + 1] == '[') {
      // CSI: ESC [ parameter bytes 0x30-0x3F, intermediate 0x20-0x2F, one final byte 0x40-0x7E (m for SGR).
      size_t k = i + 2;
      while (k < s.size() && static_cast<unsigned char>(s[k]) >= 0x20 && static_cast<unsigned char>(s[k]) <= 0x3F) ++k;
      if (k < s.size() && static_cast<unsigned char>(s[k]) >= 0x40 && static_cast<unsigned char>(s[k]) <= 0x7E) ++k;
      i = k - 1;
    } else if (i + 1 < s.size()) {
      ++i;  // a two-byte escape (ESC c, ESC =, ...)
    }
  }
  return out;
}

std::optional<LogFailure> failure_in_line(const std::string& raw_line, const std::string& source) {
  const std::string line = strip_ansi(raw_line);
  LogFailure f;
  f.source = source;
  f.line = clip(line);
  if (line.find("Traceback (most recent call last)") != std::string::npos) {
    f.kind = "traceback";
    f.what = "a Python traceback: the benchmark raised an exception";
    return f;
  }
  if (line.find("ChildFailedError") != std::string::npos) {
    f.kind = "child_failed";
    f.what = "torchrun's ChildFailedError: at least one rank failed";
    return f;
  }
  if (line.find("hsaKmtCreateQueueExt") != std::string::npos) {
    f.kind = "stale_queue";
    f.what =
        "hsaKmtCreateQueueExt failed: the stale-queue signature (a previous run's ranks still hold "
        "copy-engine queues); wait about 10 s between back-to-back runs";
    return f;
  }
  for (size_t pos = line.find("exitcode"); pos != std::string::npos; pos = line.find("exitcode", pos + 1)) {
    size_t i = first_non_space(line, pos + 8);
    if (i >= line.size() || line[i] != ':') continue;
    i = first_non_space(line, i + 1);
    char* end = nullptr;
    const long code = std::strtol(line.c_str() + i, &end, 10);
    if (end == line.c_str() + i || code == 0) continue;
    f.kind = "exit_code";
    f.exit_code = int(code);
    // torchrun: "failed (exitcode: 1) local_rank: 0 (pid: 123) of binary: ..."
    if (const size_t lr = line.find("local_rank:", pos); lr != std::string::npos)
      f.exit_rank = std::atoi(line.c_str() + first_non_space(line, lr + 11));
    f.what = "a rank exited with code " + std::to_string(code) +
             (f.exit_rank ? " (local_rank " + std::to_string(*f.exit_rank) + ")" : "") +
             (code < 0 ? " (killed by signal " + std::to_string(-code) + ")" : "");
    return f;
  }
  if (line.find("Segmentation fault") != std::string::npos || line.find("core dumped") != std::string::npos) {
    f.kind = "signal";
    f.what = "a process crashed (segmentation fault / core dump)";
    return f;
  }
  return std::nullopt;
}

std::optional<LogEntry> parse_log_line(const std::string& raw_line, const std::string& source,
                                       const LogReadOptions& opt) {
  const std::string stripped = strip_ansi(raw_line);
  size_t payload = 0;
  const std::optional<int> rank = rank_prefix(stripped, payload);
  const std::string line = rank ? stripped.substr(payload) : stripped;
  bool marked = false;
  const size_t start = candidate_start(line, marked);
  const bool human = start == std::string::npos && is_human_line(line);
  if (start == std::string::npos && !human) return pytest_entry(line, source, opt);
  LogEntry e;
  e.source = source;
  e.rank = rank;
  if (human) {
    e.kind = "human";
    try {
      e.raw = human_line_object(line, source);
    } catch (const UsageError&) {
      return std::nullopt;  // a [gemm_ar] line of another shape: counted as unread, never a failing run
    }
    if (!e.raw.contains("mode")) return std::nullopt;
    try {
      e.record = run_record_from_json(e.raw, source, opt.defaults);
    } catch (const UsageError& err) {
      e.error = err.what();  // the benchmark's summary with an impossible value
    }
    return e;
  }
  e.kind = marked ? "result_json" : "bare";
  std::string text = line.substr(start);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.pop_back();
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
  if (!marked && !looks_like_run(e.raw) && !another_producers_record(e.raw)) return std::nullopt;
  // Another producer's records, and marked objects with none of the benchmark's keys: not a broken run. A
  // record with the benchmark's keys but no mode stays INVALID_RECORD (mode is missing).
  if (another_producers_record(e.raw) ||
      (marked && e.raw.is_object() && !e.raw.contains("mode") && !looks_like_run(e.raw))) {
    e.kind = "other";
    return e;
  }
  if (const auto dup = duplicate_key(text)) {
    e.error = source + ": field '" + *dup + "' appears twice in one record (which value is meant?)";
    return e;
  }
  try {
    e.record = run_record_from_json(e.raw, source, opt.defaults);
  } catch (const UsageError& err) {
    e.error = err.what();
  }
  return e;
}

namespace {

// The reader's state across lines: rank groups (W ranks printing one line are one run), recent records (a
// [gemm_ar] echo is not a second run), an open JSON block, open tracebacks, and what it has found so far.
class LineReader {
 public:
  LineReader(const std::string& name, const std::function<void(LogEntry&&)>& sink, const LogReadOptions& opt)
      : name_(name), sink_(sink), opt_(opt) {}

  // Appends bytes of the current line (never more than the cap: the rest is dropped, overflow noted).
  void append(const char* p, size_t take) {
    if (overflow_) return;
    if (line_.size() + take > opt_.max_line_bytes) {
      // Keep only the head: enough to tell a record from noise, never the whole line.
      line_.append(p, std::min(take, opt_.max_line_bytes - line_.size()));
      overflow_ = true;
    } else {
      line_.append(p, take);
    }
  }
  bool pending() const { return !line_.empty() || overflow_; }
  void finish_line();
  LogReadStats finish() {
    if (pending()) finish_line();
    if (block_.active) finish_block();  // a JSON object or array cut at the end of the file
    return std::move(st_);
  }
  LogReadStats& stats() { return st_; }
  int64_t lineno() const { return lineno_; }

 private:
  struct Group {  // one payload and the ranks that printed it
    std::string payload;
    std::set<int> ranks;
    int64_t line;
  };
  struct Recent {  // a record, so its [gemm_ar] echo is recognised
    std::string mode;
    int64_t m, n, k;
    std::optional<double> time;
    int64_t line;
    bool echoed = false;
  };
  struct OpenTraceback {
    size_t failure;
    int64_t line;
  };

  // A rank seen again starts a new run. Bounded: the oldest groups are dropped.
  bool rank_duplicate(const LogEntry& e, const std::string& payload) {
    if (!e.rank) return false;
    for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
      if (it->payload != payload) continue;
      if (lineno_ - it->line > 4096 || it->ranks.count(*e.rank)) break;
      it->ranks.insert(*e.rank);
      return true;
    }
    groups_.push_back({payload, {*e.rank}, lineno_});
    if (groups_.size() > 256) groups_.pop_front();
    return false;
  }
  bool human_echo(const LogEntry& e) {
    if (e.kind != "human" || !e.raw.is_object()) return false;
    const auto& j = e.raw;
    auto num = [&](const char* k) {
      const auto it = j.find(k);
      return it != j.end() && it->is_number() ? it->get<double>() : -2.0;
    };
    for (auto it = recent_.rbegin(); it != recent_.rend(); ++it) {
      if (lineno_ - it->line > 64) break;
      if (it->echoed || it->mode != j.value("mode", std::string()) || it->m != shape_dim(j, "m", -2) ||
          it->n != shape_dim(j, "n", -2) || it->k != shape_dim(j, "k", -2))
        continue;
      const double t = num("max_rank_time_us");
      if (it->time && t >= 0 && std::fabs(*it->time - t) > 0.006 + 1e-6 * *it->time) continue;
      it->echoed = true;
      return true;
    }
    return false;
  }
  // Invalid records too: their [gemm_ar] echo is the same broken run, not a clean one.
  void remember(const LogEntry& e) {
    if (e.kind == "human" || !e.raw.is_object()) return;
    const auto& j = e.raw;
    const auto mode = j.find("mode");
    if (mode == j.end() || !mode->is_string()) return;
    std::optional<double> t;
    if (const auto it = j.find("max_rank_time_us"); it != j.end() && it->is_number() && it->get<double>() >= 0)
      t = it->get<double>();
    recent_.push_back(
        {mode->get<std::string>(), shape_dim(j, "m", -1), shape_dim(j, "n", -1), shape_dim(j, "k", -1), t, lineno_});
    if (recent_.size() > 32) recent_.pop_front();
  }
  // A `[gemm_ar]` line that is not the benchmark's summary, or a RESULT_JSON quoted inside another line.
  void note_unread(const std::string& payload, const std::string& source) {
    if (payload.find(kMarker) != std::string::npos) {
      ++st_.context.embedded_records;
    } else if (payload.find(kHumanMarker) != std::string::npos) {
      if (st_.context.unread_gemm_ar_lines++ == 0)
        st_.context.first_unread_gemm_ar = source + ": " + clip(payload, 120);
    }
  }
  // A record (valid or not) takes the `[rank R] VALIDATION FAILED` lines printed since the previous one.
  void sink_record(LogEntry&& e) {
    if (e.kind != "other" && !st_.context.pending_rank_failures.empty()) {
      e.rank_failures = std::move(st_.context.pending_rank_failures);
      st_.context.pending_rank_failures.clear();
      if (e.record) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& f : e.rank_failures)
          list.push_back({{"rank", f.rank}, {"rel_l2", f.rel_l2}, {"gemm_only", f.gemm_only}, {"source", f.source}});
        e.record->raw["rank_validation_failures"] = list;
      }
    }
    if (e.kind != "other") (e.record ? st_.records : st_.invalid)++;
    sink_(std::move(e));
  }
  void finish_block() {
    for (auto& e : json_block_entries(block_, opt_)) sink_record(std::move(e));
    block_ = JsonBlock{};
  }
  // The traceback a rank opened ends at that rank's next column-0 line: the exception, kept with the failure.
  void traceback_line(const std::string& payload, std::optional<int> rank) {
    const auto it = open_tracebacks_.find(rank.value_or(-1));
    if (it == open_tracebacks_.end()) return;
    if (lineno_ - it->second.line > 2000) {
      open_tracebacks_.erase(it);
      return;
    }
    if (!ends_traceback(payload)) return;
    LogFailure& f = st_.failures[it->second.failure];
    f.exception = clip(payload, 600);
    if (payload.find("ChildFailedError") != std::string::npos) {
      f.kind = "child_failed";  // torchrun's own traceback: a rank failed, the launcher reports it
      f.what = "torchrun's ChildFailedError: at least one rank failed";
    } else {
      f.what = "the benchmark raised " + f.exception;
    }
    open_tracebacks_.erase(it);
  }
  void note_failure(const std::string& source, std::optional<int> rank) {
    auto f = failure_in_line(line_, source);
    if (!f || st_.failures.size() >= kMaxFailuresKept) return;
    if (f->kind == "traceback") open_tracebacks_[rank.value_or(-1)] = {st_.failures.size(), lineno_};
    st_.failures.push_back(std::move(*f));
  }
  void read_candidate(const std::string& clean, const std::string& payload, const std::string& source);
  bool pytest_block_line(const std::string& payload, const std::string& source);

  const std::string& name_;
  const std::function<void(LogEntry&&)>& sink_;
  const LogReadOptions& opt_;
  LogReadStats st_;
  std::string line_;
  bool overflow_ = false;
  int64_t lineno_ = 0;
  std::deque<Group> groups_;
  std::deque<Recent> recent_;
  JsonBlock block_;
  std::map<int, OpenTraceback> open_tracebacks_;  // by rank (-1: no prefix)
  struct ModelShapeBlock {                        // test_gemm_ar_bench.py's model-shape block, open after its header
    ModelShapeHeader header;
    std::map<std::string, double> times;  // by mode
  };
  std::optional<ModelShapeBlock> model_shape_;
};

// test_gemm_ar_bench.py @e7606746 :122-136: `[gemm_ar] model shape m= n= k=`, a row per mode (each a record), then
// `fused is +x% against split`; the test asserts fused < split, and a block where it is not is mori's gate failing.
bool LineReader::pytest_block_line(const std::string& payload, const std::string& source) {
  if (auto h = pytest_model_shape_header(payload)) {
    model_shape_ = ModelShapeBlock{*h, {}};
    return true;
  }
  if (!model_shape_) return false;
  if (auto j = pytest_model_shape_row(payload, model_shape_->header)) {
    model_shape_->times[(*j)["mode"].get<std::string>()] = (*j)["max_rank_time_us"].get<double>();
    sink_record(printed_entry("pytest", std::move(*j), source, opt_));
    return true;
  }
  const bool end = pytest_model_shape_end(payload);
  const auto& t = model_shape_->times;
  if (end && t.count("fused-sdma") && t.count("split-sdma") && !(t.at("fused-sdma") < t.at("split-sdma")))
    st_.context.mori.ordering.push_back({t.at("fused-sdma"), t.at("split-sdma"), source, false});
  model_shape_.reset();
  return end;
}

void LineReader::finish_line() {
  ++lineno_;
  ++st_.lines;
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  const std::string source = name_ + ":" + std::to_string(lineno_);
  const std::string clean = strip_ansi(line_);
  size_t payload_at = 0;
  const std::optional<int> prefix_rank = rank_prefix(clean, payload_at);
  // torchrun writes "[rank0]: text": the one space after the colon is the prefix's, not the text's.
  std::string payload = prefix_rank ? clean.substr(payload_at) : clean;
  if (prefix_rank && !payload.empty() && payload[0] == ' ') payload.erase(0, 1);
  // A lone `{` that was not JSON must not swallow the log: a record, a rank's line or a traceback ends it.
  if (block_.active && (prefix_rank || payload.find(kMarker) != std::string::npos || is_human_line(payload) ||
                        payload.find("Traceback (most recent call last)") != std::string::npos))
    block_ = JsonBlock{};
  if (block_.active) {
    block_.feed(payload, opt_.max_line_bytes);
    if (block_.depth() <= 0) finish_block();
  } else {
    traceback_line(payload, prefix_rank);
    // sweep.py's and the ranks' own lines first: a point's `  FAILED: <last line>` is the sweep's finding.
    if (overflow_ ||
        (!pytest_block_line(payload, source) && !read_context_line(payload, prefix_rank, source, st_.context))) {
      note_failure(source, prefix_rank);
      if (!overflow_ && !prefix_rank && opens_json_block(payload)) {
        block_.active = true;
        block_.source = source;
        block_.feed(payload, opt_.max_line_bytes);
        if (block_.depth() <= 0) finish_block();
      } else {
        read_candidate(clean, payload, source);
      }
    }
  }
  line_.clear();
  overflow_ = false;
}

void LineReader::read_candidate(const std::string& clean, const std::string& payload, const std::string& source) {
  if (overflow_) {
    bool marked = false;
    if (candidate_start(clean, marked) == std::string::npos) return;
    LogEntry e;
    e.source = source;
    e.error = source + ": line longer than the " + std::to_string(opt_.max_line_bytes) +
              "-byte cap, not read as a record (split the output or raise the cap)";
    sink_record(std::move(e));
  } else if (auto e = parse_log_line(line_, source, opt_)) {
    if (rank_duplicate(*e, payload)) {
      ++st_.rank_duplicates;
    } else if (human_echo(*e)) {
      ++st_.human_echoes;
    } else {
      remember(*e);
      sink_record(std::move(*e));
    }
  } else {
    note_unread(payload, source);
  }
}

}  // namespace

struct LogStream::Impl {
  Impl(std::string n, std::function<void(LogEntry&&)> s, LogReadOptions o)
      : name(std::move(n)), sink(std::move(s)), opt(std::move(o)), reader(name, sink, opt) {}
  const std::string name;
  const std::function<void(LogEntry&&)> sink;
  const LogReadOptions opt;
  LineReader reader;  // holds references to the three above
  int64_t bytes = 0;
};

LogStream::LogStream(std::string name, std::function<void(LogEntry&&)> sink, LogReadOptions opt)
    : impl_(std::make_unique<Impl>(std::move(name), std::move(sink), std::move(opt))) {}
LogStream::~LogStream() = default;

void LogStream::feed(const char* p, size_t n) {
  impl_->bytes += int64_t(n);
  const char* end = p + n;
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
    impl_->reader.append(p, size_t((nl ? nl : end) - p));
    if (!nl) break;
    impl_->reader.finish_line();
    p = nl + 1;
  }
}

int64_t LogStream::lines() const { return impl_->reader.lineno(); }

LogReadStats LogStream::finish() {
  LogReadStats st = impl_->reader.finish();
  st.bytes = impl_->bytes;
  return st;
}

LogReadStats read_log(std::istream& in, const std::string& name, const std::function<void(LogEntry&&)>& sink,
                      const LogReadOptions& opt) {
  LogStream stream(name, sink, opt);
  std::vector<char> buf(size_t(1) << 16);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    const std::streamsize got = in.gcount();
    if (got <= 0) break;
    stream.feed(buf.data(), size_t(got));
  }
  if (in.bad()) throw UsageError(name + ": read error after line " + std::to_string(stream.lines()));
  return stream.finish();
}

LogReadStats read_log_fd(int fd, const std::string& name, const std::function<void(LogEntry&&)>& sink,
                         const LogReadOptions& opt, const std::function<void(const char*, size_t)>& tee) {
  LogStream stream(name, sink, opt);
  std::vector<char> buf(size_t(1) << 16);
  for (;;) {
    const ssize_t got = ::read(fd, buf.data(), buf.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      throw UsageError(name + ": read error after line " + std::to_string(stream.lines()) + " (" +
                       std::strerror(errno) + ")");
    if (got == 0) break;
    if (tee) tee(buf.data(), size_t(got));
    stream.feed(buf.data(), size_t(got));
  }
  return stream.finish();
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
  read_log_file(
      path, [&](LogEntry&& e) { out.push_back(std::move(e)); }, opt);
  return out;
}

}  // namespace gemmar
