// gemmar selftest (docs/spec.md 4; docs/reliability.md): the transport self-test. Every rank's window holds rank+1, one
// scatter/reduce/gather runs per mode, wire and transport, and every element of every rank's output must equal
// W(W+1)/2 exactly: a silent transport fails in milliseconds, before any timing, with a message naming the leg.
// `gemmar validate` runs it first.
#include <iostream>
#include <sstream>

#include "common/errors.hpp"
#include "common/json_text.hpp"
#include "validate/cli/cli.hpp"
#include "validate/cli/selftest.hpp"
#include "validate/harness/run_driver.hpp"
#include "validate/harness/run_plan.hpp"

namespace gemmar::cli {

std::vector<SelftestResult> selftest_all(Backend& backend, const Shape& shape, const Config& base, const Faults& f) {
  std::vector<SelftestResult> out;
  for (const Config& c : all_configs(base)) {
    if (!has_collective(c.mode)) continue;  // gemm-only moves nothing
    out.push_back(run_selftest(backend, shape, c, f));
  }
  return out;
}

Shape selftest_shape(int world, Quant q) {
  // One BLOCK_M of rows per rank, N = 1024 (the fp8 wire's multiple), K = 128 (one scale block).
  return Shape{int64_t(world) * block_m(q), 1024, 128, world};
}

std::string selftest_report(const std::vector<SelftestResult>& results) {
  std::ostringstream o;
  for (const auto& r : results) {
    o << "selftest " << config_label(r.config) << ": " << (r.pass ? "pass" : "FAIL") << " (" << r.checked_elements
      << " elements, " << r.seconds * 1e3 << " ms)";
    if (!r.pass) o << "\n  " << r.message;
    o << "\n";
  }
  return o.str();
}

nlohmann::json selftest_json(const std::vector<SelftestResult>& results) {
  nlohmann::json a = nlohmann::json::array();
  bool pass = true;
  for (const auto& r : results) {
    pass = pass && r.pass;
    a.push_back({{"config", config_label(r.config)},
                 {"pass", r.pass},
                 {"wrong_elements", r.wrong_elements},
                 {"checked_elements", r.checked_elements},
                 {"ms", r.seconds * 1e3},
                 {"message", r.message}});
  }
  return {{"pass", pass}, {"configs", a}};
}

int cmd_selftest(const Args& args) {
  po::options_description desc("gemmar selftest options");
  desc.add_options()("backend", po::value<std::string>(),
                     "gpu|cpu (default: gpu in a GPU build, else cpu = the CPU emulation)")(
      "world", po::value<int>()->default_value(Shape{}.world), "ranks (W)")(
      "quant", po::value<std::string>()->default_value(to_string(Config{}.quant)), "blockscale|ptpc|mxfp8")(
      "inject", po::value<std::string>()->default_value("none"),
      ("fault to inject, comma list: " + fault_names_help()).c_str())(
      "ranks-per-device", po::value<int>()->default_value(0),
      "GPU: ranks per device (0: one per device when W devices exist, else all on one)");
  add_common_options(desc);
  po::variables_map vm;
  if (!parse(args, desc, vm, std::cout, "gemmar selftest [--backend cpu|gpu] [--inject FAULT] [--world W] [--json]"))
    return kExitOk;
  std::string backend_name =
      vm.count("backend") ? vm["backend"].as<std::string>() : (gpu_backend_built() ? "gpu" : "cpu");
  GEMMAR_USAGE_CHECK(backend_name == "cpu" || backend_name == "gpu", "--backend: unknown value '", backend_name,
                     "' (accepted: gpu|cpu)");
  const int world = vm["world"].as<int>();
  GEMMAR_USAGE_CHECK(world >= 1 && world <= 32, "--world: the selftest's sum W(W+1)/2 is exact in bf16 for W <= 32");
  Config base;
  base.quant = parse_quant(vm["quant"].as<std::string>());
  base.pull_blocks = pull_blocks_from_env();
  const Faults faults = parse_faults(vm["inject"].as<std::string>());
  std::unique_ptr<Backend> backend = backend_name == "gpu" ? make_gpu_backend() : make_cpu_backend();
  const std::vector<SelftestResult> results = selftest_all(*backend, selftest_shape(world, base.quant), base, faults);
  bool pass = true;
  for (const auto& r : results) pass = pass && r.pass;
  if (vm["json"].as<bool>()) {
    nlohmann::json j = selftest_json(results);
    j["backend"] = backend_name;
    j["inject"] = faults.label();
    std::cout << json_text(j, 2) << "\n";
  } else {
    std::cout << selftest_report(results);
    std::cout << (pass ? "selftest passed: " : "selftest FAILED: ") << results.size() << " configs, W=" << world
              << ", backend " << backend_name << ", inject=" << faults.label() << "\n";
  }
  return pass ? kExitOk : kExitCheckFailed;
}

}  // namespace gemmar::cli
