// Operand quantization (docs/spec.md 1.2) and the fp8 wire's per-row quantization (docs/spec.md 1.1).
//
// Layouts of the fp32 scales, for a matrix of `rows` x `cols` (cols = K):
//   blockscale A: one scale per 1x128 block along K, column-major [K/128, rows]: scale(r, kb) = s[kb*rows + r]
//   blockscale B: one scale per 128x128 block, row-major [N/128, K/128]:       scale(n, kb) = s[(n/128)*(K/128) + kb]
//   ptpc A and B: one scale per row:                                            scale(r) = s[r]
//   mxfp8 A: one power-of-two (e8m0) scale per 1x32 block along K, row-major [M, K/32]; B: one per 32x32
//          block, row-major [N/32, K/32] (mori's weight scales, the checkpoint's layout)
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
// How a row is narrowed. Mori is what mori's kernels compute and what the emulation (and gemmar's own kernels)
// do; the others are legitimate implementations that `gemmar verify` names instead of failing:
//   Mori:         amax over the row's bf16 values; scale = amax * fl32(1/max); inv = fl32(max / amax);
//                 q = RNE(fl32(x * inv)) saturating (ROCm/mori kernels_sdma.py quantize_gather)
//   TrueDivScale: as Mori but scale = fl32(amax / max) (gemmar's recipe before it followed mori's)
//   DivCodes:     scale = fl32(amax / max), q = RNE(fl32(x / scale)) (torch's quantize, mori's own
//                 tests/python/cco/gemm_ar_wire_reference.py)
//   AccAmax:      as Mori, the amax taken over the reduce's fp32 accumulator before its bf16 rounding, codes
//                 from the bf16 row (mori's sdma_reduce_quant, i.e. fuse_quantize); needs the fp32 row
enum class WireRecipe { Mori, TrueDivScale, DivCodes, AccAmax };
inline constexpr WireRecipe kWireRecipes[] = {WireRecipe::Mori, WireRecipe::TrueDivScale, WireRecipe::DivCodes,
                                              WireRecipe::AccAmax};
const char* to_string(WireRecipe);
// mori's tolerance for the wire (tests/python/cco/gemm_ar_wire_reference.py), one home for gemmar verify's two
// uses (output_check.cpp's gathered views, verify.cpp's dumped codes): the scale within kWireScaleRelTol
// relative of the reference's; a code adjacent to the reference's where x / scale lies within
// kWireMidpointRelTol relative (+ kWireMidpointAbsTol) of their rounding midpoint.
inline constexpr double kWireScaleRelTol = 1e-6;
inline constexpr float kWireMidpointRelTol = 4e-6f, kWireMidpointAbsTol = 1e-7f;
// Returns the scale; writes n codes. acc_row: the fp32 accumulator row (read by AccAmax only; required there).
float wire_quantize_row(const uint16_t* bf16_row, int64_t n, uint8_t* codes, Fp8Format, WireRecipe = WireRecipe::Mori,
                        const float* acc_row = nullptr);
// bf16(decode(q) * scale) for n elements.
void wire_dequantize_row(const uint8_t* codes, float scale, int64_t n, uint16_t* bf16_out, Fp8Format);

// ---- the fp8 scatter (--scatter-dtype fp8): every rank's bf16 partial, per row per 256 columns ----
// One fp32 scale per row per numerics::kScatterScaleCols columns, row-major [rows, N/256] (mori's input_scale_off
// layout); codes row-major [rows, N]. How a 256-column segment is narrowed (numerics_inline.hpp has mori's):
//   Mori:        scale = fl32(amax / max); inv = fl32(1 / scale); q = RNE(fl32(x * inv)) (ROCm/mori kernels_fused.py
//                @f3bff0ae, the fused epilogue's fp8_scatter block)
//   DivCodes:    scale as Mori, q = RNE(fl32(x / scale)) (torch's; mori's tests/python/cco/gemm_ar_wire_reference.py
//                check_wire expects these codes)
//   GatherScale: the gather's recipe per segment: scale = amax * fl32(1/max), inv = fl32(max / amax)
// The last two are legitimate implementations `gemmar verify` names instead of failing; mori's tolerance (a code
// adjacent to DivCodes' at a rounding midpoint, the scales within 1e-6 relative) judges the rest.
enum class ScatterRecipe { Mori, DivCodes, GatherScale };
inline constexpr ScatterRecipe kScatterRecipes[] = {ScatterRecipe::Mori, ScatterRecipe::DivCodes,
                                                    ScatterRecipe::GatherScale};
const char* to_string(ScatterRecipe);
// Scales per row: n / 256 (n must be a multiple of 256, as mori's N of its BLOCK_N).
int64_t scatter_scales_per_row(int64_t n);
// One row of n bf16 values -> n codes and n / 256 scales.
void scatter_quantize_row(const uint16_t* bf16_row, int64_t n, uint8_t* codes, float* scales, Fp8Format,
                          ScatterRecipe = ScatterRecipe::Mori);
// The reduce's view of one received row: fl32(decode(q) * scale of its segment), n values.
void scatter_widen_row(const uint8_t* codes, const float* scales, int64_t n, float* out, Fp8Format);

}  // namespace gemmar::reference
