// The causes behind what mori's op, test workers and wire reference raise or print (mori_verdicts.hpp), each read
// from the source line that prints it (/work/mori-notes/print-shapes.md).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "validate/verdict/judge_basis.hpp"
#include "validate/verdict/mori_verdicts.hpp"

namespace gemmar {

namespace {

using verdict_detail::sci;

// The word after `tag` in `s` (up to a space or `stop`), or empty.
std::string word_after(const std::string& s, const std::string& tag, char stop = ' ') {
  const size_t at = s.find(tag);
  if (at == std::string::npos) return "";
  size_t e = at + tag.size();
  while (e < s.size() && s[e] != ' ' && s[e] != stop) ++e;
  return s.substr(at + tag.size(), e - at - tag.size());
}

bool non_finite_text(const std::string& w) {
  if (w.empty()) return false;
  char* end = nullptr;
  const double x = std::strtod(w.c_str(), &end);
  return end != w.c_str() && !std::isfinite(x);
}

// op.py @f3bff0ae GemmAllReduceOp.self_test: "gemm_ar self-test failed: the all-reduce returned {got:g} where {want:g}
// was expected (worst relative error {worst:.3g} at M={m}, world_size={W}).{hint}", the hint about the SDMA build
// appended to every failure. A NaN result (`if not worst <= 1e-2` fails on NaN) cannot be puts that did nothing.
std::optional<ExceptionReading> self_test_nan(const std::string& ex) {
  const std::string tag = "gemm_ar self-test failed: the all-reduce returned ";
  if (ex.find(tag) == std::string::npos) return std::nullopt;
  if (!non_finite_text(word_after(ex, tag)) && !non_finite_text(word_after(ex, "(worst relative error ")))
    return std::nullopt;
  const size_t w = ex.find("world_size=");
  const size_t end = w == std::string::npos ? std::string::npos : ex.find(").", w);
  return ExceptionReading{
      end == std::string::npos ? ex : ex.substr(0, end + 2),
      "mori appends its SDMA-build hint to every self-test failure, and it is not this one's cause: puts that do "
      "nothing leave each rank its own contribution (rank + 1) or zeros, finite values, never NaN. The NaN was "
      "computed: a NaN or inf entered the reduce or the gather (an e4m3fn NaN code 0x7F/0xFF in a receive slot, a "
      "scatter scale read from the wrong offset); look at the reduce's inputs, not the build flags"};
}

// gemm_ar_wire_reference.py @f3bff0ae check_wire's RuntimeErrors: a tuple naming the check, the rank and its values.
std::optional<ExceptionReading> wire_reference(const std::string& ex) {
  if (ex.find("RuntimeError: nonfinite FP8 scatter payload/scales") == 0)
    return ExceptionReading{ex,
                            "gemm_ar_wire_reference.py's first check (:43-44): the fp8 scatter's payload or its "
                            "per-tile scales hold NaN or inf: the tile quantizer wrote non-finite values"};
  if (ex.rfind("RuntimeError: (", 0) != 0) return std::nullopt;
  const auto t = python_literal(ex.substr(14));
  if (!t || !t->is_array() || t->size() < 3 || !(*t)[0].is_string() || !(*t)[1].is_number_integer())
    return std::nullopt;
  const std::string name = (*t)[0], rank = std::to_string((*t)[1].get<long long>());
  auto num = [&](size_t i) { return i < t->size() && (*t)[i].is_number() ? sci((*t)[i].get<double>()) : "?"; };
  std::string cause;
  if (name == "FP8 tile quantization")
    cause = "the fp8 scatter's tile quantizer on rank " + rank + ": " + num(4) +
            " codes are neither amax/448 quantization's nor its neighbour at a rounding midpoint, or the tile scales "
            "are off (scale relL2 " +
            num(3) + ", tolerance 1e-6) (:57-67)";
  else if (name == "scatter reduction before gather")
    cause = "rank " + rank + "'s reduced slice is " + num(2) +
            " (relL2) from the sum of the fp8 scatter payloads actually transmitted (tolerance 1e-3, :86-87): the "
            "reduce read the wrong or stale slots, not a quantization difference";
  else if (name == "FP8 gather quantization")
    cause = "the fp8 gather's quantizer on rank " + rank + ": " + num(3) + " codes off, row scales relL2 " + num(2) +
            " (tolerance 1e-6, :110-113)";
  else if (name == "collective beyond expected quantization")
    cause = "rank " + rank + "'s output is " + num(2) +
            " (relL2) from the collective rebuilt from the bytes actually transmitted (tolerance 1e-3, :130-131): a "
            "reduce or gather moved or summed the wrong data; the fp8 rounding is already in that reference";
  else
    return std::nullopt;
  return ExceptionReading{ex, "gemm_ar_wire_reference.py @f3bff0ae check_wire: " + cause};
}

// gemm_ar_schedule_worker.py @f3bff0ae: `assert error < limit, (rank, m, sign, error)` (:147-157) and
// `assert ..., ("guard", rank)` (:186).
std::optional<ExceptionReading> schedule_worker(const std::string& ex) {
  if (ex.rfind("AssertionError: (", 0) != 0) return std::nullopt;
  const auto t = python_literal(ex.substr(16));
  if (!t || !t->is_array()) return std::nullopt;
  const std::string w = "gemm_ar_schedule_worker.py @f3bff0ae";
  if (t->size() == 2 && (*t)[0] == "guard" && (*t)[1].is_number_integer())
    return ExceptionReading{ex, w + "'s guard (:186): rank " + std::to_string((*t)[1].get<long long>()) +
                                    "'s op wrote past its window (the guard bytes after window_bytes changed): "
                                    "window_bytes_for() does not cover this schedule's layout"};
  if (t->size() != 4 || !(*t)[0].is_number_integer() || !(*t)[1].is_number_integer() || !(*t)[3].is_number())
    return std::nullopt;
  const double err = (*t)[3].get<double>();
  const long long sign = (*t)[2].is_number() ? (*t)[2].get<long long>() : 1;
  std::string cause = w + "'s replay gate (:147-157): rank " + std::to_string((*t)[0].get<long long>()) +
                      " at logical M=" + std::to_string((*t)[1].get<long long>()) +
                      (sign < 0 ? " (inputs xor-ed)" : "") + " has relL2 " + sci(err) +
                      ", over its limit (0.045 with an fp8 leg, 0.003 with both legs bf16)";
  if (std::fabs(err - 2.0) < 0.05)
    cause +=
        "; 2.0 is the output of the previous sign: the graph replayed without seeing the changed inputs (a "
        "host value or buffer baked into the capture)";
  return ExceptionReading{ex, cause};
}

}  // namespace

ExceptionReading read_mori_exception(const std::string& exception) {
  for (auto read : {self_test_nan, wire_reference, schedule_worker})
    if (auto r = read(exception)) return *r;
  return ExceptionReading{exception, ""};
}

std::string op_worker_rows_cause(const std::string& key, const nlohmann::json& rows) {
  const std::string label = key.substr(0, key.size() - 5);  // "<label>_rows"
  const long long bad = rows.value("bad_rows", 0LL);
  if (bad == 0)
    return label +
           ": no row is off by more than 5% of its largest value (_row_report's threshold), so the error is "
           "spread over every row: a scale or quantization fault, not a stale region";
  std::string s = label + ": " + std::to_string(bad) + " bad rows (" + std::to_string(rows.value("first_bad", 0LL)) +
                  ".." + std::to_string(rows.value("last_bad", 0LL)) +
                  (rows.value("contiguous", false) ? ", contiguous" : ", not contiguous") +
                  ") of M=" + std::to_string(rows.value("m", 0LL));
  if (rows.contains("matches_previous_scatter")) {
    const double diff = rows.value("max_abs_diff_vs_stale", std::nan(""));
    if (rows.value("matches_previous_scatter", false))
      return s + " hold peer 1's scatter payload from the previous M bit for bit (max |diff| " + sci(diff) +
             "): a stale scatter slot. This M's output rows alias the previous M's receive slot, so the window map "
             "moved between M values; mori pins it to m_max (test_gemm_ar_op.py @1531cfe8, "
             "test_one_instance_serves_two_m_values_in_any_order)";
    return s + ", not the previous M's scatter payload (max |diff| against it " + sci(diff) +
           "): a region read before it landed or left from another call, not the moved-map alias";
  }
  return s + (rows.value("contiguous", false) ? ": one block, a whole region read stale or never written"
                                              : ": scattered rows, a race at tile granularity");
}

bool is_schedule_worker_summary(const nlohmann::json& j) {
  return j.is_object() && !j.contains("mode") && j.contains("per_rank_max_rel_l2") && j.contains("plans");
}

namespace {

// Each wire check of the summary against gemm_ar_wire_reference.py's tolerances.
void wire_check_gates(const nlohmann::json& checks, std::string& bad) {
  struct Gate {
    const char* key;
    double limit;
    const char* where;
  };
  static const Gate gates[] = {{"wire_scale_rel_l2", 1e-6, ":57"},
                               {"wire_reduce_rel_l2", 1e-3, ":86"},
                               {"wire_gather_scale_rel_l2", 1e-6, ":110"},
                               {"wire_collective_rel_l2", 1e-3, ":130"}};
  for (const auto& w : checks) {
    if (!w.is_object()) continue;
    for (const Gate& g : gates) {
      if (!w.contains(g.key) || !w[g.key].is_number()) continue;
      const double x = w[g.key].get<double>();
      if (!(x < g.limit))
        bad += "; M=" + std::to_string(w.value("m", 0LL)) + " " + g.key + " " + sci(x) + " (>= " + sci(g.limit) + ", " +
               g.where + ")";
    }
  }
}

std::string plans_text(const nlohmann::json& plans) {
  std::string s;
  for (const auto& p : plans) {
    if (!p.is_object()) continue;
    s += (s.empty() ? "" : ", ") + std::to_string(p.value("m", 0LL)) + "->" +
         std::to_string(p.value("physical_m", 0LL)) + " (chunks " + std::to_string(p.value("chunks", 0LL)) + ", slot " +
         std::to_string(p.value("slot", 0LL)) + ")";
  }
  return s.empty() ? "none" : s;
}

}  // namespace

Verdict schedule_worker_verdict(const LogEntry& e) {
  Verdict v;
  v.source = v.record.source = e.source;
  v.record.raw = e.raw;
  v.context.invalid = v.context.other_record = true;
  const nlohmann::json& j = e.raw;
  const bool fp8 = j.value("scatter", "bf16") == "fp8" || j.value("gather", "bf16") == "fp8";
  const double limit = fp8 ? 0.045 : 0.003;
  std::string bad;
  double worst = 0;
  const auto& ranks = j["per_rank_max_rel_l2"];
  for (size_t i = 0; ranks.is_array() && i < ranks.size(); ++i) {
    const double x = ranks[i].is_number() ? ranks[i].get<double>() : std::nan("");
    if (!(x < limit))
      bad += "; rank " + std::to_string(i) + " worst replay relL2 " + sci(x) + " (>= " + sci(limit) + ")";
    if (x > worst) worst = x;
  }
  for (const char* b : {"graph_replay", "changed_inputs", "guards"})
    if (j.contains(b) && j[b] == false) bad += std::string("; ") + b + "=false";
  const nlohmann::json checks = j.value("wire_checks", nlohmann::json::array());
  if (j.value("scatter", "bf16") == "fp8" && checks.empty())
    bad += "; scatter fp8 but no wire check (the worker checks M 4200 and 8200 on an fp8 scatter)";
  wire_check_gates(checks, bad);
  const std::string what = "gemm_ar_schedule_worker.py summary (quant " + j.value("quant", std::string("?")) +
                           ", schedule " + j.value("schedule", std::string("?")) + ", scatter " +
                           j.value("scatter", std::string("?")) + ", gather " + j.value("gather", std::string("?")) +
                           ", " + std::to_string(ranks.is_array() ? ranks.size() : 0) + " ranks)";
  if (!bad.empty()) {
    v.pass = false;
    v.findings.push_back({"MORI_GATE", Severity::Error,
                          what + " fails mori's own gates (limit " + sci(limit) +
                              (fp8 ? " with an fp8 leg" : " with both legs bf16") +
                              ", :147-157; wire tolerances of "
                              "gemm_ar_wire_reference.py)" +
                              bad + "."});
    return v;
  }
  v.context.notes.push_back(what + ": worst replay relL2 " + sci(worst) + " (limit " + sci(limit) + "), plans " +
                            plans_text(j.value("plans", nlohmann::json::array())) + ", " +
                            std::to_string(checks.size()) +
                            " wire check(s) within gemm_ar_wire_reference.py's "
                            "tolerances");
  return v;
}

}  // namespace gemmar
