// The reference shape itself (M=16384, N=7168, K=2048, W=8) on few sampled rows: B is generated in full
// for all 8 ranks, which is what makes this slow (~10 s on 2 cores).
#include <gtest/gtest.h>

#include <utility>

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

// mori's two fp8-scatter targets at their own shapes (M=16384, bench data, 256 rows): every scatter x gather pair
// within 3% of the relL2 mori published (python/mori/ops/gemm_ar/README.md, 2026-09-29, tables A and F).
// ~45 s and ~30 s on 2 shared cores: B is generated in full for every rank.
TEST(FloorsSlow, Fp8ScatterTargetsReproduceMorisPublishedRelL2AtTheirShapes) {
  for (const auto& [shape, quant] : {std::pair{Shape{16384, 7168, 2048, 8}, Quant::Blockscale},
                                     std::pair{Shape{16384, 5120, 2048, 4}, Quant::Mxfp8}}) {
    FloorRequest r;
    r.shape = shape;
    r.quant = quant;
    r.data = DataKind::Bench;
    const FloorResult f = predict_floors(r);
    for (WireDtype scatter : {WireDtype::Bf16, WireDtype::Fp8})
      for (WireDtype gather : {WireDtype::Bf16, WireDtype::Fp8}) {
        const auto m = published_floor(shape, quant, scatter, gather);
        ASSERT_TRUE(m.has_value());
        EXPECT_NEAR(f.pair(scatter, gather).value, m->value, 0.03 * m->value)
            << to_string(quant) << " " << to_string(scatter) << "/" << to_string(gather);
      }
  }
}
