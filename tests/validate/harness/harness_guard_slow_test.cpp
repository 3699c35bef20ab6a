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

std::vector<Case> fault_cases() {
  return {
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
}

// Every row read (--guard-sample 1) and one row in 32 (the default). Every fault but no-release corrupts whole
// 32-row strata (a slice, the tail of a late put of at least a quarter slice), which the sample reads on every
// call. no-release is sparse: 0.4-1.2% of the 64-byte lines in 1 or 2 of the 32 bands of a slice, per receiver;
// one row in 32 reads it with a probability per call that grows with the band's rows and the row's lines
// (docs/guard.md "Sampled rows": ~91% (bf16) and ~72% (fp8 wire) per call at M = N = 1024, W = 8; about
// 1 - 2e-4 at M = 2048, N = 4096, the shape it runs at here; 1 - 1e-12 at the device's M = 4096, N = 7168).
TEST(HarnessGuardSlow, EveryOutputCorruptingFaultIsCaughtOnEveryCallItAppliesTo) {
  for (int sample : {1, 32})
    for (const Case& c : fault_cases()) {
      RunRequest req = request(c.config, c.fault);
      req.guard_sample = sample;
      if (sample > 1 && std::string(c.fault) == "no-release") req.shape = Shape{2048, 4096, 128, 8};
      const GuardReport g = guard_of(req);
      const std::string what = std::string(c.fault) + " on " + c.config + ", --guard-sample " + std::to_string(sample);
      EXPECT_EQ(g.calls, 4) << what;
      const auto it = g.codes.find(c.code);
      ASSERT_NE(it, g.codes.end()) << what << " raised no " << c.code;
      EXPECT_EQ(it->second.calls, c.flagged) << what << ": " << it->second.message;
      EXPECT_EQ(g.flagged_calls, c.flagged) << what;
    }
}

TEST(HarnessGuardSlow, CleanStraggledReplaysOfEveryConfigRaiseNothing) {
  for (const char* cfg : {"gemm-only", "split-sdma/bf16/sdma", "split-sdma/fp8/sdma", "split-sdma/fp8/lsa",
                          "fused-sdma/bf16/sdma", "fused-sdma/fp8/sdma", "fused-sdma/fp8/lsa", "split-lsa",
                          "fused-lsa/bf16/sdma", "fused-lsa/fp8/sdma", "fused-lsa/fp8/lsa"}) {
    RunRequest req = request(cfg, "none", 12);
    req.straggle_us = 40;
    req.guard_sample = 1;  // every row: the bounds' tightest test (a sample sums fewer terms)
    const GuardReport g = guard_of(req);
    EXPECT_EQ(g.calls, 12) << cfg;
    EXPECT_EQ(g.flagged_calls, 0) << cfg << ": " << (g.codes.empty() ? "" : g.codes.begin()->second.message);
  }
}

}  // namespace
