#include "reference/operands.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/errors.hpp"
#include "reference/formats.hpp"

namespace gemmar::reference {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Values of one row of a tensor before quantization (Normal: N(0,1); Bench: randn/8). Columns 2j and 2j+1
// share one Box-Muller draw (its cosine and sine), so a row costs K/2 transcendental pairs.
void fill_row(const OperandSpec& s, int rank, Tensor t, int64_t row, float* out) {
  const bool padding = (t == Tensor::A && row >= s.shape.m);
  const double mult = s.data == DataKind::Bench ? 0.125 : 1.0;
  for (int64_t k = 0; k < s.shape.k; k += 2) {
    double c = 0, sn = 0;
    if (!padding) normal_pair(s.seed, rank, t, row, k / 2, c, sn);
    out[k] = float(mult * c);
    if (k + 1 < s.shape.k) out[k + 1] = float(mult * sn);
  }
}

// fp32 scales: rand * 0.01 + 0.01 (bench_gemm_ar.py make_operands). e8m0 scales: mori's _ue8m0_bytes(shape, g,
// lo=120, hi=123), exponent bytes uniform in {120, 121, 122}, i.e. 2^-7, 2^-6 or 2^-5 (bench_gemm_ar.py @d5443336).
float bench_scale(const OperandSpec& s, int rank, Tensor t, int64_t idx) {
  const double u = uniform_sample(s.seed, rank, t, idx, 0);
  if (quant_traits(s.quant).e8m0_scales) return std::ldexp(1.0f, std::min(2, int(u * 3.0)) + 120 - 127);
  return float(u * 0.01 + 0.01);
}

// Quantizes `rows` x K values with the spec's recipe; `scale_row` maps a held row to the row id used to draw
// bench scales (global row for A, so a sampled row gets the same scale as in a full generation).
QuantizedMatrix quantize_rows(const OperandSpec& s, int rank, Tensor t, const std::vector<int64_t>& rows, Operand op) {
  const int64_t k = s.shape.k;
  const int64_t n = int64_t(rows.size());
  std::vector<float> x(size_t(n * k));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) fill_row(s, rank, t, rows[size_t(i)], x.data() + i * k);
  if (s.data == DataKind::Normal) return quantize(x.data(), n, k, s.quant, op, s.fp8_format);

  QuantizedMatrix qm;
  qm.rows = n;
  qm.cols = k;
  qm.codes.resize(size_t(n * k));
  for (int64_t i = 0; i < n * k; ++i) qm.codes[size_t(i)] = encode_fp8(x[size_t(i)], s.fp8_format);
  qm.scales.resize(size_t(scale_count(s.quant, op, n, k)));
  const Tensor st = t == Tensor::A ? Tensor::ScaleA : Tensor::ScaleB;
  const ScaleBlock& blk = scale_block(s.quant, op == Operand::B);
  const int64_t bk = scale_k_extent(blk, k);
  const int64_t br = blk.rows;
  for (int64_t i = 0; i < n; i += br)
    for (int64_t k0 = 0; k0 < k; k0 += bk) {
      // Key the scale by (global row, k block) so it does not depend on which rows are held.
      const int64_t key = rows[size_t(i)] * (k / bk + 1) + k0 / bk;
      qm.scales[size_t(scale_index(s.quant, op, n, k, i, k0))] = bench_scale(s, rank, st, key);
    }
  return qm;
}

}  // namespace

uint64_t counter_hash(uint64_t seed, int rank, Tensor t, int64_t row, int64_t col) {
  uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ (uint64_t(uint32_t(rank)) << 32 | uint64_t(t)));
  h = splitmix64(h ^ uint64_t(row));
  return splitmix64(h ^ uint64_t(col));
}

double uniform_sample(uint64_t seed, int rank, Tensor t, int64_t row, int64_t col) {
  return double(counter_hash(seed, rank, t, row, col) >> 11) * 0x1.0p-53;
}

void normal_pair(uint64_t seed, int rank, Tensor t, int64_t row, int64_t pair, double& c, double& s) {
  const uint64_t h = counter_hash(seed, rank, t, row, pair);
  // Two 24-bit uniforms in single precision (fast; the operands are narrowed to 3 mantissa bits anyway);
  // u1 in (0, 1] keeps the log finite, and caps |x| near 5.8 as 24-bit Box-Muller does.
  const float u1 = (float(h >> 40) + 1.0f) * 0x1.0p-24f;
  const float u2 = float((h >> 8) & 0xffffffull) * 0x1.0p-24f;
  const float rad = std::sqrt(-2.0f * std::log(u1));
  const float ang = 2.0f * std::numbers::pi_v<float> * u2;
  c = double(rad * std::cos(ang));
  s = double(rad * std::sin(ang));
}

double normal_sample(uint64_t seed, int rank, Tensor t, int64_t row, int64_t col) {
  double c, s;
  normal_pair(seed, rank, t, row, col / 2, c, s);
  return (col & 1) ? s : c;
}

std::vector<int64_t> all_rows(const Shape& s, Quant q) {
  std::vector<int64_t> r(size_t(padded_m(s, q)));
  for (size_t i = 0; i < r.size(); ++i) r[i] = int64_t(i);
  return r;
}

RankOperands make_rank_operands(const OperandSpec& s, int rank, const std::optional<std::vector<int64_t>>& rows) {
  GEMMAR_CHECK(s.shape.k % 128 == 0 && s.shape.n % 128 == 0);
  RankOperands op;
  op.rank = rank;
  op.a_rows = rows ? *rows : all_rows(s.shape, s.quant);
  const int64_t pm = padded_m(s.shape, s.quant);
  for (int64_t r : op.a_rows) GEMMAR_CHECK(r >= 0 && r < pm, "row ", r, " outside the padded M ", pm);
  op.a = quantize_rows(s, rank, Tensor::A, op.a_rows, Operand::A);
  std::vector<int64_t> brows(size_t(s.shape.n));
  for (size_t i = 0; i < brows.size(); ++i) brows[i] = int64_t(i);
  op.b = quantize_rows(s, rank, Tensor::B, brows, Operand::B);
  return op;
}

std::vector<float> dequantized_a(const RankOperands& o, Quant q, Fp8Format f) {
  return dequantize(o.a, q, Operand::A, f);
}
std::vector<float> dequantized_b(const RankOperands& o, Quant q, Fp8Format f) {
  return dequantize(o.b, q, Operand::B, f);
}

}  // namespace gemmar::reference
