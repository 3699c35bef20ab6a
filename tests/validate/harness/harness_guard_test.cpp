// `gemmar run --guard` on the CPU backend, the quick tier (the whole fault matrix and the clean straggled replays
// of every config are harness_guard_slow_test): a fault and a clean run, the verdict's GUARD_* findings, and the
// record read back through `gemmar check` to the same findings.
#include <gtest/gtest.h>

#include "support/cli.hpp"

#include <string>
#include <vector>

#include "support/guard_runs.hpp"
#include "validate/harness/run_driver.hpp"
#include "validate/verdict/guard_rules.hpp"

namespace {

using namespace gemmar;

using guard_test::guard_of;
using guard_test::request;

TEST(HarnessGuard, CleanRunPassesAndASilentGatherIsFlaggedOnBothCalls) {
  RunRequest clean = request("split-sdma/fp8/sdma", "none", 2);
  clean.straggle_us = 30;
  EXPECT_EQ(guard_of(clean).flagged_calls, 0);
  const GuardReport g = guard_of(request("split-sdma/fp8/sdma", "silent-gather", 2));
  EXPECT_EQ(g.calls, 2);
  ASSERT_EQ(g.codes.count("GUARD_GATHER"), 1u);
  EXPECT_EQ(g.codes.at("GUARD_GATHER").calls, 2);
}

TEST(HarnessGuard, FindingsFailTheVerdictAndNameTheLeg) {
  auto be = make_cpu_backend();
  const RunOutcome o = run_and_check(*be, request("fused-sdma/bf16/sdma", "silent-gather"));
  EXPECT_FALSE(o.verdict.pass);
  bool found = false;
  for (const auto& f : o.verdict.findings)
    if (f.code == "GUARD_GATHER") {
      found = true;
      EXPECT_NE(f.message.find("4 of 4 calls in the all-gather"), std::string::npos) << f.message;
    }
  EXPECT_TRUE(found);
}

TEST(HarnessGuard, AGuardThatCheckedNoCallIsAWarning) {
  RunRecord r;
  r.guard.emplace();
  const auto f = verdict_rules::guard_findings(r);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, "GUARD_NO_CALLS");
  EXPECT_EQ(f[0].severity, Severity::Warning);
}

TEST(HarnessGuard, RunGuardRecordReadsBackThroughCheckToTheSameFinding) {
  const auto run = test::run_gemmar(
      "run --backend cpu -m 1024 -n 1024 -k 128 --world 8 --iterations 2 --check-rows 0 --guard --inject "
      "silent-scatter");
  EXPECT_EQ(run.rc, 1) << run.err;
  std::string line;
  for (size_t p = 0; (p = run.out.find("RESULT_JSON ", p)) != std::string::npos; ++p)
    line = run.out.substr(p, run.out.find('\n', p) - p);
  ASSERT_FALSE(line.empty()) << run.out;
  EXPECT_NE(line.find("\"guard\""), std::string::npos);
  const auto chk = test::run_gemmar({"check", "-"}, line + "\n");
  EXPECT_EQ(chk.rc, 1) << chk.out << chk.err;
  EXPECT_NE(chk.out.find("GUARD_REDUCE"), std::string::npos) << chk.out;
}

TEST(HarnessGuard, CliRejectsAValueForTheGuardSwitch) {
  const auto r = test::run_gemmar("run --backend cpu -m 1024 -n 1024 -k 128 --guard=yes");
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
}

}  // namespace
