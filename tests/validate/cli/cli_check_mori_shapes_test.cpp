// `gemmar check` on the shapes ROCm/mori really prints (issue 27; tests/data/check/mori/, written by
// make_mori_logs.py, each naming its mori source file and commit): the exit code a kernel engineer expects and
// the cause named in the output. --no-timing where the model's timing verdicts (issue 24's) would interfere.
// And today's mori (issue 46; tests/data/check/mori_2026_09/, make_mori_logs_2026_09.py).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace {

using gemmar::test::run_gemmar;
const std::string kMori = std::string(GEMMAR_TEST_DATA_DIR) + "/check/mori/";
// Today's mori (issue 46): make_mori_logs_2026_09.py's files, each naming its source file:line@commit.
const std::string kToday = std::string(GEMMAR_TEST_DATA_DIR) + "/check/mori_2026_09/";
bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

gemmar::test::CliResult check(const std::string& file, std::vector<std::string> extra = {"--no-timing"},
                              const std::string& dir = kMori) {
  std::vector<std::string> args = {"check", dir + file};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_gemmar(args);
}

gemmar::test::CliResult check_today(const std::string& file, std::vector<std::string> extra = {"--no-timing"}) {
  return check(file, std::move(extra), kToday);
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

// bench_gemm_ar.py @d5443336 :561-611, and with timing: today's keys change nothing of a healthy run's verdict.
TEST(CheckMoriToday, TodaysBenchRecordsPass) {
  const auto r = check_today("bench_keys.log", {});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "4 run(s): 4 pass, 0 fail")) << r.out;
}

// The fp8 scatter (:530-543): healthy at its documented price; at the bf16 floor, the scatter leg's WIRE_NOT_USED;
// two ranks over mori's 4e-2, each against the fp8-scatter/bf16-gather floor the reference derives (not the gather's).
TEST(CheckMoriToday, Fp8ScatterRunsGetTheirLegsVerdict) {
  const auto ok = check_today("fp8_scatter.log");
  EXPECT_EQ(ok.rc, 0) << ok.out << ok.err;
  EXPECT_TRUE(has(ok.out, "4 run(s): 4 pass, 0 fail")) << ok.out;
  EXPECT_FALSE(has(ok.out, "NUMERICS_ABOVE_FLOOR")) << ok.out;
  EXPECT_TRUE(has(ok.out, "fused-sdma/blockscale/bf16/sdma/scatter-fp8")) << ok.out;
  const auto off = check_today("fp8_scatter_not_engaged.log");
  EXPECT_EQ(off.rc, 1) << off.out << off.err;
  EXPECT_TRUE(has(off.out, "WIRE_NOT_USED: This run asked for an fp8 scatter but has rel_l2 0.00235")) << off.out;
  EXPECT_TRUE(has(off.out,
                  "at the floor it would have with a bf16 scatter, 0.00235, not the fp8-scatter/bf16-gather "
                  "floor 0.0262: the scatter leg's fp8 never engaged"))
      << off.out;
  const auto over = check_today("fp8_scatter_over_gate.log");
  EXPECT_EQ(over.rc, 1) << over.out << over.err;
  EXPECT_TRUE(has(over.out,
                  "Ranks 2, 6 printed VALIDATION FAILED with relL2 0.0431 (1.6x the floor), 0.0452 (1.7x the "
                  "floor), the fp8-scatter/bf16-gather floor 0.0262"))
      << over.out;
}

// bench_gemm_ar.py @d5443336 :274-285 and :287-288: mori's reason, not a generic failure.
TEST(CheckMoriToday, RefusedConfigurationsShowMorisReason) {
  const auto lsa = check_today("split_lsa_fp8_refused.log");
  EXPECT_EQ(lsa.rc, 1) << lsa.out << lsa.err;
  EXPECT_TRUE(has(lsa.out, "CONFIG_REFUSED")) << lsa.out;
  EXPECT_TRUE(has(lsa.out, "split-lsa has no fp8 gather leg (build_lsa_ar takes no gather_dtype)")) << lsa.out;
  EXPECT_FALSE(has(lsa.out, "BENCHMARK_FAILED")) << lsa.out;
  const auto scatter = check_today("fp8_scatter_not_fused.log");
  EXPECT_EQ(scatter.rc, 1) << scatter.out << scatter.err;
  EXPECT_TRUE(has(scatter.out, "CONFIG_REFUSED")) << scatter.out;
  EXPECT_TRUE(has(scatter.out, "wired only through --mode fused-sdma")) << scatter.out;
  EXPECT_FALSE(has(scatter.out, "BENCHMARK_FAILED")) << scatter.out;
}

// test_gemm_ar_bench.py @e7606746 -s (:100-104, :122-128) and its gate (:132-136).
TEST(CheckMoriToday, TestGemmArBenchOutputIsJudged) {
  const auto ok = check_today("pytest_bench_s.log", {});
  EXPECT_EQ(ok.rc, 0) << ok.out << ok.err;
  EXPECT_TRUE(has(ok.out, "5 run(s): 5 pass, 0 fail")) << ok.out;
  const auto slow = check_today("pytest_bench_fused_slower.log", {"--no-timing", "--json"});
  EXPECT_EQ(slow.rc, 1) << slow.out << slow.err;
  const auto j = nlohmann::json::parse(slow.out);
  EXPECT_EQ(j["summary"]["runs"], 2);
  EXPECT_EQ(j["summary"]["log_findings"], 1);  // the block and pytest's assertion: one finding
  const std::string msg = j["runs"][2]["findings"][0]["message"];
  EXPECT_EQ(j["runs"][2]["findings"][0]["code"], "MORI_GATE");
  EXPECT_TRUE(has(msg, "fused-sdma 1480.2 us did not beat split-sdma 1465.5 us")) << msg;
}

// sweep.py @4488353a: require_sdma's refusal is an environment finding, not "no runs found"; the occupancy note.
TEST(CheckMoriToday, SweepRefusalAndOccupancyNoteAreNamed) {
  const auto off = check_today("sweep_sdma_off.log");
  EXPECT_EQ(off.rc, 1) << off.out << off.err;
  EXPECT_TRUE(has(off.out, "SDMA_COMPILED_OUT")) << off.out;
  EXPECT_TRUE(has(off.out, "rebuild mori with BUILD_CCO_SDMA=ON")) << off.out;
  const auto moved = check_today("sweep_occupancy_moved.log");
  EXPECT_EQ(moved.rc, 0) << moved.out << moved.err;
  EXPECT_TRUE(has(moved.out, "OCCUPANCY_MOVED(w)")) << moved.out;
  EXPECT_TRUE(has(moved.out, "before: 0 0 0 0 GiB/card, after: 12 0 0 0")) << moved.out;
}

// gemm_ar_schedule_worker.py and gemm_ar_wire_reference.py @f3bff0ae.
TEST(CheckMoriToday, ScheduleWorkerAndWireReferenceAreJudged) {
  const auto bf16 = check_today("schedule_worker_bf16.log");
  EXPECT_EQ(bf16.rc, 0) << bf16.out << bf16.err;
  EXPECT_TRUE(has(bf16.out, "worst replay relL2 0.00236 (limit 0.003)")) << bf16.out;
  const auto fp8 = check_today("schedule_worker_fp8.log");
  EXPECT_EQ(fp8.rc, 0) << fp8.out << fp8.err;
  EXPECT_TRUE(has(fp8.out, "(limit 0.045)")) << fp8.out;
  EXPECT_TRUE(has(fp8.out, "8 GATHER_WIRE_CHECK line(s)")) << fp8.out;
  EXPECT_TRUE(has(fp8.out, "2 other record(s)")) << fp8.out;
  const auto replay = check_today("schedule_worker_replay_failed.log");
  EXPECT_EQ(replay.rc, 1) << replay.out << replay.err;
  EXPECT_TRUE(has(replay.out, "the graph replayed without seeing the changed inputs")) << replay.out;
  const auto wire = check_today("wire_reference_failed.log");
  EXPECT_EQ(wire.rc, 1) << wire.out << wire.err;
  EXPECT_TRUE(has(wire.out, "(tolerance 1e-3, :130-131)")) << wire.out;
}

// gemm_ar_op_worker.py @54e74a02: the mxfp8 record judged by its relL2; the row report named.
TEST(CheckMoriToday, OpWorkerRecordsOfTodayAreJudgedByTheirRelL2) {
  const auto ok = check_today("op_worker.log");
  EXPECT_EQ(ok.rc, 0) << ok.out << ok.err;
  EXPECT_TRUE(has(ok.out, "7 other record(s); 0 failing entries")) << ok.out;
  const auto bad = check_today("op_worker_failed.log");
  EXPECT_EQ(bad.rc, 1) << bad.out << bad.err;
  EXPECT_TRUE(has(bad.out, "a stale scatter slot")) << bad.out;
  EXPECT_TRUE(has(bad.out, "ue8m0 scale byte 0xFF is NaN")) << bad.out;
  EXPECT_FALSE(has(bad.out, "+-240")) << bad.out;
}

// op.py @f3bff0ae self_test on a NaN; an mxfp8 bench run whose output holds NaN.
TEST(CheckMoriToday, NanCausesAreNamedRight) {
  const auto st = check_today("self_test_nan.log");
  EXPECT_EQ(st.rc, 1) << st.out << st.err;
  EXPECT_TRUE(has(st.out, "returned nan where 36 was expected")) << st.out;
  EXPECT_FALSE(has(st.out, "BUILD_CCO_SDMA")) << st.out;
  EXPECT_TRUE(has(st.out, "The NaN was computed")) << st.out;
  const auto mx = check_today("mxfp8_nan.log");
  EXPECT_EQ(mx.rc, 1) << mx.out << mx.err;
  EXPECT_TRUE(has(mx.out, "ue8m0 scale byte 0xFF is NaN")) << mx.out;
  EXPECT_FALSE(has(mx.out, "+-240")) << mx.out;
}

// The newcomer: a record of other hardware with no profile, and the results.json gemmar itself writes.
TEST(CheckMoriToday, NewcomersGetAProfileHintAndTheirResultsJsonRead) {
  const auto other = check_today("other_hardware_no_profile.log", {});
  EXPECT_EQ(other.rc, 1) << other.out << other.err;
  EXPECT_TRUE(has(other.out, "pass --profile")) << other.out;
  EXPECT_FALSE(has(check_today("other_hardware_no_profile.log", {"--profile", "mi355x"}).out, "pass --profile"));
  // check --json writes the document validate writes ({"runs": [{"record": ...}], "summary": ...}).
  const auto json = check_today("bench_keys.log", {"--no-timing", "--json"});
  ASSERT_EQ(json.rc, 0) << json.err;
  const auto results = gemmar::test::scratch_dir("mori_today") / "results.json";
  gemmar::test::write_text(results, json.out);
  const auto again = run_gemmar({"check", results.string(), "--no-timing"});
  EXPECT_EQ(again.rc, 0) << again.out << again.err;
  EXPECT_TRUE(has(again.out, "4 run(s): 4 pass, 0 fail")) << again.out;
  EXPECT_TRUE(has(again.out, "results.json:1:runs[3]")) << again.out;
}

}  // namespace
