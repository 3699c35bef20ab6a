// `gemmar check` end to end: exit codes, stdin, --json as the only stdout, traces attached to runs.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include "support/cli.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace {

const std::string kData = GEMMAR_TEST_DATA_DIR;

struct Out {
  int rc;
  std::string out;
};

Out run(const std::string& args) {
  const std::string cmd = std::string(GEMMAR_BINARY) + " check " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string s;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) s.append(buf.data(), n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, s};
}

TEST(CheckCli, CleanLogExitsZeroAndPrintsTable) {
  const auto o = run(kData + "/check/mi355x_m16384.log");
  EXPECT_EQ(o.rc, 0) << o.out;
  EXPECT_NE(o.out.find("5 run(s): 5 pass, 0 fail"), std::string::npos) << o.out;
}

TEST(CheckCli, SignaturesExitOneAndJsonIsTheOnlyStdout) {
  const auto o = run(kData + "/check/signatures.log --json");
  EXPECT_EQ(o.rc, 1);
  const auto j = nlohmann::json::parse(o.out);  // throws if anything else is on stdout
  ASSERT_EQ(j["runs"].size(), 4u);
  for (const auto& r : j["runs"]) EXPECT_EQ(r["verdict"], "fail");
}

// gemm-only runs need no floors, so these cost no reference emulation.
TEST(CheckCli, StdinIsRead) {
  const std::string ok =
      R"(RESULT_JSON {"mode": "gemm-only", "world_size": 8, "m": 16384, "n": 7168, "k": 2048, "max_rank_time_us": 369.4, "rel_l2": 1.6e-3, "validated": true})";
  const std::string bad =
      R"(RESULT_JSON {"mode": "gemm-only", "world_size": 8, "m": 16384, "n": 7168, "k": 2048, "max_rank_time_us": 369.4, "rel_l2": NaN, "validated": false})";
  EXPECT_EQ(gemmar::test::run_gemmar({"check", "-"}, ok + "\n").rc, 0);
  EXPECT_EQ(gemmar::test::run_gemmar({"check", "-"}, bad + "\n").rc, 1);
}

TEST(CheckCli, UnreadableOrEmptyInputIsExitTwo) {
  EXPECT_EQ(run("/nonexistent/run.log").rc, 2);
  EXPECT_EQ(gemmar::test::run_gemmar({"check", "-"}, std::string("just noise\n")).rc, 2);
  const std::string msg = gemmar::test::run_gemmar("check /nonexistent/run.log").err;
  EXPECT_NE(msg.find("/nonexistent/run.log"), std::string::npos) << msg;
  EXPECT_EQ(run(kData + "/check/mi355x_m16384.log --profile no-such-profile").rc, 2);
  EXPECT_EQ(run("").rc, 2);
}

TEST(CheckCli, MalformedRecordsFailWhileOthersAreJudged) {
  const auto o = run(kData + "/check/malformed.log --json");
  EXPECT_EQ(o.rc, 1);
  const auto j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["runs"].size(), 7u);
  EXPECT_EQ(j["runs"][0]["findings"][0]["code"], "INVALID_RECORD");
  EXPECT_EQ(j["runs"][5]["verdict"], "pass");  // the bare-object run is fine
}

TEST(CheckCli, BaselineOptionFlagsQuantMismatch) {
  const auto o =
      run(kData + "/check/ptpc_vs_baseline.log --baseline " + kData + "/check/baseline_blockscale.log --json");
  EXPECT_EQ(o.rc, 0);  // a warning: the comparison is wrong, not the run
  EXPECT_NE(o.out.find("QUANT_MISMATCH"), std::string::npos) << o.out;
}

TEST(CheckCli, TracePhasesAttachToTheRun) {
  const auto o =
      run(kData + "/check/mi355x_m16384.log --trace 3=" + kData + "/check/rocprof_fused_sdma_bf16.csv --json");
  ASSERT_EQ(o.rc, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  const auto& rec = j["runs"][2]["record"];
  ASSERT_TRUE(rec.contains("phases_us")) << rec.dump();
  EXPECT_GT(rec["phases_us"]["gemm"].get<double>(), 400.0);
  EXPECT_FALSE(j["runs"][1]["record"].contains("phases_us"));
  EXPECT_EQ(run(kData + "/check/mi355x_m16384.log --trace 9=" + kData + "/check/rocprof_fused_sdma_bf16.csv").rc, 2);
}

}  // namespace
