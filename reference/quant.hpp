// Operand quantization (docs/spec.md 1.2) and the fp8 wire's per-row quantization (docs/spec.md 1.1).
//
// Layouts of the fp32 scales, for a matrix of `rows` x `cols` (cols = K):
//   blockscale A: one scale per 1x128 block along K, column-major [K/128, rows]: scale(r, kb) = s[kb*rows + r]
//   blockscale B: one scale per 128x128 block, row-major [N/128, K/128]:       scale(n, kb) = s[(n/128)*(K/128) + kb]
//   ptpc A and B: one scale per row:                                            scale(r) = s[r]
//   mxfp8 A and B: one power-of-two (e8m0) scale per 1x32 block along K, row-major [rows, K/32]
// Codes are uint8 in row-major [rows, K] order.
#pragma once
#include <cstdint>
#include <vector>

#include "common/config.hpp"

namespace gemmar::reference {

enum class Operand { A, B };

struct QuantizedMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> codes;  // rows * cols
  std::vector<float> scales;   // layout per (Quant, Operand), above
};

// K extent over which one scale applies: 128 (blockscale), K (ptpc), 32 (mxfp8).
int64_t scale_k_block(Quant, int64_t k);
int64_t scale_count(Quant, Operand, int64_t rows, int64_t cols);
// Index into QuantizedMatrix::scales of the scale that applies to element (row, col).
int64_t scale_index(Quant, Operand, int64_t rows, int64_t cols, int64_t row, int64_t col);

// Quantizes an fp32 matrix with amax scaling (scale = amax/max per block, codes = RNE(x * max/amax));
// mxfp8 uses the OCP MX rule instead: scale = 2^(floor(log2 amax) - 8), codes saturate.
QuantizedMatrix quantize(const float* x, int64_t rows, int64_t cols, Quant, Operand, Fp8Format);
// decode(code) * scale in fp32, row-major [rows, cols].
std::vector<float> dequantize(const QuantizedMatrix&, Quant, Operand, Fp8Format);

// The mxfp8 scale of a block with the given amax (a power of two; 1 for an all-zero block).
float mx_scale(float amax);

// ---- the fp8 wire (docs/spec.md 1.1): per row of the owned slice ----
// amax over the row's bf16 values; scale = amax/max (1.0 for an all-zero row); q = RNE(x * (max/amax)).
// Returns the scale; writes n codes.
float wire_quantize_row(const uint16_t* bf16_row, int64_t n, uint8_t* codes, Fp8Format);
// bf16(decode(q) * scale) for n elements.
void wire_dequantize_row(const uint8_t* codes, float scale, int64_t n, uint16_t* bf16_out, Fp8Format);

}  // namespace gemmar::reference
