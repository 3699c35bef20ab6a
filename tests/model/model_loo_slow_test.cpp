// Leave-one-out over every calibration point (docs/model.md "Calibration and leave-one-out"): each standalone
// total predicted by a fit that never saw it, and the profile's per-mode SLOWER_THAN_MODEL band wide enough
// for the slowest such point plus the run-to-run spread (so a healthy run of an unseen shape passes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "model/calibrate.hpp"

using namespace gemmar;

// The target (issues 24 and 46): every standalone total within 5% of its leave-one-out prediction, no exceptions.
constexpr double kWorstLooError = 0.05;

TEST(ModelLeaveOneOut, EveryStandaloneTotalIsPredictedWithinFivePercentAndTheBandsCoverIt) {
  const auto prof = model::load_profile("mi355x");
  const auto points = model::load_mi355x_points(GEMMAR_TEST_DATA_DIR);
  const auto rows = model::leave_one_out(prof, points, model::fit_parameters(prof));
  int scored = 0;
  for (const auto& r : rows) {
    if (!r.point->scored || !r.point->phase.empty()) continue;
    ++scored;
    std::printf("%-60s %8.1f us  LOO %+6.2f%%\n", r.point->source.c_str(), r.point->measured_us, 100 * r.loo_error);
    EXPECT_LE(std::fabs(r.loo_error), kWorstLooError) << r.point->source;
    const double slower = 1.0 / (1.0 + r.loo_error) - 1.0;
    EXPECT_LE(slower, prof.band(r.point->config.mode)) << r.point->source;
  }
  // 70 standalone totals, 9 of mori's headline table (its ptpc gemm-only fits a ratio), its 3 chunks rows and the
  // 263 fitted cells of mori's README tables at d5443336, f3bff0ae and the v2-015 retest (tests/data/model).
  // Issue 46: 26 of them are over 5% today (docs/results/cpu-2026-12-07-model/README.md); the target stands.
  EXPECT_EQ(scored, 345);
}
