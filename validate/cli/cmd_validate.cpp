// gemmar validate: the main job. Runs every mode and wire the machine supports (the CPU emulation without a
// GPU), checks each against the reference and the model, prints the verdict table, writes results.json,
// the RESULT_JSON log and the report into --out (built in a temp directory and renamed into place).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/config_fields.hpp"
#include "common/errors.hpp"
#include "common/json_text.hpp"
#include "model/model.hpp"
#include "reference/floors.hpp"
#include "validate/cli/memory.hpp"
#include "validate/cli/progress.hpp"
#include "validate/cli/run_options.hpp"
#include "validate/cli/selftest.hpp"
#include "validate/harness/run_plan.hpp"

namespace gemmar::cli {

namespace {

po::options_description validate_options_description() {
  po::options_description desc("gemmar validate options");
  add_run_options(desc, RunCommand::Validate);
  desc.add_options()(
      "out", po::value<std::string>()->default_value("out/validate"),
      "directory for results.json, log and report (new, empty, or a previous gemmar output with --force)")(
      "force", po::bool_switch()->default_value(false), "replace --out when it holds a previous gemmar output")(
      "no-report", po::bool_switch()->default_value(false), "skip the HTML/PNG report")(
      "skip-selftest", po::bool_switch()->default_value(false),
      "run the configs even when the transport self-test (the first step: rank+1 windows, every element "
      "W(W+1)/2) fails");
  add_common_options(desc);
  return desc;
}

// The transport self-test (milliseconds; a silent transport fails here, before any timing).
std::vector<SelftestResult> run_transport_selftest(const RunPlan& plan) {
  // A Python implementation's own self_test (mori's op.py GemmAllReduceOp.self_test: rank+1 through the split order).
  if (plan.backend == "python") return python_selftest(plan, &std::cerr);
  std::unique_ptr<Backend> backend = plan.backend == "gpu" ? make_gpu_backend() : make_cpu_backend();
  return selftest_all(*backend, selftest_shape(plan.request.shape.world, plan.configs.front().quant),
                      plan.configs.front(), plan.request.inject);
}

// A failed self-test ends the job: its results written to --out, the configs not run.
int selftest_failed(const po::variables_map& vm, const RunPlan& plan, const std::vector<SelftestResult>& selftest,
                    AtomicDirectory& out) {
  nlohmann::json results = {{"backend", plan.backend},
                            {"inject", plan.request.inject.label()},
                            {"selftest", selftest_json(selftest)},
                            {"runs", nlohmann::json::array()}};
  write_file_atomic(out.path() / "results.json", json_text(results, 2) + "\n");
  write_file_atomic(out.path() / "runs.log", selftest_report(selftest));
  out.commit();
  if (vm["json"].as<bool>()) {
    results["out"] = vm["out"].as<std::string>();
    results["pass"] = false;
    std::cout << json_text(results, 2) << "\n";
  } else {
    std::cout << selftest_report(selftest)
              << "FAILED: the transport self-test (first step) failed; the configs were not run (--skip-selftest "
                 "runs them anyway); results in "
              << vm["out"].as<std::string>() << "/\n";
  }
  return kExitCheckFailed;
}

// The model beside the runs: predictions at the shape the runs ran (their N, K, W at the plan's largest M) for the
// profile the runs were judged against (default_profile of their backend and device), and the pull-grid curve.
void add_model_context(nlohmann::json& results, const RunPlan& plan, const std::vector<RunOutcome>& outcomes) {
  const std::string profile_name = !plan.request.profile.empty() ? plan.request.profile
                                   : !outcomes.empty() && outcomes[0].record.profile
                                       ? *outcomes[0].record.profile
                                       : default_profile(plan.backend, "", 1);
  Shape shape = plan.request.shape;
  if (!plan.m_values.empty()) shape.m = *std::max_element(plan.m_values.begin(), plan.m_values.end());
  const nlohmann::json reference_shape = {{"m", shape.m}, {"n", shape.n}, {"k", shape.k}, {"world", shape.world}};
  const model::Profile profile = model::load_profile(profile_name);
  nlohmann::json predictions = nlohmann::json::array(), unavailable = nlohmann::json::array();
  for (const Config& c : plan.configs) {
    // A config the profile cannot price (an fp8 scatter on a profile without gemm.epilogue_cu_gbps) is listed with
    // the model's reason, as its runs' MODEL_UNAVAILABLE says: the runs were judged, so the command still reports them.
    try {
      nlohmann::json p = model::to_json(model::predict(profile, shape, c));
      p["config"] = config_label(c);
      p["shape"] = reference_shape;
      predictions.push_back(p);
    } catch (const UsageError& e) {
      unavailable.push_back({{"config", config_label(c)}, {"shape", reference_shape}, {"error", e.what()}});
    }
  }
  Config pull;
  pull.mode = Mode::FusedSdma;
  pull.gather_dtype = WireDtype::Fp8;
  pull.gather_transport = Transport::Lsa;
  results["profile"] = profile_name;
  results["model_predictions"] = predictions;
  if (!unavailable.empty()) results["model_unavailable"] = unavailable;
  results["model_sweeps"] = nlohmann::json::array(
      {model::to_json(model::sweep_pull_blocks(profile, shape, pull, model::default_pull_grid()))});
  results["model_sweeps"][0]["config"] = config_to_json(pull);
  results["model_sweeps"][0]["config"]["label"] = config_label(pull);
  results["model_sweeps"][0]["shape"] = reference_shape;
  results["model_sweeps"][0]["param"] = "pull-blocks";
}

// The report into out/report; false (and a line on stderr) when it could not be written.
bool write_report(const AtomicDirectory& out) {
  try {
    cmd_report({(out.path() / "results.json").string(), "--out", (out.path() / "report").string(), "--quiet"});
  } catch (const Error& e) {
    std::cerr << "gemmar validate: report not written: " << e.what() << "\n";
    return false;
  }
  return true;
}

void print_summary(const po::variables_map& vm, const RunPlan& plan, const std::vector<SelftestResult>& selftest,
                   const std::vector<Verdict>& verdicts, bool pass, double seconds, bool report_ok) {
  std::cout << selftest_report(selftest) << verdict_table(verdicts);
  std::ostringstream summary;
  const std::string where = plan.backend == "gpu" ? "the GPU"
                            : plan.backend == "python"
                                ? "the Python implementation " + plan.python.impl.name +
                                      (plan.python.impl.device.empty() ? "" : " (" + plan.python.impl.device + ")")
                                : "the CPU emulation";
  summary << (pass ? "All results match" : "FAILED") << ": " << verdicts.size() << " runs on " << where
          << ", inject=" << plan.request.inject.label() << ", " << seconds << " s; results in "
          << vm["out"].as<std::string>() << "/"
          << (report_ok && !vm["no-report"].as<bool>() ? " (report: report/index.html)" : "") << "\n";
  std::cout << summary.str();
}

}  // namespace

int cmd_validate(const Args& args) {
  po::options_description desc = validate_options_description();
  po::variables_map vm;
  if (!parse(args, desc, vm, std::cout,
             "gemmar validate [--backend cpu|gpu|python --impl SPEC] [--out DIR] [--inject FAULT] [--json]"))
    return kExitOk;
  const auto t0 = std::chrono::steady_clock::now();
  // Before any work: --out must not destroy what gemmar did not write.
  std::filesystem::path out_dir = std::filesystem::path(vm["out"].as<std::string>()).lexically_normal();
  if (!out_dir.has_filename() && out_dir.has_parent_path()) out_dir = out_dir.parent_path();
  {
    OutputDirCheck oc;
    oc.force = vm["force"].as<bool>();
    check_output_dir(out_dir, oc);
  }
  RunPlan plan = read_run_plan(vm, RunCommand::Validate);
  require_plan_memory(plan);

  AtomicDirectory out(out_dir, "gemmar validate");
  plan.python.work_dir = out.path();  // the runner's plans and logs (runner/), and the dumps while verified
  const std::vector<SelftestResult> selftest = run_transport_selftest(plan);
  bool selftest_pass = true;
  for (const auto& r : selftest) selftest_pass = selftest_pass && r.pass;
  if (!selftest_pass && !vm["skip-selftest"].as<bool>()) return selftest_failed(vm, plan, selftest, out);

  std::ostringstream log;
  Progress progress(vm["json"].as<bool>() ? nullptr : &std::cerr, "gemmar validate", plan_units(plan),
                    stderr_is_terminal());
  std::vector<RunOutcome> outcomes = execute_plan(plan, &log, progress_observer(progress));
  nlohmann::json results = plan_outcomes_to_json(plan, outcomes);
  results["selftest"] = selftest_json(selftest);
  add_model_context(results, plan, outcomes);
  results["shape"] = {{"n", plan.request.shape.n},
                      {"k", plan.request.shape.k},
                      {"world", plan.request.shape.world},
                      {"m", plan.m_values}};
  write_file_atomic(out.path() / "results.json", json_text(results, 2) + "\n");
  write_file_atomic(out.path() / "runs.log", log.str());
  const bool report_ok = vm["no-report"].as<bool>() || write_report(out);
  out.commit();

  std::vector<Verdict> verdicts;
  for (const auto& o : outcomes) verdicts.push_back(o.verdict);
  bool pass = true;
  for (const auto& v : verdicts) pass = pass && v.pass;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (vm["json"].as<bool>()) {
    results["out"] = vm["out"].as<std::string>();
    results["pass"] = pass;
    results["seconds"] = seconds;
    std::cout << json_text(results, 2) << "\n";
  } else {
    print_summary(vm, plan, selftest, verdicts, pass, seconds, report_ok);
  }
  return pass ? kExitOk : kExitCheckFailed;
}

}  // namespace gemmar::cli
