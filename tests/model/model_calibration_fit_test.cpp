// The mi355x profile is the output of its calibration: a least-squares fit on the measured data and mori's
// committed sweeps (model/calibrate.hpp) reproduces the profile's fitted values, and a malformed row of the
// calibration data names its file and line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/errors.hpp"
#include "model/calibrate.hpp"
#include "support/cli.hpp"

using namespace gemmar;

TEST(ModelCalibrationFit, TheProfileHoldsWhatTheFitGivesFromItsPoints) {
  const auto start = model::load_profile("mi355x");
  const auto points = model::load_mi355x_points(GEMMAR_TEST_DATA_DIR);
  ASSERT_EQ(points.size(), 367u);  // 29 of mi355x_measured.json, 36 sweep rows, 16 mxfp8 rows, 10 fuse_reduce_push,
  // 10 of mori's headline table (headline_fc89289.txt), 3 of its chunks table (chunks_fc89289.txt), 263 README cells
  const auto fit = model::fit_profile(start, points, model::fit_parameters(start));
  for (const auto& fp : model::fit_parameters(start)) {
    const double committed = start.source[model::value_pointer(fp.path)].get<double>();
    const double fitted = fit.profile.source[model::value_pointer(fp.path)].get<double>();
    EXPECT_NEAR(fitted, committed, 2e-3 * std::fabs(committed) + 1e-4) << fp.path;
  }
  // 2.94% over the 367 points (3.09% before the fused epilogue tail slowed only the tile waves, 3.16% before the
  // folded reduce + quantize's row chain, issue 46): the held terms
  // (gemm.k_iter_latency_us, gemm.partial_wave_compute_fraction, link.protocol_efficiency, link.scatter_efficiency
  // and copy_engine.aggregate_gbps at their calibration on mori's sweeps, docs/model.md "Held parameters") cost it
  // about a quarter point against a fit with them free, which broke checks the fit never sees.
  EXPECT_LT(fit.rms_log_error, 0.030);
}

TEST(ModelCalibrationFit, EveryW4PointUsesThreeOfTheSevenLinks) {
  // Halving the ranks at the same slice bytes per link would be flat if every rank kept 7 links; the model
  // puts 3 links under a W = 4 run: its split-sdma at M = 16384, N = 5120, K = 2048 (mori measured 1693.4 us)
  // is within 5% of the measurement only with W - 1 links.
  const auto prof = model::load_profile("mi355x");
  Shape s;
  s.world = 4;
  s.n = 5120;
  Config c;
  c.mode = Mode::SplitSdma;
  const double t = model::predict(prof, s, c).total_us;
  EXPECT_NEAR(t / 1693.4, 1.0, 0.05) << t;
  s.world = 8;
  const double t8 = model::predict(prof, s, c).total_us;
  EXPECT_GT(t / t8, 1.5);  // per rank, (W-1)/W of a larger slice over 3 links instead of 7
}

// Out of sample: mori's single-process GEMM sweep (tests/data/model/mori_1p.jsonl: its GEMM alone in one process,
// blockscale and mxfp8, N = 5120, K = 2048, M = 4096 ... 16384, three repeats each) is in no fit; the model's
// gemm-only predicts the mean of each shape's repeats within 5% (M = 12288 is 7.5 waves of 128 x 256 tiles, a
// partial wave no calibration point of blockscale has). mxfp8 at M = 16384 was measured at 182.4 us here and at
// 192.7 us in fused_mxfp8.txt (a calibration point, an older mori commit), 5.6% apart; since the fused epilogue's
// tail slows only the tile waves (docs/model.md "gemm (fused)", 2026-12-08) the fit lands within 5% of both, and
// blockscale M = 8192 (+5.09% before) is no longer a known miss.
TEST(ModelCalibrationFit, MorisSingleProcessGemmSweepIsPredictedWithinFivePercentOutOfSample) {
  const auto prof = model::load_profile("mi355x");
  std::ifstream in(GEMMAR_TEST_DATA_DIR "/model/mori_1p.jsonl");
  ASSERT_TRUE(in);
  std::map<std::pair<std::string, int64_t>, std::vector<double>> runs;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    ASSERT_EQ(j.at("n").get<int64_t>(), 5120);
    ASSERT_EQ(j.at("k").get<int64_t>(), 2048);
    runs[{j.at("route").get<std::string>(), j.at("m").get<int64_t>()}].push_back(j.at("us").get<double>());
  }
  ASSERT_EQ(runs.size(), 8u);
  for (const auto& [key, us] : runs) {
    ASSERT_EQ(us.size(), 3u);
    Shape s;
    s.world = 1;
    s.m = key.second;
    s.n = 5120;
    s.k = 2048;
    Config c;
    c.mode = Mode::GemmOnly;
    c.quant = key.first == "mori-mxfp8-1p" ? Quant::Mxfp8 : Quant::Blockscale;
    ASSERT_TRUE(c.quant == Quant::Mxfp8 || key.first == "mori-blockscale-1p") << key.first;
    const double measured = (us[0] + us[1] + us[2]) / 3.0;
    const double err = model::predict(prof, s, c).total_us / measured - 1.0;
    std::printf("%-20s M=%-6lld %7.1f us  model %+5.2f%%\n", key.first.c_str(), (long long)key.second, measured,
                100 * err);
    EXPECT_LE(std::fabs(err), 0.05) << key.first << " M=" << key.second;
  }
}

TEST(ModelCalibrationFit, AMalformedRowNamesItsFileAndLine) {
  const auto dir = test::scratch_dir("calfit");
  std::filesystem::create_directories(dir / "model");
  std::filesystem::copy_file(GEMMAR_TEST_DATA_DIR "/mi355x_measured.json", dir / "mi355x_measured.json");
  test::write_text(dir / "model" / "sweep_dsv41.jsonl", "{\"mode\": \"gemm-only\"}\n");
  test::write_text(dir / "model" / "fused_mxfp8.txt", "4096 gemm-only 70.4\n");
  try {
    model::load_mi355x_points(dir.string());
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("sweep_dsv41.jsonl:1"), std::string::npos) << e.what();
  }
  test::write_text(dir / "model" / "sweep_dsv41.jsonl", "");
  test::write_text(dir / "model" / "fused_mxfp8.txt", "4096 gemm-only 70.4\n8192 gemm-only\n");
  try {
    model::load_mi355x_points(dir.string());
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("fused_mxfp8.txt:2"), std::string::npos) << e.what();
  }
}

TEST(ModelCalibrationFit, FuseReducePushCurvesFollowTheirMechanisms) {
  // mori's README table (tests/data/model/fuse_reduce_push.txt): writethrough is best at a few bands (the
  // reduce hidden under the gather against a per-band sync), fence grows by ~256 system-scope releases per band.
  const auto prof = model::load_profile("mi355x");
  Config c;
  c.fuse_reduce_push = true;
  auto at = [&](int bands, Publish p) {
    c.gather_bands = bands;
    c.publish = p;
    return model::predict(prof, Shape{}, c).total_us;
  };
  const double plain = model::predict(prof, Shape{}, Config{}).total_us;
  EXPECT_GT(at(1, Publish::Writethrough), plain);  // the sync with nothing to hide
  EXPECT_LT(at(4, Publish::Writethrough), at(1, Publish::Writethrough));
  EXPECT_LT(at(4, Publish::Writethrough), at(16, Publish::Writethrough));
  const double per_band = (at(32, Publish::Fence) - at(16, Publish::Fence)) / 16;
  EXPECT_GT(per_band, 45);  // the README: ~61 us per band
  EXPECT_LT(per_band, 75);
  for (int b : {1, 4, 8, 16, 32}) EXPECT_GT(at(b, Publish::Fence), at(b, Publish::Writethrough)) << b;
  // Not a bf16 sdma gather: the option does not apply and the prediction is the plain one.
  c.gather_transport = Transport::Lsa;
  c.gather_dtype = WireDtype::Fp8;
  Config plain_lsa = c;
  plain_lsa.fuse_reduce_push = false;
  EXPECT_EQ(model::predict(prof, Shape{}, c).total_us, model::predict(prof, Shape{}, plain_lsa).total_us);
}

TEST(ModelCalibrationFit, FenceWritesTheReducedSliceBackOnceWhateverTheBands) {
  // Under publish=fence the reduce's stores stay dirty in L2 until the releases write them back: S N 2 bytes per
  // rank in all, a 1/B share per band (mori's README: cached against write-through stores, 1153.4 against
  // 1148.7 us on the unfused reduce). With the per-block release priced at zero, fence minus writethrough is that
  // writeback alone, the same at 1 and 4 bands (both work-bound: a band's stream outlasts the sync).
  auto prof = model::load_profile("mi355x");
  prof.params.sync.system_release_us = 0;
  Config c;
  c.fuse_reduce_push = true;
  auto reduce_us = [&](int bands, Publish p) {
    c.gather_bands = bands;
    c.publish = p;
    for (const auto& ph : model::predict(prof, Shape{}, c).phases)
      if (ph.name == "reduce") return ph.us;
    return std::nan("");
  };
  const double slice_bytes = 16384.0 / 8 * 7168 * 2;
  const double writeback_us = slice_bytes / (prof.params.sync.release_writeback_gbps * 1e3);
  EXPECT_NEAR(writeback_us, 4.7, 0.01);
  for (int b : {1, 4})
    EXPECT_NEAR(reduce_us(b, Publish::Fence) - reduce_us(b, Publish::Writethrough), writeback_us, 1e-9);
}
