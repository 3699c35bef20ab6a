#include "validate/harness/run_plan.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <ostream>
#include <set>
#include <sstream>

#include "common/errors.hpp"
#include "model/model.hpp"
#include "validate/harness/cpu_threads.hpp"
#include "validate/harness/output_check.hpp"

namespace gemmar {

std::vector<Config> all_configs(const Config& base) {
  std::vector<Config> out;
  for (const ModeTraits& t : kModeTable) {
    Config c = base;
    c.mode = t.mode;
    c.fuse_quantize = false;
    c.gather_dtype = WireDtype::Bf16;
    c.gather_transport = t.collective && !t.fp8_wire ? Transport::Lsa : Transport::Sdma;
    out.push_back(c);
    if (!t.collective || !t.fp8_wire) continue;
    c.gather_dtype = WireDtype::Fp8;
    out.push_back(c);
    c.gather_transport = Transport::Lsa;
    out.push_back(c);
  }
  return out;
}

void validate_plan(const RunPlan& plan) {
  std::vector<FaultScope> scopes;
  for (int64_t m : plan.m_values) {
    Shape s = plan.request.shape;
    s.m = m;
    for (const Config& c : plan.configs) {
      validate_shape_config(s, c);
      scopes.push_back({c, s, plan.request.iterations});
    }
  }
  check_faults_act(plan.request.inject, scopes);
}

std::vector<RunOutcome> execute_plan(const RunPlan& plan, std::ostream* log, const PlanObserver& observer) {
  if (plan.backend == "python")
    return execute_python_plan(plan, log, &std::cerr, observer);  // the same progress lines as the C++ backends
  std::unique_ptr<Backend> backend = plan.backend == "gpu" ? make_gpu_backend() : make_cpu_backend();
  std::vector<RunOutcome> outcomes;
  int index = 0;
  for (int64_t m : plan.m_values) {
    for (const Config& c : plan.configs) {
      const auto t0 = std::chrono::steady_clock::now();
      fit_threads_to_free_cores();
      RunRequest r = plan.request;
      r.shape.m = m;
      r.config = c;
      if (!r.dump_dir.empty() && plan.m_values.size() * plan.configs.size() > 1) {
        std::string label = config_label(c);
        for (char& ch : label)
          if (ch == '/') ch = '-';
        r.dump_dir += "/run" + std::to_string(index + 1) + "-" + label + "-m" + std::to_string(m);
      }
      RunOutcome o = run_and_check(*backend, r);
      if (!plan.baseline.empty()) {
        // The record and what it was judged against, plus the baseline: the same judge as `gemmar check
        // --baseline` over this run's RESULT_JSON line.
        o.expectations.baseline = plan.baseline;
        o.verdict = judge(o.record, o.expectations);
      }
      o.record.source = "run:" + std::to_string(++index);
      o.verdict.source = o.record.source;
      if (log) *log << result_json_line(o) << "\n" << std::flush;
      if (observer)
        observer(o, size_t(index - 1), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      outcomes.push_back(std::move(o));
    }
  }
  return outcomes;
}

int64_t plan_memory_bytes(const RunPlan& plan) {
  const RunRequest& req = plan.request;
  const double W = req.shape.world, N = double(req.shape.n), K = double(req.shape.k);
  const int every = std::max(1, req.check_every);
  const double checked = double((std::max(1, req.iterations) + every - 1) / every);
  std::vector<double> shared;
  double run_peak = 0, operands = 0;
  bool gemm_only = false;  // its views are judged against each rank's fp32 partial, kept with the shared ones
  for (const Config& c : plan.configs) gemm_only = gemm_only || !has_collective(c.mode);
  for (int64_t m : plan.m_values) {
    std::set<Quant> quants;
    for (const Config& c : plan.configs) quants.insert(c.quant);
    for (Quant q : quants) {
      Shape s = req.shape;
      s.m = m;
      const double R = double(output_check::rows_to_check(s, q, req.check_rows, req.seed).size());
      shared.push_back((gemm_only ? 12 : 8) * W * R * N + 4 * R * N);
      run_peak = std::max(run_peak, (14 + 2 * checked) * W * R * N);
      operands = std::max(operands, W * (N + R) * K);
    }
  }
  std::sort(shared.rbegin(), shared.rend());
  double kept = 0;
  for (size_t i = 0; i < shared.size() && i < 3; ++i) kept += shared[i];
  return int64_t((64 << 20) + operands + kept + run_peak);
}

std::string result_json_line(const RunOutcome& o) {
  nlohmann::json j = run_record_to_json(o.record);
  j["verdict"] = o.verdict.pass ? "pass" : "fail";
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : o.verdict.findings)
    findings.push_back({{"code", f.code}, {"severity", to_string(f.severity)}, {"message", f.message}});
  j["findings"] = findings;
  // What the judge used: the model's prediction (phases beside the measured ones, for the report) and floors.
  const nlohmann::json context = to_json(o.verdict.context);
  if (context.contains("model")) j["model"] = context["model"];
  if (o.expectations.prediction) {
    const nlohmann::json prediction = model::to_json(*o.expectations.prediction);
    for (auto it = prediction.begin(); it != prediction.end(); ++it)
      if (!j["model"].contains(it.key())) j["model"][it.key()] = it.value();
  }
  if (context.contains("floors")) j["floor"] = context["floors"];
  if (context.contains("phase_efficiency")) j["phase_efficiency"] = context["phase_efficiency"];
  return "RESULT_JSON " + dump_python_json(j);
}

nlohmann::json plan_outcomes_to_json(const RunPlan& plan, const std::vector<RunOutcome>& outcomes) {
  std::vector<Verdict> verdicts;
  for (const auto& o : outcomes) verdicts.push_back(o.verdict);
  nlohmann::json j = to_json(verdicts);
  j["backend"] = plan.backend;
  j["inject"] = plan.request.inject.label();
  if (plan.backend == "python") {
    nlohmann::json declined = nlohmann::json::array();
    for (const Config& c : plan.python.declined) declined.push_back(config_label(c));
    j["python"] = {{"impl", plan.python.options.impl},         {"name", plan.python.impl.name},
                   {"placement", plan.python.impl.placement},  {"device", plan.python.impl.device},
                   {"launcher", plan.python.launcher},         {"spawn", plan.python.spawn},
                   {"queue_wait_s", plan.python.queue_wait_s}, {"declined", declined}};
  }
  return j;
}

}  // namespace gemmar
