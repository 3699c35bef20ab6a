// Slow tier (~80 s of CPU: some 250 runs). The fault table's "where it acts" (common/faults.cpp acts, the basis of
// `--inject`'s refusal of a fault that would do nothing) against the emulation itself: for every CPU fault class on
// every config of `gemmar validate`, a run with the fault differs from the clean run (its record or its verdict)
// exactly where the table says it acts, and is bit for bit the clean run, with the same verdict, everywhere else. Also
// the values and iterations that make a fault act on nothing (perturb-rank=W, pull-blocks at the config's own grid,
// replay faults on one iteration).
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/faults.hpp"
#include "validate/harness/run_driver.hpp"
#include "validate/harness/run_plan.hpp"

namespace gemmar {
namespace {

// What a run shows: its record (every rank's relL2 to the last digit, wrong, stale, nonfinite and disagreeing
// elements, per iteration: outputs that differ show there) less the fault's own label, and its findings.
struct Observed {
  nlohmann::json record;
  std::string codes;
  bool pass = true;
};

Observed observe(Backend& backend, const RunRequest& req) {
  const RunOutcome out = run_and_check(backend, req);
  Observed o;
  o.record = out.record.raw;
  o.record.erase("inject");
  o.record.erase("pull_blocks");  // the grid asked for: the pull, where there is one, shows it in the findings
  o.pass = out.verdict.pass;
  for (const auto& f : out.verdict.findings) o.codes += f.code + ",";
  return o;
}

std::vector<std::string> spellings(const FaultClass& c, int world) {
  const std::string s = c.spelling;
  if (s == "perturb-rank=R") return {"perturb-rank=1", "perturb-rank=" + std::to_string(world)};
  if (s == "pull-blocks=N") return {"pull-blocks=2", "pull-blocks=64"};
  return {s};
}

TEST(ReliabilityFaultScope, AFaultChangesTheRunExactlyWhereTheTableSaysItActs) {
  auto backend = make_cpu_backend();
  int acting = 0, idle = 0;
  for (const int iterations : {4, 1}) {
    for (const Config& cfg : all_configs(Config{})) {
      RunRequest req;
      req.shape = {512, 1024, 128, 4};
      req.config = cfg;
      req.iterations = iterations;
      req.check_rows = 0;  // every row: a missing release makes a few bands stale, which a sample can miss
      const Observed clean = observe(*backend, req);
      ASSERT_TRUE(clean.pass) << config_label(cfg) << ": " << clean.codes;
      for (const FaultClass& c : fault_table()) {
        if (c.gpu_only) continue;
        for (const std::string& spec : spellings(c, req.shape.world)) {
          RunRequest faulty = req;
          faulty.inject = parse_faults(spec);
          const bool acts = c.acts(faulty.inject, FaultScope{cfg, req.shape, iterations});
          // One iteration: only the faults whose scope depends on the iterations (the replay faults).
          if (iterations == 1 && acts == c.acts(faulty.inject, FaultScope{cfg, req.shape, 4})) continue;
          const Observed got = observe(*backend, faulty);
          const bool changed = got.record != clean.record || got.codes != clean.codes;
          (acts ? acting : idle)++;
          EXPECT_EQ(changed, acts) << spec << " on " << config_label(cfg) << ", " << iterations
                                   << " iteration(s): the table says it " << (acts ? "acts" : "does nothing")
                                   << "; findings " << (got.codes.empty() ? "none" : got.codes);
        }
      }
    }
  }
  EXPECT_GT(acting, 50);
  EXPECT_GT(idle, 30);
}

}  // namespace
}  // namespace gemmar
