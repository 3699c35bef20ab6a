#include "validate/record/log_findings.hpp"

#include <cstdlib>
#include <cstring>

namespace gemmar {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.compare(0, std::strlen(prefix), prefix) == 0; }

// A non-negative integer at s[i..], advancing i; nullopt when there is none.
std::optional<int> read_int(const std::string& s, size_t& i) {
  const size_t d0 = i;
  while (i < s.size() && i - d0 < 9 && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == d0) return std::nullopt;
  return std::atoi(s.substr(d0, i - d0).c_str());
}

// `[i/N] desc`: sweep.py's header of point i (sweep.py main(): print(f"[{i}/{len(grid)}] {desc}")).
bool sweep_point_header(const std::string& line, const std::string& source, SweepLog& sw) {
  if (line.empty() || line[0] != '[') return false;
  size_t i = 1;
  const auto idx = read_int(line, i);
  if (!idx || i >= line.size() || line[i] != '/') return false;
  ++i;
  const auto total = read_int(line, i);
  if (!total || line.compare(i, 2, "] ") != 0 || *idx < 1 || *idx > *total) return false;
  sw.total = *total;
  sw.points.push_back({*idx, line.substr(i + 2), source, 0, std::nullopt});
  return true;
}

// sweep.py's closing lines: `K of N points FAILED:` and `all N points ok -> OUT`.
bool sweep_summary(const std::string& line, SweepLog& sw, bool& in_failed_summary) {
  size_t i = 0;
  if (starts_with(line, "all ")) {
    i = 4;
    const auto n = read_int(line, i);
    if (!n || line.compare(i, 11, " points ok ") != 0) return false;
    sw.summary_all_ok = true;
    sw.total = *n;
    const size_t arrow = line.find("-> ", i);
    if (arrow != std::string::npos) sw.out_path = line.substr(arrow + 3);
    return true;
  }
  const auto k = read_int(line, i);
  if (!k || line.compare(i, 4, " of ") != 0) return false;
  i += 4;
  const auto n = read_int(line, i);
  if (!n || line.compare(i, 15, " points FAILED:") != 0) return false;
  sw.summary_failed = *k;
  sw.total = *n;
  in_failed_summary = true;
  return true;
}

}  // namespace

std::optional<RankValidationFailure> rank_validation_line(const std::string& payload, const std::string& source) {
  // bench_gemm_ar.py: print(f"[rank {rank}] VALIDATION FAILED relL2={rel_l2:.3e}") and, gemm-only,
  // print(f"[rank {rank}] GEMM VALIDATION FAILED relL2={rel_l2:.3e}").
  if (!starts_with(payload, "[rank ")) return std::nullopt;
  size_t i = 6;
  const auto rank = read_int(payload, i);
  if (!rank || payload.compare(i, 2, "] ") != 0) return std::nullopt;
  i += 2;
  RankValidationFailure f;
  f.rank = *rank;
  f.source = source;
  if (payload.compare(i, 5, "GEMM ") == 0) {
    f.gemm_only = true;
    i += 5;
  }
  constexpr const char* kTag = "VALIDATION FAILED relL2=";
  if (payload.compare(i, std::strlen(kTag), kTag) != 0) return std::nullopt;
  const char* num = payload.c_str() + i + std::strlen(kTag);
  char* end = nullptr;
  f.rel_l2 = std::strtod(num, &end);
  if (end == num) return std::nullopt;
  return f;
}

bool embedded_result_json(const std::string& line, size_t marker_pos) {
  // print("RESULT_JSON " + ...) starts its line; sweep.py and the pytest helpers only read lines that start
  // with it. Inside a repr the marker follows an escaped newline ("\n") or the opening quote of stdout='...'.
  if (marker_pos == 0) return false;
  const char before = line[marker_pos - 1];
  if (before == '\'' || before == '"') return true;
  return marker_pos >= 2 && before == 'n' && line[marker_pos - 2] == '\\';
}

bool read_context_line(const std::string& payload, std::optional<int> rank, const std::string& source,
                       LogContext& ctx) {
  SweepLog& sw = ctx.sweep;
  if (auto f = rank_validation_line(payload, source)) {
    ctx.pending_rank_failures.push_back(*f);
    return true;
  }
  if (read_mori_line(payload, source, ctx.mori)) return true;
  if (rank) return false;  // sweep.py's lines are its own, never a rank's
  if (starts_with(payload, "# preset ")) {
    const size_t colon = payload.find(':', 9);
    if (colon == std::string::npos) return false;
    sw.preset = payload.substr(9, colon - 9);
    const size_t arrow = payload.find("-> ", colon);
    if (arrow != std::string::npos) sw.out_path = payload.substr(arrow + 3);
    sw.last_source = source;
    return true;
  }
  if (sweep_point_header(payload, source, sw) || sweep_summary(payload, sw, ctx.in_failed_summary)) {
    sw.last_source = source;
    return true;
  }
  if (sw.points.empty()) return false;
  if (payload == "  ok") {
    ++sw.points.back().ok_lines;
    return true;
  }
  if (starts_with(payload, "  FAILED: ")) {
    sw.points.back().failure = payload.substr(10);
    sw.last_source = source;
    return true;
  }
  return ctx.in_failed_summary && starts_with(payload, "  ");
}

}  // namespace gemmar
