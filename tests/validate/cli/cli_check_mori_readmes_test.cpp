// Every run mori published as healthy in its READMEs at its newest commits (tests/data/model/readme_*.txt: the
// bench README @d5443336, gemm_ar's README @f3bff0ae and the 2026-09-29 operator retest on v2-015, one measured
// cell per row) passes `gemmar check --profile mi355x`: the fp8 scatter, the op's chunk rule, chunk_bands' short
// tail, relaxed rows and the wo_b padding included (issue 46, "every healthy run mori published passes").
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.hpp"
#include "reference/floors.hpp"
#include "support/cli.hpp"

using gemmar::test::run_gemmar;

namespace {

const std::string kModelData = std::string(GEMMAR_TEST_DATA_DIR) + "/model/";
const char* const kReadmes[] = {"readme_d5443336.txt", "readme_f3bff0ae.txt", "readme_retest_v2015.txt"};

using Row = std::map<std::string, std::string>;

std::vector<Row> readme_rows(const std::string& file) {
  std::ifstream in(kModelData + file);
  EXPECT_TRUE(in) << file;
  std::vector<Row> rows;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    Row kv;
    kv["line"] = std::to_string(line_no);
    for (std::string tok; is >> tok;) kv[tok.substr(0, tok.find('='))] = tok.substr(tok.find('=') + 1);
    rows.push_back(kv);
  }
  return rows;
}

// The relL2 mori published for the run's wires at this shape (its healthy runs sit there), else the floor gemmar
// derives for them.
double healthy_rel_l2(const gemmar::Shape& s, gemmar::Quant q, gemmar::WireDtype scatter, gemmar::WireDtype gather) {
  if (const auto pub = gemmar::reference::published_floor(s, q, scatter, gather)) return pub->value;
  gemmar::Shape fs = s;
  fs.m = 16384;
  return gemmar::reference::cached_floors(fs, q).pair(scatter, gather).value;
}

// The row as the RESULT_JSON line mori's bench prints for it (bench_gemm_ar.py @d5443336 :561-605): the run's
// physical M (relaxed rows: the unpadded M the run allocated), its knobs, the max over ranks, validated.
std::string result_json(const Row& r) {
  const auto get = [&](const char* k, const std::string& dflt = "") {
    const auto it = r.find(k);
    return it == r.end() ? dflt : it->second;
  };
  const bool relaxed = get("relaxed") == "1";
  gemmar::Shape s;
  s.m = std::stoll(relaxed ? get("m_pad") : get("m"));
  s.n = std::stoll(get("n"));
  s.k = std::stoll(get("k"));
  s.world = std::stoi(get("world"));
  const gemmar::Quant q = gemmar::parse_quant(get("quant"));
  nlohmann::json j = {{"mode", get("mode")},
                      {"m", s.m},
                      {"n", s.n},
                      {"k", s.k},
                      {"world_size", s.world},
                      {"quant", get("quant")},
                      {"max_rank_time_us", std::stod(get("us"))},
                      {"timing", "graph"},
                      {"validated", true}};
  if (get("mode") == "gemm-only") {
    j["rel_l2"] = 0.00166;  // the GEMM alone: its bf16 output against the fp32 reference (sweep_dsv41.jsonl)
    return "RESULT_JSON " + j.dump() + "\n";
  }
  const std::string gather = get("gather", "bf16"), scatter = get("scatter", "bf16");
  j["gather_dtype"] = gather;
  j["gather_transport"] = get("transport", "sdma");
  j["scatter_dtype"] = scatter;
  if (r.count("fq")) j["fuse_quantize"] = get("fq") == "1";
  if (r.count("chunks")) j["chunks"] = std::stoi(get("chunks"));
  if (r.count("chunk_bands")) j["chunk_bands"] = std::stoi(get("chunk_bands"));
  if (relaxed) j["relaxed_rows"] = true;
  if (get("rule") == "op") j["chunk_rule"] = "op";
  j["rel_l2"] = healthy_rel_l2(s, q, gemmar::parse_scatter_wire(scatter), gemmar::parse_wire(gather));
  return "RESULT_JSON " + j.dump() + "\n";
}

// Known misses: published healthy cells slower than the model by more than its band (held at 7-7.5%), even against
// the slowest machine it knows, named as the calibration names them (docs/model.md "Known misses" has each one's
// number). Each must still be judged SLOWER_THAN_MODEL, so a
// model fix that brings one inside the band fails here until it is taken off the list; every other row must pass.
const std::set<std::string> kExpectedMisses = {
    // fused-sdma blockscale fp8/lsa gather, W = 8, M = 4096: 329.5 us against 294.0 (303.4 on v2-015). Not the pull
    // grid: the bench (@d5443336) sets none and build_sdma_phases (kernels_sdma.py @f3bff0ae) runs PULL_BLOCKS = 64
    // (capped at 128 here), the model's grid. With the reduce + quantize fold, which mori's sources say was the
    // default then (docs/model.md "Known misses of gemmar check"), the model gives 323.2 us; the row does not state
    // it. d5443336's row repeats f3bff0ae's.
    "readme_d5443336.txt:38 (README.md:397@d5443336)",
    "readme_f3bff0ae.txt:18 (README.md:741@f3bff0ae)",
};

}  // namespace

TEST(CheckMoriReadmes, EveryPublishedHealthyRunPassesWithTheMi355xProfile) {
  std::string records;
  std::vector<std::string> sources;
  for (const char* f : kReadmes)
    for (const Row& r : readme_rows(f)) {
      records += result_json(r);
      sources.push_back(std::string(f) + ":" + r.at("line") + " (" + r.at("src") + ")");  // the calibration's name
    }
  ASSERT_GE(sources.size(), 290u);  // 53 + 57 + 214 lines less their comments
  const auto res = run_gemmar({"check", "-", "--profile", "mi355x", "--json"}, records);
  const auto j = nlohmann::json::parse(res.out);
  ASSERT_EQ(j.at("runs").size(), sources.size()) << res.err;
  int failed = 0, expected = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const auto& run = j.at("runs")[i];
    const std::string findings = run.at("findings").dump();
    if (kExpectedMisses.count(sources[i])) {
      ++expected;
      EXPECT_NE(findings.find("SLOWER_THAN_MODEL"), std::string::npos)
          << sources[i] << ": no longer a miss, take it off kExpectedMisses: " << findings;
      continue;
    }
    if (run.at("verdict") == "pass") continue;
    ++failed;
    ADD_FAILURE() << sources[i] << ": " << findings;
  }
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(expected, int(kExpectedMisses.size())) << "a listed known miss is no README row";
  EXPECT_EQ(res.rc, kExpectedMisses.empty() ? 0 : 1) << res.err;
}

// An fp8-scatter run is timed against the model's fp8 scatter, not withheld as MODEL_UNAVAILABLE: one twice as slow
// as mori's published 881.21 us (d5443336 README.md:312, W = 4 mxfp8 fp8/lsa gather) is SLOWER_THAN_MODEL.
TEST(CheckMoriReadmes, AnFp8ScatterRunIsTimedAgainstTheModel) {
  nlohmann::json j = {{"mode", "fused-sdma"},
                      {"m", 16384},
                      {"n", 5120},
                      {"k", 2048},
                      {"world_size", 4},
                      {"quant", "mxfp8"},
                      {"gather_dtype", "fp8"},
                      {"gather_transport", "lsa"},
                      {"scatter_dtype", "fp8"},
                      {"chunks", 8},
                      {"timing", "graph"},
                      {"validated", true},
                      {"max_rank_time_us", 881.21}};
  gemmar::Shape s;
  s.m = 16384, s.n = 5120, s.k = 2048, s.world = 4;
  j["rel_l2"] = healthy_rel_l2(s, gemmar::Quant::Mxfp8, gemmar::WireDtype::Fp8, gemmar::WireDtype::Fp8);
  auto r = run_gemmar({"check", "-", "--profile", "mi355x"}, "RESULT_JSON " + j.dump() + "\n");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("MODEL_UNAVAILABLE"), std::string::npos) << r.out;
  j["max_rank_time_us"] = 2 * 881.21;
  r = run_gemmar({"check", "-", "--profile", "mi355x"}, "RESULT_JSON " + j.dump() + "\n");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("SLOWER_THAN_MODEL"), std::string::npos) << r.out;
}
