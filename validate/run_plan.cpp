#include "validate/run_plan.hpp"

#include <ostream>
#include <sstream>

#include "common/errors.hpp"
#include "model/model.hpp"

namespace gemmar {

std::vector<Config> all_configs(const Config& base) {
  std::vector<Config> out;
  auto with = [&](Mode m, WireDtype w, Transport t) {
    Config c = base;
    c.mode = m;
    c.gather_dtype = w;
    c.gather_transport = t;
    c.fuse_quantize = false;
    out.push_back(c);
  };
  with(Mode::GemmOnly, WireDtype::Bf16, Transport::Sdma);
  for (Mode m : {Mode::SplitSdma, Mode::FusedSdma, Mode::FusedLsa}) {
    with(m, WireDtype::Bf16, Transport::Sdma);
    with(m, WireDtype::Fp8, Transport::Sdma);
    with(m, WireDtype::Fp8, Transport::Lsa);
  }
  with(Mode::SplitLsa, WireDtype::Bf16, Transport::Lsa);
  return out;
}

namespace cli {

void add_run_plan_options(po::options_description& d) {
  d.add_options()
      ("backend", po::value<std::string>(), "gpu|cpu (default: gpu in a GPU build, else cpu = the CPU emulation)")
      ("all-configs", po::bool_switch()->default_value(false), "every mode, wire and transport instead of one config")
      ("m-list", po::value<std::string>(), "comma-separated M values (overrides -m), e.g. 4096,16384")
      ("inject", po::value<std::string>()->default_value("none"),
       "fault to inject: silent-puts|silent-scatter|silent-gather|stale-output|no-release|perturb-rank=R|"
       "pull-blocks=N|wire-bypassed|fnuz-as-fn (comma list)")
      ("seed", po::value<uint64_t>()->default_value(1234), "operand seed (rank r uses seed + r)")
      ("check-rows", po::value<int64_t>()->default_value(256),
       "output rows checked against the reference, stratified over every rank's slice (0 = all rows)")
      ("iterations", po::value<int>()->default_value(11), "GPU: timed replays per phase (median)")
      ("gemm-impl", po::value<std::string>()->default_value("gemmar"),
       "GPU: the GEMM of gemm-only and the split modes: gemmar|cublaslt (NVIDIA; fused modes keep gemmar's, whose "
       "epilogue pushes tiles); fused runs are also compared with cuBLASLt + the split all-reduce")
      ("profile", po::value<std::string>()->default_value(""),
       "model profile to judge against (default: h200-1gpu / h200 on NVIDIA, mi355x otherwise)");
}

std::vector<int64_t> parse_int_list(const std::string& s, const std::string& option) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    GEMMAR_USAGE_CHECK(!item.empty() && end && *end == '\0' && v > 0, option, ": '", item, "' is not a positive integer");
    out.push_back(v);
  }
  GEMMAR_USAGE_CHECK(!out.empty(), option, ": empty list");
  return out;
}

RunPlan read_run_plan(const po::variables_map& vm) {
  RunPlan p;
  p.shape = read_shape(vm);
  const Config base = read_config(vm);
  p.configs = vm["all-configs"].as<bool>() ? all_configs(base) : std::vector<Config>{base};
  p.m_values = vm.count("m-list") ? parse_int_list(vm["m-list"].as<std::string>(), "--m-list")
                                  : std::vector<int64_t>{p.shape.m};
  if (vm.count("backend")) {
    p.backend = vm["backend"].as<std::string>();
    GEMMAR_USAGE_CHECK(p.backend == "cpu" || p.backend == "gpu", "--backend: unknown value '", p.backend,
                       "' (accepted: gpu|cpu)");
  } else {
    p.backend = gpu_backend_built() ? "gpu" : "cpu";
  }
  p.inject = parse_injection(vm["inject"].as<std::string>());
  p.seed = vm["seed"].as<uint64_t>();
  p.check_rows = vm["check-rows"].as<int64_t>();
  GEMMAR_USAGE_CHECK(p.check_rows >= 0, "--check-rows: must be >= 0");
  p.iterations = vm["iterations"].as<int>();
  GEMMAR_USAGE_CHECK(p.iterations >= 1 && p.iterations <= 1000, "--iterations: must be in [1, 1000]");
  p.profile = vm["profile"].as<std::string>();
  p.gemm_impl = vm["gemm-impl"].as<std::string>();
  GEMMAR_USAGE_CHECK(p.gemm_impl == "gemmar" || p.gemm_impl == "cublaslt", "--gemm-impl: unknown value '", p.gemm_impl,
                     "' (accepted: gemmar|cublaslt)");
  validate_plan(p);
  return p;
}

}  // namespace cli

void validate_plan(const RunPlan& plan) {
  for (int64_t m : plan.m_values) {
    Shape s = plan.shape;
    s.m = m;
    for (const Config& c : plan.configs) validate_shape_config(s, c);
  }
}

std::vector<RunOutcome> execute_plan(const RunPlan& plan, std::ostream* log) {
  std::unique_ptr<Backend> backend = plan.backend == "gpu" ? make_gpu_backend() : make_cpu_backend();
  std::vector<RunOutcome> outcomes;
  int index = 0;
  for (int64_t m : plan.m_values) {
    for (const Config& c : plan.configs) {
      RunRequest r;
      r.shape = plan.shape;
      r.shape.m = m;
      r.config = c;
      r.inject = plan.inject;
      r.seed = plan.seed;
      r.ranks_per_device = plan.ranks_per_device;
      r.check_rows = plan.check_rows;
      r.iterations = plan.iterations;
      r.profile = plan.profile;
      r.gemm_impl = plan.gemm_impl;
      RunOutcome o = run_and_check(*backend, r);
      o.record.source = "run:" + std::to_string(++index);
      o.verdict.source = o.record.source;
      if (log) *log << result_json_line(o) << "\n" << std::flush;
      outcomes.push_back(std::move(o));
    }
  }
  return outcomes;
}

std::string result_json_line(const RunOutcome& o) {
  nlohmann::json j = run_record_to_json(o.record);
  j["verdict"] = o.verdict.pass ? "pass" : "fail";
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : o.verdict.findings)
    findings.push_back({{"code", f.code}, {"severity", f.severity == Severity::Error ? "error" : "warning"},
                        {"message", f.message}});
  j["findings"] = findings;
  if (o.verdict.context.contains("model")) j["model"] = o.verdict.context["model"];
  // The model's phases beside the measured ones, for the report (the verdict context carries only totals).
  try {
    const model::Profile profile = model::load_profile(o.record.profile.value_or("mi355x"));
    Config c = o.record.config;
    if (o.record.pull_blocks) c.pull_blocks = *o.record.pull_blocks;
    nlohmann::json prediction = model::to_json(model::predict(profile, o.record.shape, c));
    for (auto it = prediction.begin(); it != prediction.end(); ++it)
      if (!j["model"].contains(it.key())) j["model"][it.key()] = it.value();
  } catch (const Error&) {
    // A shape the model rejects keeps the verdict's own context; the finding already says why.
  }
  if (o.verdict.context.contains("floors")) j["floor"] = o.verdict.context["floors"];
  if (o.verdict.context.contains("phase_efficiency")) j["phase_efficiency"] = o.verdict.context["phase_efficiency"];
  return "RESULT_JSON " + dump_python_json(j);
}

nlohmann::json plan_outcomes_to_json(const RunPlan& plan, const std::vector<RunOutcome>& outcomes) {
  std::vector<Verdict> verdicts;
  for (const auto& o : outcomes) verdicts.push_back(o.verdict);
  nlohmann::json j = to_json(verdicts);
  j["backend"] = plan.backend;
  j["inject"] = plan.inject.label();
  return j;
}

}  // namespace gemmar
