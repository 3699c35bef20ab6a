// `gemmar model` and `gemmar model sweep` through the real binary: JSON as docs/spec.md 4, usage errors exit 2.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace {

struct Result {
  int rc;
  std::string out;
};

Result run(const std::string& args) {
  const auto r = gemmar::test::run_gemmar(args);
  return {r.rc, r.out};
}

int rc_with_stderr(const std::string& args, std::string& err) {
  const auto r = gemmar::test::run_gemmar(args);
  err += r.err;
  return r.rc;
}

}  // namespace

TEST(ModelCli, JsonOutputParsesWithSpecFields) {
  const auto r = run("model --json --gather-dtype fp8 --gather-transport lsa");
  ASSERT_EQ(r.rc, 0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.at("total_us").get<double>(), j.at("lower_bound_us").get<double>());
  EXPECT_EQ(j.at("profile"), "mi355x");
  EXPECT_EQ(j.at("shape").at("m"), 16384);
  EXPECT_EQ(j.at("config").at("gather_transport"), "lsa");
  double sum = 0;
  for (const auto& ph : j.at("phases")) {
    EXPECT_TRUE(ph.contains("name") && ph.contains("us") && ph.contains("bytes") && ph.contains("bound"));
    const std::string b = ph.at("bound");
    EXPECT_TRUE(b == "compute" || b == "hbm" || b == "link" || b == "latency") << b;
    sum += ph.at("us").get<double>();
  }
  EXPECT_NEAR(sum, j.at("total_us").get<double>(), 1e-6);
}

TEST(ModelCli, HumanTableListsPhasesAndLowerBound) {
  const auto r = run("model --profile h200-1gpu --mode split-sdma -m 8192");
  ASSERT_EQ(r.rc, 0);
  for (const char* w : {"scatter", "reduce", "gather", "lower bound", "h200-1gpu"})
    EXPECT_NE(r.out.find(w), std::string::npos) << w;
}

TEST(ModelCli, SweepJsonHasPointsAndOptimumBand) {
  const auto r =
      run("model sweep --param pull-blocks --values 16,32,64,128,512 --gather-dtype fp8 "
          "--gather-transport lsa --json");
  ASSERT_EQ(r.rc, 0);
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("points").size(), 5u);
  const int opt = j.at("optimum").at("value");
  const auto band = j.at("optimum").at("band");
  EXPECT_LE(band.at(0).get<int>(), opt);
  EXPECT_GE(band.at(1).get<int>(), opt);
  EXPECT_NE(opt, 16);
  EXPECT_NE(opt, 512);
  const auto d = run("model sweep --gather-dtype fp8 --gather-transport lsa --json");
  ASSERT_EQ(d.rc, 0);
  EXPECT_GE(nlohmann::json::parse(d.out).at("points").size(), 10u);
}

TEST(ModelCli, UsageErrorsExit2AndNameTheOption) {
  std::string e;
  EXPECT_EQ(rc_with_stderr("model sweep --param tile-n --values 1,2", e), 2);
  EXPECT_NE(e.find("--param"), std::string::npos) << e;
  e.clear();
  EXPECT_EQ(rc_with_stderr("model sweep --values 16,abc", e), 2);
  EXPECT_NE(e.find("--values"), std::string::npos) << e;
  e.clear();
  EXPECT_EQ(rc_with_stderr("model -k 1000", e), 2);
  EXPECT_NE(e.find("-k"), std::string::npos) << e;
  e.clear();
  EXPECT_EQ(rc_with_stderr("model --profile nowhere.json", e), 2);
  EXPECT_NE(e.find("--profile"), std::string::npos) << e;
}
