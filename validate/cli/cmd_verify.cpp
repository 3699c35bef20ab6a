// gemmar verify: another implementation's tensors, dumped one safetensors file per rank, judged against the
// emulated pipeline with the same findings as check and run (validate/harness/verify.hpp, docs/verify.md).
#include <iostream>

#include "common/errors.hpp"
#include "common/json_text.hpp"
#include "model/model.hpp"
#include "validate/cli/cli.hpp"
#include "validate/cli/memory.hpp"
#include "validate/harness/cpu_threads.hpp"
#include "validate/harness/verify.hpp"

namespace gemmar::cli {

int cmd_verify(const Args& args) {
  po::options_description desc("gemmar verify options");
  desc.add_options()("input", po::value<std::vector<std::string>>()->multitoken(),
                     "a dump directory (rank files, or one subdirectory per run) or the W rank files of one run")(
      "check-rows", po::value<int64_t>()->default_value(256),
      "output rows checked, stratified over every rank's slice; 0 = every row (a row-subset dump: its rows)")(
      "seed", po::value<uint64_t>()->default_value(1234), "seed of the row sampling")(
      "profile", po::value<std::string>(),
      ("model profile (" + model::profile_choices() +
       "|FILE); default: the dump's profile metadata, else the profile of its device")
          .c_str())("floors-at-run-m", po::bool_switch()->default_value(false),
                    "derive the floors at the run's own M (default: once per N, K, W, quant at M=16384)");
  add_common_options(desc);
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (!parse(args, desc, vm, std::cout, "gemmar verify DIR|FILES... [--check-rows R] [--seed S] [--profile P] [--json]",
             &pos))
    return kExitOk;
  GEMMAR_USAGE_CHECK(vm.count("input"), "no input (give a dump directory or the rank files)");
  VerifyOptions opt;
  opt.check_rows = vm["check-rows"].as<int64_t>();
  GEMMAR_USAGE_CHECK(opt.check_rows >= 0, "--check-rows: must be >= 0");
  opt.seed = vm["seed"].as<uint64_t>();
  if (vm.count("profile")) {
    opt.judge.profile = vm["profile"].as<std::string>();
    (void)model::load_profile(*opt.judge.profile);  // a bad --profile is exit 2 before anything is read
  }
  opt.judge.floors_at_run_m = vm["floors-at-run-m"].as<bool>();

  const bool json = vm["json"].as<bool>();
  const std::vector<std::vector<std::string>> groups = dump_groups(vm["input"].as<std::vector<std::string>>());
  require_verify_memory(groups, opt.check_rows);
  std::vector<VerifyResult> results;
  for (const auto& group : groups) {
    fit_threads_to_free_cores();
    results.push_back(verify_dump(group, opt));
    if (!json) std::cout << verify_text(results.back()) << std::flush;
  }
  if (json) {
    std::cout << json_text(verify_results_to_json(results), 2) << "\n";
  } else {
    std::vector<Verdict> verdicts;
    for (const auto& r : results) verdicts.push_back(r.verdict);
    std::cout << "\n" << verdict_table(verdicts);
  }
  for (const auto& r : results)
    if (!r.verdict.pass) return kExitCheckFailed;
  return kExitOk;
}

}  // namespace gemmar::cli
