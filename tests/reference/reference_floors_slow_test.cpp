// The reference shape itself (M=16384, N=7168, K=2048, W=8) on few sampled rows: B is generated in full
// for all 8 ranks, which is what makes this slow (~10 s on 2 cores).
#include <gtest/gtest.h>

#include "reference/floors.hpp"

using namespace gemmar;
using namespace gemmar::reference;

TEST(FloorsSlow, ReferenceShapeWithFewRowsMatchesTheMeasuredFloors) {
  FloorRequest r;  // defaults: the reference shape, blockscale, normal data
  r.rows = 64;
  const FloorResult f = predict_floors(r);
  EXPECT_EQ(f.rows_evaluated, 64);
  EXPECT_NEAR(f.bf16, 2.35e-3, 0.03 * 2.35e-3) << f.bf16;
  EXPECT_NEAR(f.fp8, 2.49e-2, 0.03 * 2.49e-2) << f.fp8;
}
