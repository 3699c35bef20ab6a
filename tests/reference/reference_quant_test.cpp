// Operand scale layouts (docs/spec.md 1.2), the quantization recipe, the fp8 wire's per-row quantization, and the
// row-addressable operand generator.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "reference/formats.hpp"
#include "reference/numerics_inline.hpp"
#include "reference/operands.hpp"
#include "reference/quant.hpp"

using namespace gemmar;
using namespace gemmar::reference;

namespace {
// A matrix whose every element of row r, column c is distinct and whose block amax identifies the block.
std::vector<float> ramp(int64_t rows, int64_t cols) {
  std::vector<float> x(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) x[size_t(r * cols + c)] = float((r + 1) * 1000 + c + 1) * ((c & 1) ? -1.f : 1.f);
  return x;
}
}  // namespace

TEST(QuantLayout, BlockscaleAIsColumnMajorKBlocksByRows) {
  const int64_t M = 3, K = 384;
  const auto x = ramp(M, K);
  const QuantizedMatrix q = quantize(x.data(), M, K, Quant::Blockscale, Operand::A, Fp8Format::E4M3FN);
  ASSERT_EQ(q.scales.size(), size_t(3 * M));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t kb = 0; kb < 3; ++kb) {
      const float amax = float((m + 1) * 1000 + kb * 128 + 128);  // last column of the block (even index: +)
      EXPECT_FLOAT_EQ(q.scales[size_t(kb * M + m)], amax / 448.0f) << m << "," << kb;
    }
}

TEST(QuantLayout, BlockscaleBIs128x128RowMajor) {
  const int64_t N = 256, K = 256;
  const auto x = ramp(N, K);
  const QuantizedMatrix q = quantize(x.data(), N, K, Quant::Blockscale, Operand::B, Fp8Format::E4M3FN);
  ASSERT_EQ(q.scales.size(), 4u);
  for (int64_t nb = 0; nb < 2; ++nb)
    for (int64_t kb = 0; kb < 2; ++kb) {
      const float amax = float((nb * 128 + 128) * 1000 + kb * 128 + 128);
      EXPECT_FLOAT_EQ(q.scales[size_t(nb * 2 + kb)], amax / 448.0f);
      EXPECT_EQ(scale_index(Quant::Blockscale, Operand::B, N, K, nb * 128 + 5, kb * 128 + 7), nb * 2 + kb);
    }
}

TEST(QuantLayout, PtpcOneScalePerRowAndMxfp8PowerOfTwoPer1x32OfAAnd32x32OfB) {
  const int64_t R = 64, K = 256;
  const auto x = ramp(R, K);
  const QuantizedMatrix p = quantize(x.data(), R, K, Quant::Ptpc, Operand::A, Fp8Format::E4M3FN);
  ASSERT_EQ(p.scales.size(), size_t(R));
  for (int64_t r = 0; r < R; ++r) EXPECT_FLOAT_EQ(p.scales[size_t(r)], float((r + 1) * 1000 + 256) / 448.0f);
  const QuantizedMatrix a = quantize(x.data(), R, K, Quant::Mxfp8, Operand::A, Fp8Format::E4M3FN);
  ASSERT_EQ(a.scales.size(), size_t(R * K / 32));
  for (float s : a.scales) {
    int e;
    EXPECT_EQ(std::frexp(s, &e), 0.5f) << s;  // a power of two
  }
  // A, row 0, block 0: amax 1032 -> 2^(10 - 8) = 4; row 40 (amax 41032, 2^15 <= x < 2^16): 2^(15 - 8)
  EXPECT_EQ(a.scales[0], 4.0f);
  EXPECT_EQ(a.scales[size_t(40 * (K / 32))], 128.0f);
  // B (mori's weights): one scale per 32x32 block, [R/32, K/32]. Block (0, 0) spans rows 0..31: amax 32032 -> 2^6.
  const QuantizedMatrix b = quantize(x.data(), R, K, Quant::Mxfp8, Operand::B, Fp8Format::E4M3FN);
  ASSERT_EQ(b.scales.size(), size_t((R / 32) * (K / 32)));
  EXPECT_EQ(b.scales[0], 64.0f);
  EXPECT_EQ(b.scales[size_t(K / 32)], 128.0f);  // rows 32..63: amax 64032 (< 2^16)
  EXPECT_EQ(scale_index(Quant::Mxfp8, Operand::B, R, K, 33, 70), int64_t(K / 32 + 2));
}

TEST(Quantize, AmaxMapsToMaxCodeAndDequantizeIsWithinHalfAnUlp) {
  for (auto f : {Fp8Format::E4M3FN, Fp8Format::E4M3FNUZ}) {
    std::vector<float> x(size_t(2 * 256));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(normal_sample(3, 0, Tensor::A, 0, int64_t(i)));
    const QuantizedMatrix q = quantize(x.data(), 2, 256, Quant::Blockscale, Operand::A, f);
    const auto dq = dequantize(q, Quant::Blockscale, Operand::A, f);
    int at_max = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      at_max += (q.codes[i] & 0x7f) == (encode_fp8(fp8_max(f), f) & 0x7f);
      // relative spacing of e4m3 is 2^-3 at worst: half of it bounds the error of normal-range values
      if (std::fabs(x[i]) > 0.05f) {
        EXPECT_LE(std::fabs(dq[i] - x[i]), std::fabs(x[i]) * 0.0626f) << i;
      }
    }
    EXPECT_GE(at_max, 4);  // one per 1x128 block at least
  }
}

// mori's recipe (ROCm/mori python/mori/ops/gemm_ar/kernels_sdma.py quantize_gather): scale = amax * fl32(1/448),
// a multiply by the rounded constant, inv = fl32(448 / amax), codes = RNE(x * inv).
TEST(WireQuant, RowScaleIsAmaxTimesRoundedInverseOf448AndZeroRowGetsScaleOne) {
  std::vector<uint16_t> row(1024);
  for (size_t i = 0; i < row.size(); ++i)
    row[i] = to_bf16(float(normal_sample(5, 0, Tensor::B, 0, int64_t(i))) * 37.0f);
  float amax = 0;
  for (auto h : row) amax = std::max(amax, std::fabs(from_bf16(h)));
  std::vector<uint8_t> codes(row.size());
  const float scale = wire_quantize_row(row.data(), int64_t(row.size()), codes.data(), Fp8Format::E4M3FN);
  const float inv448 = 1.0f / 448.0f;
  EXPECT_EQ(scale, amax * inv448);
  const float inv = 448.0f / amax;
  for (size_t i = 0; i < row.size(); ++i) EXPECT_EQ(codes[i], encode_fp8(from_bf16(row[i]) * inv, Fp8Format::E4M3FN));
  std::vector<uint16_t> back(row.size());
  wire_dequantize_row(codes.data(), scale, int64_t(row.size()), back.data(), Fp8Format::E4M3FN);
  double e = 0, n = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    const double d = from_bf16(back[i]) - from_bf16(row[i]);
    e += d * d;
    n += double(from_bf16(row[i])) * from_bf16(row[i]);
  }
  EXPECT_GT(std::sqrt(e / n), 5e-3);  // e4m3 really narrowed it
  EXPECT_LT(std::sqrt(e / n), 4e-2);

  std::vector<uint16_t> zeros(1024, 0);
  EXPECT_EQ(wire_quantize_row(zeros.data(), 1024, codes.data(), Fp8Format::E4M3FN), 1.0f);
  for (auto c : codes) EXPECT_EQ(c, 0);
}

TEST(Operands, RowAddressableSampledRowsEqualFullGeneration) {
  for (auto kind : {DataKind::Normal, DataKind::Bench})
    for (auto q : {Quant::Blockscale, Quant::Ptpc, Quant::Mxfp8}) {
      OperandSpec s;
      s.shape = {1024, 256, 256, 4};
      s.quant = q;
      s.data = kind;
      const RankOperands full = make_rank_operands(s, 2);
      const std::vector<int64_t> rows{5, 300, 777, 1023};
      const RankOperands part = make_rank_operands(s, 2, rows);
      EXPECT_EQ(part.b.codes, full.b.codes);
      EXPECT_EQ(part.b.scales, full.b.scales);
      for (size_t i = 0; i < rows.size(); ++i)
        for (int64_t k = 0; k < s.shape.k; ++k) {
          ASSERT_EQ(part.a.codes[i * 256 + size_t(k)], full.a.codes[size_t(rows[i] * 256 + k)]);
          ASSERT_EQ(part.a.scales[size_t(scale_index(q, Operand::A, 4, 256, int64_t(i), k))],
                    full.a.scales[size_t(scale_index(q, Operand::A, full.a.rows, 256, rows[i], k))]);
        }
      // Ranks differ, and the data is not all zeros.
      const RankOperands other = make_rank_operands(s, 3, rows);
      EXPECT_NE(other.a.codes, part.a.codes);
      int nonzero = 0;
      for (auto c : part.a.codes) nonzero += (c & 0x7f) != 0;
      EXPECT_GT(nonzero, 900);
    }
}

TEST(Operands, BenchKindIsRandnOver8CastStraightWithScalesInRange) {
  OperandSpec s;
  s.shape = {1024, 256, 256, 2};
  s.data = DataKind::Bench;
  const RankOperands o = make_rank_operands(s, 0, std::vector<int64_t>{0, 1});
  for (size_t i = 0; i < 256; ++i)
    EXPECT_EQ(o.a.codes[i],
              encode_fp8(float(0.125 * normal_sample(s.seed, 0, Tensor::A, 0, int64_t(i))), s.fp8_format));
  for (float sc : o.b.scales) {
    EXPECT_GE(sc, 0.01f);
    EXPECT_LT(sc, 0.02f);
  }
}

// mori's mxfp8 operands (bench_gemm_ar.py @d5443336 _ue8m0_bytes(shape, g, lo=120, hi=123)): every scale is one of
// 2^-7, 2^-6, 2^-5, each about a third of the time.
TEST(Operands, BenchMxfp8ScalesAreMorisThreeExponents) {
  OperandSpec s;
  s.shape = {1024, 1024, 256, 2};
  s.quant = Quant::Mxfp8;
  s.data = DataKind::Bench;
  const RankOperands o = make_rank_operands(s, 1, std::vector<int64_t>{0, 1, 2, 3});
  std::map<float, int> seen;
  for (float sc : o.b.scales) ++seen[sc];
  for (float sc : o.a.scales) ++seen[sc];
  ASSERT_EQ(seen.size(), 3u);
  const int total = int(o.a.scales.size() + o.b.scales.size());
  for (float want : {0x1p-7f, 0x1p-6f, 0x1p-5f}) EXPECT_NEAR(double(seen[want]) / total, 1.0 / 3, 0.05) << want;
}

TEST(Operands, PaddingRowsAreZero) {
  OperandSpec s;
  s.shape = {1000, 256, 128, 8};  // padded to 1024
  const RankOperands o = make_rank_operands(s, 0, std::vector<int64_t>{999, 1000, 1023});
  int nz = 0;
  for (size_t k = 0; k < 128; ++k) nz += o.a.codes[k] != 0;
  EXPECT_GT(nz, 100);
  for (size_t k = 128; k < 3 * 128; ++k) EXPECT_EQ(o.a.codes[k], 0);
}

// The named variants differ from mori's recipe where they should: the true-division scale in the last bit of
// some rows' scales (about half), x / scale in codes only where x * inv and x / scale straddle a rounding midpoint
// (rare: the two differ by an fp32 ulp); the fp32-accumulator amax takes
// the amax before the bf16 rounding. Each is what its definition says, element for element.
TEST(WireQuant, VariantRecipesAreWhatTheirNamesSay) {
  int scale_differs = 0;
  std::vector<uint8_t> mori(1024), other(1024);
  for (int r = 0; r < 64; ++r) {
    std::vector<uint16_t> row(1024);
    std::vector<float> acc(1024);
    for (size_t i = 0; i < row.size(); ++i) {
      acc[i] = float(normal_sample(9, 0, Tensor::A, r, int64_t(i))) * 11.0f;
      row[i] = to_bf16(acc[i]);
    }
    float amax = 0;
    for (auto h : row) amax = std::max(amax, std::fabs(from_bf16(h)));
    const float s_mori = wire_quantize_row(row.data(), 1024, mori.data(), Fp8Format::E4M3FN, WireRecipe::Mori);
    const float s_div = wire_quantize_row(row.data(), 1024, other.data(), Fp8Format::E4M3FN, WireRecipe::TrueDivScale);
    EXPECT_EQ(s_div, amax / 448.0f);
    EXPECT_EQ(other, mori);  // the same inverse, the same codes
    scale_differs += s_div != s_mori;
    const float s_dc = wire_quantize_row(row.data(), 1024, other.data(), Fp8Format::E4M3FN, WireRecipe::DivCodes);
    EXPECT_EQ(s_dc, amax / 448.0f);
    for (size_t i = 0; i < row.size(); ++i)
      EXPECT_EQ(other[i], encode_fp8(from_bf16(row[i]) / s_dc, Fp8Format::E4M3FN));
    float acc_amax = 0;
    for (float a : acc) acc_amax = std::max(acc_amax, std::fabs(a));
    const float s_acc =
        wire_quantize_row(row.data(), 1024, other.data(), Fp8Format::E4M3FN, WireRecipe::AccAmax, acc.data());
    EXPECT_EQ(s_acc, acc_amax * (1.0f / 448.0f));
  }
  EXPECT_GT(scale_differs, 10);  // mori's constant multiply is not amax / 448 in about half the rows
  EXPECT_LT(scale_differs, 54);
}

// The promotion rounds once after the scale product (a fused multiply-add, as the GEMM kernels issue it): with
// dot = 1 + 2^-23 and scales 1 + 2^-23 and 1, dot * s = 1 + 2^-22 + 2^-46 exactly; against acc = -(1 + 2^-22) one
// rounding keeps 2^-46, a multiply then an add rounds the product first and leaves 0.
TEST(GemmScaleApplication, BlockscalePromotionRoundsOnceAfterTheScaleProduct) {
  const float u = std::ldexp(1.0f, -23);
  const float dot = 1.0f + u, sa = 1.0f + u, acc = -(1.0f + 2 * u);
  EXPECT_EQ(numerics::block_accumulate(acc, dot, sa, 1.0f), std::ldexp(1.0f, -46));
  EXPECT_EQ(numerics::block_accumulate(acc, dot, 1.0f, sa), std::ldexp(1.0f, -46));  // the product sa * sb is exact
  const volatile float product = dot * sa;  // what two roundings would add: the product rounded first
  EXPECT_EQ(acc + product, 0.0f);
  // ptpc scales the finished dot once: the scale product rounded, then the product rounded
  EXPECT_EQ(numerics::ptpc_epilogue(dot, sa, 1.0f), 1.0f + 2 * u);
}
