// gemmar report's normalisation (validate/cli/report_inputs.hpp), without Python: aggregates per config and
// shape, bad records skipped with file:line and why, model documents matched to configs, duplicate lines of
// several ranks counted once, unreadable files exit 2 naming them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "validate/cli/report_inputs.hpp"

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
  // Not at another M, nor for another config.
  EXPECT_TRUE((*find_group(doc, "fused-sdma/blockscale/fp8/lsa", 4096))["model"].is_null());
  EXPECT_TRUE((*find_group(doc, "fused-sdma/blockscale/bf16/sdma", 16384))["model"].is_null());
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
  EXPECT_EQ(r["model"]["from"], "the verdict's context");
  bool silent = false;
  for (const auto& run : doc["runs"])
    for (const auto& f : run["findings"]) silent = silent || f["code"] == "SILENT_TRANSFER";
  EXPECT_TRUE(silent);
}

}  // namespace
