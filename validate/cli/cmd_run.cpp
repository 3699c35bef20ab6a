// gemmar run: execute the op on a backend (GPU kernels, or the CPU emulation), check every output against the
// reference, time every phase, judge against the model, print RESULT_JSON lines (benchmark format + gemmar's).
#include <iostream>
#include <optional>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/json_text.hpp"
#include "validate/cli/memory.hpp"
#include "validate/cli/progress.hpp"
#include "validate/cli/run_options.hpp"
#include "validate/harness/run_driver.hpp"
#include "validate/harness/run_plan.hpp"

namespace gemmar::cli {

int cmd_run(const Args& args) {
  po::options_description desc("gemmar run options");
  add_run_options(desc, RunCommand::Run);
  add_common_options(desc);
  po::variables_map vm;
  if (!parse(args, desc, vm, std::cout,
             "gemmar run [-m -n -k --world] [--mode ... | --all-configs] [--backend gpu|cpu|python --impl SPEC] "
             "[--inject FAULT] [--json]"))
    return kExitOk;
  RunPlan plan = read_run_plan(vm, RunCommand::Run);
  require_plan_memory(plan);
  const bool json = vm["json"].as<bool>();
  // --dump: every rank file is written into a temp sibling, renamed into place once the whole plan ran.
  std::optional<AtomicDirectory> dump;
  if (!plan.request.dump_dir.empty()) {
    dump.emplace(plan.request.dump_dir, "gemmar run --dump");
    plan.request.dump_dir = dump->path().string();
  }
  Progress progress(json ? nullptr : &std::cerr, "gemmar run", plan_units(plan), stderr_is_terminal());
  const std::vector<RunOutcome> outcomes = execute_plan(plan, json ? nullptr : &std::cout, progress_observer(progress));
  if (dump) dump->commit();
  if (json) {
    std::cout << json_text(plan_outcomes_to_json(plan, outcomes), 2) << "\n";
  } else {
    std::vector<Verdict> verdicts;
    for (const auto& o : outcomes) verdicts.push_back(o.verdict);
    std::cout << verdict_table(verdicts);
  }
  for (const auto& o : outcomes)
    if (!o.verdict.pass) return kExitCheckFailed;
  return kExitOk;
}

}  // namespace gemmar::cli
