// The log reader on every shape ROCm/mori really prints (issue 27; tests/data/check/mori/, written by
// make_mori_logs.py from mori's print statements, each file naming its source and commit): sweep.py's stdout,
// --json-out's multi-line object, JSON arrays, sweep .jsonl, the per-rank VALIDATION FAILED lines, the op
// worker's case records, a pytest repr quoting RESULT_JSON, pytest's own [gemm_ar] prints, tracebacks.
// And what today's mori prints (issue 46; tests/data/check/mori_2026_09/, written by make_mori_logs_2026_09.py; the
// shapes with their lines: /work/mori-notes/print-shapes.md): bench_gemm_ar.py @d5443336's new keys,
// test_gemm_ar_bench.py @e7606746's -s prints and gate, the refusals, sweep.py @4488353a's stderr, the schedule
// worker's summary and the wire reference's lines @f3bff0ae, the op worker @54e74a02, gemmar's own results.json.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "validate/record/log_reader.hpp"

namespace gemmar {
namespace {

const std::string kMori = std::string(GEMMAR_TEST_DATA_DIR) + "/check/mori/";
// Today's mori (issue 46): make_mori_logs_2026_09.py's files, each naming its source file:line@commit.
const std::string kToday = std::string(GEMMAR_TEST_DATA_DIR) + "/check/mori_2026_09/";

struct Read {
  std::vector<LogEntry> entries;
  LogReadStats stats;
};

Read read_file(const std::string& name, const std::string& dir = kMori) {
  Read r;
  r.stats = read_log_file(dir + name, [&](LogEntry&& e) { r.entries.push_back(std::move(e)); });
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

// bench_gemm_ar.py @d5443336 :561-604: chunk_bands, relaxed_rows, scatter_dtype, sdma_queues added; fence, gemm_impl,
// tile gone. Every record is read, its quant printed (not inferred from the removed keys), its [gemm_ar] echo no run.
TEST(MoriToday, BenchRecordsWithTheAddedKeysAndWithoutTheRemovedOnesAreRead) {
  const auto r = read_file("bench_keys.log", kToday);
  ASSERT_EQ(r.entries.size(), 4u);
  EXPECT_EQ(r.stats.human_echoes, 4);
  for (const auto& e : r.entries) {
    ASSERT_TRUE(e.record) << e.error;
    EXPECT_TRUE(e.record->quant_inference.empty());
    EXPECT_FALSE(e.record->fence);
    EXPECT_EQ(e.raw["sdma_queues"], 8);
  }
  EXPECT_EQ(r.entries[2].raw["chunk_bands"], 3);
  EXPECT_EQ(r.entries[2].record->chunks.value_or(0), 6);  // ceil(16 bands / 3), :325-329
  EXPECT_EQ(r.entries[3].raw["relaxed_rows"], true);
  EXPECT_EQ(r.entries[3].record->shape.m, 4224);
}

// test_gemm_ar_bench.py @e7606746 :100-104 and :122-128 with -s: each mode's line and each row of the model-shape
// block is a record (no validated, no world_size printed); the header and `fused is ...` line are no runs.
TEST(MoriToday, TestGemmArBenchPrintsAreRecords) {
  const auto r = read_file("pytest_bench_s.log", kToday);
  ASSERT_EQ(r.entries.size(), 5u);
  for (const auto& e : r.entries) {
    EXPECT_EQ(e.kind, "pytest");
    ASSERT_TRUE(e.record) << e.error;
    EXPECT_EQ(e.raw["printed_by"], "test_gemm_ar_bench.py");
    EXPECT_FALSE(e.record->validated);
    EXPECT_TRUE(e.record->world_assumed);
    EXPECT_EQ(e.record->config.quant, Quant::Blockscale);
  }
  EXPECT_EQ(r.entries[0].record->config.mode, Mode::GemmOnly);
  EXPECT_EQ(r.entries[0].record->shape.n, 1024);
  EXPECT_DOUBLE_EQ(*r.entries[0].record->max_rank_time_us, 13.9);
  EXPECT_DOUBLE_EQ(*r.entries[0].record->rel_l2, 1.66e-3);
  EXPECT_EQ(r.entries[3].source, kToday + "pytest_bench_s.log:16");  // the block's fused-sdma row
  EXPECT_EQ(r.entries[3].record->shape.m, 16384);
  EXPECT_EQ(r.entries[4].record->config.mode, Mode::SplitSdma);
  EXPECT_EQ(r.stats.context.unread_gemm_ar_lines, 0);
  EXPECT_TRUE(r.stats.context.mori.ordering.empty());  // fused 1146.2 beat split 1465.5
}

// :132-136: the block where fused did not beat split, and pytest's report of the assertion: both seen, each with the
// two times (the verdict makes one finding of them).
TEST(MoriToday, TheFusedBeatsSplitGateIsReadFromTheBlockAndTheAssertion) {
  const auto r = read_file("pytest_bench_fused_slower.log", kToday);
  EXPECT_EQ(r.entries.size(), 2u);
  const auto& g = r.stats.context.mori.ordering;
  ASSERT_EQ(g.size(), 2u);
  EXPECT_FALSE(g[0].from_assertion);
  EXPECT_TRUE(g[1].from_assertion);
  for (const auto& x : g) {
    EXPECT_DOUBLE_EQ(x.fused_us, 1480.2);
    EXPECT_DOUBLE_EQ(x.split_us, 1465.5);
  }
  EXPECT_TRUE(r.stats.failures.empty());  // pytest's E lines are no traceback of the benchmark
}

// The older pytest print (no n, no k) stays unread: it cannot be judged.
TEST(MoriToday, APytestLineWithoutNAndKIsNoRecord) {
  const auto r = read_text("[gemm_ar] fused-sdma  m=4096 quant=blockscale  1148.8 us relL2=2.36e-03\n");
  EXPECT_TRUE(r.entries.empty());
  EXPECT_EQ(r.stats.context.unread_gemm_ar_lines, 1);
}

// bench_gemm_ar.py @d5443336 :274-285 (SystemExit, one stderr line per rank) and :287-288 (ValueError, a traceback
// per rank); sweep.py @4488353a :199-216 (require_sdma). One refusal each, however many ranks printed it.
TEST(MoriToday, RefusalsAreReadOncePerKind) {
  const auto lsa = read_file("split_lsa_fp8_refused.log", kToday);
  ASSERT_EQ(lsa.stats.context.mori.refusals.size(), 1u);
  EXPECT_EQ(lsa.stats.context.mori.refusals[0].kind, "split_lsa_fp8_gather");
  EXPECT_EQ(lsa.stats.context.mori.refusals[0].lines, 4);
  EXPECT_TRUE(lsa.entries.empty());
  const auto scatter = read_file("fp8_scatter_not_fused.log", kToday);
  ASSERT_EQ(scatter.stats.context.mori.refusals.size(), 1u);
  EXPECT_EQ(scatter.stats.context.mori.refusals[0].kind, "fp8_scatter_not_fused");
  EXPECT_EQ(scatter.stats.context.mori.refusals[0].lines, 2);
  // The traceback still ends with the exception it raised.
  ASSERT_FALSE(scatter.stats.failures.empty());
  EXPECT_EQ(scatter.stats.failures[0].exception, "ValueError: FP8 scatter experiment is wired only through fused-sdma");
  const auto sdma = read_file("sweep_sdma_off.log", kToday);
  ASSERT_EQ(sdma.stats.context.mori.refusals.size(), 1u);
  EXPECT_EQ(sdma.stats.context.mori.refusals[0].kind, "sdma_compiled_out");
  EXPECT_EQ(sdma.stats.context.mori.refusals[0].source, kToday + "sweep_sdma_off.log:2");
}

// sweep.py @4488353a :335, :357-362 (stderr, read with 2>&1).
TEST(MoriToday, SweepOccupancyNoteIsKept) {
  const auto r = read_file("sweep_occupancy_moved.log", kToday);
  const MoriLog& m = r.stats.context.mori;
  EXPECT_EQ(m.occupancy_before, "0 0 0 0");
  EXPECT_EQ(m.occupancy_after, "12 0 0 0");
  EXPECT_EQ(m.occupancy_note, kToday + "sweep_occupancy_moved.log:29");
  EXPECT_TRUE(r.stats.context.sweep.summary_all_ok);
}

// gemm_ar_schedule_worker.py @f3bff0ae :191-208: a summary without mode is another producer's record;
// gemm_ar_wire_reference.py :126: `GATHER_WIRE_CHECK <rank> {dict repr}` on every rank, under torchrun's prefix.
TEST(MoriToday, ScheduleWorkerSummaryAndGatherWireChecksAreRead) {
  const auto r = read_file("schedule_worker_fp8.log", kToday);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_EQ(r.entries[0].kind, "other");
  EXPECT_EQ(r.entries[0].raw["per_rank_max_rel_l2"].size(), 4u);
  EXPECT_EQ(r.stats.invalid, 0);
  const auto& w = r.stats.context.mori.gather_wire_checks;
  ASSERT_EQ(w.size(), 8u);
  EXPECT_EQ(w[3].rank, 3);
  EXPECT_DOUBLE_EQ(w[3].stats["wire_gather_scale_rel_l2"].get<double>(), 3.1e-08);
  EXPECT_EQ(w[3].stats["wire_gather_midpoint_flips"], 13);
}

TEST(MoriToday, PythonLiteralsBecomeJson) {
  const auto d = python_literal("{'a': 1.2e-05, 'b': nan, 'c': -inf, 'd': True, 'e': None, 'f': 'x\\'y'}");
  ASSERT_TRUE(d);
  EXPECT_DOUBLE_EQ((*d)["a"].get<double>(), 1.2e-05);
  EXPECT_TRUE(std::isnan((*d)["b"].get<double>()));
  EXPECT_TRUE(std::isinf((*d)["c"].get<double>()));
  EXPECT_EQ((*d)["d"], true);
  EXPECT_TRUE((*d)["e"].is_null());
  EXPECT_EQ((*d)["f"], "x'y");
  const auto t = python_literal("('collective beyond expected quantization', 3, 0.0123)");
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)[0], "collective beyond expected quantization");
  EXPECT_EQ((*t)[1], 3);
  EXPECT_FALSE(python_literal("{'a': tensor(1.0)}"));
}

// gemm_ar_op_worker.py @54e74a02: the mxfp8 case (:317-322) and alternating_m's nested rows (:207) are other records.
TEST(MoriToday, OpWorkerRecordsWithNestedRowsAndTheMxfp8CaseAreOtherRecords) {
  const auto r = read_file("op_worker_failed.log", kToday);
  ASSERT_EQ(r.entries.size(), 2u);
  for (const auto& e : r.entries) EXPECT_EQ(e.kind, "other");
  EXPECT_EQ(r.entries[0].raw["first_large_rows"]["first_bad"], 512);
  EXPECT_TRUE(std::isnan(r.entries[1].raw["rel_l2"].get<double>()));
  EXPECT_EQ(read_file("op_worker.log", kToday).entries.size(), 7u);
}

// gemmar validate --out DIR's results.json (and check --json): {"runs": [{"record": {...}}], "summary": {...}},
// indented; its runs' records are read, entries without one are not.
TEST(MoriToday, GemmarResultsJsonIsReadAsItsRecords) {
  const std::string doc = R"({
  "backend": "cpu",
  "runs": [
    {
      "record": {"mode": "fused-sdma", "m": 2048, "n": 7168, "k": 2048, "world_size": 8, "rel_l2": 0.00235,
                 "validated": true, "backend": "cpu-emulation"},
      "source": "run:1",
      "verdict": "pass"
    },
    {"context": {"invalid": true, "log_level": true}, "findings": [], "source": "x.log:9", "verdict": "fail"}
  ],
  "summary": {"runs": 1}
}
)";
  const auto r = read_text(doc);
  ASSERT_EQ(r.entries.size(), 1u);
  ASSERT_TRUE(r.entries[0].record) << r.entries[0].error;
  EXPECT_EQ(r.entries[0].source, "t.log:1:runs[0]");
  EXPECT_EQ(r.entries[0].record->shape.m, 2048);
}

}  // namespace
}  // namespace gemmar
