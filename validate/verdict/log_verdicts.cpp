#include "validate/verdict/log_verdicts.hpp"

#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "validate/verdict/mori_verdicts.hpp"

namespace gemmar {

namespace {

// test_gemm_ar_op.py: FP8_FLOOR = 3e-3, "the fp8 floor for these operands"; every case's relL2 is gated on it.
constexpr double kOpWorkerFloor = 3e-3;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// `v` as mori writes its constants: 3e-3, 1.5e-2 (shortest mantissa, no padded exponent).
std::string short_sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  std::string s = buf;
  const size_t e = s.find('e');
  std::string mant = s.substr(0, e);
  while (mant.find('.') != std::string::npos && (mant.back() == '0' || mant.back() == '.')) mant.pop_back();
  return mant + "e" + std::to_string(std::stoi(s.substr(e + 1)));
}

Verdict log_entry(const std::string& source, bool pass, const std::string& code, Severity sev,
                  const std::string& message) {
  Verdict v;
  v.source = source;
  v.pass = pass;
  v.record.source = source;
  v.context.invalid = true;
  v.context.log_level = true;
  v.findings.push_back({code, sev, message});
  return v;
}

// The failure that says most: an exception the benchmark raised, else the first.
const LogFailure& headline(const std::vector<LogFailure>& failures) {
  for (const auto& f : failures)
    if (f.kind == "traceback" && !f.exception.empty()) return f;
  return failures.front();
}

bool exit_by_design(const std::vector<LogFailure>& failures) {
  bool exit_one = false;
  for (const auto& f : failures) {
    if (f.kind == "exit_code") {
      if (f.exit_code != 1 || (f.exit_rank && *f.exit_rank != 0)) return false;
      exit_one = true;
    } else if (f.kind != "child_failed") {
      return false;  // an exception, a crash, the stale-queue failure: not by design
    }
  }
  return exit_one;
}

}  // namespace

bool is_log_level(const Verdict& v) { return v.context.log_level; }
bool is_other_record(const Verdict& v) { return v.context.other_record; }

Verdict benchmark_failed_verdict(const std::vector<LogFailure>& failures, bool run_not_validated) {
  if (run_not_validated && exit_by_design(failures))
    return log_entry(failures.front().source, true, "BENCHMARK_EXIT", Severity::Warning,
                     "rank 0 exited 1 by design: bench_gemm_ar.py returns 1 after a finished run whose validated is "
                     "false, and torchrun reports that exit (ChildFailedError). No exception was raised; the run's "
                     "NOT_VALIDATED finding says what failed.");
  const LogFailure& first = headline(failures);
  // mori's exception, with the cause its own words leave out (or get wrong: the self-test's SDMA hint on a NaN).
  const ExceptionReading ex = read_mori_exception(first.exception);
  std::string what =
      first.kind == "traceback" && !first.exception.empty() ? "the benchmark raised " + ex.quoted : first.what;
  while (!what.empty() && (what.back() == '.' || what.back() == ' ')) what.pop_back();  // an exception's own period
  std::string msg = "The benchmark run failed: " + what + (first.exception.empty() ? " ('" + first.line + "')" : "");
  if (!ex.cause.empty()) msg += " (" + ex.cause + ")";
  std::set<std::string> kinds{first.kind};
  for (const auto& f : failures) {
    if (!kinds.insert(f.kind).second) continue;
    msg += "; also " + f.what + " at " + f.source;
  }
  msg += ". Its RESULT_JSON lines (if any) do not describe a finished run: fix the failure and rerun.";
  return log_entry(first.source, false, "BENCHMARK_FAILED", Severity::Error, msg);
}

std::vector<Verdict> log_level_verdicts(const LogReadStats& st, const std::string& name, bool run_not_validated) {
  std::vector<Verdict> out;
  const std::vector<LogFailure> failures = failures_unexplained(st.failures, st.context.mori);
  if (!failures.empty()) out.push_back(benchmark_failed_verdict(failures, run_not_validated));
  if (st.context.sweep.seen()) out.push_back(sweep_verdict(st.context.sweep, name));
  for (auto& v : mori_log_verdicts(st.context.mori, name)) out.push_back(std::move(v));
  return out;
}

Verdict sweep_verdict(const SweepLog& sw, const std::string& name) {
  const std::string preset = sw.preset.empty() ? "" : " (preset " + sw.preset + ")";
  std::string failed;
  int n_failed = 0, ok_records = 0;
  for (const auto& p : sw.points) {
    ok_records += p.ok_lines;
    if (!p.failure) continue;
    ++n_failed;
    if (n_failed > 20) continue;
    failed += (failed.empty() ? "" : "; ") + std::string("[") + std::to_string(p.index) + "/" +
              std::to_string(sw.total) + "] " + p.desc + ": " + *p.failure + " (" + p.source + ")";
    if (const auto f = failure_in_line(*p.failure, p.source); f && f->kind == "stale_queue") failed += ", " + f->what;
  }
  if (n_failed > 20) failed += "; ...";
  const int summary_failed = sw.summary_failed.value_or(0);
  const std::string where = sw.last_source.empty() ? name : sw.last_source;
  if (n_failed > 0 || summary_failed > 0) {
    const int count = std::max(n_failed, summary_failed);
    std::string msg = "sweep.py" + preset + ": " + std::to_string(count) + " of " + std::to_string(sw.total) +
                      " points FAILED" + (failed.empty() ? " (their lines are not in this log)" : ": " + failed) +
                      ". sweep.py exits with the number of failed points; rerun a failed point alone to see its "
                      "whole output" +
                      (sw.out_path.empty() ? "" : ", and judge the points that ran with gemmar check " + sw.out_path) +
                      ".";
    return log_entry(where, false, "SWEEP_FAILED", Severity::Error, msg);
  }
  const int seen = int(sw.points.size());
  if (!sw.summary_all_ok && seen < sw.total)
    return log_entry(where, false, "SWEEP_FAILED", Severity::Error,
                     "sweep.py" + preset + ": the stdout stops after point " + std::to_string(seen) + " of " +
                         std::to_string(sw.total) + " with no summary line: the sweep was killed or its output cut.");
  return log_entry(where, true, "SWEEP_STDOUT", Severity::Warning,
                   "sweep.py" + preset + " stdout: all " + std::to_string(sw.total) + " points ok (" +
                       std::to_string(ok_records) +
                       " RESULT_JSON lines reported as ok). This stdout holds no records: "
                       "they are in " +
                       (sw.out_path.empty() ? "the sweep's --out .jsonl" : sw.out_path) +
                       "; run gemmar check on that file to judge them.");
}

namespace {

// Who writes a row keyed by `route` (see other_record_verdict): what it measures, and the script.
std::pair<std::string, std::string> route_producer(const std::string& route) {
  const auto starts = [&](const char* p) { return route.rfind(p, 0) == 0; };
  if (starts("mori-")) return {"mori's single-process GEMM benchmark", "bench_mori_gemm_1p.py"};
  if (starts("prod-bf16") || starts("native-mxfp8")) return {"sglang's wo_b GEMM routes", "bench_sglang_wob.py"};
  if (starts("aiter-")) return {"aiter's blockscale GEMM", "bench_aiter_blockscale.py"};
  return {"a single-process GEMM benchmark",
          "a route row as bench_mori_gemm_1p.py, bench_sglang_wob.py and bench_aiter_blockscale.py write"};
}

// An op worker case (gemm_ar_op_worker.py @54e74a02) as test_gemm_ar_op.py @1531cfe8 judges it: every top-level
// boolean true, every relL2 (a float) below FP8_FLOOR; the `<label>_rows` diagnostics name the cause.
void op_worker_case(const LogEntry& e, const std::string& c, Verdict& v) {
  std::string bad, rows;
  for (const auto& [k, val] : e.raw.items()) {
    if (val.is_boolean() && !val.get<bool>()) bad += (bad.empty() ? "" : ", ") + k + "=false";
    // A relL2 is a Python float; an integer (mxfp8's "m": 512, @54e74a02) is a shape, never gated.
    if (val.is_number_float() && !(val.get<double>() < kOpWorkerFloor))
      bad += (bad.empty() ? "" : ", ") + k + "=" + num(val.get<double>()) + " (>= " + short_sci(kOpWorkerFloor) + ")";
    if (val.is_object() && k.size() > 5 && k.compare(k.size() - 5, 5, "_rows") == 0)
      rows += " " + op_worker_rows_cause(k, val) + ".";
  }
  if (bad.empty()) {
    v.context.notes = std::vector<std::string>(
        {"op worker case " + c + ": every check passes (booleans true, relL2 below test_gemm_ar_op.py's FP8_FLOOR " +
         short_sci(kOpWorkerFloor) + ")"});
    return;
  }
  std::string msg = "op worker case " + c + " failed test_gemm_ar_op.py's checks: " + bad + "." + rows;
  if (c == "mxfp8" && e.raw.contains("rel_l2") && e.raw["rel_l2"].is_number()) {
    const double rel = e.raw["rel_l2"].get<double>();
    if (std::isnan(rel) || std::fabs(rel - 1.0) <= 0.05 || std::fabs(rel - 0.5) <= 0.025)
      msg += " " + mxfp8_scale_hint(std::isnan(rel)) + ".";
  }
  const double rel = e.raw.value("rel_l2", 0.0);
  if (c == "scale_order" && rel >= 0.17 && rel <= 0.32)
    msg += " relL2 " + num(rel) +
           " is the wrong-scale-order signature (0.26 before mori's fix: the column-major "
           "[M, K/128] A scale flattened with reshape(-1)): check _flatten_a_scale.";
  if (c == "self_test" && e.raw.value("detects_missing_scatter", true) == false)
    msg +=
        " The self-test's check has no teeth: it cannot see an inert scatter (a mori built with "
        "BUILD_CCO_SDMA=OFF would pass it).";
  if (c == "self_test" && e.raw.value("passes_on_working_stack", true) == false)
    msg +=
        " The self-test fails on this stack: check that mori was built with BUILD_CCO_SDMA=ON and that "
        "MORI_ENABLE_SDMA=1 is set.";
  v.pass = false;
  v.findings.push_back({"SELF_TEST_FAILED", Severity::Error, msg});
}

}  // namespace

Verdict other_record_verdict(const LogEntry& e) {
  Verdict v;
  v.source = e.source;
  v.record.source = e.source;
  v.record.raw = e.raw;
  v.context.invalid = true;
  v.context.other_record = true;
  const std::string c =
      e.raw.is_object() && e.raw.contains("case") && e.raw["case"].is_string() ? e.raw["case"].get<std::string>() : "";
  const std::string route = e.raw.is_object() && e.raw.contains("route") && e.raw["route"].is_string()
                                ? e.raw["route"].get<std::string>()
                                : "";
  if (c.empty() && !route.empty()) {
    // A single-process GEMM benchmark's row (no all-reduce, no validated field of its own), its producer told by
    // the route: bench_mori_gemm_1p.py writes "mori-<quant>-1p", bench_sglang_wob.py sglang's "prod-bf16(...)"
    // and "native-mxfp8(...)", bench_aiter_blockscale.py "aiter-blockscale" (ROCm/mori
    // benchmark/cco/flydsl/gemm_ar/, @4f4e3e91 and @d5c0277d).
    std::string what = "route " + route;
    for (const char* k : {"m", "n", "k"})
      if (e.raw.contains(k) && e.raw[k].is_number_integer())
        what += std::string(", ") + k + "=" + std::to_string(e.raw[k].get<long long>());
    if (e.raw.contains("us") && e.raw["us"].is_number()) {
      char us[32];
      std::snprintf(us, sizeof us, ", %.1f us", e.raw["us"].get<double>());
      what += us;
    }
    const auto [who, script] = route_producer(route);
    v.findings.push_back({"OTHER_RECORD", Severity::Warning,
                          "A record of " + who + " (" + what + "; " + script +
                              "): the GEMM alone, not a gemm_ar run; listed, not judged."});
    return v;
  }
  if (c.empty() && is_schedule_worker_summary(e.raw)) return schedule_worker_verdict(e);
  if (c.empty()) {
    std::string keys;
    if (e.raw.is_object())
      for (const auto& [k, val] : e.raw.items()) keys += (keys.empty() ? "" : ", ") + k;
    v.findings.push_back({"OTHER_RECORD", Severity::Warning,
                          "A JSON object without mode (keys: " + (keys.empty() ? "none" : keys) +
                              "): not a gemm_ar run record; listed, not judged."});
    return v;
  }
  op_worker_case(e, c, v);
  return v;
}

}  // namespace gemmar
