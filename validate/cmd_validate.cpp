// gemmar validate: the main job. Runs every mode and wire the machine supports (the CPU emulation without a
// GPU), checks each against the reference and the model, prints the verdict table, writes results.json,
// the RESULT_JSON log and the report into --out (built in a temp directory and renamed into place).
#include <chrono>
#include <iostream>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/json_text.hpp"
#include "model/model.hpp"
#include "reference/floors.hpp"
#include "validate/cli.hpp"
#include "validate/run_plan.hpp"

namespace gemmar::cli {

namespace {
// The embedded default: small enough that the CPU emulation of all 11 configs finishes in well under a minute
// on 2 cores, large enough to have 8 ranks with several 128-row blocks each and every wire's real rounding.
constexpr int64_t kCpuM = 2048, kCpuN = 2048, kCpuK = 512;
}  // namespace

int cmd_validate(const Args& args) {
  po::options_description desc("gemmar validate options");
  desc.add_options()
      ("backend", po::value<std::string>(), "cpu|gpu (default: gpu in a GPU build with a device, else cpu)")
      ("out", po::value<std::string>()->default_value("out/validate"), "directory for results.json, log and report")
      ("inject", po::value<std::string>()->default_value("none"),
       "fault injected into every run (see gemmar run --help); validate must then flag it")
      ("m,m", po::value<int64_t>(), "rows (default: 2048 on cpu, 4096,16384 on gpu)")
      ("n,n", po::value<int64_t>(), "columns (default: 2048 on cpu, 7168 on gpu)")
      ("k,k", po::value<int64_t>(), "reduction length per rank (default: 512 on cpu, 2048 on gpu)")
      ("world", po::value<int>()->default_value(8), "ranks")
      ("seed", po::value<uint64_t>()->default_value(1234), "operand seed")
      ("profile", po::value<std::string>()->default_value(""), "model profile for the timing checks")
      ("no-report", po::bool_switch()->default_value(false), "skip the HTML/PNG report");
  add_common_options(desc);
  po::variables_map vm;
  if (!parse(args, desc, vm, std::cout, "gemmar validate [--backend cpu|gpu] [--out DIR] [--inject FAULT] [--json]"))
    return kExitOk;
  const auto t0 = std::chrono::steady_clock::now();
  RunPlan plan;
  plan.backend = vm.count("backend") ? vm["backend"].as<std::string>() : (gpu_backend_built() ? "gpu" : "cpu");
  GEMMAR_USAGE_CHECK(plan.backend == "cpu" || plan.backend == "gpu", "--backend: unknown value '", plan.backend,
                     "' (accepted: cpu|gpu)");
  const bool gpu = plan.backend == "gpu";
  plan.shape.n = vm.count("n") ? vm["n"].as<int64_t>() : (gpu ? 7168 : kCpuN);
  plan.shape.k = vm.count("k") ? vm["k"].as<int64_t>() : (gpu ? 2048 : kCpuK);
  plan.shape.world = vm["world"].as<int>();
  plan.m_values = vm.count("m") ? std::vector<int64_t>{vm["m"].as<int64_t>()}
                                : (gpu ? std::vector<int64_t>{4096, 16384} : std::vector<int64_t>{kCpuM});
  plan.configs = all_configs(Config{});
  plan.inject = parse_injection(vm["inject"].as<std::string>());
  plan.seed = vm["seed"].as<uint64_t>();
  plan.check_rows = gpu ? 512 : 0;  // the CPU emulation checks every row; the GPU a stratified sample
  plan.profile = vm["profile"].as<std::string>();
  validate_plan(plan);
  const bool json = vm["json"].as<bool>();

  AtomicDirectory out(vm["out"].as<std::string>());
  std::ostringstream log;
  std::vector<RunOutcome> outcomes = execute_plan(plan, &log);
  nlohmann::json results = plan_outcomes_to_json(plan, outcomes);

  // The model beside the runs: predictions at the reference shape for the profile, and the pull-grid curve.
  const std::string profile_name = plan.profile.empty() ? (gpu ? std::string("h200-1gpu") : "mi355x") : plan.profile;
  const model::Profile profile = model::load_profile(profile_name);
  nlohmann::json predictions = nlohmann::json::array();
  for (const Config& c : plan.configs) {
    nlohmann::json p = model::to_json(model::predict(profile, Shape{}, c));
    p["config"] = config_label(c);
    predictions.push_back(p);
  }
  Config pull;
  pull.mode = Mode::FusedSdma;
  pull.gather_dtype = WireDtype::Fp8;
  pull.gather_transport = Transport::Lsa;
  results["profile"] = profile_name;
  results["model_predictions"] = predictions;
  results["model_sweeps"] = nlohmann::json::array(
      {model::to_json(model::sweep_pull_blocks(profile, Shape{}, pull, {8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512}))});
  results["model_sweeps"][0]["config"] = {{"mode", to_string(pull.mode)}, {"gather_dtype", to_string(pull.gather_dtype)},
                                           {"gather_transport", to_string(pull.gather_transport)},
                                           {"label", config_label(pull)}};
  results["model_sweeps"][0]["shape"] = {{"m", Shape{}.m}, {"n", Shape{}.n}, {"k", Shape{}.k}, {"world", Shape{}.world}};
  results["model_sweeps"][0]["param"] = "pull-blocks";
  results["shape"] = {{"n", plan.shape.n}, {"k", plan.shape.k}, {"world", plan.shape.world}, {"m", plan.m_values}};

  write_file_atomic(out.path() / "results.json", json_text(results, 2) + "\n");
  write_file_atomic(out.path() / "runs.log", log.str());
  bool report_ok = true;
  if (!vm["no-report"].as<bool>()) {
    try {
      cmd_report({(out.path() / "results.json").string(), "--out", (out.path() / "report").string(), "--quiet"});
    } catch (const Error& e) {
      report_ok = false;
      std::cerr << "gemmar validate: report not written: " << e.what() << "\n";
    }
  }
  out.commit();

  std::vector<Verdict> verdicts;
  for (const auto& o : outcomes) verdicts.push_back(o.verdict);
  bool pass = true;
  for (const auto& v : verdicts) pass = pass && v.pass;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (json) {
    results["out"] = vm["out"].as<std::string>();
    results["pass"] = pass;
    results["seconds"] = seconds;
    std::cout << json_text(results, 2) << "\n";
  } else {
    std::cout << verdict_table(verdicts);
    std::ostringstream summary;
    summary << (pass ? "All results match" : "FAILED") << ": " << verdicts.size() << " runs on the "
            << (gpu ? "GPU" : "CPU emulation") << ", inject=" << plan.inject.label() << ", " << seconds
            << " s; results in " << vm["out"].as<std::string>() << "/"
            << (report_ok && !vm["no-report"].as<bool>() ? " (report: report/index.html)" : "") << "\n";
    std::cout << summary.str();
  }
  return pass ? kExitOk : kExitCheckFailed;
}

}  // namespace gemmar::cli
