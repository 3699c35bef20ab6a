#include "reference/quant.hpp"

#include <cmath>

#include "common/errors.hpp"
#include "reference/formats.hpp"

namespace gemmar::reference {

// The geometry is the quant's row in common/modes.hpp; these name the operand with reference's Operand.
int64_t scale_k_block(Quant q, int64_t k) { return scale_k_extent(quant_traits(q).a, k); }

int64_t scale_count(Quant q, Operand op, int64_t rows, int64_t cols) {
  return gemmar::scale_count(scale_block(q, op == Operand::B), rows, cols);
}

int64_t scale_index(Quant q, Operand op, int64_t rows, int64_t cols, int64_t row, int64_t col) {
  return gemmar::scale_index(scale_block(q, op == Operand::B), rows, cols, row, col);
}

float mx_scale(float amax) {
  if (!(amax > 0.0f) || !std::isfinite(amax)) return 1.0f;
  // OCP MX: shared exponent = floor(log2(amax)) - emax(e4m3) with emax = 8.
  const int e = std::ilogb(amax) - 8;
  return std::ldexp(1.0f, e);
}

QuantizedMatrix quantize(const float* x, int64_t rows, int64_t cols, Quant q, Operand op, Fp8Format f) {
  GEMMAR_CHECK(cols % 128 == 0);
  QuantizedMatrix out;
  out.rows = rows;
  out.cols = cols;
  out.codes.assign(size_t(rows * cols), 0);
  out.scales.assign(size_t(scale_count(q, op, rows, cols)), 1.0f);
  const bool fnuz = is_fnuz(f);
  // Block geometry: `br` rows x `bk` columns share one scale.
  const ScaleBlock& blk = scale_block(q, op == Operand::B);
  const int64_t bk = scale_k_extent(blk, cols);
  const int64_t br = blk.rows;
#pragma omp parallel for schedule(static)
  for (int64_t r0 = 0; r0 < rows; r0 += br) {
    const int64_t r1 = std::min(rows, r0 + br);
    for (int64_t k0 = 0; k0 < cols; k0 += bk) {
      float amax = 0.0f;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t k = k0; k < k0 + bk; ++k) amax = numerics::amax_step(amax, x[r * cols + k]);
      float scale, inv;
      if (quant_traits(q).e8m0_scales) {
        scale = mx_scale(amax);
        inv = 1.0f / scale;  // exact: a power of two
      } else {
        scale = numerics::amax_scale(amax, fnuz);
        inv = numerics::amax_inv_scale(amax, fnuz);
      }
      out.scales[size_t(scale_index(q, op, rows, cols, r0, k0))] = scale;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t k = k0; k < k0 + bk; ++k)
          out.codes[size_t(r * cols + k)] = numerics::quantize_scaled(x[r * cols + k], inv, fnuz);
    }
  }
  return out;
}

std::vector<float> dequantize(const QuantizedMatrix& m, Quant q, Operand op, Fp8Format f) {
  std::vector<float> out(size_t(m.rows * m.cols));
  const auto& table = decode_table(f);
  const int64_t bk = scale_k_block(q, m.cols);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t k0 = 0; k0 < m.cols; k0 += bk) {
      const float s = m.scales[size_t(scale_index(q, op, m.rows, m.cols, r, k0))];
      for (int64_t k = k0; k < k0 + bk; ++k)
        out[size_t(r * m.cols + k)] = numerics::mul_rn(table[m.codes[size_t(r * m.cols + k)]], s);
    }
  return out;
}

const char* to_string(WireRecipe r) {
  switch (r) {
    case WireRecipe::Mori:
      return "mori (scale = amax * fl32(1/max), codes = RNE(x * fl32(max/amax)))";
    case WireRecipe::TrueDivScale:
      return "true-division scale (scale = amax / max)";
    case WireRecipe::DivCodes:
      return "x / scale codes (scale = amax / max, codes = RNE(x / scale))";
    case WireRecipe::AccAmax:
      return "fp32-accumulator amax (fuse_quantize: amax before the bf16 rounding)";
  }
  return "?";
}

float wire_quantize_row(const uint16_t* row, int64_t n, uint8_t* codes, Fp8Format f, WireRecipe recipe,
                        const float* acc_row) {
  const bool fnuz = is_fnuz(f);
  float amax = 0.0f;
  if (recipe == WireRecipe::AccAmax) {
    GEMMAR_CHECK(acc_row != nullptr, "the fp32-accumulator amax needs the accumulator row");
    for (int64_t i = 0; i < n; ++i) amax = numerics::amax_step(amax, acc_row[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) amax = numerics::amax_step(amax, numerics::bf16_to_f32(row[i]));
  }
  if (recipe == WireRecipe::Mori || recipe == WireRecipe::AccAmax) {
    const float inv = numerics::wire_inv_scale(amax, fnuz);
    for (int64_t i = 0; i < n; ++i) codes[i] = numerics::quantize_scaled(numerics::bf16_to_f32(row[i]), inv, fnuz);
    return numerics::wire_scale(amax, fnuz);
  }
  const float scale = amax == 0.0f ? 1.0f : numerics::div_rn(amax, numerics::fp8_max(fnuz));
  if (recipe == WireRecipe::TrueDivScale) {
    const float inv = numerics::wire_inv_scale(amax, fnuz);
    for (int64_t i = 0; i < n; ++i) codes[i] = numerics::quantize_scaled(numerics::bf16_to_f32(row[i]), inv, fnuz);
  } else {
    for (int64_t i = 0; i < n; ++i)
      codes[i] = numerics::f32_to_e4m3(numerics::div_rn(numerics::bf16_to_f32(row[i]), scale), fnuz);
  }
  return scale;
}

void wire_dequantize_row(const uint8_t* codes, float scale, int64_t n, uint16_t* out, Fp8Format f) {
  const bool fnuz = is_fnuz(f);
  for (int64_t i = 0; i < n; ++i) out[i] = numerics::wire_dequantize(codes[i], scale, fnuz);
}

const char* to_string(ScatterRecipe r) {
  switch (r) {
    case ScatterRecipe::Mori:
      return "mori (per row per 256 columns: scale = amax / max, codes = RNE(x * fl32(1/scale)))";
    case ScatterRecipe::DivCodes:
      return "x / scale codes (per row per 256 columns: scale = amax / max, codes = RNE(x / scale))";
    case ScatterRecipe::GatherScale:
      return "the gather's recipe per 256 columns (scale = amax * fl32(1/max), codes = RNE(x * fl32(max/amax)))";
  }
  return "?";
}

int64_t scatter_scales_per_row(int64_t n) {
  GEMMAR_CHECK(n > 0 && n % numerics::kScatterScaleCols == 0, "the fp8 scatter needs N a multiple of ",
               numerics::kScatterScaleCols, ", got ", n);
  return n / numerics::kScatterScaleCols;
}

void scatter_quantize_row(const uint16_t* row, int64_t n, uint8_t* codes, float* scales, Fp8Format f,
                          ScatterRecipe recipe) {
  const bool fnuz = is_fnuz(f);
  const int64_t per = numerics::kScatterScaleCols, segments = scatter_scales_per_row(n);
  for (int64_t s = 0; s < segments; ++s) {
    const uint16_t* x = row + s * per;
    uint8_t* q = codes + s * per;
    float amax = 0.0f;
    for (int64_t i = 0; i < per; ++i) amax = numerics::amax_step(amax, numerics::bf16_to_f32(x[i]));
    float scale = numerics::scatter_scale(amax, fnuz);
    float inv = numerics::scatter_inv_scale(scale);
    if (recipe == ScatterRecipe::GatherScale) {
      scale = numerics::wire_scale(amax, fnuz);
      inv = numerics::wire_inv_scale(amax, fnuz);
    }
    if (recipe == ScatterRecipe::DivCodes) {
      for (int64_t i = 0; i < per; ++i)
        q[i] = numerics::f32_to_e4m3(numerics::div_rn(numerics::bf16_to_f32(x[i]), scale), fnuz);
    } else {
      for (int64_t i = 0; i < per; ++i) q[i] = numerics::quantize_scaled(numerics::bf16_to_f32(x[i]), inv, fnuz);
    }
    scales[s] = scale;
  }
}

void scatter_widen_row(const uint8_t* codes, const float* scales, int64_t n, float* out, Fp8Format f) {
  const bool fnuz = is_fnuz(f);
  const int64_t per = numerics::kScatterScaleCols;
  for (int64_t i = 0; i < n; ++i) out[i] = numerics::scatter_widen(codes[i], scales[i / per], fnuz);
}

}  // namespace gemmar::reference
