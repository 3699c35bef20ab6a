// The log reader and record parser: which lines become runs, Python's NaN/Infinity tokens, bad records that
// must fail alone, and streaming with a line cap.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.hpp"
#include "validate/record/log_reader.hpp"
#include "validate/record/run_record.hpp"

namespace gemmar {
namespace {

const std::string kData = GEMMAR_TEST_DATA_DIR;

std::vector<LogEntry> read_string(const std::string& text, LogReadOptions o = {}) {
  std::istringstream in(text);
  std::vector<LogEntry> out;
  read_log(
      in, "t.log", [&](LogEntry&& e) { out.push_back(std::move(e)); }, o);
  return out;
}

TEST(CheckLogReader, TakesResultJsonAndBareObjectLinesAndIgnoresNoise) {
  const auto e = read_log_entries(kData + "/check/mi355x_m16384.log");
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0].source, kData + "/check/mi355x_m16384.log:5");
  for (const auto& x : e) ASSERT_TRUE(x.record) << x.error;
  EXPECT_EQ(e[0].record->config.mode, Mode::GemmOnly);
  EXPECT_EQ(e[4].record->config.gather_transport, Transport::Lsa);
  EXPECT_DOUBLE_EQ(*e[4].record->max_rank_time_us, 957.3);
  EXPECT_EQ(e[4].record->per_rank_time_us.size(), 8u);
}

TEST(CheckLogReader, MalformedLinesFailOneByOneWithFieldNamed) {
  const auto e = read_log_entries(kData + "/check/malformed.log");
  ASSERT_EQ(e.size(), 7u);  // the {"step":..} line has no benchmark field and is not a run
  EXPECT_FALSE(e[0].record);
  EXPECT_NE(e[0].error.find("malformed.log:2"), std::string::npos) << e[0].error;
  EXPECT_NE(e[0].error.find("not a valid JSON"), std::string::npos);
  EXPECT_FALSE(e[1].record);
  EXPECT_NE(e[1].error.find("world_size"), std::string::npos) << e[1].error;
  EXPECT_NE(e[1].error.find("integer"), std::string::npos) << e[1].error;
  EXPECT_FALSE(e[2].record);
  EXPECT_NE(e[2].error.find("'m' is missing"), std::string::npos) << e[2].error;
  ASSERT_TRUE(e[3].record) << e[3].error;
  EXPECT_TRUE(std::isnan(*e[3].record->rel_l2));
  // An infinite per-rank time is an impossible value (it parses: Python's Infinity token), named.
  EXPECT_FALSE(e[4].record);
  EXPECT_NE(e[4].error.find("per_rank_time_us[1]' is infinite"), std::string::npos) << e[4].error;
  ASSERT_TRUE(e[5].record) << e[5].error;
  EXPECT_EQ(e[5].raw["note"], "NaN inside a string stays a string");
  EXPECT_FALSE(e[6].record);
  EXPECT_NE(e[6].error.find("mode"), std::string::npos) << e[6].error;
  EXPECT_NE(e[6].error.find("warp-drive"), std::string::npos) << e[6].error;
}

TEST(CheckLogReader, PythonTokensRoundTripAndStayOutOfStrings) {
  const auto j =
      parse_python_json(R"({"a": NaN, "b": [Infinity, -Infinity, 1.5], "s": "NaN Infinity", "t": "x\"NaN"})");
  EXPECT_TRUE(std::isnan(j["a"].get<double>()));
  EXPECT_TRUE(std::isinf(j["b"][0].get<double>()));
  EXPECT_LT(j["b"][1].get<double>(), 0);
  EXPECT_EQ(j["s"], "NaN Infinity");
  EXPECT_EQ(j["t"], "x\"NaN");
  const std::string out = dump_python_json(j);
  EXPECT_NE(out.find("\"a\": NaN"), std::string::npos) << out;
  EXPECT_NE(out.find("[Infinity, -Infinity, 1.5]"), std::string::npos) << out;
  EXPECT_THROW(parse_python_json(R"({"a": NaNx})"), nlohmann::json::parse_error);
  EXPECT_THROW(parse_python_json(R"({"a": nan})"), nlohmann::json::parse_error);
}

TEST(CheckLogReader, RecordRoundTripsThroughJson) {
  const auto e = read_log_entries(kData + "/check/signatures.log");
  ASSERT_EQ(e.size(), 4u);
  for (const auto& x : e) {
    ASSERT_TRUE(x.record) << x.error;
    const auto j = parse_python_json(dump_python_json(run_record_to_json(*x.record)));
    const RunRecord back = run_record_from_json(j, "again");
    EXPECT_EQ(config_label(back.config), config_label(x.record->config));
    EXPECT_EQ(back.shape.m, x.record->shape.m);
    EXPECT_EQ(back.per_rank_rel_l2, x.record->per_rank_rel_l2);
    EXPECT_EQ(back.config.pull_blocks, x.record->config.pull_blocks);
  }
  EXPECT_EQ(*e[1].record->pull_blocks, 512);
}

TEST(CheckLogReader, WrongTypesAreRejectedNamingTheField) {
  const std::string base = R"("mode": "fused-sdma", "world_size": 8, "m": 16384, "n": 7168, "k": 2048)";
  for (const auto& [extra, field] :
       std::vector<std::pair<std::string, std::string>>{{R"("rel_l2": "small")", "rel_l2"},
                                                        {R"("validated": "yes")", "validated"},
                                                        {R"("per_rank_time_us": [1.0, "x"])", "per_rank_time_us[1]"},
                                                        {R"("phases_us": {"gemm": "fast"})", "phases_us.gemm"},
                                                        {R"("pull_blocks": 0)", "pull_blocks"},
                                                        {R"("m": 1.5)", "m"},
                                                        {R"("quant": "int4")", "quant"}}) {
    const auto e = read_string("RESULT_JSON {" + base + ", " + extra + "}\n");
    ASSERT_EQ(e.size(), 1u);
    EXPECT_FALSE(e[0].record) << extra;
    EXPECT_NE(e[0].error.find(field), std::string::npos) << extra << " -> " << e[0].error;
    EXPECT_NE(e[0].error.find("t.log:1"), std::string::npos) << e[0].error;
  }
}

TEST(CheckLogReader, TruncatedLastLineWithoutNewlineIsReported) {
  const auto e = read_string("x\nRESULT_JSON {\"mode\": \"fused-sdma\", \"world_si");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_FALSE(e[0].record);
  EXPECT_EQ(e[0].source, "t.log:2");
}

TEST(CheckLogReader, CrlfLinesParse) {
  const auto e = read_string(
      "RESULT_JSON {\"mode\": \"gemm-only\", \"world_size\": 8, \"m\": 4096, \"n\": 7168, \"k\": 2048}\r\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_TRUE(e[0].record) << e[0].error;
}

TEST(CheckLogReader, HugeFileStreamsAndOverlongLineIsCappedNotBuffered) {
  const auto dir = std::filesystem::temp_directory_path() / ("gemmar_check_huge_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "huge.log";
  const std::string rec =
      R"(RESULT_JSON {"mode": "fused-sdma", "world_size": 8, "m": 16384, "n": 7168, "k": 2048, "max_rank_time_us": 1148.8, "rel_l2": 2.35e-3, "validated": true})";
  {
    std::ofstream f(path);
    const std::string noise(200, 'n');
    for (int i = 0; i < 100000; ++i) f << "[rank" << (i % 8) << "] " << noise << "\n";  // ~21 MB of noise
    f << rec << "\n";
    f << "RESULT_JSON {\"mode\": \"fused-sdma\", \"pad\": \"" << std::string(3 << 20, 'x') << "\"}\n";
    f << std::string(5 << 20, 'z') << "\n";  // an overlong noise line is just noise
    f << rec << "\n";
  }
  LogReadOptions o;
  o.max_line_bytes = 1 << 20;
  std::vector<LogEntry> got;
  const auto st = read_log_file(
      path.string(), [&](LogEntry&& e) { got.push_back(std::move(e)); }, o);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(st.lines, 100004);
  EXPECT_EQ(st.records, 2);
  EXPECT_EQ(st.invalid, 1);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(got[0].record);
  EXPECT_FALSE(got[1].record);
  EXPECT_NE(got[1].error.find("cap"), std::string::npos) << got[1].error;
  EXPECT_NE(got[1].error.find(":100002"), std::string::npos) << got[1].error;
  EXPECT_TRUE(got[2].record);
  EXPECT_EQ(got[2].source, path.string() + ":100004");
}

TEST(CheckLogReader, MissingFileAndDirectoryAreUsageErrors) {
  EXPECT_THROW(read_log_entries("/nonexistent/gemmar.log"), UsageError);
  try {
    read_log_entries(kData);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("directory"), std::string::npos);
  }
}

// --- Records as the benchmark really prints them (docs/check.md).

TEST(RecordRealLogs, EveryRankPrintingTheSameLineIsOneRunAndColoursAreStripped) {
  LogReadStats st;
  std::vector<LogEntry> e;
  st = read_log_file(kData + "/check/torchrun_all_ranks.log", [&](LogEntry&& x) { e.push_back(std::move(x)); });
  ASSERT_EQ(e.size(), 3u);  // 8 ranks x (RESULT_JSON + [gemm_ar]) x 3 runs
  for (const auto& x : e) ASSERT_TRUE(x.record) << x.error;
  EXPECT_EQ(st.rank_duplicates, 3 * 7 * 2);
  EXPECT_EQ(st.human_echoes, 3);
  EXPECT_TRUE(st.failures.empty());
  EXPECT_EQ(e[1].record->critical_rank, 3);
  EXPECT_EQ(e[2].record->config.gather_transport, Transport::Lsa);
  EXPECT_EQ(e[0].record->block_m, 256);
  EXPECT_EQ(*e[0].record->stop_after, "all");
  EXPECT_FALSE(e[0].record->chunks);  // null on a split run
  EXPECT_EQ(*e[1].record->fence, "agent");
}

TEST(RecordRealLogs, AnsiEscapesAroundTheMarkerOrTheLineAreStripped) {
  EXPECT_EQ(strip_ansi("\x1b[1;32mRESULT_JSON\x1b[0m {}"), "RESULT_JSON {}");
  const std::string rec = R"({"k": 2048, "m": 4096, "mode": "gemm-only", "n": 7168, "world_size": 8})";
  for (const std::string& line : {"\x1b[31mRESULT_JSON " + rec + "\x1b[0m", "[rank2]: \x1b[1mRESULT_JSON\x1b[0m " + rec,
                                  "\x1b[2K\x1b[33m" + rec + "\x1b[m"}) {
    const auto e = parse_log_line(line, "t.log:1");
    ASSERT_TRUE(e) << line;
    EXPECT_TRUE(e->record) << e->error;
  }
}

TEST(RecordRealLogs, OlderBenchmarkWithoutWorldSizeDefaultsToTheOption) {
  const auto e = read_log_entries(kData + "/check/old_benchmark.log");
  ASSERT_EQ(e.size(), 3u);
  for (const auto& x : e) {
    ASSERT_TRUE(x.record) << x.error;
    EXPECT_TRUE(x.record->world_assumed);
    EXPECT_EQ(x.record->shape.world, 8);
  }
  EXPECT_EQ(e[2].kind, "human");  // a run known only from its [gemm_ar] line
  EXPECT_EQ(e[2].record->config.mode, Mode::SplitLsa);
  EXPECT_DOUBLE_EQ(*e[2].record->max_rank_time_us, 1180.40);
  EXPECT_TRUE(*e[2].record->validated);
  LogReadOptions o;
  o.defaults.world = 4;
  const auto four = read_log_entries(kData + "/check/old_benchmark.log", o);
  ASSERT_EQ(four.size(), 3u);    // the [gemm_ar] echo of a broken record is not a run of its own
  EXPECT_FALSE(four[0].record);  // 8 per-rank times do not fit world 4: named
  EXPECT_NE(four[0].error.find("per_rank_time_us"), std::string::npos) << four[0].error;
  EXPECT_NE(four[0].error.find("--world"), std::string::npos) << four[0].error;
  ASSERT_TRUE(four[2].record) << four[2].error;
  EXPECT_EQ(four[2].record->shape.world, 4);
  // `world` is an alias; both with different values is a contradiction.
  const std::string base = R"("mode": "gemm-only", "m": 4096, "n": 7168, "k": 2048)";
  auto r = parse_log_line("RESULT_JSON {" + base + R"(, "world": 4})", "t.log:1");
  ASSERT_TRUE(r && r->record) << r->error;
  EXPECT_EQ(r->record->shape.world, 4);
  EXPECT_FALSE(r->record->world_assumed);
  r = parse_log_line("RESULT_JSON {" + base + R"(, "world": 4, "world_size": 8})", "t.log:1");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->record);
  EXPECT_NE(r->error.find("'world'"), std::string::npos) << r->error;
}

TEST(RecordRealLogs, ImpossibleValuesAreInvalidNamingTheField) {
  const auto e = read_log_entries(kData + "/check/impossible_values.log");
  const std::vector<std::string> fields = {"'max_rank_time_us' is NaN",
                                           "'max_rank_time_us' is infinite",
                                           "'max_rank_time_us' is 0",
                                           "'max_rank_time_us' is -5",
                                           "'rel_l2' is -0.00235",
                                           "'per_rank_time_us' has 7 entries but world_size is 8",
                                           "'per_rank_time_us' has maximum 1148.8 but max_rank_time_us is 1200",
                                           "'rel_l2' appears twice",
                                           "'critical_rank' is 4",
                                           "'per_rank_time_us[0]' is NaN",
                                           "'timing' is 'cudagraph'",
                                           "'stop_after' is 'gather'"};
  ASSERT_EQ(e.size(), fields.size());
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_FALSE(e[i].record) << i;
    EXPECT_NE(e[i].error.find(fields[i]), std::string::npos) << e[i].error;
    EXPECT_NE(e[i].error.find("impossible_values.log:" + std::to_string(i + 2)), std::string::npos) << e[i].error;
  }
}

TEST(RecordRealLogs, CrashesInTheLogAreCollectedWithTheirLine) {
  LogReadStats st = read_log_file(kData + "/check/crashed_mid_log.log", [](LogEntry&&) {});
  EXPECT_EQ(st.records, 2);
  ASSERT_GE(st.failures.size(), 3u);
  EXPECT_EQ(st.failures[0].kind, "traceback");
  EXPECT_EQ(st.failures[0].source, kData + "/check/crashed_mid_log.log:9");
  bool child = false, exit_code = false;
  for (const auto& f : st.failures) {
    child |= f.kind == "child_failed";
    exit_code |= f.kind == "exit_code" && f.what.find("code 1") != std::string::npos;
  }
  EXPECT_TRUE(child);
  EXPECT_TRUE(exit_code);
  st = read_log_file(kData + "/check/stale_queues.log", [](LogEntry&&) {});
  ASSERT_FALSE(st.failures.empty());
  EXPECT_EQ(st.failures[0].kind, "stale_queue");
  // Clean logs show none; "exitcode: 0" is not a failure.
  EXPECT_FALSE(failure_in_line("I0602 exitcode: 0 (pid: 1)", "x:1"));
  EXPECT_TRUE(failure_in_line("  exitcode  : -11 (pid: 4253)", "x:1"));
  EXPECT_TRUE(read_log_file(kData + "/check/torchrun_all_ranks.log", [](LogEntry&&) {}).failures.empty());
}

TEST(RecordRealLogs, RepeatedRunsOfOneRankAreSeparateRuns) {
  // rank0 printing the same line twice is two runs (a rank prints once per run); other ranks' copies merge.
  const std::string rec = R"(RESULT_JSON {"k": 2048, "m": 4096, "mode": "gemm-only", "n": 7168, "world_size": 2})";
  const auto e =
      read_string("[rank0]: " + rec + "\n[rank1]: " + rec + "\n[rank0]: " + rec + "\n[rank1]: " + rec + "\n");
  EXPECT_EQ(e.size(), 2u);
}

}  // namespace
}  // namespace gemmar
