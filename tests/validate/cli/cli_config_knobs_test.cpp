// mori 2026-09's knobs on the command line (issue 45): `gemmar run`, `gemmar model` and `gemmar reference floors`
// take them as mori spells them, every flag of the config field table is in their --help, a run's RESULT_JSON
// carries them back, and what mori refuses exits 2 with mori's reason before any work.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/config_fields.hpp"
#include "support/cli.hpp"

namespace {

using gemmar::test::run_gemmar;
using nlohmann::json;

// The first RESULT_JSON line of `out`.
json result_json(const std::string& out) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("RESULT_JSON ", 0) == 0) return json::parse(line.substr(12));
  return nullptr;
}

}  // namespace

TEST(CliConfigKnobs, EveryTableFlagIsInRunAndModelHelp) {
  for (const char* cmd : {"run", "model"}) {
    const auto r = run_gemmar(std::string(cmd) + " --help");
    ASSERT_EQ(r.rc, 0) << r.err;
    for (const gemmar::ConfigField& f : gemmar::config_fields())
      EXPECT_NE(r.out.find(std::string("--") + f.flag), std::string::npos) << cmd << " --help lacks --" << f.flag;
  }
  const auto floors = run_gemmar("reference floors --help");
  EXPECT_NE(floors.out.find("--scatter-dtype"), std::string::npos) << floors.out;
}

TEST(CliConfigKnobs, ModelTakesTheKnobsAndEchoesThemInItsConfig) {
  const auto r = run_gemmar("model --chunk-bands 3 --sdma-queues 1 -m 9216 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const json c = json::parse(r.out).at("config");
  EXPECT_EQ(c.at("chunk_bands"), 3);
  EXPECT_EQ(c.at("sdma_queues"), 1);
  EXPECT_EQ(c.at("scatter_dtype"), "bf16");
  EXPECT_EQ(c.at("label"), "fused-sdma/blockscale/bf16/sdma/chunk-bands-3");
  // op.py's wo_b plan: -m 9216 is the physical M of logical 8200.
  const auto wob = run_gemmar("model --schedule wo_b --chunk-rule op -m 9216 --logical-m 8200 --json");
  ASSERT_EQ(wob.rc, 0) << wob.err;
  EXPECT_EQ(json::parse(wob.out).at("config").at("logical_m"), 8200);
}

TEST(CliConfigKnobs, RefusalsExitTwoWithMorisReason) {
  const struct {
    const char* args;
    const char* reason;
  } cases[] = {
      {"model --mode split-sdma --scatter-dtype fp8", "FP8 scatter experiment is wired only through fused-sdma"},
      {"model --mode split-lsa --gather-dtype fp8",
       "--mode split-lsa has no fp8 gather leg (build_lsa_ar takes no gather_dtype); use split-sdma or fused-sdma "
       "for --gather-dtype fp8"},
      {"model --schedule wo_b --chunk-rule op -m 9216 --logical-m 8000",
       "M=9216 does not match planned padded M=8192; use padded_m()/pad_rows() and pass the original logical_m"},
      {"model --schedule wo_b -m 8200", "add --chunk-rule op"},
      {"model --relaxed-rows -m 4224", "relaxed rows requires fused SDMA, a full tile per peer, and chunk_bands"},
      {"model --mode split-sdma --chunk-bands 2", "chunk_bands requires fused SDMA"},
      {"model --chunk-bands -1", "--chunk-bands: -1 is out of range [0, 4096]"},
      {"model --scatter-dtype fp4", "--scatter-dtype: unknown value 'fp4' (accepted: bf16|fp8)"},
      {"reference floors --quant mxfp8 --fp8-format e4m3fnuz", "op.py FP8_DTYPES"},
      {"run --backend cpu -m 512 -n 1024 -k 256 --mode split-sdma --scatter-dtype fp8",
       "FP8 scatter experiment is wired only through fused-sdma"},
  };
  for (const auto& c : cases) {
    const auto r = run_gemmar(c.args);
    EXPECT_EQ(r.rc, 2) << c.args;
    EXPECT_NE(r.err.find(c.reason), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out.find("RESULT_JSON"), std::string::npos) << c.args << ": refused after running";
  }
}

// A CPU run with --chunk-bands at W = 2: 512 rows per rank are 4 bands of 128, in ceil(4 / 3) = 2 puts. Its
// RESULT_JSON carries the knobs, and `gemmar check` reads them back to the same config.
TEST(CliConfigKnobs, RunRecordsTheKnobsAndCheckReadsThemBack) {
  const auto r = run_gemmar(
      "run --backend cpu --world 2 -m 1024 -n 1024 -k 256 --chunk-bands 3 --sdma-queues 1 --iterations 1 "
      "--check-rows 0");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  const json j = result_json(r.out);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j.at("chunk_bands"), 3);
  EXPECT_EQ(j.at("chunks"), 2);
  EXPECT_EQ(j.at("sdma_queues"), 1);
  EXPECT_EQ(j.at("scatter_dtype"), "bf16");
  EXPECT_EQ(j.at("relaxed_rows"), false);
  const auto check = run_gemmar({"check", "-", "--json", "--no-timing"}, "RESULT_JSON " + j.dump() + "\n");
  ASSERT_EQ(check.rc, 0) << check.err << check.out;
  EXPECT_NE(check.out.find("chunk-bands-3"), std::string::npos) << check.out;
}
