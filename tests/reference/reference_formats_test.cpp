// e4m3fn / e4m3fnuz / bf16: exhaustive over codes, against a brute-force nearest-value search.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "reference/formats.hpp"

using namespace gemmar;
using namespace gemmar::reference;

namespace {

bool is_nan_code(uint8_t c, Fp8Format f) { return is_fnuz(f) ? c == 0x80 : (c & 0x7f) == 0x7f; }

// Nearest finite code by exhaustive search; ties go to the even code (even mantissa); beyond max saturates.
uint8_t brute_force_encode(float x, Fp8Format f) {
  const float mx = fp8_max(f);
  if (std::isnan(x)) return is_fnuz(f) ? 0x80 : 0x7f;
  const float a = std::fabs(x);
  uint8_t best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (int c = 0; c < 128; ++c) {
    if (is_nan_code(uint8_t(c), f)) continue;
    const double d = std::fabs(double(decode_fp8(uint8_t(c), f)) - double(a));
    if (d < best_d || (d == best_d && (c & 1) == 0)) {
      best_d = d;
      best = uint8_t(c);
    }
  }
  if (a >= mx) best = encode_fp8(mx, f) & 0x7f;
  if (best == 0 && is_fnuz(f)) return 0;
  return uint8_t(best | (std::signbit(x) ? 0x80 : 0));
}

class Fp8Formats : public ::testing::TestWithParam<Fp8Format> {};

}  // namespace

TEST_P(Fp8Formats, EveryCodeDecodesAndReEncodesToItself) {
  const Fp8Format f = GetParam();
  int nans = 0;
  for (int c = 0; c < 256; ++c) {
    const float v = decode_fp8(uint8_t(c), f);
    if (is_nan_code(uint8_t(c), f)) {
      EXPECT_TRUE(std::isnan(v)) << c;
      ++nans;
      continue;
    }
    ASSERT_FALSE(std::isnan(v)) << c;
    EXPECT_EQ(encode_fp8(v, f), uint8_t(c)) << "code " << c << " value " << v;  // fn 0x80 is -0: also itself
  }
  EXPECT_EQ(nans, is_fnuz(f) ? 1 : 2);
}

TEST_P(Fp8Formats, EncodeMatchesBruteForceNearestOnMidpointsAndRandomValues) {
  const Fp8Format f = GetParam();
  // Every midpoint between consecutive positive codes, and a hair either side: the tie cases.
  for (int c = 0; c + 1 < 128; ++c) {
    if (is_nan_code(uint8_t(c + 1), f)) break;
    const float lo = decode_fp8(uint8_t(c), f), hi = decode_fp8(uint8_t(c + 1), f);
    const float mid = (lo + hi) / 2;  // exact: both are short binary fractions
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f), -mid}) {
      EXPECT_EQ(encode_fp8(x, f), brute_force_encode(x, f)) << "x=" << x;
    }
  }
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> expo(-14.0, 10.0);
  for (int i = 0; i < 50000; ++i) {
    const float x = float(std::exp2(expo(rng))) * ((i & 1) ? -1.0f : 1.0f);
    ASSERT_EQ(encode_fp8(x, f), brute_force_encode(x, f)) << "x=" << x;
  }
}

INSTANTIATE_TEST_SUITE_P(Both, Fp8Formats, ::testing::Values(Fp8Format::E4M3FN, Fp8Format::E4M3FNUZ));

TEST(E4m3fn, KnownCodesMaxNanNegativeZeroAndSubnormals) {
  const auto f = Fp8Format::E4M3FN;
  EXPECT_EQ(decode_fp8(0x7e, f), 448.0f);
  EXPECT_EQ(decode_fp8(0x38, f), 1.0f);  // exponent field 7 = bias
  EXPECT_EQ(decode_fp8(0x01, f), std::ldexp(1.0f, -9));
  EXPECT_EQ(decode_fp8(0x08, f), std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(decode_fp8(0x7f, f)) && std::isnan(decode_fp8(0xff, f)));
  EXPECT_TRUE(std::signbit(decode_fp8(0x80, f)) && decode_fp8(0x80, f) == 0.0f);
  EXPECT_EQ(encode_fp8(-0.0f, f), 0x80);
  EXPECT_EQ(encode_fp8(-1e-10f, f), 0x80);  // underflows to negative zero
}

TEST(E4m3fn, TiesToEvenAndSaturation) {
  const auto f = Fp8Format::E4M3FN;
  EXPECT_EQ(encode_fp8(1.0625f, f), 0x38);                    // between 1.0 (m=0) and 1.125 (m=1): even wins
  EXPECT_EQ(encode_fp8(1.1875f, f), 0x3a);                    // between 1.125 (m=1) and 1.25 (m=2)
  EXPECT_EQ(encode_fp8(std::ldexp(1.0f, -10), f), 0x00);      // half the smallest subnormal: to even zero
  EXPECT_EQ(encode_fp8(3 * std::ldexp(1.0f, -10), f), 0x02);  // 1.5 quanta -> 2
  EXPECT_EQ(encode_fp8(464.0f, f), 0x7e);                     // would round to 480 (the NaN code): saturates
  EXPECT_EQ(encode_fp8(1e30f, f), 0x7e);
  EXPECT_EQ(encode_fp8(std::numeric_limits<float>::infinity(), f), 0x7e);
  EXPECT_EQ(encode_fp8(-std::numeric_limits<float>::infinity(), f), 0xfe);
  EXPECT_EQ(encode_fp8(std::numeric_limits<float>::quiet_NaN(), f), 0x7f);
  EXPECT_EQ(encode_fp8(-std::numeric_limits<float>::quiet_NaN(), f), 0x7f);  // canonical, host = device
}

TEST(E4m3fnuz, KnownCodesMaxSingleNanNoNegativeZero) {
  const auto f = Fp8Format::E4M3FNUZ;
  EXPECT_EQ(decode_fp8(0x7f, f), 240.0f);
  EXPECT_EQ(decode_fp8(0x40, f), 1.0f);  // exponent field 8 = bias
  EXPECT_EQ(decode_fp8(0x01, f), std::ldexp(1.0f, -10));
  EXPECT_TRUE(std::isnan(decode_fp8(0x80, f)));
  EXPECT_EQ(decode_fp8(0xff, f), -240.0f);
  EXPECT_EQ(encode_fp8(-0.0f, f), 0x00);
  EXPECT_EQ(encode_fp8(-1e-10f, f), 0x00);
  EXPECT_EQ(encode_fp8(250.0f, f), 0x7f);
  EXPECT_EQ(encode_fp8(-1e30f, f), 0xff);
  EXPECT_EQ(encode_fp8(std::numeric_limits<float>::quiet_NaN(), f), 0x80);
}

TEST(E4m3, SameBitsReadTwoApartBetweenFnAndFnuz) {
  for (int c = 1; c < 0x7f; ++c)
    EXPECT_EQ(decode_fp8(uint8_t(c), Fp8Format::E4M3FN), 2.0f * decode_fp8(uint8_t(c), Fp8Format::E4M3FNUZ)) << c;
}

TEST(Bf16, RoundToNearestEvenNanAndExactWidening) {
  EXPECT_EQ(to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie, even stays
  EXPECT_EQ(to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(to_bf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)), 0x3f81);
  EXPECT_EQ(to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(to_bf16(3.4e38f), 0x7f80);  // rounds past the largest bf16: infinity, as IEEE RNE
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::quiet_NaN()), 0x7fc0);
  EXPECT_EQ(to_bf16(-std::numeric_limits<float>::quiet_NaN()), 0x7fc0);  // canonical, host = device
  uint32_t snan_bits = 0x7f800001u;  // a signalling NaN whose payload sits below bf16's bits
  float snan;
  std::memcpy(&snan, &snan_bits, 4);
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(snan))));
  for (uint32_t h = 0; h < 65536; ++h) {
    const float v = from_bf16(uint16_t(h));
    if (std::isnan(v)) continue;
    ASSERT_EQ(to_bf16(v), uint16_t(h)) << h;
  }
}

TEST(DecodeTable, MatchesScalarDecode) {
  for (auto f : {Fp8Format::E4M3FN, Fp8Format::E4M3FNUZ})
    for (int c = 0; c < 256; ++c) {
      const float a = decode_table(f)[size_t(c)], b = decode_fp8(uint8_t(c), f);
      EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << c;
    }
}
