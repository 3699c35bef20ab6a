// The fp8 scatter's recipe (mori's --scatter-dtype fp8; docs/reference.md, reference/numerics_inline.hpp),
// bit for bit against an oracle written here in double precision: per row per 256 columns, scale = fl32(amax / 448),
// inv = fl32(1 / scale), code = RNE(fl32(x * inv)) saturating; the reduce widens fl32(decode * scale) and sums in fp32.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "reference/formats.hpp"
#include "reference/numerics_inline.hpp"
#include "reference/operands.hpp"
#include "reference/quant.hpp"

using namespace gemmar;
using namespace gemmar::reference;

namespace {

constexpr int64_t kSeg = numerics::kScatterScaleCols;

// Nearest e4m3fn code to a finite fp32 value by search over every positive finite code, ties to the even code,
// above 448 the largest (saturation): independent of numerics::f32_to_e4m3's integer rounding.
uint8_t nearest_e4m3fn(float v) {
  const double a = std::fabs(double(v));
  int best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (int c = 0; c <= 0x7e; ++c) {
    const double d = std::fabs(double(numerics::e4m3_to_f32(uint8_t(c), false)) - a);
    if (d < best_d || (d == best_d && (c & 1) == 0)) best = c, best_d = d;
  }
  return uint8_t((std::signbit(v) ? 0x80 : 0) | best);
}

// mori's recipe for one segment, in double precision: a quotient or product of two floats rounded once to fp32
// (double keeps the product exact and rounds the quotient innocuously: 53 >= 2 * 24 + 2).
struct Oracle {
  float scale, inv;
  std::vector<uint8_t> codes;
};
Oracle oracle(const uint16_t* seg) {
  double amax = 0;
  for (int64_t i = 0; i < kSeg; ++i) amax = std::max(amax, std::fabs(double(from_bf16(seg[i]))));
  Oracle o;
  o.scale = amax == 0 ? 1.0f : float(amax / 448.0);
  o.inv = float(1.0 / double(o.scale));
  for (int64_t i = 0; i < kSeg; ++i) o.codes.push_back(nearest_e4m3fn(float(double(from_bf16(seg[i])) * o.inv)));
  return o;
}

std::vector<uint16_t> gaussian_row(int64_t n, int row, float mult) {
  std::vector<uint16_t> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = to_bf16(mult * float(normal_sample(5, 0, Tensor::A, row, i)));
  return x;
}

}  // namespace

TEST(ScatterQuant, MoriRecipeIsAmaxOver448ThenItsReciprocalThenRneOfTheProduct) {
  const int64_t N = 1024;
  std::vector<uint8_t> codes(N);
  std::vector<float> scales(N / kSeg);
  int rows = 0;
  for (int r = 0; r < 48; ++r)
    for (float mult : {1.0f, 3e-3f, 17.0f, 1e-30f}) {
      const std::vector<uint16_t> x = gaussian_row(N, r, mult);
      scatter_quantize_row(x.data(), N, codes.data(), scales.data(), Fp8Format::E4M3FN);
      for (int64_t s = 0; s < N / kSeg; ++s) {
        const Oracle o = oracle(&x[size_t(s * kSeg)]);
        ASSERT_EQ(scales[size_t(s)], o.scale) << r << " " << mult << " " << s;
        for (int64_t i = 0; i < kSeg; ++i) ASSERT_EQ(codes[size_t(s * kSeg + i)], o.codes[size_t(i)]) << r << " " << i;
      }
      ++rows;
    }
  EXPECT_EQ(rows, 192);
}

// The scatter divides (amax / 448) where the gather multiplies by fl32(1/448), and takes the reciprocal of the
// rounded scale where the gather divides 448 by the amax: the scales differ in the last bit for a good share of
// segments, so the two recipes are not interchangeable bit for bit.
TEST(ScatterQuant, ItsScaleIsNotTheGathersScale) {
  int differ = 0, total = 0;
  for (int r = 0; r < 64; ++r) {
    const std::vector<uint16_t> x = gaussian_row(kSeg, r, 1.0f);
    float amax = 0;
    for (uint16_t h : x) amax = std::max(amax, std::fabs(from_bf16(h)));
    differ += numerics::scatter_scale(amax, false) != numerics::wire_scale(amax, false);
    ++total;
  }
  EXPECT_GT(differ, total / 8);
  EXPECT_LT(differ, total);
}

// With amax = 448 the scale and its reciprocal are exactly 1, so every value lands on the codes' grid as it is:
// values exactly halfway between two codes round to the even one.
TEST(ScatterQuant, MidpointsRoundToTheEvenCode) {
  std::vector<uint16_t> x(kSeg, to_bf16(0.0f));
  x[0] = to_bf16(448.0f);      // the amax
  x[1] = to_bf16(1.0625f);     // between 1.0 (0x38, even) and 1.125 (0x39): 1.0
  x[2] = to_bf16(1.1875f);     // between 1.125 (0x39) and 1.25 (0x3a, even): 1.25
  x[3] = to_bf16(-432.0f);     // between 416 (0x7d) and 448 (0x7e, even): -448
  x[4] = to_bf16(1.0703125f);  // just above the first midpoint: 1.125
  std::vector<uint8_t> codes(kSeg);
  float scale = 0;
  scatter_quantize_row(x.data(), kSeg, codes.data(), &scale, Fp8Format::E4M3FN);
  EXPECT_EQ(scale, 1.0f);
  EXPECT_EQ(codes[0], 0x7e);
  EXPECT_EQ(codes[1], 0x38);
  EXPECT_EQ(codes[2], 0x3a);
  EXPECT_EQ(codes[3], 0xfe);
  EXPECT_EQ(codes[4], 0x39);
}

// The segment's largest element lands at 448 (code 0x7e) even where fl32(amax * inv) rounds above 448: the code
// never exceeds the largest finite one (no NaN 0x7f), and beyond 448 the conversion saturates.
TEST(ScatterQuant, TheAmaxSaturatesAt448AndNeverBecomesNaN) {
  int above = 0;
  for (uint32_t h = 0x3c00; h < 0x4400; ++h) {  // every bf16 in [2^-7, 2^9)
    const float amax = from_bf16(uint16_t(h));
    const float inv = numerics::scatter_inv_scale(numerics::scatter_scale(amax, false));
    const float scaled = numerics::mul_rn(amax, inv);
    above += scaled > 448.0f;
    ASSERT_EQ(numerics::quantize_scaled(amax, inv, false), 0x7e) << amax;
    ASSERT_EQ(numerics::quantize_scaled(-amax, inv, false), 0xfe) << amax;
  }
  EXPECT_GT(above, 0);                                    // the case exists
  EXPECT_EQ(numerics::f32_to_e4m3(464.0f, false), 0x7e);  // the midpoint to the next binade step
  EXPECT_EQ(numerics::f32_to_e4m3(1.0e6f, false), 0x7e);  // far above
  EXPECT_EQ(numerics::f32_to_e4m3(-1.0e6f, false), 0xfe);
}

// A zero segment has scale 1 (inv 1) and keeps its zeros' signs; the next segment has its own scale.
TEST(ScatterQuant, ZeroSegmentsHaveScaleOneAndEverySegmentItsOwnAmax) {
  std::vector<uint16_t> x(3 * kSeg, to_bf16(0.0f));
  x[5] = 0x8000;                 // -0 in the zero segment
  x[kSeg + 7] = to_bf16(-3.0f);  // segment 1's amax
  x[kSeg + 8] = to_bf16(0.75f);
  x[2 * kSeg + 9] = to_bf16(1000.0f);  // segment 2's, unrelated to segment 1's
  std::vector<uint8_t> codes(3 * kSeg);
  std::vector<float> scales(3);
  scatter_quantize_row(x.data(), 3 * kSeg, codes.data(), scales.data(), Fp8Format::E4M3FN);
  EXPECT_EQ(scales[0], 1.0f);
  EXPECT_EQ(codes[0], 0x00);
  EXPECT_EQ(codes[5], 0x80);
  EXPECT_EQ(scales[1], 3.0f / 448.0f);
  EXPECT_EQ(codes[size_t(kSeg + 7)], 0xfe);  // -448
  EXPECT_EQ(scales[2], 1000.0f / 448.0f);
  std::vector<float> wide(3 * kSeg);
  scatter_widen_row(codes.data(), scales.data(), 3 * kSeg, wide.data(), Fp8Format::E4M3FN);
  EXPECT_EQ(wide[0], 0.0f);
  EXPECT_TRUE(std::signbit(wide[5]));
  EXPECT_EQ(wide[size_t(kSeg + 7)], numerics::mul_rn(-448.0f, 3.0f / 448.0f));
  // an all -0 element reduces to -0 (the sum starts from the owner's own value)
  EXPECT_TRUE(std::signbit(numerics::reduce_sum_f32(1, 4, [&](int) { return wide[5]; })));
}

// A NaN makes its segment's amax, scale and every code NaN (the row's other segments are untouched), and the
// reduce's sum NaN, as mori's NaN-propagating maximumf does on the device.
TEST(ScatterQuant, NanPoisonsItsSegmentOnly) {
  std::vector<uint16_t> x = gaussian_row(2 * kSeg, 3, 1.0f);
  x[kSeg + 100] = 0x7fc0;
  std::vector<uint8_t> codes(2 * kSeg);
  std::vector<float> scales(2);
  scatter_quantize_row(x.data(), 2 * kSeg, codes.data(), scales.data(), Fp8Format::E4M3FN);
  EXPECT_TRUE(std::isfinite(scales[0]));
  EXPECT_TRUE(std::isnan(scales[1]));
  for (int64_t i = 0; i < kSeg; ++i) EXPECT_NE(codes[size_t(i)] & 0x7f, 0x7f) << i;
  for (int64_t i = kSeg; i < 2 * kSeg; ++i) EXPECT_EQ(codes[size_t(i)], 0x7f) << i;
  std::vector<float> wide(2 * kSeg);
  scatter_widen_row(codes.data(), scales.data(), 2 * kSeg, wide.data(), Fp8Format::E4M3FN);
  EXPECT_TRUE(std::isnan(wide[size_t(kSeg)]));
  EXPECT_EQ(numerics::f32_to_bf16(numerics::reduce_sum_f32(0, 2, [&](int p) { return p ? wide[size_t(kSeg)] : 1.0f; })),
            0x7fc0);
}

// The widening keeps the product in fp32 (no bf16 rounding before the sum), and the reduce over fp32
// contributions is reduce_sum's order and start.
TEST(ScatterQuant, WideningIsOneFp32ProductAndTheSumIsTheReducesOrder) {
  const float scale = 1.0f + std::ldexp(1.0f, -20);  // decode * scale is not a bf16
  EXPECT_EQ(numerics::scatter_widen(0x39, scale, false), numerics::mul_rn(1.125f, scale));
  EXPECT_NE(numerics::round_bf16(numerics::scatter_widen(0x39, scale, false)),
            numerics::scatter_widen(0x39, scale, false));
  const uint16_t slots[4] = {to_bf16(1e8f), to_bf16(1.0f), to_bf16(-1e8f), to_bf16(3.0f)};
  for (int owner = 0; owner < 4; ++owner)
    EXPECT_EQ(numerics::reduce_sum(owner, 4, [&](int p) { return slots[p]; }),
              numerics::reduce_sum_f32(owner, 4, [&](int p) { return from_bf16(slots[p]); }))
        << owner;
}

// The named variants are what they say: x / scale codes differ from mori's only at rounding midpoints (rarely),
// the gather's recipe per segment has the gather's scale.
TEST(ScatterQuant, VariantRecipesAreWhatTheirNamesSay) {
  const int64_t N = 2048;
  std::vector<uint8_t> mori(N), other(N);
  std::vector<float> ms(N / kSeg), os(N / kSeg);
  int64_t code_differs = 0;
  for (int r = 0; r < 32; ++r) {
    const std::vector<uint16_t> x = gaussian_row(N, 100 + r, 2.0f);
    scatter_quantize_row(x.data(), N, mori.data(), ms.data(), Fp8Format::E4M3FN, ScatterRecipe::Mori);
    scatter_quantize_row(x.data(), N, other.data(), os.data(), Fp8Format::E4M3FN, ScatterRecipe::DivCodes);
    EXPECT_EQ(os, ms);
    for (int64_t i = 0; i < N; ++i) {
      EXPECT_EQ(other[size_t(i)], encode_fp8(from_bf16(x[size_t(i)]) / os[size_t(i / kSeg)], Fp8Format::E4M3FN));
      code_differs += other[size_t(i)] != mori[size_t(i)];
    }
    scatter_quantize_row(x.data(), N, other.data(), os.data(), Fp8Format::E4M3FN, ScatterRecipe::GatherScale);
    for (int64_t s = 0; s < N / kSeg; ++s) {
      float amax = 0;
      for (int64_t i = 0; i < kSeg; ++i) amax = std::max(amax, std::fabs(from_bf16(x[size_t(s * kSeg + i)])));
      EXPECT_EQ(os[size_t(s)], numerics::wire_scale(amax, false));
    }
  }
  EXPECT_LT(code_differs, N * 32 / 1000);  // midpoint flips only
}

TEST(ScatterQuant, RejectsAWidthThatIsNotWholeSegments) {
  std::vector<uint16_t> x(300);
  std::vector<uint8_t> codes(300);
  float s[2];
  EXPECT_ANY_THROW(scatter_quantize_row(x.data(), 300, codes.data(), s, Fp8Format::E4M3FN));
  EXPECT_EQ(scatter_scales_per_row(7168), 28);
  EXPECT_EQ(scatter_scales_per_row(5120), 20);
}
