// Everything that differs between modes and between quants, in one table each. A plain header (no Eigen, no
// library to link) so host code in kernels/ reads the same rows as the reference, the model and the judge.
// python/gemmar_dump.py mirrors the quant rows (QUANTS); tests/common/common_modes_test.cpp checks that it does.
#pragma once
#include <cstdint>

namespace gemmar {

enum class Mode { GemmOnly, SplitSdma, FusedSdma, SplitLsa, FusedLsa };
enum class Quant { Blockscale, Ptpc, Mxfp8 };

struct ModeTraits {
  Mode mode;
  const char* name;
  bool collective;              // false only for gemm-only: it moves no data (and sizes the ceiling)
  bool fused;                   // the scatter rides the GEMM's epilogue (then a drain phase waits for its tail)
  bool scatter_by_copy_engine;  // sdma modes: copy-engine puts; lsa modes: CU stores/loads to peer memory
  bool two_stage_allreduce;     // split-lsa: one CU all-reduce kernel instead of reduce + gather
  bool fp8_wire;                // an fp8 gather wire exists (split-lsa is bf16 only)
};

//                                      name          collective fused copy-engine two-stage fp8-wire
inline constexpr ModeTraits kModeTable[] = {
    {Mode::GemmOnly, "gemm-only", false, false, false, false, false},
    {Mode::SplitSdma, "split-sdma", true, false, true, false, true},
    {Mode::FusedSdma, "fused-sdma", true, true, true, false, true},
    {Mode::SplitLsa, "split-lsa", true, false, false, true, false},
    {Mode::FusedLsa, "fused-lsa", true, true, false, false, true},
};

// One operand's scale geometry: `rows` x `k` values share one scale. k == 0 means the whole K (one scale per
// row: then the stored shape drops the K dimension). k_major: stored [K/k, rows] (blockscale A, which is
// torch._scaled_mm's column-major [rows, K/128]); otherwise row-major [rows/rows_block, K/k].
struct ScaleBlock {
  int rows;
  int k;
  bool k_major;
  const char* hint;  // the layout in words, for a dump whose scale tensor has the wrong shape
};

struct QuantTraits {
  Quant quant;
  const char* name;  // also the python name (gemmar_dump.py's quant=)
  int block_m;       // BLOCK_M of the GEMM tiles (docs/spec.md 1.1)
  ScaleBlock a, b;
  // mxfp8: e8m0 scales (powers of two, OCP MX shared exponent); otherwise fp32 amax / fp8 max.
  bool e8m0_scales;
};

inline constexpr QuantTraits kQuantTable[] = {
    {Quant::Blockscale,
     "blockscale",
     128,
     {1, 128, true,
      "blockscale A scales are one fp32 per 1x128 block, stored column-major as [K/128, M]: "
      "write scale_a.t().contiguous() for torch._scaled_mm's [M, K/128]"},
     {128, 128, false, "blockscale B scales are one fp32 per 128x128 block, row-major [N/128, K/128]"},
     false},
    {Quant::Ptpc,
     "ptpc",
     256,
     {1, 0, false, "ptpc: one fp32 per row of A, [M]"},
     {1, 0, false, "ptpc: one fp32 per row of B, [N]"},
     false},
    {Quant::Mxfp8,
     "mxfp8",
     256,
     {1, 32, false, "mxfp8 A scales are one fp32 (a power of two) per 1x32 block along K, row-major [M, K/32]"},
     // mori's weight scales are the checkpoint's: one e8m0 per 32x32 block of B (ROCm/mori
     // benchmark/cco/flydsl/gemm_ar/bench_mori_gemm_1p.py and tests/python/cco: eb is [N/32, K/32]).
     {32, 32, false, "mxfp8 B scales are one fp32 (a power of two) per 32x32 block, row-major [N/32, K/32]"},
     true},
};

// The enumerators are the table's row numbers (checked in tests/common/common_modes_test.cpp).
constexpr const ModeTraits& mode_traits(Mode m) { return kModeTable[int(m)]; }
constexpr const QuantTraits& quant_traits(Quant q) { return kQuantTable[int(q)]; }
constexpr const ScaleBlock& scale_block(Quant q, bool operand_b) {
  return operand_b ? quant_traits(q).b : quant_traits(q).a;
}

// Scale geometry of a `rows` x `cols` operand (cols = K): the K extent of one block, the blocks along each
// dimension, how many scales and where the scale of element (row, col) is stored.
constexpr int64_t scale_k_extent(const ScaleBlock& s, int64_t cols) { return s.k == 0 ? cols : s.k; }
constexpr int64_t scale_row_blocks(const ScaleBlock& s, int64_t rows) { return (rows + s.rows - 1) / s.rows; }
constexpr int64_t scale_k_blocks(const ScaleBlock& s, int64_t cols) { return cols / scale_k_extent(s, cols); }
constexpr int64_t scale_count(const ScaleBlock& s, int64_t rows, int64_t cols) {
  return scale_row_blocks(s, rows) * scale_k_blocks(s, cols);
}
constexpr int64_t scale_index(const ScaleBlock& s, int64_t rows, int64_t cols, int64_t row, int64_t col) {
  const int64_t rb = row / s.rows, kb = col / scale_k_extent(s, cols);
  return s.k_major ? kb * scale_row_blocks(s, rows) + rb : rb * scale_k_blocks(s, cols) + kb;
}

}  // namespace gemmar
