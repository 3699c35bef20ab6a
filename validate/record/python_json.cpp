#include "validate/record/python_json.hpp"

#include <cmath>
#include <limits>

#include "common/json_text.hpp"

namespace gemmar {

namespace {

// Non-finite tokens are swapped for strings no benchmark writes, then swapped back to doubles after the
// parse: nlohmann's grammar is strict JSON and offers no hook for them.
constexpr const char* kNanSentinel = "\x01gemmar:NaN";
constexpr const char* kPosInfSentinel = "\x01gemmar:+Inf";
constexpr const char* kNegInfSentinel = "\x01gemmar:-Inf";
// As JSON text the control character must be escaped.
std::string sentinel_text(const char* sentinel) { return std::string("\"\\u0001") + (sentinel + 1) + "\""; }

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

std::string substitute_non_finite(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 16);
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    const bool boundary_before = i == 0 || !is_word_char(text[i - 1]);
    auto token_at = [&](const char* tok, size_t len) {
      return boundary_before && text.compare(i, len, tok) == 0 &&
             (i + len >= text.size() || !is_word_char(text[i + len]));
    };
    if (token_at("NaN", 3)) {
      out += sentinel_text(kNanSentinel);
      i += 2;
    } else if (token_at("Infinity", 8)) {
      out += sentinel_text(kPosInfSentinel);
      i += 7;
    } else if (token_at("-Infinity", 9)) {
      out += sentinel_text(kNegInfSentinel);
      i += 8;
    } else {
      out += c;
    }
  }
  return out;
}

void restore_non_finite(nlohmann::json& j) {
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == kNanSentinel)
      j = std::numeric_limits<double>::quiet_NaN();
    else if (s == kPosInfSentinel)
      j = std::numeric_limits<double>::infinity();
    else if (s == kNegInfSentinel)
      j = -std::numeric_limits<double>::infinity();
  } else if (j.is_structured()) {
    for (auto& v : j) restore_non_finite(v);
  }
}

void dump_into(const nlohmann::json& j, std::string& out) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (std::isnan(v)) {
      out += "NaN";
      return;
    }
    if (std::isinf(v)) {
      out += v > 0 ? "Infinity" : "-Infinity";
      return;
    }
  }
  if (j.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += json_text(nlohmann::json(it.key()));
      out += ": ";
      dump_into(it.value(), out);
    }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    bool first = true;
    for (const auto& v : j) {
      if (!first) out += ", ";
      first = false;
      dump_into(v, out);
    }
    out += ']';
  } else {
    out += json_text(j);
  }
}

}  // namespace

nlohmann::json parse_python_json(const std::string& text) {
  auto j = nlohmann::json::parse(substitute_non_finite(text));
  restore_non_finite(j);
  return j;
}

std::string dump_python_json(const nlohmann::json& j) {
  std::string out;
  dump_into(j, out);
  return out;
}

}  // namespace gemmar
