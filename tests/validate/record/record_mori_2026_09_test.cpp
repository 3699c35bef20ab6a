// The log reader on what today's mori prints (issue 46; tests/data/check/mori_2026_09/, written by
// make_mori_logs_2026_09.py from mori's print statements, each file naming its source file:line@commit; the shapes
// with their lines: /work/mori-notes/print-shapes.md): bench_gemm_ar.py @d5443336's new keys, test_gemm_ar_bench.py
// @e7606746's -s prints and gate, the refusals, sweep.py @4488353a's stderr, the schedule worker's summary and the
// wire reference's lines @f3bff0ae, the op worker @54e74a02, and gemmar's own results.json.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "validate/record/log_reader.hpp"

namespace gemmar {
namespace {

const std::string kDir = std::string(GEMMAR_TEST_DATA_DIR) + "/check/mori_2026_09/";

struct Read {
  std::vector<LogEntry> entries;
  LogReadStats stats;
};

Read read_file(const std::string& name) {
  Read r;
  r.stats = read_log_file(kDir + name, [&](LogEntry&& e) { r.entries.push_back(std::move(e)); });
  return r;
}

Read read_text(const std::string& text) {
  Read r;
  std::istringstream in(text);
  r.stats = read_log(in, "t.log", [&](LogEntry&& e) { r.entries.push_back(std::move(e)); });
  return r;
}

// bench_gemm_ar.py @d5443336 :561-604: chunk_bands, relaxed_rows, scatter_dtype, sdma_queues added; fence, gemm_impl,
// tile gone. Every record is read, its quant printed (not inferred from the removed keys), its [gemm_ar] echo no run.
TEST(MoriToday, BenchRecordsWithTheAddedKeysAndWithoutTheRemovedOnesAreRead) {
  const auto r = read_file("bench_keys.log");
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
  const auto r = read_file("pytest_bench_s.log");
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
  EXPECT_DOUBLE_EQ(*r.entries[0].record->max_rank_time_us, 14.6);
  EXPECT_DOUBLE_EQ(*r.entries[0].record->rel_l2, 1.66e-3);
  EXPECT_EQ(r.entries[3].source, kDir + "pytest_bench_s.log:16");  // the block's fused-sdma row
  EXPECT_EQ(r.entries[3].record->shape.m, 16384);
  EXPECT_EQ(r.entries[4].record->config.mode, Mode::SplitSdma);
  EXPECT_EQ(r.stats.context.unread_gemm_ar_lines, 0);
  EXPECT_TRUE(r.stats.context.mori.ordering.empty());  // fused 1146.2 beat split 1465.5
}

// :132-136: the block where fused did not beat split, and pytest's report of the assertion: both seen, each with the
// two times (the verdict makes one finding of them).
TEST(MoriToday, TheFusedBeatsSplitGateIsReadFromTheBlockAndTheAssertion) {
  const auto r = read_file("pytest_bench_fused_slower.log");
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
  const auto lsa = read_file("split_lsa_fp8_refused.log");
  ASSERT_EQ(lsa.stats.context.mori.refusals.size(), 1u);
  EXPECT_EQ(lsa.stats.context.mori.refusals[0].kind, "split_lsa_fp8_gather");
  EXPECT_EQ(lsa.stats.context.mori.refusals[0].lines, 4);
  EXPECT_TRUE(lsa.entries.empty());
  const auto scatter = read_file("fp8_scatter_not_fused.log");
  ASSERT_EQ(scatter.stats.context.mori.refusals.size(), 1u);
  EXPECT_EQ(scatter.stats.context.mori.refusals[0].kind, "fp8_scatter_not_fused");
  EXPECT_EQ(scatter.stats.context.mori.refusals[0].lines, 2);
  // The traceback still ends with the exception it raised.
  ASSERT_FALSE(scatter.stats.failures.empty());
  EXPECT_EQ(scatter.stats.failures[0].exception, "ValueError: FP8 scatter experiment is wired only through fused-sdma");
  const auto sdma = read_file("sweep_sdma_off.log");
  ASSERT_EQ(sdma.stats.context.mori.refusals.size(), 1u);
  EXPECT_EQ(sdma.stats.context.mori.refusals[0].kind, "sdma_compiled_out");
  EXPECT_EQ(sdma.stats.context.mori.refusals[0].source, kDir + "sweep_sdma_off.log:2");
}

// sweep.py @4488353a :335, :356-362 (stderr, read with 2>&1).
TEST(MoriToday, SweepOccupancyNoteIsKept) {
  const auto r = read_file("sweep_occupancy_moved.log");
  const MoriLog& m = r.stats.context.mori;
  EXPECT_EQ(m.occupancy_before, "0 0 0 0");
  EXPECT_EQ(m.occupancy_after, "12 0 0 0");
  EXPECT_EQ(m.occupancy_note, kDir + "sweep_occupancy_moved.log:29");
  EXPECT_TRUE(r.stats.context.sweep.summary_all_ok);
}

// gemm_ar_schedule_worker.py @f3bff0ae :191-208: a summary without mode is another producer's record;
// gemm_ar_wire_reference.py :126: `GATHER_WIRE_CHECK <rank> {dict repr}` on every rank, under torchrun's prefix.
TEST(MoriToday, ScheduleWorkerSummaryAndGatherWireChecksAreRead) {
  const auto r = read_file("schedule_worker_fp8.log");
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
  const auto r = read_file("op_worker_failed.log");
  ASSERT_EQ(r.entries.size(), 2u);
  for (const auto& e : r.entries) EXPECT_EQ(e.kind, "other");
  EXPECT_EQ(r.entries[0].raw["first_large_rows"]["first_bad"], 512);
  EXPECT_TRUE(std::isnan(r.entries[1].raw["rel_l2"].get<double>()));
  EXPECT_EQ(read_file("op_worker.log").entries.size(), 7u);
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
