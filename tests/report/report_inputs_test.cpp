// gemmar report's normalisation (validate/cli/report_inputs.hpp), without Python: aggregates per config and
// shape, bad records skipped with file:line and why, model documents matched to configs, duplicate lines of
// several ranks counted once, unreadable files exit 2 naming them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.hpp"
#include "common/errors.hpp"
#include "model/model.hpp"
#include "validate/cli/report_inputs.hpp"
#include "validate/cli/report_timeline.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kData = fs::path(GEMMAR_TEST_DATA_DIR) / "report";

class ReportInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gemmar_report_inputs_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

std::string line(const std::string& mode, const std::string& wire, const std::string& tr, int64_t m, double t,
                 double rel, const std::string& extra = "") {
  return "RESULT_JSON {\"mode\": \"" + mode + "\", \"world_size\": 8, \"m\": " + std::to_string(m) +
         ", \"n\": 7168, \"k\": 2048, \"gather_dtype\": \"" + wire + "\", \"gather_transport\": \"" + tr +
         "\", \"max_rank_time_us\": " + std::to_string(t) + ", \"rel_l2\": " + std::to_string(rel) + extra + "}\n";
}

const json* find_group(const json& doc, const std::string& config, int64_t m) {
  for (const auto& g : doc["groups"])
    if (g["config"] == config && g["shape"]["m"] == m) return &g;
  return nullptr;
}

TEST_F(ReportInputsTest, RunsAreAggregatedPerConfigAndShapeWithMedianAndRange) {
  std::string log = "noise before\n";
  // fused-sdma fp8/sdma at M=4096: times 300, 310, ..., 390 (median 345); at M=8192: 600 and 640.
  for (int i = 0; i < 10; ++i) log += line("fused-sdma", "fp8", "sdma", 4096, 300 + 10 * i, 0.0249 + 1e-4 * i);
  log += line("fused-sdma", "fp8", "sdma", 8192, 600, 0.025);
  log += line("fused-sdma", "fp8", "sdma", 8192, 640, 0.026);
  log += line("split-sdma", "bf16", "sdma", 4096, 410, 0.00236);
  const json doc = gemmar::report::build_report_document({write("sweep.log", log)});
  EXPECT_EQ(doc["format"], gemmar::report::kDocumentFormat);
  EXPECT_EQ(doc["summary"]["runs"], 13);
  EXPECT_EQ(doc["summary"]["groups"], 3);
  EXPECT_EQ(doc["summary"]["configs"], 2);
  const json* g = find_group(doc, "fused-sdma/blockscale/fp8/sdma", 4096);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ((*g)["runs"], 10);
  EXPECT_DOUBLE_EQ((*g)["time_us"]["median"].get<double>(), 345.0);
  EXPECT_DOUBLE_EQ((*g)["time_us"]["min"].get<double>(), 300.0);
  EXPECT_DOUBLE_EQ((*g)["time_us"]["max"].get<double>(), 390.0);
  EXPECT_NEAR((*g)["rel_l2"]["median"].get<double>(), 0.02535, 1e-9);
  g = find_group(doc, "fused-sdma/blockscale/fp8/sdma", 8192);
  ASSERT_NE(g, nullptr);
  EXPECT_DOUBLE_EQ((*g)["time_us"]["median"].get<double>(), 620.0);
  // Mode table order: split-sdma before fused-sdma.
  EXPECT_EQ(doc["groups"][0]["config"], "split-sdma/blockscale/bf16/sdma");
  // The per-config aggregate spans both M.
  for (const auto& c : doc["configs"])
    if (c["config"] == "fused-sdma/blockscale/fp8/sdma") {
      EXPECT_EQ(c["runs"], 12);
      EXPECT_EQ(c["m_values"], json::array({4096, 8192}));
    }
  // Each run points at its group.
  for (const auto& r : doc["runs"]) EXPECT_EQ(doc["groups"][r["group"].get<size_t>()]["config"], r["config"]);
}

TEST_F(ReportInputsTest, FailedRunsStayOutOfThePassingTimeAndFindingsAreCountedByCode) {
  std::string log;
  log += line("fused-sdma", "bf16", "sdma", 16384, 1150, 0.00235, ", \"verdict\": \"pass\"");
  log += line("fused-sdma", "bf16", "sdma", 16384, 1160, 0.00236, ", \"verdict\": \"pass\"");
  log +=
      line("fused-sdma", "bf16", "sdma", 16384, 700, 0.87,
           ", \"verdict\": \"fail\", \"findings\": [{\"code\": \"SILENT_TRANSFER\", \"severity\": \"error\", "
           "\"message\": \"the puts moved nothing\"}, {\"code\": \"FASTER_THAN_PHYSICS\", \"severity\": \"error\"}]");
  const json doc = gemmar::report::build_report_document({write("f.log", log)});
  const json* g = find_group(doc, "fused-sdma/blockscale/bf16/sdma", 16384);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ((*g)["fail"], 1);
  EXPECT_EQ((*g)["pass"], 2);
  EXPECT_DOUBLE_EQ((*g)["time_us"]["min"].get<double>(), 700.0);
  EXPECT_DOUBLE_EQ((*g)["time_ok_us"]["min"].get<double>(), 1150.0);
  EXPECT_DOUBLE_EQ((*g)["time_ok_us"]["median"].get<double>(), 1155.0);
  ASSERT_EQ((*g)["findings"].size(), 2u);
  EXPECT_EQ((*g)["findings"][0]["count"], 1);
  EXPECT_EQ(doc["runs"][2]["findings"][0]["message"], "the puts moved nothing");
}

TEST_F(ReportInputsTest, BadRecordsAreSkippedWithFileLineAndWhyTheRestIsRead) {
  std::string log = "\x1b[32mstarting\x1b[0m\n";                                                                    // 1
  log += line("fused-sdma", "bf16", "sdma", 4096, 300, 0.00235);                                                    // 2
  log += "RESULT_JSON {\"mode\": \"fused-sdma\", \"world_size\": 8, \"m\": \"4096\", \"n\": 7168, \"k\": 2048}\n";  // 3
  log += "RESULT_JSON {\"mode\": \"fused-sdma\", \"world_size\": 8, \"m\": 40\n";                                   // 4
  log += "RESULT_JSON {\"world_size\": 8, \"m\": 4096, \"n\": 7168, \"k\": 2048}\n";                                // 5
  log += line("fused-sdma", "bf16", "sdma", 4096, 310, 0.00236, ", \"verdict\": \"maybe\"");                        // 6
  log += "\x1b[36m" + line("fused-sdma", "bf16", "sdma", 4096, 320, 0.00237);  // 7: coloured, read
  const std::string path = write("mixed.log", log);
  const json doc = gemmar::report::build_report_document({path});
  EXPECT_EQ(doc["summary"]["runs"], 2) << doc["skipped"].dump();
  ASSERT_EQ(doc["skipped"].size(), 4u) << doc["skipped"].dump();
  EXPECT_EQ(doc["skipped"][0]["source"], path + ":3");
  EXPECT_NE(doc["skipped"][0]["reason"].get<std::string>().find("'m'"), std::string::npos);
  EXPECT_EQ(doc["skipped"][1]["source"], path + ":4");
  EXPECT_EQ(doc["skipped"][2]["source"], path + ":5");
  EXPECT_NE(doc["skipped"][2]["reason"].get<std::string>().find("mode"), std::string::npos);
  EXPECT_EQ(doc["skipped"][3]["source"], path + ":6");
  EXPECT_NE(doc["skipped"][3]["reason"].get<std::string>().find("verdict"), std::string::npos);
  // The reason does not repeat the source.
  EXPECT_EQ(doc["skipped"][0]["reason"].get<std::string>().find(path), std::string::npos);
  EXPECT_EQ(doc["inputs"][0]["skipped"], 4);
}

TEST_F(ReportInputsTest, UnreadableFilesAreExitTwoNamingThem) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {write("notes.txt", "just a log line\nanother one\n"), "no RESULT_JSON lines"},
      {write("empty.log", "\n\n"), "empty file"},
      {write("other.json", "{\"name\": \"not ours\"}"), "no known kind"},
      {(dir_ / "absent.log").string(), "no such file"},
      {write("all_bad.log", "RESULT_JSON {\"mode\": 1}\n"), "no readable run"},
  };
  for (const auto& [path, what] : cases) {
    try {
      gemmar::report::build_report_document({path});
      ADD_FAILURE() << path << ": no error";
    } catch (const gemmar::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

TEST_F(ReportInputsTest, ModelDocumentBesideALogBecomesTheModelOfTheMatchingConfig) {
  // model.json: fused-sdma fp8/lsa at M=16384 (tests/data/report). The log has that config at 16384 and 4096.
  std::string log = line("fused-sdma", "fp8", "lsa", 16384, 961.2, 0.0249) +
                    line("fused-sdma", "fp8", "lsa", 4096, 300, 0.0249) +
                    line("fused-sdma", "bf16", "sdma", 16384, 1150, 0.00235);
  const json doc = gemmar::report::build_report_document({write("bench.log", log), (kData / "model.json").string()});
  const json* g = find_group(doc, "fused-sdma/blockscale/fp8/lsa", 16384);
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE((*g)["model"].is_object());
  EXPECT_NE((*g)["model"]["from"].get<std::string>().find("model.json"), std::string::npos);
  EXPECT_DOUBLE_EQ((*g)["model"]["total_us"].get<double>(), 819.5);
  EXPECT_GE((*g)["model"]["phases"].size(), 4u);
  // Not at another M, nor for another config: those groups have gemmar's model of their own shape.
  const std::vector<std::pair<std::string, int64_t>> others{{"fused-sdma/blockscale/fp8/lsa", 4096},
                                                            {"fused-sdma/blockscale/bf16/sdma", 16384}};
  for (const auto& [config, m] : others) {
    const json& model = (*find_group(doc, config, m))["model"];
    ASSERT_TRUE(model.is_object()) << config;
    EXPECT_NE(model["from"].get<std::string>().find("gemmar's model (profile mi355x)"), std::string::npos);
  }
  EXPECT_EQ(doc["models"][0]["used_by_groups"], 1);
}

TEST_F(ReportInputsTest, TorchrunLogWithRanksRepeatingEveryLineCountsEachRunOnce) {
  const std::string path = (kData / "torchrun_noise.log").string();
  const json doc = gemmar::report::build_report_document({path});
  EXPECT_EQ(doc["summary"]["runs"], 3);
  EXPECT_EQ(doc["inputs"][0]["duplicates"], 21);
  ASSERT_EQ(doc["skipped"].size(), 1u);
  EXPECT_EQ(doc["skipped"][0]["source"], path + ":40");  // the line cut short by the crash
  EXPECT_EQ(doc["runs"][2]["pull_blocks"], 64);
}

TEST_F(ReportInputsTest, CheckOutputKeepsVerdictsContextFloorsAndBands) {
  const json doc = gemmar::report::build_report_document({(kData / "check.json").string()});
  ASSERT_GE(doc["runs"].size(), 2u);
  const json& r = doc["runs"][0];
  EXPECT_EQ(r["source"], "fused_bf16.log:3");
  EXPECT_EQ(r["verdict"], "pass");
  EXPECT_DOUBLE_EQ(r["floor"].get<double>(), 0.00235);
  // The run's model is gemmar's of its record (what check judges against today); the context's is kept beside.
  EXPECT_EQ(r["own_model"]["from"], "the verdict's context");
  EXPECT_DOUBLE_EQ(r["own_model"]["total_us"].get<double>(), 1017.0);
  EXPECT_NE(r["model"]["from"].get<std::string>().find("gemmar's model (profile mi355x)"), std::string::npos);
  bool silent = false;
  for (const auto& run : doc["runs"])
    for (const auto& f : run["findings"]) silent = silent || f["code"] == "SILENT_TRANSFER";
  EXPECT_TRUE(silent);
}

const json* row_of(const json& group, const std::string& phase) {
  for (const auto& r : group["phase_table"]["rows"])
    if (r["phase"] == phase) return &r;
  return nullptr;
}

TEST_F(ReportInputsTest, PlainBenchmarkLogGetsGemmarsModelOfEveryRunWithItsPhases) {
  // mori's benchmark prints no model and no phases: every group still gets the model `gemmar check` would judge it
  // by, at the group's own shape, from the record alone.
  const json doc = gemmar::report::build_report_document({(kData / "bench_mi355x.log").string()});
  ASSERT_GT(doc["groups"].size(), 10u);
  for (const auto& g : doc["groups"]) {
    ASSERT_TRUE(g["model"].is_object()) << g["series"];
    EXPECT_EQ(g["model"]["profile"], "mi355x") << "the log's header names an MI355X";
    EXPECT_FALSE(g["model"]["phases"].empty());
    EXPECT_FALSE(g["lanes"]["model"].empty());
  }
  const json* g = find_group(doc, "fused-sdma/blockscale/bf16/sdma", 4096);
  ASSERT_NE(g, nullptr);
  gemmar::Config cfg;
  cfg.mode = gemmar::Mode::FusedSdma;
  const auto pr = gemmar::model::predict(gemmar::model::load_profile("mi355x"), {4096, 7168, 2048, 8}, cfg);
  EXPECT_NEAR((*g)["model"]["total_us"].get<double>(), pr.total_us, 1e-9);
  for (const auto& ph : pr.phases) {
    const json* row = row_of(*g, ph.name);
    ASSERT_NE(row, nullptr) << ph.name;
    EXPECT_NEAR((*row)["model_us"].get<double>(), ph.us, 1e-9) << ph.name;
    EXPECT_NEAR((*row)["ceiling_us"].get<double>(), ph.ceiling_us, 1e-9) << ph.name;
    EXPECT_NEAR((*row)["bound_us"].get<double>(), ph.lower_bound_us, 1e-9) << ph.name;
  }
  // The overlap of the epilogue's puts with the GEMM is on its own lane, ending where the drain ends and starting
  // under the GEMM.
  const json& lanes = (*g)["lanes"];
  ASSERT_EQ(lanes["overlap"].size(), 1u);
  double gemm_end = 0, drain_end = 0;
  for (const auto& seg : lanes["model"]) {
    if (seg[0] == "gemm") gemm_end = seg[1].get<double>() + seg[2].get<double>();
    if (seg[0] == "drain") drain_end = seg[1].get<double>() + seg[2].get<double>();
  }
  const double put_begin = lanes["overlap"][0][1].get<double>();
  EXPECT_LT(put_begin, gemm_end);
  EXPECT_NEAR(put_begin + lanes["overlap"][0][2].get<double>(), drain_end, 1e-9);
}

TEST_F(ReportInputsTest, PhaseTableHasUnattributedTimeTflopsBusBandwidthAndTheSpeedupAgainstSplit) {
  // Measured phases of a split-sdma run that leave 60 us of its 1400 unattributed, and a fused-sdma run beside it.
  const std::string log =
      line("split-sdma", "bf16", "sdma", 16384, 1400, 0.00235,
           ", \"phases_us\": {\"gemm\": 400, \"scatter\": 450, \"reduce\": 40, \"gather\": 450}") +
      line("fused-sdma", "bf16", "sdma", 16384, 1150, 0.00235) +
      line("split-lsa", "bf16", "lsa", 16384, 1300, 0.00235, ", \"phases_us\": {\"gemm\": 400, \"allreduce\": 880}");
  const json doc = gemmar::report::build_report_document({write("phases.log", log)});
  const json* split = find_group(doc, "split-sdma/blockscale/bf16/sdma", 16384);
  ASSERT_NE(split, nullptr);
  const json& t = (*split)["phase_table"];
  EXPECT_DOUBLE_EQ(t["unattributed_us"].get<double>(), 60.0);
  EXPECT_DOUBLE_EQ(t["measured_total_us"].get<double>(), 1400.0);
  // The GEMM: 2 M N K FLOPs per rank over its time, one rank per device on mi355x.
  EXPECT_NEAR(t["gemm_tflops"]["measured"].get<double>(), 2.0 * 16384 * 7168 * 2048 / 400e-6 / 1e12, 1e-6);
  // nccl-tests: S = the whole array (M x N bf16), algbw = S / t, busbw = algbw (n-1)/n for a reduce-scatter and an
  // all-gather, 2(n-1)/n for an all-reduce.
  const double s_bytes = 16384.0 * 7168 * 2;
  const json* scatter = row_of(*split, "scatter");
  ASSERT_NE(scatter, nullptr);
  EXPECT_EQ((*scatter)["collective"], "reduce-scatter");
  EXPECT_NEAR((*scatter)["algbw_gbs"].get<double>(), s_bytes / 450e-6 / 1e9, 1e-9);
  EXPECT_NEAR((*scatter)["busbw_gbs"].get<double>(), s_bytes / 450e-6 / 1e9 * 7 / 8, 1e-9);
  EXPECT_EQ((*row_of(*split, "gather"))["collective"], "all-gather");
  EXPECT_FALSE(row_of(*split, "reduce")->contains("busbw_gbs")) << "the reduce is local";
  const json* allreduce = row_of(*find_group(doc, "split-lsa/blockscale/bf16/lsa", 16384), "allreduce");
  ASSERT_NE(allreduce, nullptr);
  EXPECT_NEAR((*allreduce)["busbw_gbs"].get<double>(), s_bytes / 880e-6 / 1e9 * 2 * 7 / 8, 1e-9);
  // The measured lane ends with the unattributed gap, up to the total.
  const json& last = (*split)["lanes"]["measured"].back();
  EXPECT_EQ(last[0], "unattributed");
  EXPECT_DOUBLE_EQ(last[1].get<double>() + last[2].get<double>(), 1400.0);
  // fused-sdma against split-sdma: split / fused, and mori's margin 1 - fused / split.
  const json& sp = (*find_group(doc, "fused-sdma/blockscale/bf16/sdma", 16384))["speedup"];
  EXPECT_EQ(sp["baseline"], "split-sdma/blockscale/bf16/sdma");
  EXPECT_DOUBLE_EQ(sp["measured"]["x"].get<double>(), 1400.0 / 1150.0);
  EXPECT_DOUBLE_EQ(sp["measured"]["margin_pct"].get<double>(), (1 - 1150.0 / 1400.0) * 100);
  EXPECT_GT(sp["model"]["x"].get<double>(), 1.0) << "the model has fusing win at M=16384 on mi355x";
  EXPECT_TRUE((*split)["speedup"].is_null()) << "split-sdma is the baseline";
}

TEST_F(ReportInputsTest, AChunksSweepIsOneGroupPerCountEachModelledWithItsCount) {
  // mori's --chunks sweep at M=16384 (bench_gemm_ar.py prints "chunks"): 8 is the default count at this shape.
  std::string log;
  for (int c : {1, 2, 8})
    log += line("fused-sdma", "bf16", "sdma", 16384, 1100 + c, 0.00235,
                ", \"quant\": \"blockscale\", \"chunks\": " + std::to_string(c));
  const json doc = gemmar::report::build_report_document({write("chunks.log", log)});
  ASSERT_EQ(doc["groups"].size(), 3u);
  const json* one = find_group(doc, "fused-sdma/blockscale/bf16/sdma chunks=1", 16384);
  const json* eight = find_group(doc, "fused-sdma/blockscale/bf16/sdma", 16384);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(eight, nullptr);
  gemmar::Config cfg;
  cfg.chunks = 1;
  const auto pr = gemmar::model::predict(gemmar::model::load_profile("mi355x"), {16384, 7168, 2048, 8}, cfg);
  EXPECT_NEAR((*one)["model"]["total_us"].get<double>(), pr.total_us, 1e-9);
  EXPECT_GT((*row_of(*one, "drain"))["model_us"].get<double>(), (*row_of(*eight, "drain"))["model_us"].get<double>())
      << "one put per destination overlaps nothing: its drain is the whole scatter";
}

TEST_F(ReportInputsTest, RunsOfTwoMachinesNeverShareAGroupOrAMedian) {
  // An MI355X benchmark log (its header names the machine) beside 8 ranks on one H200 (each record's device).
  const json doc = gemmar::report::build_report_document(
      {(kData / "bench_mi355x.log").string(), (kData / "h200_1gpu_runs.log").string()});
  ASSERT_EQ(doc["placements"].size(), 2u);
  EXPECT_EQ(doc["placements"][0]["machine"], "MI355X");
  EXPECT_EQ(doc["placements"][0]["profile"], "mi355x");
  EXPECT_EQ(doc["placements"][1]["profile"], "h200-1gpu");
  size_t gemm_only = 0;
  for (const auto& g : doc["groups"]) {
    std::set<std::string> machines;
    for (const auto& i : g["members"]) machines.insert(doc["runs"][i.get<size_t>()]["machine"].get<std::string>());
    EXPECT_EQ(machines.size(), 1u) << g["series"];
    if (g["config"] == "gemm-only/blockscale" && g["shape"]["m"] == 16384) {
      ++gemm_only;
      const double med = g["time_us"]["median"].get<double>();
      EXPECT_TRUE(med == 369.4 || std::abs(med - 17562.976837158203) < 1e-6) << med;
      EXPECT_EQ(g["runs"], 1);
      EXPECT_NE(g["series"].get<std::string>().find(g["profile"].get<std::string>()), std::string::npos);
    }
  }
  EXPECT_EQ(gemm_only, 2u);
  for (const auto& c : doc["configs"]) {  // the per-config aggregate over shapes is per machine too
    std::set<std::string> machines;
    for (const auto& r : doc["runs"])
      if (r["series"] == c["series"]) machines.insert(r["machine"].get<std::string>());
    EXPECT_EQ(machines.size(), 1u) << c["series"];
  }
}

TEST_F(ReportInputsTest, ValidateResultsAreModelledAtTheShapeTheyRan) {
  // validate's results.json before issue 48: runs at 2048x2048x512, predictions at the reference shape.
  const json results = {{"runs",
                         {{{"source", "run:0"},
                           {"verdict", "pass"},
                           {"record",
                            {{"mode", "fused-sdma"},
                             {"world_size", 8},
                             {"m", 2048},
                             {"n", 2048},
                             {"k", 512},
                             {"backend", "cpu-emulation"},
                             {"profile", "h200-1gpu"},
                             {"rel_l2", 0.00236}}}}}},
                        {"profile", "h200-1gpu"},
                        {"model_predictions",
                         {{{"config", "fused-sdma/blockscale/bf16/sdma"},
                           {"shape", {{"m", 16384}, {"n", 7168}, {"k", 2048}, {"world", 8}}},
                           {"total_us", 19000.0},
                           {"lower_bound_us", 4000.0},
                           {"phases", {{{"name", "gemm"}, {"us", 17000.0}}}}}}}};
  const json doc = gemmar::report::build_report_document({write("results.json", results.dump())});
  const json& g = doc["groups"][0];
  EXPECT_EQ(g["shape"]["m"], 2048);
  gemmar::Config cfg;
  const auto pr = gemmar::model::predict(gemmar::model::load_profile("h200-1gpu"), {2048, 2048, 512, 8}, cfg);
  EXPECT_NEAR(g["model"]["total_us"].get<double>(), pr.total_us, 1e-9);
  EXPECT_EQ(doc["models"][0]["used_by_groups"], 0);
  bool noted = false;
  for (const auto& n : doc["notes"])
    noted = noted || n.get<std::string>().find("not drawn beside the runs") != std::string::npos;
  EXPECT_TRUE(noted) << doc["notes"].dump();
}

// The Trace Event Format's required keys (ph, name, pid, tid; ts and dur in us on "X"), no negative time, every
// process named by a metadata event; returns the process names.
std::map<int, std::string> check_trace_event_format(const json& t) {
  std::map<int, std::string> names;
  EXPECT_TRUE(t.is_object() && t.contains("traceEvents") && t["traceEvents"].is_array());
  std::set<int> used;
  for (const auto& e : t["traceEvents"]) {
    for (const char* k : {"ph", "name", "pid", "tid"}) EXPECT_TRUE(e.contains(k)) << k << " in " << e.dump();
    const std::string ph = e["ph"].get<std::string>();
    EXPECT_TRUE(ph == "X" || ph == "M") << e.dump();
    if (ph == "M" && e["name"] == "process_name") names[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (ph == "X") {
      EXPECT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e.dump();
      EXPECT_GE(e["ts"].get<double>(), 0.0) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0.0) << e.dump();
      used.insert(e["pid"].get<int>());
    }
  }
  for (int pid : used) EXPECT_TRUE(names.count(pid)) << "process " << pid << " has no process_name";
  return names;
}

size_t rank_tracks(const std::map<int, std::string>& names) {
  size_t n = 0;
  for (const auto& [pid, name] : names) n += name.rfind("rank ", 0) == 0;
  return n;
}

TEST_F(ReportInputsTest, TimelineOfATracedRunHasOneTrackPerRankAndTheModelBeside) {
  // A rocprofv3 trace of 8 devices x 3 iterations of fused-sdma bf16/sdma; the log's one run of that config takes it.
  gemmar::report::ReadOptions o;
  o.traces = {(fs::path(GEMMAR_TEST_DATA_DIR) / "check" / "rocprof_fused_sdma_bf16.csv").string()};
  const json doc = gemmar::report::build_report_document({(kData / "gemmar_run.log").string()}, o);
  size_t traced = 0;
  for (size_t i = 0; i < doc["runs"].size(); ++i) {
    const json& run = doc["runs"][i];
    const json t = gemmar::report::run_timeline(doc, i);
    const auto names = check_trace_event_format(t);
    if (!run.contains("trace")) continue;
    ++traced;
    EXPECT_EQ(run["config"], "fused-sdma/blockscale/bf16/sdma");
    EXPECT_EQ(run["trace"]["iterations"], 3);
    EXPECT_EQ(rank_tracks(names), 8u) << "one track per rank";
    std::set<std::string> phases;
    double first_gemm = 1e300;
    for (const auto& e : t["traceEvents"])
      if (e["ph"] == "X" && e["cat"] == "measured kernel") {
        phases.insert(e["name"].get<std::string>());
        if (e["name"] == "gemm") first_gemm = std::min(first_gemm, e["ts"].get<double>());
      }
    EXPECT_EQ(phases, (std::set<std::string>{"gemm", "drain", "reduce", "gather"}));
    EXPECT_DOUBLE_EQ(first_gemm, 0.0) << "the iteration starts at its first GEMM";
    bool model = false, overlap = false;
    for (const auto& e : t["traceEvents"]) {
      model = model || (e["ph"] == "X" && e["cat"] == "model");
      overlap = overlap || (e["ph"] == "X" && e["cat"] == "model overlap" && e["name"] == "scatter");
    }
    EXPECT_TRUE(model && overlap) << "the model's phases and its overlapped scatter on their own track";
  }
  EXPECT_EQ(traced, 1u);
}

TEST_F(ReportInputsTest, TimelineOfAPlainLogRunHasEachRanksTotalAndTheModel) {
  const json doc = gemmar::report::build_report_document({(kData / "bench_mi355x.log").string()});
  const json t = gemmar::report::run_timeline(doc, 1);  // split-sdma, 8 per-rank times
  const auto names = check_trace_event_format(t);
  EXPECT_EQ(rank_tracks(names), 8u);
  bool model = false;
  for (const auto& [pid, name] : names) model = model || name == "model (profile mi355x)";
  EXPECT_TRUE(model);
  EXPECT_EQ(doc["runs"][1]["timeline"], "timeline/run-1.json");
}

TEST_F(ReportInputsTest, TraceThatFitsNoRunIsExitTwoNamingIt) {
  gemmar::report::ReadOptions o;
  const std::string trace = (fs::path(GEMMAR_TEST_DATA_DIR) / "check" / "rocprof_fused_sdma_bf16.csv").string();
  o.traces = {trace};
  const std::string log = write("split.log", line("split-sdma", "bf16", "sdma", 4096, 300, 0.00235));
  try {
    gemmar::report::build_report_document({log}, o);
    ADD_FAILURE() << "no error";
  } catch (const gemmar::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--trace " + trace +
                                         ": its kernels (phases drain, gather, gemm, reduce) "
                                         "match 0 runs"),
              std::string::npos)
        << e.what();
  }
  o.traces = {"1=" + trace};  // named: attached whatever its phases
  const json doc = gemmar::report::build_report_document({log}, o);
  EXPECT_TRUE(doc["runs"][0].contains("trace"));
}

}  // namespace
