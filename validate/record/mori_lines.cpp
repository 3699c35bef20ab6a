#include "validate/record/mori_lines.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "common/config.hpp"
#include "validate/record/python_json.hpp"

namespace gemmar {

namespace {

bool starts_with(const std::string& s, const char* prefix, size_t at = 0) {
  return s.compare(at, std::strlen(prefix), prefix) == 0;
}

size_t skip_spaces(const std::string& s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i;
}

// The whitespace-separated tokens of s[from..].
std::vector<std::string> tokens(const std::string& s, size_t from) {
  std::vector<std::string> out;
  size_t i = skip_spaces(s, from);
  while (i < s.size()) {
    size_t e = i;
    while (e < s.size() && s[e] != ' ' && s[e] != '\t') ++e;
    out.push_back(s.substr(i, e - i));
    i = skip_spaces(s, e);
  }
  return out;
}

std::optional<long long> as_int(const std::string& v) {
  if (v.empty() || v.size() > 12) return std::nullopt;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (*end != '\0' || x < 0) return std::nullopt;
  return x;
}

// A float as Python's format spec prints it (`:9.1f`, `:.2e`, nan and inf included).
std::optional<double> as_double(const std::string& v) {
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return x;
}

// `key=value` among the tokens, its value.
std::optional<std::string> keyed(const std::vector<std::string>& toks, const char* key) {
  const std::string prefix = std::string(key) + "=";
  for (const auto& t : toks)
    if (t.rfind(prefix, 0) == 0) return t.substr(prefix.size());
  return std::nullopt;
}

bool is_mode_name(const std::string& s) {
  try {
    (void)parse_mode(s, "mode");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// `<value> us  relL2=<x>` at the end of the tokens: the time and the relL2.
bool time_and_rel(const std::vector<std::string>& toks, size_t at, nlohmann::json& j) {
  if (toks.size() != at + 3 || toks[at + 1] != "us" || toks[at + 2].rfind("relL2=", 0) != 0) return false;
  const auto t = as_double(toks[at]);
  const auto rel = as_double(toks[at + 2].substr(6));
  if (!t || !rel) return false;
  j["max_rank_time_us"] = *t;
  j["rel_l2"] = *rel;
  return true;
}

constexpr const char* kHuman = "[gemm_ar] ";

// mori's refusals, by the words it prints (bench_gemm_ar.py @d5443336 :281-285 and :287-288; sweep.py @4488353a
// require_sdma :199-216). The ValueError arrives as a traceback's last line.
std::optional<MoriRefusal> refusal(const std::string& payload) {
  struct Known {
    const char* kind;
    const char* text;
  };
  static const Known known[] = {
      {"split_lsa_fp8_gather", "--mode split-lsa has no fp8 gather leg"},
      {"fp8_scatter_not_fused", "ValueError: FP8 scatter experiment is wired only through fused-sdma"},
      {"sdma_compiled_out", "BUILD_CCO_SDMA is OFF -- the SDMA path is compiled out"},
  };
  for (const Known& k : known)
    if (starts_with(payload, k.text)) return MoriRefusal{k.kind, payload, "", 1};
  return std::nullopt;
}

// pytest's `E       AssertionError: fused-sdma (1180.3 us) did not beat split-sdma (1150.2 us). ...`.
std::optional<OrderingGate> ordering_assertion(const std::string& payload) {
  const char* tag = "AssertionError: fused-sdma (";
  const size_t at = payload.find(tag);
  if (at == std::string::npos) return std::nullopt;
  const char* p = payload.c_str() + at + std::strlen(tag);
  char* end = nullptr;
  const double f = std::strtod(p, &end);
  const char* mid = " us) did not beat split-sdma (";
  if (end == p || std::strncmp(end, mid, std::strlen(mid)) != 0) return std::nullopt;
  p = end + std::strlen(mid);
  const double s = std::strtod(p, &end);
  if (end == p) return std::nullopt;
  return OrderingGate{f, s, "", true};
}

std::optional<GatherWireCheck> gather_wire_check(const std::string& payload) {
  const char* tag = "GATHER_WIRE_CHECK ";
  if (!starts_with(payload, tag)) return std::nullopt;
  size_t i = std::strlen(tag);
  size_t e = i;
  while (e < payload.size() && payload[e] >= '0' && payload[e] <= '9') ++e;
  const auto rank = as_int(payload.substr(i, e - i));
  if (!rank) return std::nullopt;
  const auto stats = python_literal(payload.substr(e));
  if (!stats || !stats->is_object()) return std::nullopt;
  return GatherWireCheck{int(*rank), *stats, ""};
}

}  // namespace

std::optional<nlohmann::json> python_literal(const std::string& text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\'' || c == '"') {  // a Python string: re-quoted for JSON
      std::string s;
      size_t k = i + 1;
      for (; k < text.size() && text[k] != c; ++k) {
        if (text[k] == '\\' && k + 1 < text.size()) ++k;
        s += text[k];
      }
      if (k >= text.size()) return std::nullopt;
      out += nlohmann::json(s).dump();
      i = k + 1;
    } else if (c == '(' || c == ')') {  // a tuple is an array
      out += c == '(' ? '[' : ']';
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {  // a number, exponent included
      size_t k = i;
      while (k < text.size() && text[k] != '\0' && std::strchr("0123456789.eE+-", text[k])) ++k;
      out += text.substr(i, k - i);
      i = k;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      size_t k = i;
      while (k < text.size() && std::isalnum(static_cast<unsigned char>(text[k]))) ++k;
      const std::string word = text.substr(i, k - i);
      if (word == "nan")
        out += "NaN";
      else if (word == "inf")
        out += "Infinity";
      else if (word == "True" || word == "False" || word == "None")
        out += word == "True" ? "true" : word == "False" ? "false" : "null";
      else
        return std::nullopt;
      i = k;
    } else {
      out += c;
      ++i;
    }
  }
  try {
    return parse_python_json(out);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

bool read_mori_line(const std::string& payload, const std::string& source, MoriLog& log) {
  if (auto r = refusal(payload)) {
    for (auto& seen : log.refusals)
      if (seen.kind == r->kind) {  // every rank prints it: one refusal
        ++seen.lines;
        return true;
      }
    r->source = source;
    log.refusals.push_back(std::move(*r));
    return true;
  }
  if (auto g = ordering_assertion(payload)) {
    // pytest quotes the assertion twice: its E line and the short test summary's FAILED line.
    for (const auto& seen : log.ordering)
      if (seen.from_assertion && seen.fused_us == g->fused_us && seen.split_us == g->split_us) return true;
    g->source = source;
    log.ordering.push_back(*g);
    return true;
  }
  if (auto w = gather_wire_check(payload)) {
    w->source = source;
    log.gather_wire_checks.push_back(std::move(*w));
    return true;
  }
  for (const char* tag : {"# occupancy before: ", "# occupancy after: "}) {
    if (!starts_with(payload, tag)) continue;
    std::string value = payload.substr(std::strlen(tag));
    const size_t unit = value.rfind(" GiB/card");
    if (unit != std::string::npos) value.resize(unit);
    (tag[12] == 'b' ? log.occupancy_before : log.occupancy_after) = value;
    return true;
  }
  if (starts_with(payload, "# NOTE: occupancy moved across the sweep")) {
    log.occupancy_note = source;
    return true;
  }
  return false;
}

std::optional<nlohmann::json> pytest_bench_record(const std::string& payload) {
  if (!starts_with(payload, kHuman)) return std::nullopt;
  const auto toks = tokens(payload, std::strlen(kHuman));
  // mode, m=, n=, k=, quant=, <us>, us, relL2=
  if (toks.size() != 8 || !is_mode_name(toks[0])) return std::nullopt;
  nlohmann::json j = {{"mode", toks[0]}, {"printed_by", "test_gemm_ar_bench.py"}};
  for (const char* key : {"m", "n", "k"}) {
    const auto v = keyed({toks[size_t(1)], toks[2], toks[3]}, key);
    const auto x = v ? as_int(*v) : std::nullopt;
    if (!x) return std::nullopt;
    j[key] = *x;
  }
  const auto quant = keyed({toks[4]}, "quant");
  if (!quant || quant->empty()) return std::nullopt;
  j["quant"] = *quant;
  if (!time_and_rel(toks, 5, j)) return std::nullopt;
  return j;
}

std::optional<ModelShapeHeader> pytest_model_shape_header(const std::string& payload) {
  const char* tag = "[gemm_ar] model shape ";
  if (!starts_with(payload, tag)) return std::nullopt;
  const auto toks = tokens(payload, std::strlen(tag));
  if (toks.size() != 3) return std::nullopt;
  ModelShapeHeader h;
  long long* dims[] = {&h.m, &h.n, &h.k};
  const char* keys[] = {"m", "n", "k"};
  for (int i = 0; i < 3; ++i) {
    const auto v = keyed({toks[size_t(i)]}, keys[i]);
    const auto x = v ? as_int(*v) : std::nullopt;
    if (!x) return std::nullopt;
    *dims[i] = *x;
  }
  return h;
}

std::optional<nlohmann::json> pytest_model_shape_row(const std::string& payload, const ModelShapeHeader& h) {
  if (payload.empty() || payload[0] != ' ') return std::nullopt;
  const auto toks = tokens(payload, 0);
  if (toks.size() != 4 || !is_mode_name(toks[0])) return std::nullopt;
  // _run(mode=..., **MODEL_SHAPE) takes _run's default quant, blockscale (test_gemm_ar_bench.py @e7606746 :60).
  nlohmann::json j = {{"mode", toks[0]},
                      {"m", h.m},
                      {"n", h.n},
                      {"k", h.k},
                      {"quant", "blockscale"},
                      {"printed_by", "test_gemm_ar_bench.py"}};
  if (!time_and_rel(toks, 1, j)) return std::nullopt;
  return j;
}

bool pytest_model_shape_end(const std::string& payload) {
  const size_t p = skip_spaces(payload, 0);
  return p > 0 && starts_with(payload, "fused is ", p) && payload.find("% against split") != std::string::npos;
}

}  // namespace gemmar
