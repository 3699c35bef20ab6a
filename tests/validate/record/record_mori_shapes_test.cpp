// The log reader on every shape ROCm/mori really prints (issue 27; tests/data/check/mori/, written by
// make_mori_logs.py from mori's print statements, each file naming its source and commit): sweep.py's stdout,
// --json-out's multi-line object, JSON arrays, sweep .jsonl, the per-rank VALIDATION FAILED lines, the op
// worker's case records, a pytest repr quoting RESULT_JSON, pytest's own [gemm_ar] prints, tracebacks.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "validate/record/log_reader.hpp"

namespace gemmar {
namespace {

const std::string kMori = std::string(GEMMAR_TEST_DATA_DIR) + "/check/mori/";

struct Read {
  std::vector<LogEntry> entries;
  LogReadStats stats;
};

Read read_file(const std::string& name) {
  Read r;
  r.stats = read_log_file(kMori + name, [&](LogEntry&& e) { r.entries.push_back(std::move(e)); });
  return r;
}

Read read_text(const std::string& text) {
  Read r;
  std::istringstream in(text);
  r.stats = read_log(in, "t.log", [&](LogEntry&& e) { r.entries.push_back(std::move(e)); });
  return r;
}

TEST(MoriShapes, SweepStdoutNamesItsFailedPointsAndHoldsNoRecords) {
  const auto r = read_file("sweep_failed.stdout");
  EXPECT_TRUE(r.entries.empty());
  const SweepLog& sw = r.stats.context.sweep;
  ASSERT_TRUE(sw.seen());
  EXPECT_EQ(sw.preset, "fused");
  EXPECT_EQ(sw.total, 15);
  ASSERT_EQ(sw.points.size(), 15u);
  EXPECT_EQ(sw.points[1].desc, "m=4096 mode=split-sdma");
  ASSERT_TRUE(sw.points[1].failure);
  EXPECT_EQ(*sw.points[1].failure, "TIMEOUT after 1800s");
  EXPECT_EQ(sw.points[0].ok_lines, 1);
  EXPECT_EQ(sw.summary_failed.value_or(0), 3);
  // A point's `FAILED: <last line>` is the sweep's finding, not a separate benchmark failure of this log.
  EXPECT_TRUE(r.stats.failures.empty());
  const auto ok = read_file("sweep_ok.stdout");
  EXPECT_TRUE(ok.stats.context.sweep.summary_all_ok);
  EXPECT_EQ(ok.stats.context.sweep.out_path, "/work/mori/benchmark/cco/flydsl/gemm_ar/fused.jsonl");
}

TEST(MoriShapes, JsonOutFileIsOneRecordAndAnArrayIsOnePerElement) {
  const auto one = read_file("json_out.json");
  ASSERT_EQ(one.entries.size(), 1u);
  ASSERT_TRUE(one.entries[0].record) << one.entries[0].error;
  EXPECT_EQ(one.entries[0].source, kMori + "json_out.json:1");
  EXPECT_EQ(one.entries[0].record->shape.m, 16384);
  EXPECT_EQ(one.entries[0].record->config.quant, Quant::Blockscale);
  const auto arr = read_file("records_array.json");
  ASSERT_EQ(arr.entries.size(), 2u);
  EXPECT_EQ(arr.entries[1].source, kMori + "records_array.json:1[1]");
  EXPECT_EQ(arr.entries[1].record->config.mode, Mode::FusedSdma);
  // A cut file: the object never closes; it mentions "mode", so it is one broken record, not silence.
  const auto cut = read_text("{\n  \"mode\": \"fused-sdma\",\n  \"m\": 4096,\n");
  ASSERT_EQ(cut.entries.size(), 1u);
  EXPECT_NE(cut.entries[0].error.find("never closes"), std::string::npos) << cut.entries[0].error;
  // The array cut inside its second record (a file cut mid-write): the first record is read, the cut is one
  // broken record after it, so neither the records before the cut nor the cut go unseen.
  std::ifstream whole_in(kMori + "records_array.json");
  std::stringstream whole;
  whole << whole_in.rdbuf();
  const std::string text = whole.str();
  const size_t second = text.find("\"mode\"", text.find("\"mode\"") + 1);
  ASSERT_NE(second, std::string::npos);
  const auto cut_array = read_text(text.substr(0, second + 10));
  ASSERT_EQ(cut_array.entries.size(), 2u);
  ASSERT_TRUE(cut_array.entries[0].record) << cut_array.entries[0].error;
  EXPECT_EQ(cut_array.entries[0].source, "t.log:1[0]");
  EXPECT_EQ(cut_array.entries[0].record->config.mode, arr.entries[0].record->config.mode);
  EXPECT_FALSE(cut_array.entries[1].record);
  EXPECT_EQ(cut_array.entries[1].error,
            "t.log:1: a JSON array that never closes (the file was cut after element [0]; the 1 element(s) before "
            "the cut are read): whatever followed is lost");
  // Cut inside its first record: nothing closed, one broken record.
  const auto cut_first = read_text(text.substr(0, text.find("\"mode\"") + 10));
  ASSERT_EQ(cut_first.entries.size(), 1u);
  EXPECT_EQ(cut_first.entries[0].error,
            "t.log:1: a JSON array that never closes (the file was cut): whatever followed is lost");
  // A lone `{` that never closes does not swallow the records after it.
  const auto lone = read_text("{\nRESULT_JSON {\"mode\": \"split-sdma\", \"m\": 4096, \"n\": 7168, \"k\": 2048}\n");
  ASSERT_EQ(lone.entries.size(), 1u);
  EXPECT_TRUE(lone.entries[0].record) << lone.entries[0].error;
  // Other JSON (a config printed over several lines) is not a record.
  EXPECT_TRUE(read_text("{\n  \"lr\": 0.1\n}\n").entries.empty());
}

TEST(MoriShapes, SweepJsonlRecordsWithLabelAndSweepAxesAreRuns) {
  const auto r = read_file("sweep_fused.jsonl");
  ASSERT_EQ(r.entries.size(), 4u);
  for (const auto& e : r.entries) {
    ASSERT_TRUE(e.record) << e.error;
    EXPECT_EQ(e.record->config.quant, Quant::Mxfp8);
    EXPECT_EQ(e.record->shape.world, 4);
    EXPECT_EQ(e.raw.value("label", ""), "mxfp8");
  }
}

TEST(MoriShapes, RankValidationLinesBelongToTheNextRecord) {
  const auto r = read_file("rank_validation_failed.log");
  ASSERT_EQ(r.entries.size(), 1u);
  const auto& e = r.entries[0];
  ASSERT_EQ(e.rank_failures.size(), 2u);
  EXPECT_EQ(e.rank_failures[0].rank, 3);
  EXPECT_DOUBLE_EQ(e.rank_failures[1].rel_l2, 5.870e-3);
  EXPECT_FALSE(e.rank_failures[0].gemm_only);
  ASSERT_TRUE(e.record);
  EXPECT_EQ(e.record->raw["rank_validation_failures"].size(), 2u);
  // torchrun reports rank 0's exit code 1 and its own ChildFailedError traceback: no exception of the benchmark.
  for (const auto& f : r.stats.failures) {
    EXPECT_TRUE(f.kind == "exit_code" || f.kind == "child_failed") << f.kind << " " << f.line;
    if (f.kind == "exit_code") {
      EXPECT_EQ(f.exit_code.value_or(0), 1);
    }
  }
  const auto g = read_file("gemm_only_scale_order.log");
  ASSERT_EQ(g.entries.size(), 1u);
  ASSERT_EQ(g.entries[0].rank_failures.size(), 8u);
  EXPECT_TRUE(g.entries[0].rank_failures[0].gemm_only);
}

TEST(MoriShapes, OpWorkerCaseRecordsAreOtherRecordsNotBrokenRuns) {
  const auto r = read_file("op_worker.log");
  ASSERT_EQ(r.entries.size(), 6u);
  for (const auto& e : r.entries) {
    EXPECT_EQ(e.kind, "other");
    EXPECT_FALSE(e.record);
    EXPECT_TRUE(e.error.empty()) << e.error;
    EXPECT_TRUE(e.raw.contains("case"));
  }
  EXPECT_EQ(r.stats.invalid, 0);
}

TEST(MoriShapes, PytestReprQuotingResultJsonAddsNoRecord) {
  const auto r = read_file("pytest_repr.log");
  ASSERT_EQ(r.entries.size(), 1u);  // the benchmark's own RESULT_JSON line; its [gemm_ar] echo is no second run
  ASSERT_TRUE(r.entries[0].record) << r.entries[0].error;
  EXPECT_EQ(r.stats.invalid, 0);
  EXPECT_EQ(r.stats.context.embedded_records, 1);
}

TEST(MoriShapes, PytestOwnGemmArPrintsAreCountedNeverRuns) {
  const auto r = read_file("pytest_human.log");
  EXPECT_TRUE(r.entries.empty());
  EXPECT_EQ(r.stats.context.unread_gemm_ar_lines, 2);
  EXPECT_NE(r.stats.context.first_unread_gemm_ar.find("1148.8 us"), std::string::npos);
  // The benchmark's summary with a token that does not parse is not read either: never a failing run.
  const auto odd = read_text(
      "[gemm_ar] mode=fused-sdma m=4096 n=7168 k=2048 max_rank_time=n/a relL2=2.35e-03 "
      "validated=True\n");
  EXPECT_TRUE(odd.entries.empty());
  EXPECT_EQ(odd.stats.context.unread_gemm_ar_lines, 1);
}

TEST(MoriShapes, TracebackKeepsTheExceptionItEndsWith) {
  const auto r = read_file("self_test_runtime_error.log");
  ASSERT_FALSE(r.stats.failures.empty());
  const LogFailure& f = r.stats.failures.front();
  EXPECT_EQ(f.kind, "traceback");
  EXPECT_EQ(f.exception.rfind("RuntimeError: gemm_ar self-test failed", 0), 0u) << f.exception;
  EXPECT_NE(f.exception.find("BUILD_CCO_SDMA=OFF"), std::string::npos) << f.exception;
  bool child = false;
  for (const auto& x : r.stats.failures) child = child || x.kind == "child_failed";
  EXPECT_TRUE(child);
}

TEST(MoriShapes, QuantIsInferredFromTheVersionOrUnknown) {
  const auto old = read_file("baseline_old_ptpc.log");
  ASSERT_EQ(old.entries.size(), 1u);
  ASSERT_TRUE(old.entries[0].record);
  EXPECT_EQ(old.entries[0].record->config.quant, Quant::Ptpc);
  EXPECT_TRUE(old.entries[0].record->quant_known);
  EXPECT_NE(old.entries[0].record->quant_inference.find("ptpc inferred"), std::string::npos);
  // The benchmark's [gemm_ar] summary never prints quant, nor bench_gemm_ar.py's other keys.
  const auto human = read_text(
      "[gemm_ar] mode=split-sdma m=4096 n=7168 k=2048 max_rank_time=348.52us "
      "relL2=2.35e-03 validated=True\n");
  ASSERT_EQ(human.entries.size(), 1u);
  ASSERT_TRUE(human.entries[0].record);
  EXPECT_FALSE(human.entries[0].record->quant_known);
  const auto now = read_file("json_out.json");
  EXPECT_TRUE(now.entries[0].record->quant_inference.empty());
}

}  // namespace
}  // namespace gemmar
