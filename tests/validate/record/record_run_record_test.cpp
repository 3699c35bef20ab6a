// The run record as every judging command builds it: the check fields gemmar run / verify add survive a
// RESULT_JSON round trip (what `gemmar check` reads back must be what `gemmar run` judged), and the
// Python-style JSON of the benchmark (NaN, Infinity) round-trips through python_json.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "validate/record/python_json.hpp"
#include "validate/record/run_record.hpp"

namespace {

using namespace gemmar;

RunRecord full_record() {
  RunRecord r;
  r.source = "run:1";
  r.shape = {4096, 7168, 2048, 8};
  r.config.mode = Mode::FusedLsa;
  r.config.gather_dtype = WireDtype::Fp8;
  r.config.gather_transport = Transport::Lsa;
  r.pull_blocks = 96;
  r.config.pull_blocks = 96;
  r.max_rank_time_us = 1234.5;
  r.per_rank_time_us = {1200.0, 1234.5, 1201.0, 1199.0, 1210.0, 1220.0, 1205.0, 1204.0};
  r.rel_l2 = 0.0251;
  r.validated = true;
  r.per_rank_rel_l2 = {0.0249, 0.0251, 0.025, 0.0249, 0.0248, 0.0250, 0.0251, 0.0249};
  r.per_slice_rel_l2 = {0.0249, 0.0251, 0.025,  0.0249,
                        0.0248, 0.0250, 0.0251, std::numeric_limits<double>::quiet_NaN()};
  r.phases_us = {{"gemm", 900.5}, {"pull", 210.25}};
  r.profile = "h200-1gpu";
  r.backend = "gpu";
  r.stop_after = "all";
  r.wrong_elements = 17;
  r.checked_rows = 512;
  r.poisoned_elements = 3;
  r.rel_l2_all_views = 0.02501;
  r.rel_l2_all_views_stderr = 0.0001;
  r.seed = 99;
  r.inject = "no-release";
  r.device = "NVIDIA H200 (8 ranks on 1 device)";
  r.gemm_impl = "cublaslt";
  r.unfused_baseline = "cuBLASLt GEMM + split-sdma fp8/lsa";
  r.unfused_baseline_us = 1500.0;
  return r;
}

TEST(RecordRunRecord, EveryCheckFieldSurvivesTheResultJsonRoundTrip) {
  const RunRecord r = full_record();
  const std::string line = dump_python_json(run_record_to_json(r));
  const RunRecord back = run_record_from_json(parse_python_json(line), "stdin:1");
  EXPECT_EQ(back.source, "stdin:1");
  EXPECT_EQ(config_label(back.config), config_label(r.config));
  EXPECT_EQ(back.shape.m, 4096);
  EXPECT_EQ(back.pull_blocks, 96);
  EXPECT_EQ(back.per_rank_time_us, r.per_rank_time_us);
  EXPECT_EQ(back.per_rank_rel_l2, r.per_rank_rel_l2);
  ASSERT_EQ(back.per_slice_rel_l2.size(), 8u);
  EXPECT_TRUE(std::isnan(back.per_slice_rel_l2[7]));  // NaN written as NaN, read back as NaN
  EXPECT_EQ(back.phases_us, r.phases_us);
  EXPECT_EQ(back.wrong_elements, 17);
  EXPECT_EQ(back.checked_rows, 512);
  EXPECT_EQ(back.poisoned_elements, 3);
  EXPECT_EQ(back.rel_l2_all_views, r.rel_l2_all_views);
  EXPECT_EQ(back.seed, 99u);
  EXPECT_EQ(back.inject, "no-release");
  EXPECT_EQ(back.device, r.device);
  EXPECT_EQ(back.gemm_impl, "cublaslt");
  EXPECT_EQ(back.unfused_baseline_us, 1500.0);
  EXPECT_EQ(back.stop_after, "all");
  // The ratio is derived for the reader, not stored in the struct.
  EXPECT_NEAR(parse_python_json(line).at("fused_vs_unfused").get<double>(), 1500.0 / 1234.5, 1e-12);
}

TEST(RecordRunRecord, AbsentCheckFieldsStayAbsentAndTheOldMinusOneMeansNotChecked) {
  const std::string base = R"({"mode": "split-sdma", "world_size": 8, "m": 16384, "n": 7168, "k": 2048)";
  const RunRecord bare = run_record_from_json(parse_python_json(base + "}"), "a:1");
  EXPECT_FALSE(bare.wrong_elements);
  EXPECT_FALSE(bare.poisoned_elements);
  EXPECT_FALSE(run_record_to_json(bare).contains("wrong_elements"));
  const RunRecord old = run_record_from_json(parse_python_json(base + R"(, "wrong_elements": -1})"), "a:2");
  EXPECT_FALSE(old.wrong_elements);
  EXPECT_THROW(run_record_from_json(parse_python_json(base + R"(, "wrong_elements": "many"})"), "a:3"), std::exception);
  EXPECT_THROW(run_record_from_json(parse_python_json(base + R"(, "seed": -4})"), "a:4"), std::exception);
}

TEST(RecordPythonJson, NonFiniteTokensRoundTripOutsideStringsOnly) {
  const auto j = parse_python_json(R"({"x": [NaN, Infinity, -Infinity], "s": "NaN", "k": {"Infinity": 1}})");
  EXPECT_TRUE(std::isnan(j["x"][0].get<double>()));
  EXPECT_EQ(j["x"][1].get<double>(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(j["x"][2].get<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(j["s"], "NaN");
  EXPECT_EQ(j["k"]["Infinity"], 1);
  const std::string out = dump_python_json(j);
  EXPECT_EQ(parse_python_json(out)["s"], "NaN");
  EXPECT_NE(out.find("[NaN, Infinity, -Infinity]"), std::string::npos) << out;
  EXPECT_THROW(parse_python_json("{\"x\": NaN1}"), nlohmann::json::exception);
  EXPECT_THROW(parse_python_json("{\"x\": 1e999}"), nlohmann::json::exception);
}

}  // namespace
