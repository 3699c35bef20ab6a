// One JSON object on one line, built field by field (the testbed's TESTBED_JSON records; plain C++, no library).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

namespace gemmar::lab {

class JsonLine {
 public:
  JsonLine& add(const char* key, const std::string& v) {
    std::string q = "\"";
    for (const char c : v) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    return raw(key, q + "\"");
  }
  JsonLine& add(const char* key, const char* v) { return add(key, std::string(v)); }
  JsonLine& add(const char* key, bool v) { return raw(key, v ? "true" : "false"); }
  JsonLine& add(const char* key, int v) { return raw(key, std::to_string(v)); }
  JsonLine& add(const char* key, int64_t v) { return raw(key, std::to_string(v)); }
  // Non-finite numbers (a rate of nothing measured) are written as null.
  JsonLine& add(const char* key, double v) {
    if (!std::isfinite(v)) return raw(key, "null");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return raw(key, buf);
  }
  JsonLine& add(const char* key, const std::map<std::string, double>& v) {
    std::string o = "{";
    for (const auto& [k, x] : v) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.6g", x);
      o += (o.size() > 1 ? ", \"" : "\"") + k + "\": " + buf;
    }
    return raw(key, o + "}");
  }
  // Prints `TAG {...}` on stdout and flushes (a device call cut short keeps every line before it).
  void print(const char* tag) const {
    std::printf("%s {%s}\n", tag, body_.c_str());
    std::fflush(stdout);
  }

 private:
  JsonLine& raw(const char* key, const std::string& v) {
    body_ += (body_.empty() ? "\"" : ", \"") + std::string(key) + "\": " + v;
    return *this;
  }
  std::string body_;
};

}  // namespace gemmar::lab
