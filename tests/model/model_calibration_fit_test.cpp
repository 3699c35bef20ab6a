// The mi355x profile is the output of its calibration: a least-squares fit on the measured data and mori's
// committed sweeps (model/calibrate.hpp) reproduces the profile's fitted values, and a malformed row of the
// calibration data names its file and line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/errors.hpp"
#include "model/calibrate.hpp"
#include "support/cli.hpp"

using namespace gemmar;

TEST(ModelCalibrationFit, TheProfileHoldsWhatTheFitGivesFromItsPoints) {
  const auto start = model::load_profile("mi355x");
  const auto points = model::load_mi355x_points(GEMMAR_TEST_DATA_DIR);
  ASSERT_EQ(points.size(), 81u);  // 29 of mi355x_measured.json, 36 sweep rows, 16 mxfp8 rows
  const auto fit = model::fit_profile(start, points, model::default_fit_parameters());
  for (const auto& fp : model::default_fit_parameters()) {
    const double committed = start.source[model::value_pointer(fp.path)].get<double>();
    const double fitted = fit.profile.source[model::value_pointer(fp.path)].get<double>();
    EXPECT_NEAR(fitted, committed, 2e-3 * std::fabs(committed) + 1e-4) << fp.path;
  }
  EXPECT_LT(fit.rms_log_error, 0.03);
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
