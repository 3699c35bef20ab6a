// `gemmar check` on the shapes ROCm/mori really prints (issue 27; tests/data/check/mori/, written by
// make_mori_logs.py, each naming its mori source file and commit): the exit code a kernel engineer expects and
// the cause named in the output. --no-timing where the model's timing verdicts (issue 24's) would interfere.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace {

using gemmar::test::run_gemmar;
const std::string kMori = std::string(GEMMAR_TEST_DATA_DIR) + "/check/mori/";
bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

gemmar::test::CliResult check(const std::string& file, std::vector<std::string> extra = {"--no-timing"}) {
  std::vector<std::string> args = {"check", kMori + file};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_gemmar(args);
}

TEST(CheckMoriShapes, AFailedSweepStdoutFailsNamingItsPoints) {
  const auto r = check("sweep_failed.stdout");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "SWEEP_FAILED")) << r.out;
  EXPECT_TRUE(has(r.out, "3 of 15 points FAILED: [2/15] m=4096 mode=split-sdma: TIMEOUT after 1800s")) << r.out;
  EXPECT_TRUE(has(r.out, "stale-queue signature")) << r.out;  // point 7's last line
  EXPECT_TRUE(has(r.out, "0 run(s)")) << r.out;               // a log finding is not a run
  EXPECT_FALSE(has(r.out, "BENCHMARK_FAILED")) << r.out;
}

TEST(CheckMoriShapes, AnAllOkSweepStdoutSaysWhereItsRecordsAre) {
  const auto r = check("sweep_ok.stdout");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "SWEEP_STDOUT(w)")) << r.out;
  EXPECT_TRUE(has(r.out, "all 15 points ok")) << r.out;
  EXPECT_TRUE(has(r.out, "fused.jsonl; run gemmar check on that file")) << r.out;
}

TEST(CheckMoriShapes, JsonOutArraysAndSweepJsonlAreRead) {
  const auto one = check("json_out.json");
  EXPECT_EQ(one.rc, 0) << one.out << one.err;
  EXPECT_TRUE(has(one.out, "1 run(s): 1 pass, 0 fail")) << one.out;
  const auto arr = check("records_array.json");
  EXPECT_TRUE(has(arr.out, "2 run(s): 2 pass, 0 fail")) << arr.out;
  const auto jsonl = check("sweep_fused.jsonl");
  EXPECT_EQ(jsonl.rc, 0) << jsonl.out << jsonl.err;
  EXPECT_TRUE(has(jsonl.out, "4 run(s): 4 pass, 0 fail")) << jsonl.out;
}

TEST(CheckMoriShapes, PerRankFailuresAreNamedAndRankZerosExitIsByDesign) {
  const auto r = check("rank_validation_failed.log", {"--no-timing", "--json"});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 2u) << r.out;
  const std::string nv = j["runs"][0]["findings"][0]["message"];
  EXPECT_EQ(j["runs"][0]["findings"][0]["code"], "NOT_VALIDATED");
  EXPECT_TRUE(has(nv, "Ranks 3, 5 printed VALIDATION FAILED with relL2 0.00412 (1.8x the floor)")) << nv;
  EXPECT_EQ(j["runs"][1]["findings"][0]["code"], "BENCHMARK_EXIT");
  EXPECT_EQ(j["runs"][1]["verdict"], "pass");
  EXPECT_FALSE(has(r.out, "raised an exception")) << r.out;
  EXPECT_EQ(j["summary"]["runs"], 1);
  const auto g = check("gemm_only_scale_order.log");
  EXPECT_EQ(g.rc, 1);
  EXPECT_TRUE(has(g.out, "wrong-scale-order signature")) << g.out;
}

TEST(CheckMoriShapes, RankLinesWithoutAFinishedRunLeaveTheExitAFailure) {
  const auto r = check("rank_lines_then_crash.log");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "BENCHMARK_FAILED")) << r.out;
  EXPECT_FALSE(has(r.out, "BENCHMARK_EXIT")) << r.out;
}

TEST(CheckMoriShapes, CommittedSweepRecordsWithLaterKeysAreRead) {
  const auto r = check("committed_sweep_keys.jsonl");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "2 run(s): 2 pass, 0 fail")) << r.out;
  EXPECT_FALSE(has(r.out, "RACY_PUBLISH")) << r.out;  // chunks 8, fence none: today's default
}

TEST(CheckMoriShapes, OpWorkerRecordsAreSelfTestsNotInvalidRecords) {
  const auto ok = check("op_worker.log");
  EXPECT_EQ(ok.rc, 0) << ok.out << ok.err;
  EXPECT_FALSE(has(ok.out, "INVALID_RECORD")) << ok.out;
  EXPECT_TRUE(has(ok.out, "6 other record(s)")) << ok.out;
  const auto bad = check("op_worker_failed.log");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_FALSE(has(bad.out, "INVALID_RECORD")) << bad.out;
  EXPECT_TRUE(has(bad.out, "op worker case scale_order failed")) << bad.out;
  EXPECT_TRUE(has(bad.out, "detects_missing_scatter=false")) << bad.out;
}

TEST(CheckMoriShapes, TheOpsSelfTestErrorIsTheFinding) {
  const auto r = check("self_test_runtime_error.log");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "the benchmark raised RuntimeError: gemm_ar self-test failed")) << r.out;
  EXPECT_TRUE(has(r.out, "BUILD_CCO_SDMA=OFF (the default), so the SDMA puts are compiled out")) << r.out;
  EXPECT_FALSE(has(r.out, "('[rank0]: Traceback")) << r.out;
}

TEST(CheckMoriShapes, PytestReprAndPytestPrintsMakeNoRuns) {
  const auto repr = check("pytest_repr.log");
  EXPECT_EQ(repr.rc, 0) << repr.out << repr.err;
  EXPECT_FALSE(has(repr.out, "INVALID_RECORD")) << repr.out;
  EXPECT_TRUE(has(repr.out, "1 run(s): 1 pass, 0 fail")) << repr.out;
  const auto quoted = run_gemmar({"check", "-"},
                                 "E   where 1 = CompletedProcess(args=[], returncode=1, "
                                 "stdout='RESULT_JSON {\"mode\": \"fused-sdma\"}\\n', stderr='')\n");
  EXPECT_EQ(quoted.rc, 2) << quoted.out << quoted.err;
  EXPECT_TRUE(has(quoted.err, "1 RESULT_JSON only quoted inside other lines")) << quoted.err;
  const auto human = check("pytest_human.log");
  EXPECT_EQ(human.rc, 2) << human.out << human.err;
  EXPECT_TRUE(has(human.err, "2 [gemm_ar] line(s) that are not bench_gemm_ar.py's")) << human.err;
  EXPECT_FALSE(has(human.err, "no [gemm_ar] lines")) << human.err;
}

TEST(CheckMoriShapes, RepeatsFailOnlyWhenCleanRunsDisagree) {
  const auto faulty = check("repeats_one_faulty.log");
  EXPECT_EQ(faulty.rc, 1) << faulty.out;  // the faulty repeat fails on its own
  EXPECT_TRUE(has(faulty.out, "3 run(s): 2 pass, 1 fail")) << faulty.out;
  EXPECT_TRUE(has(faulty.out, "NONDETERMINISTIC(w)")) << faulty.out;
  const auto differ = check("repeats_clean_differ.log");
  EXPECT_EQ(differ.rc, 1);
  EXPECT_TRUE(has(differ.out, "2 run(s): 0 pass, 2 fail")) << differ.out;
  EXPECT_EQ(check("repeats_within_tolerance.log").rc, 0);
}

TEST(CheckMoriShapes, RacyPublishOnlyWhereMorisHistoryShowsARace) {
  const auto r = check("racy_by_version.log", {"--no-timing", "--json"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  auto racy = [&](size_t i) {
    for (const auto& f : j["runs"][i]["findings"])
      if (f["code"] == "RACY_PUBLISH") return true;
    return false;
  };
  EXPECT_TRUE(racy(0));   // chunks=2 on a version without quant: before the s_waitcnt fix
  EXPECT_FALSE(racy(1));  // chunks=8, fence none today: the race was the GEMM, and it is gone
  EXPECT_FALSE(racy(2));  // fused-lsa: no copy engine
  EXPECT_TRUE(racy(3));   // raw-wt-agent: racy in every version
}

TEST(CheckMoriShapes, ABlockscaleRunAgainstAnOldPtpcBaselineIsAQuantMismatch) {
  const auto r = check("blockscale_vs_old.log", {"--baseline", kMori + "baseline_old_ptpc.log"});
  EXPECT_TRUE(has(r.out, "QUANT_MISMATCH(w)")) << r.out;
  EXPECT_FALSE(has(r.out, "REGRESSION")) << r.out;
  EXPECT_TRUE(has(r.out, "only as ptpc")) << r.out;
}

}  // namespace
