// `gemmar reference ...` end to end through the binary: JSON on stdout, exit 2 naming the option on bad input.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "support/cli.hpp"

namespace {

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

Result run(const std::string& args) {
  const auto c = gemmar::test::run_gemmar("reference " + args);
  return {c.rc, c.out, c.err};
}

}  // namespace

TEST(ReferenceCli, FloorsJsonHasBothWiresRowsShapeAndStderr) {
  const Result r = run("floors -m 1024 -k 128 --rows 16 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["floors"]["bf16"].get<double>(), 2.35e-3, 0.1 * 2.35e-3);
  EXPECT_NEAR(j["floors"]["fp8"].get<double>(), 2.49e-2, 0.1 * 2.49e-2);
  EXPECT_GT(j["stderr"]["fp8"].get<double>(), 0.0);
  EXPECT_EQ(j["rows_evaluated"].get<int>(), 16);
  EXPECT_EQ(j["shape"]["n"].get<int>(), 7168);
  EXPECT_TRUE(j.contains("seconds"));
}

// --scatter-dtype picks the scatter leg of the "floors" object; every pair is printed in "pairs", with mori's
// published value beside where the shape is one of mori's targets (not this reduced one).
TEST(ReferenceCli, FloorsScatterDtypeFp8GivesTheFp8ScatterPairsAndEveryPairIsListed) {
  const Result r = run("floors -m 1024 -k 128 --rows 16 --scatter-dtype fp8 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["scatter_dtype"], "fp8");
  EXPECT_NEAR(j["floors"]["bf16"].get<double>(), 2.62e-2, 0.1 * 2.62e-2);
  EXPECT_NEAR(j["floors"]["fp8"].get<double>(), 3.61e-2, 0.1 * 3.61e-2);
  ASSERT_EQ(j["pairs"].size(), 4u);
  for (const auto& p : j["pairs"]) {
    EXPECT_GT(p["rel_l2"].get<double>(), 0.0);
    EXPECT_FALSE(p.contains("mori_published")) << p;  // K=128 is not mori's shape
    if (p["scatter"] == "fp8" && p["gather"] == "fp8") {
      EXPECT_EQ(p["rel_l2"], j["floors"]["fp8"]);
    }
  }
  const Result text = run("floors -m 1024 -k 128 --rows 16 --scatter-dtype fp8");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("* fp8      fp8"), std::string::npos) << text.out;
}

TEST(ReferenceCli, QuantStudyJsonRowsPerGroupWithScaleOverhead) {
  const Result r = run("quant-study --rows 64 --cols 1024 --groups 1024,128,32 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][0]["group"].get<int>(), 1024);
  EXPECT_NEAR(j["rows"][2]["scale_bytes_pct"].get<double>(), 12.5, 1e-9);
  for (const auto& row : j["rows"]) {
    EXPECT_GT(row["rel_l2"].get<double>(), 1.5e-2);  // e4m3's 3 mantissa bits, whatever the group
    EXPECT_LT(row["rel_l2"].get<double>(), 3.5e-2);
  }
}

TEST(ReferenceCli, HumanTableByDefault) {
  const Result r = run("floors -m 1024 -k 128 --rows 8");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("bf16"), std::string::npos);
  EXPECT_NE(r.out.find("fp8"), std::string::npos);
}

TEST(ReferenceCli, BadInputExitsTwoNamingTheOption) {
  const std::pair<const char*, const char*> cases[] = {
      {"floors --quant nope", "--quant"},
      {"floors --data nope", "--data"},
      {"floors --scatter-dtype fp16", "--scatter-dtype"},
      {"floors -k 100", "-k"},
      {"floors -n 1536", "-n"},
      {"floors --world 3", "--world"},
      {"floors --rows 4", "--rows"},
      {"floors --rows 999999999", "--rows"},
      {"floors --fp8-format e5m2", "--fp8-format"},
      {"floors --bogus", "bogus"},
      {"quant-study --groups 7168,0", "--groups"},
      {"quant-study --cols 1000 --groups 128", "--groups"},
      {"frobnicate", "frobnicate"},
  };
  for (const auto& [args, option] : cases) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(option), std::string::npos) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
}
