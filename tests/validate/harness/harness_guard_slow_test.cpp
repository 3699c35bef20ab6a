// `gemmar run --guard` on the CPU backend (slow tier): the per-call guard alone (GUARD_* findings in the record's
// `guard` field) catches every fault class of common/faults.cpp that corrupts the output, on every call it applies to,
// and raises nothing over clean straggled replays of every config.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/guard_runs.hpp"
#include "validate/harness/run_driver.hpp"

namespace {

using namespace gemmar;

using guard_test::guard_of;
using guard_test::request;

struct Case {
  const char* fault;
  const char* config;
  const char* code;
  int flagged;  // of 4 calls: replay faults leave iteration 0 (after a warm-up on the same inputs) intact
};

TEST(HarnessGuardSlow, EveryOutputCorruptingFaultIsCaughtOnEveryCallItAppliesTo) {
  const std::vector<Case> cases{
      {"silent-puts", "fused-sdma/bf16/sdma", "GUARD_REDUCE", 4},
      {"silent-puts", "fused-sdma/bf16/sdma", "GUARD_GATHER", 4},
      {"silent-scatter", "split-sdma/fp8/sdma", "GUARD_REDUCE", 4},
      {"silent-scatter", "fused-lsa/bf16/sdma", "GUARD_REDUCE", 4},
      {"silent-gather", "fused-sdma/bf16/sdma", "GUARD_GATHER", 4},
      {"silent-gather", "split-sdma/fp8/sdma", "GUARD_GATHER", 4},
      {"stale-output", "fused-lsa/fp8/lsa", "GUARD_REDUCE", 4},
      {"no-release", "split-sdma/bf16/sdma", "GUARD_GATHER", 4},
      {"no-release", "fused-sdma/fp8/sdma", "GUARD_GATHER", 4},
      {"perturb-rank=2", "fused-sdma/fp8/lsa", "GUARD_GEMM", 4},
      {"perturb-rank=5", "gemm-only", "GUARD_GEMM", 4},
      {"stale-replay", "fused-sdma/bf16/sdma", "GUARD_REDUCE", 3},
      {"stale-replay", "split-lsa", "GUARD_REDUCE", 3},
      {"frozen-flag", "split-lsa", "GUARD_GATHER", 3},
      {"frozen-flag", "fused-sdma/fp8/sdma", "GUARD_GATHER", 3},
      {"wire-bypassed", "fused-sdma/fp8/sdma", "GUARD_WIRE", 4},
      {"wire-bypassed", "split-sdma/fp8/lsa", "GUARD_WIRE", 4},
  };
  for (const Case& c : cases) {
    const GuardReport g = guard_of(request(c.config, c.fault));
    EXPECT_EQ(g.calls, 4) << c.fault << " " << c.config;
    const auto it = g.codes.find(c.code);
    ASSERT_NE(it, g.codes.end()) << c.fault << " on " << c.config << " raised no " << c.code;
    EXPECT_EQ(it->second.calls, c.flagged) << c.fault << " on " << c.config << ": " << it->second.message;
    EXPECT_EQ(g.flagged_calls, c.flagged) << c.fault << " on " << c.config;
  }
}

TEST(HarnessGuardSlow, CleanStraggledReplaysOfEveryConfigRaiseNothing) {
  for (const char* cfg : {"gemm-only", "split-sdma/bf16/sdma", "split-sdma/fp8/sdma", "split-sdma/fp8/lsa",
                          "fused-sdma/bf16/sdma", "fused-sdma/fp8/sdma", "fused-sdma/fp8/lsa", "split-lsa",
                          "fused-lsa/bf16/sdma", "fused-lsa/fp8/sdma", "fused-lsa/fp8/lsa"}) {
    RunRequest req = request(cfg, "none", 12);
    req.straggle_us = 40;
    const GuardReport g = guard_of(req);
    EXPECT_EQ(g.calls, 12) << cfg;
    EXPECT_EQ(g.flagged_calls, 0) << cfg << ": " << (g.codes.empty() ? "" : g.codes.begin()->second.message);
  }
}

}  // namespace
