// `gemmar check` on real-shaped benchmark logs (docs/check.md), end to end through the binary: what the benchmark
// run says about itself, exit codes, --expect, --world, traces matched by config, and the messages' form.
// The floors come from the ctest fixture's cache, so each run of the binary takes milliseconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace {

using gemmar::test::run_gemmar;
const std::string kData = std::string(GEMMAR_TEST_DATA_DIR) + "/check/";

nlohmann::json json_of(const gemmar::test::CliResult& r) { return nlohmann::json::parse(r.out); }
bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

TEST(CheckLogs, AllRanksWithColoursArePipedInAsThreeRuns) {
  const auto r = run_gemmar({"check", "-"}, gemmar::test::slurp(kData + "torchrun_all_ranks.log"));
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "3 run(s): 3 pass, 0 fail")) << r.out;
  EXPECT_TRUE(has(r.out, "stdin:13")) << r.out;
}

TEST(CheckLogs, ACrashedBenchmarkFailsEvenWhenItsRunsPassed) {
  const auto r = run_gemmar({"check", kData + "crashed_mid_log.log", "--json"});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  const auto j = json_of(r);
  ASSERT_EQ(j["runs"].size(), 3u);
  EXPECT_EQ(j["runs"][0]["verdict"], "pass");
  const auto& failed = j["runs"][2];
  EXPECT_EQ(failed["source"], kData + "crashed_mid_log.log:9");
  EXPECT_EQ(failed["findings"][0]["code"], "BENCHMARK_FAILED");
  EXPECT_TRUE(has(failed["findings"][0]["message"], "ChildFailedError")) << failed.dump();
  const auto stale = run_gemmar({"check", kData + "stale_queues.log"});
  EXPECT_EQ(stale.rc, 1);
  EXPECT_TRUE(has(stale.out, "BENCHMARK_FAILED")) << stale.out;
  EXPECT_TRUE(has(stale.out, "stale-queue")) << stale.out;
}

TEST(CheckLogs, ExpectFailsALogWithFewerRuns) {
  const std::string log = kData + "torchrun_all_ranks.log";
  EXPECT_EQ(run_gemmar({"check", log, "--expect", "3"}).rc, 0);
  const auto r = run_gemmar({"check", log, "--expect", "5"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(has(r.out, "RUNS_MISSING")) << r.out;
  EXPECT_TRUE(has(r.out, "holds 3 run(s)")) << r.out;
  // A log with no run at all fails with --expect (the benchmark died before printing) and is bad input without.
  EXPECT_EQ(run_gemmar({"check", "-", "--expect", "1"}, std::string("W0602 torchrun banner\n")).rc, 1);
  EXPECT_EQ(run_gemmar({"check", "-"}, std::string("W0602 torchrun banner\n")).rc, 2);
  EXPECT_EQ(run_gemmar({"check", log, "--expect", "0"}).rc, 2);
}

TEST(CheckLogs, OlderBenchmarkDefaultsWorldAndSaysSo) {
  const auto r = run_gemmar({"check", kData + "old_benchmark.log"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "world_size absent (an older benchmark version): assumed 8")) << r.out;
  const auto four = run_gemmar({"check", kData + "old_benchmark.log", "--world", "4"});
  EXPECT_EQ(four.rc, 1);
  EXPECT_TRUE(has(four.out, "per_rank_time_us' has 8 entries but world_size is 4")) << four.out;
}

TEST(CheckLogs, ImpossibleValuesPartialEagerRacyAndRepeats) {
  EXPECT_EQ(run_gemmar({"check", kData + "impossible_values.log"}).rc, 1);
  const auto p = run_gemmar({"check", kData + "partial_eager_racy.log", "--json"});
  EXPECT_EQ(p.rc, 0) << p.out << p.err;
  const std::string all = p.out;
  for (const char* code : {"PARTIAL_RUN", "EAGER_TIMING", "RACY_PUBLISH"}) EXPECT_TRUE(has(all, code)) << code;
  for (const char* code : {"SILENT_TRANSFER", "FASTER_THAN_PHYSICS", "NOT_VALIDATED"})
    EXPECT_FALSE(has(all, code)) << code;
  const auto rep = run_gemmar({"check", kData + "repeats.log"});
  EXPECT_EQ(rep.rc, 1);
  EXPECT_TRUE(has(rep.out, "NONDETERMINISTIC")) << rep.out;
  EXPECT_TRUE(has(rep.out, "3 fail")) << rep.out;
  const auto fast = run_gemmar({"check", kData + "faster_than_model.log"});
  EXPECT_EQ(fast.rc, 0);
  EXPECT_TRUE(has(fast.out, "FASTER_THAN_MODEL(w)")) << fast.out;
}

// An MI355X run judged as MI300X is faster than MI300X's peak rates allow: below physics fails on every
// profile, calibrated or not, and the message points at --profile.
TEST(CheckLogs, UncalibratedProfileSaysSoAndBelowPhysicsStillFails) {
  const auto r = run_gemmar({"check", kData + "faster_than_model.log", "--profile", "mi300x"});
  EXPECT_TRUE(has(r.out, "profile mi300x is uncalibrated")) << r.out;
  EXPECT_TRUE(has(r.out, "error FASTER_THAN_PHYSICS")) << r.out;
  EXPECT_TRUE(has(r.out, "--profile")) << r.out;
  EXPECT_EQ(r.rc, 1) << r.out;
}

TEST(CheckLogs, PlainTraceAttachesOnlyToTheRunItsKernelsMatch) {
  const std::string trace = kData + "rocprof_fused_sdma_bf16.csv";
  auto r = run_gemmar({"check", kData + "mi355x_m16384.log", "--trace", trace, "--json"});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  auto j = json_of(r);
  EXPECT_TRUE(j["runs"][2]["record"].contains("trace")) << j["runs"][2].dump();  // the fused-sdma bf16 run
  EXPECT_FALSE(j["runs"][0]["record"].contains("trace"));
  r = run_gemmar({"check", kData + "mi355x_m16384.log", "--trace", trace});
  EXPECT_TRUE(has(r.out, "mi355x_m16384.log:8 [trace]")) << r.out;
  EXPECT_TRUE(has(r.out, "judged with trace")) << r.out;
  // Three fused-sdma bf16 runs: ambiguous, the candidates are listed.
  r = run_gemmar({"check", kData + "repeats.log", "--trace", trace});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(has(r.err, "match 3 runs")) << r.err;
  EXPECT_TRUE(has(r.err, "repeats.log:7")) << r.err;
  // One fused-sdma bf16 run among others (an older benchmark's log): it is the one.
  r = run_gemmar({"check", kData + "old_benchmark.log", "--trace", trace});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(has(r.out, "old_benchmark.log:7 [trace]")) << r.out;
  // No fused-sdma bf16 run at all.
  r = run_gemmar(
      {"check", "-", "--trace", trace},
      std::string(R"(RESULT_JSON {"k": 2048, "m": 16384, "mode": "split-sdma", "n": 7168, "world_size": 8})") + "\n");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(has(r.err, "match no run's config")) << r.err;
  EXPECT_TRUE(has(r.err, "stdin:1")) << r.err;
  // Named explicitly, it attaches whatever the config.
  r = run_gemmar({"check", kData + "repeats.log", "--trace", "2=" + trace, "--json"});
  EXPECT_TRUE(json_of(r)["runs"][1]["record"].contains("trace")) << r.err;
}

TEST(CheckLogs, PullBlocksOptionShowsInTheConfigColumn) {
  const auto r = run_gemmar({"check", kData + "torchrun_all_ranks.log", "--pull-blocks", "512"});
  EXPECT_TRUE(has(r.out, "fp8/lsa/pull=512")) << r.out;
}

TEST(CheckLogs, MessagesNameTheFileOnceAndStrayArgumentsAreErrors) {
  auto r = run_gemmar(std::vector<std::string>{"check"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_FALSE(has(r.err, "gemmar check: gemmar check")) << r.err;
  const std::string dir = std::filesystem::path(kData).parent_path().string();
  for (const auto& args : std::vector<std::vector<std::string>>{{"check", dir},
                                                                {"check", kData + "repeats.log", "--trace", dir},
                                                                {"check", kData + "repeats.log", "--baseline", dir},
                                                                {"check", kData + "repeats.log", "--phase-map", dir},
                                                                {"check", kData + "repeats.log", "--profile", dir}}) {
    r = run_gemmar(args);
    EXPECT_EQ(r.rc, 2) << args.back();
    EXPECT_TRUE(has(r.err, "is a directory")) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line
  }
  EXPECT_EQ(run_gemmar({"model", "sweep", "extra"}).rc, 2);
  EXPECT_EQ(run_gemmar({"model", "--profile", "mi355x", "stray"}).rc, 2);
}

TEST(CheckLogs, ModelSweepWithoutAWireSweepsThePullWire) {
  auto r = run_gemmar({"model", "sweep", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = json_of(r);
  EXPECT_EQ(j["config"]["gather_dtype"], "fp8");
  EXPECT_EQ(j["config"]["gather_transport"], "lsa");
  r = run_gemmar({"model", "sweep", "--gather-dtype", "bf16"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(has(r.err, "no effect")) << r.err;
  EXPECT_EQ(run_gemmar({"model", "sweep", "--mode", "split-lsa"}).rc, 2);
}

}  // namespace

namespace {

// mori's committed mori_1p.jsonl (bench_mori_gemm_1p.py: the GEMM alone, one process, no mode field) is another
// producer's output: its records are listed as such, never failed as broken gemm_ar runs; a gemm_ar record
// beside them is still judged.
TEST(CheckLogs, MorisSingleProcessGemmRecordsAreListedNotFailed) {
  const std::string file = std::string(GEMMAR_TEST_DATA_DIR) + "/model/mori_1p.jsonl";
  const auto r = run_gemmar({"check", file});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "0 run(s): 0 pass, 0 fail; 24 other record(s)")) << r.out;
  EXPECT_TRUE(has(r.out, "mori's single-process GEMM benchmark (route mori-mxfp8-1p, m=4096")) << r.out;
  EXPECT_FALSE(has(r.out, "INVALID_RECORD")) << r.out;
  // A line of it and a broken gemm_ar record (mode, no times) in one stream: only the broken one fails.
  const std::string mixed = gemmar::test::slurp(file).substr(0, gemmar::test::slurp(file).find('\n') + 1) +
                            "RESULT_JSON {\"mode\": \"fused-sdma\", \"m\": 4096, \"n\": 7168, \"k\": 2048}\n";
  const auto m = run_gemmar({"check", "-"}, mixed);
  EXPECT_EQ(m.rc, 1) << m.out << m.err;
  EXPECT_TRUE(has(m.out, "1 other record(s)")) << m.out;
}

}  // namespace
