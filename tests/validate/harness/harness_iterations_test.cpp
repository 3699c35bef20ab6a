// Every iteration checked on changed inputs, bit-identical repeats, straggler injection, the replay
// faults (stale-replay, frozen-flag) and the transport self-test, through the same driver `gemmar run` uses.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/faults.hpp"
#include "support/cli.hpp"
#include "validate/harness/run_driver.hpp"
#include "validate/harness/run_plan.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar {
namespace {

RunRequest request(Mode mode, WireDtype wire, Transport t, const std::string& inject, int world = 4) {
  RunRequest req;
  req.shape = Shape{int64_t(world) * 128 * 2, 1024, 128, world};
  req.config.mode = mode;
  req.config.gather_dtype = wire;
  req.config.gather_transport = t;
  req.inject = parse_faults(inject);
  req.seed = 77;
  req.check_rows = 64;
  req.iterations = 5;
  return req;
}

bool has_code(const Verdict& v, const std::string& code) {
  return std::any_of(v.findings.begin(), v.findings.end(),
                     [&](const Finding& f) { return f.code == code && f.severity == Severity::Error; });
}

std::string codes(const Verdict& v) {
  std::string s;
  for (const auto& f : v.findings) s += f.code + ": " + f.message + "\n";
  return s;
}

TEST(HarnessIterations, CleanRunsWithStragglersCheckEveryIterationAndRepeatBitForBit) {
  auto backend = make_cpu_backend();
  for (Mode m : {Mode::SplitSdma, Mode::FusedSdma, Mode::FusedLsa, Mode::SplitLsa}) {
    RunRequest req = request(m, WireDtype::Bf16, m == Mode::SplitLsa ? Transport::Lsa : Transport::Sdma, "none");
    req.straggle_us = 50;
    const RunOutcome o = run_and_check(*backend, req);
    EXPECT_TRUE(o.verdict.pass) << codes(o.verdict);
    EXPECT_TRUE(o.verdict.findings.empty()) << codes(o.verdict);
    EXPECT_EQ(o.record.iterations_checked.value_or(0), 5);
    ASSERT_EQ(o.record.wrong_elements_per_iteration.size(), 5u);
    for (int64_t w : o.record.wrong_elements_per_iteration) EXPECT_EQ(w, 0);
    EXPECT_TRUE(o.record.nondeterministic_iterations.empty());
    EXPECT_EQ(o.record.straggle_us.value_or(0), 50);
  }
}

TEST(HarnessIterations, StaleReplayIsCaughtFromTheSecondIterationOn) {
  auto backend = make_cpu_backend();
  for (WireDtype wire : {WireDtype::Bf16, WireDtype::Fp8}) {
    const RunOutcome o = run_and_check(*backend, request(Mode::FusedSdma, wire, Transport::Sdma, "stale-replay"));
    EXPECT_FALSE(o.verdict.pass);
    EXPECT_TRUE(has_code(o.verdict, "STALE_ITERATION")) << codes(o.verdict);
    ASSERT_EQ(o.record.wrong_elements_per_iteration.size(), 5u);
    EXPECT_EQ(o.record.wrong_elements_per_iteration[0], 0);  // the first replay's flags were fresh
    for (size_t i = 1; i < 5; ++i) EXPECT_GT(o.record.wrong_elements_per_iteration[i], 0) << i;
    // Without stragglers the race resolves the same way every time: repeats agree.
    EXPECT_TRUE(o.record.nondeterministic_iterations.empty());
  }
}

TEST(HarnessIterations, StaleReplayWithStragglersIsAlsoNondeterministic) {
  auto backend = make_cpu_backend();
  RunRequest req = request(Mode::SplitSdma, WireDtype::Bf16, Transport::Sdma, "stale-replay", 8);
  req.iterations = 7;
  req.straggle_us = 40;
  const RunOutcome o = run_and_check(*backend, req);
  EXPECT_TRUE(has_code(o.verdict, "STALE_ITERATION")) << codes(o.verdict);
  EXPECT_TRUE(has_code(o.verdict, "NONDETERMINISTIC")) << codes(o.verdict);
  ASSERT_FALSE(o.record.nondeterministic_iterations.empty());
  const auto& nd = o.record.nondeterministic_iterations.front();
  EXPECT_EQ(nd.iteration % 2, nd.repeat_of % 2);
  EXPECT_FALSE(nd.ranks.empty());
}

TEST(HarnessIterations, FrozenFlagCopiesThePreviousReplaysResult) {
  auto backend = make_cpu_backend();
  for (Transport t : {Transport::Sdma, Transport::Lsa}) {
    const RunOutcome o = run_and_check(*backend, request(Mode::FusedSdma, WireDtype::Fp8, t, "frozen-flag"));
    EXPECT_TRUE(has_code(o.verdict, "STALE_ITERATION")) << codes(o.verdict);
    EXPECT_EQ(o.record.wrong_elements_per_iteration.at(0), 0);
    EXPECT_GT(o.record.stale_elements.value_or(0), 0);  // the peers' views are the previous iteration's output
  }
}

TEST(HarnessIterations, CheckEverySecondIterationStillSeesDataLeftByTheUncheckedOne) {
  auto backend = make_cpu_backend();
  RunRequest req = request(Mode::SplitSdma, WireDtype::Bf16, Transport::Sdma, "stale-replay");
  req.check_every = 2;
  const RunOutcome o = run_and_check(*backend, req);
  EXPECT_EQ(o.record.iterations_checked.value_or(0), 3);  // 0, 2, 4
  EXPECT_TRUE(has_code(o.verdict, "STALE_ITERATION")) << codes(o.verdict);
}

TEST(HarnessIterations, OneIterationCannotSeeAReplayFault) {
  // The reason to check every iteration: the old single check (first run) passes a stale replay.
  auto backend = make_cpu_backend();
  RunRequest req = request(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma, "stale-replay");
  req.iterations = 1;
  EXPECT_TRUE(run_and_check(*backend, req).verdict.pass);
}

TEST(HarnessIterations, RecordFieldsRoundTripThroughJson) {
  RunRecord r;
  r.shape = Shape{1024, 1024, 128, 4};
  r.iterations_checked = 3;
  r.check_every = 2;
  r.wrong_elements_per_iteration = {0, 5, 7};
  r.stale_elements = 4;
  r.nondeterministic_iterations.push_back({4, 2, {1, 3}});
  r.straggle_us = 25;
  const RunRecord b = run_record_from_json(run_record_to_json(r), "t");
  EXPECT_EQ(b.iterations_checked, 3);
  EXPECT_EQ(b.check_every, 2);
  EXPECT_EQ(b.wrong_elements_per_iteration, (std::vector<int64_t>{0, 5, 7}));
  EXPECT_EQ(b.stale_elements, 4);
  ASSERT_EQ(b.nondeterministic_iterations.size(), 1u);
  EXPECT_EQ(b.nondeterministic_iterations[0].iteration, 4);
  EXPECT_EQ(b.nondeterministic_iterations[0].repeat_of, 2);
  EXPECT_EQ(b.nondeterministic_iterations[0].ranks, (std::vector<int>{1, 3}));
  // The judge names the iteration and the ranks, whichever command built the record.
  const Verdict v = judge(b, JudgeOptions{});
  bool named = false;
  for (const auto& f : v.findings)
    if (f.code == "NONDETERMINISTIC")
      named = f.message.find("Iteration 4") != std::string::npos && f.message.find("ranks 1, 3") != std::string::npos;
  EXPECT_TRUE(named) << codes(v);
  EXPECT_TRUE(has_code(v, "STALE_ITERATION")) << codes(v);
}

TEST(HarnessSelftest, EveryCollectiveConfigSumsRankPlusOneExactly) {
  auto backend = make_cpu_backend();
  for (int w : {2, 4, 8}) {
    Config base;
    for (const Config& c : all_configs(base)) {
      if (!has_collective(c.mode)) continue;
      const SelftestResult r = run_selftest(*backend, Shape{int64_t(w) * 128, 1024, 128, w}, c, Faults{});
      EXPECT_TRUE(r.pass) << config_label(c) << " W=" << w << ": " << r.message;
      EXPECT_EQ(r.checked_elements, int64_t(w) * 128 * 1024 * w);
    }
  }
}

TEST(HarnessSelftest, SilentLegsAreNamed) {
  auto backend = make_cpu_backend();
  Config c;
  c.mode = Mode::SplitSdma;
  const Shape s{8 * 128, 1024, 128, 8};
  const SelftestResult scatter = run_selftest(*backend, s, c, parse_faults("silent-scatter"));
  EXPECT_FALSE(scatter.pass);
  EXPECT_NE(scatter.message.find("scatter leg"), std::string::npos) << scatter.message;
  EXPECT_NE(scatter.message.find("owner rank"), std::string::npos) << scatter.message;
  const SelftestResult gather = run_selftest(*backend, s, c, parse_faults("silent-gather"));
  EXPECT_FALSE(gather.pass);
  EXPECT_NE(gather.message.find("gather leg"), std::string::npos) << gather.message;
  EXPECT_EQ(gather.message.find("scatter leg"), std::string::npos) << gather.message;
}

TEST(HarnessSelftestCli, SilentGatherExitsOneNamingTheLeg) {
  const auto ok = test::run_gemmar("selftest --backend cpu --world 4");
  EXPECT_EQ(ok.rc, 0) << ok.out << ok.err;
  const auto bad = test::run_gemmar("selftest --backend cpu --world 4 --inject silent-gather");
  EXPECT_EQ(bad.rc, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("gather leg"), std::string::npos) << bad.out;
}

TEST(HarnessRunCli, StaleReplayFailsWithItsCodeAndOptionsAreValidated) {
  const auto r = test::run_gemmar(
      "run --backend cpu -m 1024 -n 1024 -k 128 --world 4 --check-rows 64 --straggle 20 --inject stale-replay");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("STALE_ITERATION"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"wrong_elements_per_iteration\""), std::string::npos) << r.out;
  const auto bad = test::run_gemmar("run --backend cpu -m 1024 -n 1024 -k 128 --world 4 --check-every 0");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("--check-every"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace gemmar
