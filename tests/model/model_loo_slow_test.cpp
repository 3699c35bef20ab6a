// Leave-one-out over every calibration point (docs/model.md "Calibration and leave-one-out"): each standalone
// total predicted by a fit that never saw it, and the profile's per-mode SLOWER_THAN_MODEL band wide enough
// for the slowest such point plus the run-to-run spread (so a healthy run of an unseen shape passes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>

#include "model/calibrate.hpp"

using namespace gemmar;

// The target (issues 24 and 46): every standalone total within 5% of its leave-one-out prediction, and
// within its mode's band (held at 7-7.5%: a band wide enough for the worst cell would hide a 2-chunk slowdown).
constexpr double kWorstLooError = 0.05;

// Known misses: published cells the model misses by more than 5% leave-one-out after the physics it has, each named
// by its calibration source (docs/model.md "Known misses"). A listed cell is still predicted and printed; it must still
// miss, so a fix that brings one within 5% fails here until it is taken off the list. Each with its measured us and
// leave-one-out error (39 since the fused epilogue's tail slows only the tile waves, 2026-12-08: f3bff0ae README.md:853
// left the list, fused_mxfp8.txt:9 joined it at -5.01%, the retest's padding rows at M = 1024 came 2 points closer;
// 39 too since the folded reduce + quantize's row chain, issue 46; 40 before, each with its configuration in
// docs/results/cpu-2026-12-07-model/README.md):
const std::set<std::string> kKnownMisses = {
    "sweep_dsv41.jsonl:25",                                       // 53.7 us, -5.20%
    "fused_mxfp8.txt:9",                                          // 152.2 us, -5.01%
    "readme_f3bff0ae.txt:9 (README.md:373@f3bff0ae)",             // 707.3 us, -7.70%
    "readme_f3bff0ae.txt:18 (README.md:741@f3bff0ae)",            // 329.5 us, -11.26%
    "readme_f3bff0ae.txt:21 (README.md:742@f3bff0ae)",            // 539.3 us, -6.55%
    "readme_retest_v2015.txt:24 (README.md:428@v2-015-retest)",   // 1507.6 us, -7.32%
    "readme_retest_v2015.txt:28 (README.md:430@v2-015-retest)",   // 516.2 us, -6.63%
    "readme_retest_v2015.txt:30 (README.md:430@v2-015-retest)",   // 1673.5 us, +6.48%
    "readme_retest_v2015.txt:55 (README.md:439@v2-015-retest)",   // 499.4 us, -9.47%
    "readme_retest_v2015.txt:57 (README.md:439@v2-015-retest)",   // 1495.5 us, +8.69%
    "readme_retest_v2015.txt:58 (README.md:440@v2-015-retest)",   // 515.1 us, -6.30%
    "readme_retest_v2015.txt:60 (README.md:440@v2-015-retest)",   // 1515.7 us, +8.67%
    "readme_retest_v2015.txt:61 (README.md:441@v2-015-retest)",   // 463.7 us, -7.58%
    "readme_retest_v2015.txt:63 (README.md:441@v2-015-retest)",   // 1440.1 us, +9.10%
    "readme_retest_v2015.txt:66 (README.md:442@v2-015-retest)",   // 1465.9 us, +8.65%
    "readme_retest_v2015.txt:67 (README.md:448@v2-015-retest)",   // 57.0 us, +6.92%
    "readme_retest_v2015.txt:69 (README.md:448@v2-015-retest)",   // 162.0 us, -6.29%
    "readme_retest_v2015.txt:90 (README.md:455@v2-015-retest)",   // 1352.0 us, -5.23%
    "readme_retest_v2015.txt:93 (README.md:456@v2-015-retest)",   // 1371.8 us, -6.66%
    "readme_retest_v2015.txt:94 (README.md:457@v2-015-retest)",   // 374.2 us, +5.44%
    "readme_retest_v2015.txt:97 (README.md:458@v2-015-retest)",   // 380.1 us, +6.26%
    "readme_retest_v2015.txt:108 (README.md:461@v2-015-retest)",  // 1575.6 us, +5.67%
    "readme_retest_v2015.txt:112 (README.md:463@v2-015-retest)",  // 462.3 us, -5.77%
    "readme_retest_v2015.txt:122 (README.md:522@v2-015-retest)",  // 125.4 us, +6.67%
    "readme_retest_v2015.txt:123 (README.md:522@v2-015-retest)",  // 125.7 us, +6.46%
    "readme_retest_v2015.txt:124 (README.md:522@v2-015-retest)",  // 125.7 us, +6.43%
    "readme_retest_v2015.txt:125 (README.md:523@v2-015-retest)",  // 127.0 us, +5.37%
    "readme_retest_v2015.txt:126 (README.md:523@v2-015-retest)",  // 126.6 us, +5.65%
    "readme_retest_v2015.txt:127 (README.md:523@v2-015-retest)",  // 126.8 us, +5.48%
    "readme_retest_v2015.txt:129 (README.md:524@v2-015-retest)",  // 168.8 us, -8.31%
    "readme_retest_v2015.txt:132 (README.md:525@v2-015-retest)",  // 410.4 us, -5.07%
    "readme_retest_v2015.txt:133 (README.md:525@v2-015-retest)",  // 406.0 us, -6.11%
    "readme_retest_v2015.txt:135 (README.md:526@v2-015-retest)",  // 710.1 us, -6.26%
    "readme_retest_v2015.txt:136 (README.md:526@v2-015-retest)",  // 707.9 us, -7.79%
    "readme_retest_v2015.txt:173 (README.md:594@v2-015-retest)",  // 367.7 us, +5.15%
    "readme_retest_v2015.txt:183 (README.md:599@v2-015-retest)",  // 906.4 us, -6.00%
    "readme_retest_v2015.txt:189 (README.md:624@v2-015-retest)",  // 1262.6 us, -5.49%
    "readme_retest_v2015.txt:190 (README.md:625@v2-015-retest)",  // 1264.1 us, -5.60%
    "readme_retest_v2015.txt:191 (README.md:626@v2-015-retest)",  // 1264.4 us, -5.63%
};

// GEMMAR_LOO_STRIDE=S refits every S-th scored point (default 8: 345 refits over 367 points took ~37 min on the 2-core
// machine, 44 take 107 s, 2026-12-07); S = 1 is the full run, as scripts/model_loo_table.sh makes it. A strided row is
// the full run's row (each refit starts from the full fit), so the known misses above hold at any stride.
int loo_stride() {
  const char* s = std::getenv("GEMMAR_LOO_STRIDE");
  const int v = s && *s ? std::atoi(s) : 8;
  if (v < 1) throw std::invalid_argument(std::string("GEMMAR_LOO_STRIDE must be a positive integer, got '") + s + "'");
  return v;
}

TEST(ModelLeaveOneOut, EveryStandaloneTotalIsPredictedWithinFivePercentAndTheBandsCoverIt) {
  const auto prof = model::load_profile("mi355x");
  const auto points = model::load_mi355x_points(GEMMAR_TEST_DATA_DIR);
  const int stride = loo_stride();
  const auto rows = model::leave_one_out(prof, points, model::fit_parameters(prof), nullptr, stride);
  std::set<std::string> sources;
  for (const auto& p : points) sources.insert(p.source);
  for (const auto& k : kKnownMisses)
    EXPECT_TRUE(sources.count(k)) << k << ": a listed known miss is no calibration point";
  int scored = 0, refitted = 0;
  for (const auto& r : rows) {
    if (!r.point->scored || !r.point->phase.empty()) continue;
    ++scored;
    if (std::isnan(r.loo_error)) continue;  // not refitted at this stride
    ++refitted;
    std::printf("%-60s %8.1f us  LOO %+6.2f%%\n", r.point->source.c_str(), r.point->measured_us, 100 * r.loo_error);
    if (kKnownMisses.count(r.point->source)) {
      EXPECT_GT(std::fabs(r.loo_error), kWorstLooError)
          << r.point->source << ": within 5% now, take it off kKnownMisses";
      continue;
    }
    EXPECT_LE(std::fabs(r.loo_error), kWorstLooError) << r.point->source;
    const double slower = 1.0 / (1.0 + r.loo_error) - 1.0;
    EXPECT_LE(slower, prof.band(r.point->config.mode)) << r.point->source;
  }
  EXPECT_GE(refitted, scored / stride) << "stride " << stride;
  // 70 standalone totals, 9 of mori's headline table (its ptpc gemm-only fits a ratio), its 3 chunks rows and the
  // 263 fitted cells of mori's README tables at d5443336, f3bff0ae and the v2-015 retest (tests/data/model).
  // Issue 46: 39 of them are over 5%, each listed above; the target stands for every other one.
  EXPECT_EQ(scored, 345);
}
