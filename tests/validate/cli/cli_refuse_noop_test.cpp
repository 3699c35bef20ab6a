// A fault or option that would do nothing for the config is refused (exit 2), saying where it does act, instead of
// a clean run that reads as "the fault was caught missing" (issue 47). Where a fault acts comes from the fault table
// (common/faults.cpp); tests/reliability/reliability_fault_scope_slow_test.cpp checks the table against the emulation.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "support/cli.hpp"

namespace {

using gemmar::test::run_gemmar;

const std::string kRun = "run --backend cpu -m 512 -n 1024 -k 256 --check-rows 64 ";

void expect_refused(const std::string& args, const std::string& says, const std::string& also = "") {
  const auto r = run_gemmar(args);
  EXPECT_EQ(r.rc, 2) << args << "\n" << r.out << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
  if (!also.empty()) {
    EXPECT_NE(r.err.find(also), std::string::npos) << args << ": " << r.err;
  }
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(CliRefuseNoop, PerturbingARankBeyondTheWorld) {
  expect_refused(kRun + "--world 8 --inject perturb-rank=99",
                 "--inject perturb-rank=99: does nothing on fused-sdma/blockscale/bf16/sdma at --world 8",
                 "a rank R below --world");
  EXPECT_EQ(run_gemmar(kRun + "--world 8 --inject perturb-rank=7").rc, 1);
}

TEST(CliRefuseNoop, SilentPutsOnGemmOnly) {
  expect_refused(kRun + "--world 4 --mode gemm-only --inject silent-puts",
                 "--inject silent-puts: does nothing on gemm-only/blockscale", "e.g. --mode split-sdma");
}

// The README's example ran no-release on fp8/lsa, where the gather is CU loads: no copy engine, no release to miss
// (reference/emulation.cpp gather_row, kernels/pipeline/legs_check.cu NoReleaseLeg). It acts on a copy-engine gather.
TEST(CliRefuseNoop, NoReleaseWhereTheGatherIsNoCopyEngines) {
  expect_refused(kRun + "--world 4 --mode fused-sdma --gather-dtype fp8 --gather-transport lsa --inject no-release",
                 "--inject no-release: does nothing on fused-sdma/blockscale/fp8/lsa", "e.g. --gather-transport sdma");
  expect_refused(kRun + "--world 4 --mode split-lsa --inject no-release", "--inject no-release: does nothing");
  const auto caught = run_gemmar(
      "run --backend cpu -m 512 -n 1024 -k 256 --check-rows 0 --world 4 --mode fused-sdma "
      "--gather-dtype fp8 --gather-transport sdma --inject no-release");
  EXPECT_EQ(caught.rc, 1) << caught.err;
}

TEST(CliRefuseNoop, ReplayFaultsNeedASecondIteration) {
  for (const char* f : {"stale-replay", "frozen-flag"})
    expect_refused(kRun + "--world 4 --iterations 1 --inject " + f, std::string("--inject ") + f + ": does nothing",
                   "--iterations 2 or more");
}

TEST(CliRefuseNoop, APullGridWhereNoPullRuns) {
  expect_refused(kRun + "--world 4 --inject pull-blocks=8", "--inject pull-blocks=8: does nothing",
                 "e.g. --gather-dtype fp8 --gather-transport lsa");
  expect_refused(kRun + "--world 4 --gather-dtype fp8 --gather-transport lsa --pull-blocks 64 --inject pull-blocks=64",
                 "--inject pull-blocks=64: does nothing", "other than the config's --pull-blocks");
}

TEST(CliRefuseNoop, AllConfigsWithAConfigOption) {
  for (const char* o : {"--mode split-sdma", "--gather-dtype fp8", "--gather-transport lsa", "--fuse-quantize"})
    expect_refused(kRun + "--world 4 --all-configs " + o,
                   std::string(o).substr(0, std::string(o).find(' ')) + ": does nothing with --all-configs");
}

// Over several configs a fault is refused only where it acts on none of them: validate's silent-puts still runs
// (it acts on every config with puts), perturb-rank=99 does not.
TEST(CliRefuseNoop, ValidateRefusesOnlyAFaultThatActsOnNoConfig) {
  expect_refused(
      "validate --backend cpu --out /nonexistent/never --no-report --world 4 -m 256 -n 1024 -k 256 "
      "--inject perturb-rank=99",
      "--inject perturb-rank=99: does nothing on any of the 11 runs at --world 4");
  const auto r = run_gemmar(kRun + "--world 4 --all-configs --inject silent-puts --json");
  EXPECT_EQ(r.rc, 1) << r.err;
}

}  // namespace
