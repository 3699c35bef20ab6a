#include "validate/record/trace_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "validate/record/phase_regex.hpp"

namespace gemmar {

namespace {

PhaseRegex compile(const PhasePattern& p, const std::string& where) {
  try {
    return PhaseRegex(p.regex);
  } catch (const PhaseRegexError& e) {
    throw UsageError(where + ": invalid regex for phase '" + p.phase + "': '" + p.regex.substr(0, 200) + "' (" +
                     e.what() + ")");
  }
}

// A member that is a string, else `fallback`; json::value() throws type_error on a present non-string.
std::string string_member(const nlohmann::json& object, const char* key, const std::string& fallback) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

// RFC 4180 fields: kernel names are templated C++ and carry commas inside quotes.
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool q = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (q) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        q = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      q = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

struct Event {
  std::string device;
  std::string name;
  double dur_us;
  std::string stream;   // rocprofv3's Queue_Id, a Chrome trace's tid ("0" when absent)
  double start_us = 0;  // the trace's own clock
};
using EventSink = std::function<void(const Event&)>;

struct Accumulator {
  const std::vector<PhasePattern>& patterns;
  std::vector<PhaseRegex> res;
  // A trace repeats the same few kernel names every iteration: match each distinct name once.
  std::unordered_map<std::string, int> phase_of_name;               // -> pattern index, -1 unmatched
  std::map<std::string, std::map<std::string, double>> per_device;  // device -> phase -> summed us
  std::map<std::string, int> gemm_count;
  TracePhases out;
  std::vector<TraceKernel>* kernels = nullptr;  // every kernel, when the caller asked for them

  int match(const std::string& name) {
    const auto hit = phase_of_name.find(name);
    if (hit != phase_of_name.end()) return hit->second;
    int found = -1;
    for (size_t i = 0; i < res.size() && found < 0; ++i)
      if (res[i].search(name)) found = int(i);
    phase_of_name.emplace(name, found);
    return found;
  }

  void add(const Event& e) {
    const int i = match(e.name);
    if (kernels)
      kernels->push_back({e.device, e.stream, e.name, i >= 0 ? patterns[size_t(i)].phase : "", e.start_us, e.dur_us});
    if (i >= 0) {
      const std::string& phase = patterns[size_t(i)].phase;
      per_device[e.device][phase] += e.dur_us;
      if (phase == "gemm") gemm_count[e.device]++;
      out.kernels_matched++;
      return;
    }
    out.kernels_unmatched++;
    if (out.unmatched_names.size() < 5 &&
        std::find(out.unmatched_names.begin(), out.unmatched_names.end(), e.name) == out.unmatched_names.end())
      out.unmatched_names.push_back(e.name.substr(0, 120));
  }

  TracePhases finish() {
    out.devices = int(per_device.size());
    out.iterations = 0;
    for (auto& [dev, phases] : per_device) {
      const int iters = std::max(1, gemm_count.count(dev) ? gemm_count[dev] : 1);
      out.iterations = std::max(out.iterations, iters);
      for (auto& [phase, us] : phases) {
        const double per_iter = us / iters;
        auto& slot = out.phases_us[phase];
        slot = std::max(slot, per_iter);
      }
    }
    if (out.iterations == 0) out.iterations = 1;
    return out;
  }
};

void read_csv(std::istream& in, const std::string& path, const EventSink& sink) {
  std::string line;
  std::getline(in, line);
  const auto header = split_csv(line);
  auto col = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (trim(header[i]) == name) return int(i);
    return -1;
  };
  const int name_c = col("Kernel_Name"), start_c = col("Start_Timestamp"), end_c = col("End_Timestamp");
  const int dev_c = col("Agent_Id"), queue_c = col("Queue_Id");
  if (name_c < 0 || start_c < 0 || end_c < 0)
    throw UsageError(path +
                     ":1: not a rocprofv3 kernel trace (needs columns Kernel_Name, Start_Timestamp, "
                     "End_Timestamp)");
  int64_t lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (trim(line).empty()) continue;
    const auto f = split_csv(line);
    const int need = std::max({name_c, start_c, end_c, dev_c, queue_c});
    if (int(f.size()) <= need)
      throw UsageError(path + ":" + std::to_string(lineno) + ": " + std::to_string(f.size()) +
                       " columns, the header names " + std::to_string(header.size()));
    double t0 = 0, t1 = 0;
    try {
      t0 = std::stod(f[size_t(start_c)]);
      t1 = std::stod(f[size_t(end_c)]);
    } catch (const std::exception&) {
      throw UsageError(path + ":" + std::to_string(lineno) + ": Start_Timestamp/End_Timestamp are not numbers");
    }
    if (t1 < t0) throw UsageError(path + ":" + std::to_string(lineno) + ": End_Timestamp is before Start_Timestamp");
    sink({dev_c >= 0 ? f[size_t(dev_c)] : "0", f[size_t(name_c)], (t1 - t0) * 1e-3,
          queue_c >= 0 ? f[size_t(queue_c)] : "0", t0 * 1e-3});
  }
}

void read_chrome(std::istream& in, const std::string& path, const EventSink& sink) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw UsageError(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  const nlohmann::json* events = nullptr;
  if (j.is_object() && j.contains("traceEvents"))
    events = &j["traceEvents"];
  else if (j.is_array())
    events = &j;
  if (!events || !events->is_array()) throw UsageError(path + ": a Chrome trace needs a \"traceEvents\" array");
  for (size_t i = 0; i < events->size(); ++i) {
    const auto& e = (*events)[i];
    if (!e.is_object() || string_member(e, "ph", "") != "X") continue;
    std::string lcat = string_member(e, "cat", "");
    std::transform(lcat.begin(), lcat.end(), lcat.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    // Host-side events (cpu_op, cuda_runtime) would double count the kernels they launch.
    if (lcat.find("kernel") == std::string::npos && lcat.find("memcpy") == std::string::npos) continue;
    if (!e.contains("name") || !e["name"].is_string() || !e.contains("dur") || !e["dur"].is_number())
      throw UsageError(path + ": traceEvents[" + std::to_string(i) + "] needs a string name and a numeric dur");
    auto id = [&](const char* key) {
      if (!e.contains(key)) return std::string("0");
      return e[key].is_string() ? e[key].get<std::string>() : e[key].dump();
    };
    const double ts = e.contains("ts") && e["ts"].is_number() ? e["ts"].get<double>() : 0.0;
    sink({id("pid"), e["name"].get<std::string>(), e["dur"].get<double>(), id("tid"), ts});
  }
}

}  // namespace

const std::vector<PhasePattern>& default_phase_patterns() {
  static const std::vector<PhasePattern> p{
      {"dequantize", "dequant|fp8_?to_?bf16|widen_local"},
      {"quantize", "quantize|quant_|amax|bf16_?to_?fp8|narrow"},
      {"pull", "pull|widen"},
      {"allreduce", "all_?reduce|two_?stage|rccl|nccl"},
      {"reduce", "reduce"},
      {"drain", "drain|wait_(puts|scatter|signal)"},
      {"scatter", "scatter"},
      {"gather", "gather|barrier"},
      // "gemm" not followed by "_ar"/"ar" (gemm_ar_* kernels are the collective's), without lookahead.
      {"gemm", "gemm($|[^_a]|_($|[^a]|a($|[^r]))|a($|[^r]))|_gemm|matmul|Cijk_|mfma|wgmma"},
  };
  return p;
}

std::vector<PhasePattern> load_phase_map(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UsageError("--phase-map " + path + ": is a directory, not a file");
  std::ifstream f(path);
  if (!f) throw UsageError("--phase-map " + path + ": cannot open (" + std::strerror(errno) + ")");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  std::vector<PhasePattern> out;
  const std::string t = trim(text);
  if (!t.empty() && t[0] == '{') {
    nlohmann::ordered_json j;
    try {
      j = nlohmann::ordered_json::parse(t);
    } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
      throw UsageError("--phase-map " + path + ": not valid JSON (" + e.what() + ")");
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it->is_string()) throw UsageError("--phase-map " + path + ": phase '" + it.key() + "' needs a regex string");
      out.push_back({it.key(), it->get<std::string>()});
    }
  } else {
    std::istringstream in(text);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      const std::string l = trim(line);
      if (l.empty() || l[0] == '#') continue;
      const size_t eq = l.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == l.size())
        throw UsageError("--phase-map " + path + ":" + std::to_string(lineno) + ": expected phase=REGEX, got '" + l +
                         "'");
      out.push_back({trim(l.substr(0, eq)), trim(l.substr(eq + 1))});
    }
  }
  if (out.empty()) throw UsageError("--phase-map " + path + ": no patterns");
  for (const auto& p : out) compile(p, "--phase-map " + path);
  return out;
}

void apply_phase_override(std::vector<PhasePattern>& patterns, const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw UsageError("--phase-pattern: expected phase=REGEX, got '" + spec + "'");
  PhasePattern p{spec.substr(0, eq), spec.substr(eq + 1)};
  compile(p, "--phase-pattern");
  for (auto& q : patterns)
    if (q.phase == p.phase) {
      q.regex = p.regex;
      return;
    }
  patterns.insert(patterns.begin(), p);
}

TracePhases read_trace(const std::string& path, const std::vector<PhasePattern>& patterns) {
  return read_trace(path, patterns, nullptr);
}

TracePhases read_trace(const std::string& path, const std::vector<PhasePattern>& patterns,
                       std::vector<TraceKernel>* kernels) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError("--trace " + path + ": is a directory, not a trace file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError("--trace " + path + ": cannot open (" + std::strerror(errno) + ")");
  Accumulator acc{patterns, {}, {}, {}, {}, {}, kernels};
  const EventSink sink = [&acc](const Event& e) { acc.add(e); };
  for (const auto& p : patterns) acc.res.push_back(compile(p, "--trace " + path));
  // Sniff the first non-space byte: '{' or '[' is a Chrome trace, anything else a CSV header.
  char c = 0;
  while (f.get(c) && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
  }
  if (!f) throw UsageError("--trace " + path + ": empty file");
  f.unget();
  if (c == '{' || c == '[') {
    acc.out.format = "chrome-trace";
    read_chrome(f, path, sink);
  } else {
    acc.out.format = "rocprofv3-csv";
    read_csv(f, path, sink);
  }
  if (acc.out.kernels_matched == 0)
    throw UsageError("--trace " + path + ": no kernel matched any phase pattern (" +
                     std::to_string(acc.out.kernels_unmatched) + " kernels; use --phase-pattern phase=REGEX)");
  return acc.finish();
}

}  // namespace gemmar
