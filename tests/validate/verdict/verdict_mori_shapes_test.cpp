// Verdicts on the shapes ROCm/mori really prints (issue 27), judged from injected expectations (milliseconds):
// NOT_VALIDATED naming the failing ranks and mori's wrong-scale-order signature, NONDETERMINISTIC only across
// clean repeats (mori's pytest.approx(rel=1e-6)), rank 0's exit 1 by design, sweep.py's stdout, the op
// worker's case records, QUANT_MISMATCH against a record whose quant is unknown.
#include <gtest/gtest.h>

#include "model/model.hpp"
#include "validate/verdict/across_runs.hpp"
#include "validate/verdict/log_verdicts.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar {
namespace {

Expectations expect_for(const RunRecord& r) {
  Expectations e;
  e.config = r.config;
  e.floors = FloorExpectation{2.351e-3, 2.492e-2, 1.6e-6, 1.9e-5, 256, 16384};
  e.profile_name = "mi355x";
  e.profile = std::make_shared<model::Profile>(model::load_profile("mi355x"));
  e.prediction = model::predict(*e.profile, r.shape, e.config);
  e.judge_timing = false;
  return e;
}

RunRecord run(Mode mode, double rel_l2, bool validated) {
  RunRecord r;
  r.source = "t.log:5";
  r.config.mode = mode;
  r.max_rank_time_us = 1150.0;
  r.per_rank_time_us.assign(8, 1150.0);
  r.rel_l2 = rel_l2;
  r.validated = validated;
  r.timing = "graph";
  r.raw = nlohmann::json::object();
  return r;
}

const Finding* find(const Verdict& v, const std::string& code) {
  for (const auto& f : v.findings)
    if (f.code == code) return &f;
  return nullptr;
}
bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }
std::string dump(const Verdict& v) { return to_json({v}).dump(); }

TEST(VerdictMoriShapes, NotValidatedNamesTheRanksThatFailedAndHowFarFromTheFloor) {
  RunRecord r = run(Mode::FusedSdma, 2.3509e-3, false);  // rank 0's own rel_l2 is clean
  r.raw["rank_validation_failures"] = {{{"rank", 3}, {"rel_l2", 4.123e-3}, {"gemm_only", false}, {"source", "t.log:3"}},
                                       {{"rank", 5}, {"rel_l2", 5.87e-3}, {"gemm_only", false}, {"source", "t.log:4"}}};
  const auto v = judge(r, expect_for(r));
  ASSERT_TRUE(find(v, "NOT_VALIDATED")) << dump(v);
  const std::string& m = find(v, "NOT_VALIDATED")->message;
  EXPECT_TRUE(contains(m, "Ranks 3, 5 printed VALIDATION FAILED")) << m;
  EXPECT_TRUE(contains(m, "0.00412 (1.8x the floor)")) << m;
  EXPECT_FALSE(contains(m, "see the numerics findings")) << m;  // there are none: the ranks are the finding
  // Without the rank lines: rank 0's value passes, so another rank failed.
  RunRecord bare = run(Mode::FusedSdma, 2.3509e-3, false);
  const auto b = judge(bare, expect_for(bare));
  EXPECT_TRUE(contains(find(b, "NOT_VALIDATED")->message, "another rank failed")) << dump(b);
}

TEST(VerdictMoriShapes, GemmOnlyAtAQuarterIsTheWrongScaleOrderSignature) {
  RunRecord r = run(Mode::GemmOnly, 0.2612, false);
  r.raw["rank_validation_failures"] = {{{"rank", 0}, {"rel_l2", 0.2612}, {"gemm_only", true}, {"source", "t.log:2"}}};
  const auto v = judge(r, expect_for(r));
  ASSERT_TRUE(find(v, "NOT_VALIDATED")) << dump(v);
  const std::string& m = find(v, "NOT_VALIDATED")->message;
  EXPECT_TRUE(contains(m, "GEMM VALIDATION FAILED")) << m;
  EXPECT_TRUE(contains(m, "wrong-scale-order signature")) << m;
  EXPECT_TRUE(contains(m, "test_gemm_ar_op.py")) << m;
  // Not a blockscale run (ptpc has one scale per row): no such signature.
  r.config.quant = Quant::Ptpc;
  EXPECT_FALSE(contains(find(judge(r, expect_for(r)), "NOT_VALIDATED")->message, "scale-order"));
}

Verdict judged(double rel_l2, bool validated, const std::string& source) {
  RunRecord r = run(Mode::FusedSdma, rel_l2, validated);
  r.source = source;
  return judge(r, expect_for(r));
}

TEST(VerdictMoriShapes, AFaultyRepeatWarnsTheCleanOnesAndDoesNotFailThem) {
  std::vector<Verdict> vs = {judged(2.3509e-3, true, "a:1"), judged(4.123e-3, false, "a:2"),
                             judged(2.3509e-3, true, "a:3")};
  judge_repeats(vs);
  EXPECT_TRUE(vs[0].pass && vs[2].pass) << dump(vs[0]);
  ASSERT_TRUE(find(vs[0], "NONDETERMINISTIC"));
  EXPECT_EQ(find(vs[0], "NONDETERMINISTIC")->severity, Severity::Warning);
  EXPECT_TRUE(contains(find(vs[0], "NONDETERMINISTIC")->message, "a:2 0.004123")) << dump(vs[0]);
  EXPECT_FALSE(vs[1].pass);
  EXPECT_FALSE(find(vs[1], "NONDETERMINISTIC"));  // it fails on its own; that is its finding
}

TEST(VerdictMoriShapes, CleanRepeatsAreJudgedWithMorisOwnTolerance) {
  // pytest.approx(first, rel=1e-6): 4e-7 apart is the same result, 1.3e-4 apart is a race.
  std::vector<Verdict> same = {judged(2.3509e-3, true, "b:1"), judged(2.3509e-3 * (1 + 4e-7), true, "b:2")};
  judge_repeats(same);
  EXPECT_FALSE(find(same[0], "NONDETERMINISTIC"));
  std::vector<Verdict> differ = {judged(2.3509e-3, true, "c:1"), judged(2.3512e-3, true, "c:2")};
  judge_repeats(differ);
  ASSERT_TRUE(find(differ[1], "NONDETERMINISTIC"));
  EXPECT_FALSE(differ[1].pass);
  EXPECT_TRUE(contains(find(differ[1], "NONDETERMINISTIC")->message, "pytest.approx(rel=1e-6)"));
}

LogFailure failure(const std::string& kind, std::optional<int> code = std::nullopt,
                   std::optional<int> rank = std::nullopt) {
  LogFailure f;
  f.source = "t.log:9";
  f.kind = kind;
  f.what = kind;
  f.line = kind;
  f.exit_code = code;
  f.exit_rank = rank;
  return f;
}

TEST(VerdictMoriShapes, RankZeroExitingOneAfterAFailedValidationIsByDesign) {
  const std::vector<LogFailure> torchrun = {failure("exit_code", 1, 0), failure("child_failed"),
                                            failure("exit_code", 1)};
  const auto v = benchmark_failed_verdict(torchrun, true);
  EXPECT_TRUE(v.pass);
  ASSERT_TRUE(find(v, "BENCHMARK_EXIT"));
  EXPECT_TRUE(contains(find(v, "BENCHMARK_EXIT")->message, "No exception was raised"));
  EXPECT_TRUE(is_log_level(v));
  // The same exit with every run validated, another rank's exit, or a real exception: BENCHMARK_FAILED.
  EXPECT_FALSE(benchmark_failed_verdict(torchrun, false).pass);
  EXPECT_FALSE(benchmark_failed_verdict({failure("exit_code", 1, 3)}, true).pass);
  LogFailure raised = failure("traceback");
  raised.exception = "RuntimeError: gemm_ar self-test failed: ... BUILD_CCO_SDMA=OFF";
  raised.what = "the benchmark raised " + raised.exception;
  const auto f = benchmark_failed_verdict({failure("child_failed"), raised}, true);
  ASSERT_TRUE(find(f, "BENCHMARK_FAILED"));
  EXPECT_TRUE(contains(find(f, "BENCHMARK_FAILED")->message,
                       "The benchmark run failed: the benchmark raised "
                       "RuntimeError: gemm_ar self-test failed"));
}

TEST(VerdictMoriShapes, SweepStdoutFailsOnFailedPointsAndSaysWhatItHolds) {
  SweepLog sw;
  sw.preset = "fused";
  sw.total = 3;
  sw.points = {{1, "m=4096 mode=gemm-only", "s:3", 1, std::nullopt},
               {2, "m=4096 mode=split-sdma", "s:5", 0, std::string("TIMEOUT after 1800s")},
               {3, "m=4096 mode=split-lsa", "s:7", 1, std::nullopt}};
  sw.summary_failed = 1;
  const auto v = sweep_verdict(sw, "s");
  EXPECT_FALSE(v.pass);
  ASSERT_TRUE(find(v, "SWEEP_FAILED"));
  EXPECT_TRUE(contains(find(v, "SWEEP_FAILED")->message, "[2/3] m=4096 mode=split-sdma: TIMEOUT after 1800s"));
  sw.points[1].failure.reset();
  sw.points[1].ok_lines = 1;
  sw.summary_failed.reset();
  sw.summary_all_ok = true;
  sw.out_path = "/x/fused.jsonl";
  const auto ok = sweep_verdict(sw, "s");
  EXPECT_TRUE(ok.pass);
  ASSERT_TRUE(find(ok, "SWEEP_STDOUT"));
  EXPECT_TRUE(contains(find(ok, "SWEEP_STDOUT")->message, "all 3 points ok")) << dump(ok);
  EXPECT_TRUE(contains(find(ok, "SWEEP_STDOUT")->message, "/x/fused.jsonl"));
  // Cut after point 2 with no summary line: the sweep did not finish.
  sw.points.pop_back();
  sw.summary_all_ok = false;
  EXPECT_FALSE(sweep_verdict(sw, "s").pass);
}

LogEntry other(const nlohmann::json& j) {
  LogEntry e;
  e.source = "w.log:3";
  e.kind = "other";
  e.raw = j;
  return e;
}

TEST(VerdictMoriShapes, OpWorkerCasesAreJudgedByTheirOwnFields) {
  const auto pass = other_record_verdict(other({{"case", "changing_data"}, {"call0", 2.4e-3}, {"call1", 2.41e-3}}));
  EXPECT_TRUE(pass.pass);
  EXPECT_TRUE(pass.findings.empty());
  EXPECT_TRUE(is_other_record(pass));
  const auto scale = other_record_verdict(
      other({{"case", "scale_order"}, {"rel_l2", 0.2604}, {"flat_matches", true}, {"physical_matches", true}}));
  EXPECT_FALSE(scale.pass);
  ASSERT_TRUE(find(scale, "SELF_TEST_FAILED"));
  EXPECT_TRUE(contains(find(scale, "SELF_TEST_FAILED")->message, "wrong-scale-order signature"));
  const auto teeth = other_record_verdict(
      other({{"case", "self_test"}, {"passes_on_working_stack", true}, {"detects_missing_scatter", false}}));
  EXPECT_FALSE(teeth.pass);
  EXPECT_TRUE(contains(find(teeth, "SELF_TEST_FAILED")->message, "detects_missing_scatter=false"));
  const auto unknown = other_record_verdict(other({{"tokens", 128}}));
  EXPECT_TRUE(unknown.pass);
  ASSERT_TRUE(find(unknown, "OTHER_RECORD"));
}

// test_gemm_ar_op.py's FP8_FLOOR written as mori writes it, in the failure and in the passing note alike.
TEST(VerdictMoriShapes, OpWorkerFloorIsWrittenAsTheTestWritesIt) {
  const auto fail = other_record_verdict(other({{"case", "changing_data"}, {"call0", 4.1e-3}}));
  ASSERT_TRUE(find(fail, "SELF_TEST_FAILED"));
  EXPECT_TRUE(contains(find(fail, "SELF_TEST_FAILED")->message, "call0=0.0041 (>= 3e-3)"))
      << find(fail, "SELF_TEST_FAILED")->message;
  const auto pass = other_record_verdict(other({{"case", "changing_data"}, {"call0", 2.4e-3}}));
  ASSERT_EQ(pass.context.notes.size(), 1u);
  EXPECT_TRUE(contains(pass.context.notes[0], "below test_gemm_ar_op.py's FP8_FLOOR 3e-3)")) << pass.context.notes[0];
}

// The single-process GEMM rows in mori's benchmark/cco/flydsl/gemm_ar/ are named by the script that wrote them:
// mori_1p.jsonl (bench_mori_gemm_1p.py), sglang_wob.jsonl (bench_sglang_wob.py), aiter_blockscale.jsonl
// (bench_aiter_blockscale.py).
TEST(VerdictMoriShapes, RouteRowsNameTheirProducer) {
  const auto msg = [](const std::string& route) {
    const auto v = other_record_verdict(other({{"route", route}, {"m", 4096}, {"n", 5120}, {"k", 2048}, {"us", 89.3}}));
    EXPECT_TRUE(v.pass);
    EXPECT_TRUE(is_other_record(v));
    return find(v, "OTHER_RECORD") ? find(v, "OTHER_RECORD")->message : std::string();
  };
  EXPECT_EQ(msg("mori-mxfp8-1p"),
            "A record of mori's single-process GEMM benchmark (route mori-mxfp8-1p, m=4096, n=5120, k=2048, 89.3 us; "
            "bench_mori_gemm_1p.py): the GEMM alone, not a gemm_ar run; listed, not judged.");
  const std::string sglang = msg("prod-bf16(gemm only)");
  EXPECT_TRUE(contains(sglang, "A record of sglang's wo_b GEMM routes (route prod-bf16(gemm only), m=4096")) << sglang;
  EXPECT_TRUE(contains(sglang, "; bench_sglang_wob.py)")) << sglang;
  EXPECT_FALSE(contains(sglang, "mori")) << sglang;
  EXPECT_TRUE(contains(msg("native-mxfp8(fp8-in)"), "bench_sglang_wob.py"));
  EXPECT_TRUE(contains(msg("aiter-blockscale"), "aiter's blockscale GEMM (route aiter-blockscale"));
  EXPECT_TRUE(contains(msg("aiter-blockscale"), "; bench_aiter_blockscale.py)"));
  EXPECT_TRUE(contains(msg("other-route"), "A record of a single-process GEMM benchmark (route other-route"));
}

TEST(VerdictMoriShapes, ABaselineOfUnknownQuantIsAMismatchNotARegression) {
  RunRecord base = run(Mode::SplitSdma, 2.3512e-3, true);
  base.max_rank_time_us = 1000.0;
  base.per_rank_time_us.assign(8, 1000.0);
  base.quant_known = false;
  base.source = "base.log:2";
  RunRecord r = run(Mode::SplitSdma, 2.3512e-3, true);
  r.max_rank_time_us = 1300.0;
  r.per_rank_time_us.assign(8, 1300.0);
  Expectations e = expect_for(r);
  e.judge_timing = true;  // baselines are a timing rule
  e.baseline = {base};
  const auto v = judge(r, e);
  EXPECT_FALSE(find(v, "REGRESSION")) << dump(v);
  ASSERT_TRUE(find(v, "QUANT_MISMATCH")) << dump(v);
  EXPECT_TRUE(contains(find(v, "QUANT_MISMATCH")->message, "quant unknown")) << dump(v);
  EXPECT_TRUE(contains(verdict_table({judge(base, expect_for(base))}), "split-sdma/quant?/")) << "table label";
}

}  // namespace
}  // namespace gemmar
