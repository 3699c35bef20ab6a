// fused-sdma's put loop as mori runs it, in plain C++ (tested on the CPU: tests/kernels/kernels_put_plan_test.cpp):
// the rows of each (destination, chunk) put of chunk_plan(shape, config), and the bytes each put carries on a bf16
// or an fp8 scatter. mori: kernels_fused.py @f3bff0ae compile_fused_gemm_scatter's put loop: chunk c of a
// destination puts `live_bands = min(m_tiles_per_peer - c * chunk_bands, chunk_bands)` bands of BLOCK_M rows at
// `c * chunk_bytes` (full-chunk stride), `put_bytes = live_bands * BLOCK_M * N * scatter_elem_bytes`, and on an fp8
// scatter the scales' put `put_bytes * 4 // BLOCK_N` right after it on the same queue.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/config.hpp"
#include "reference/numerics_inline.hpp"

namespace gemmar::kernels {

struct PutRows {
  int64_t row0 = 0;  // first row of the destination's slice
  int64_t rows = 0;
};

// The puts of one destination's slice of `slice_rows` rows, in order; a chunk's bands past the slice's last row are
// not put (a slice shorter than its bands' rows).
inline std::vector<PutRows> chunk_put_rows(const ChunkPlan& cp, int64_t block_m, int64_t slice_rows) {
  std::vector<PutRows> out;
  for (int c = 0; c < cp.chunks; ++c) {
    const int64_t row0 = cp.first_band(c) * block_m;
    const int64_t end = std::min(slice_rows, (cp.first_band(c) + cp.band_count(c)) * block_m);
    if (end > row0) out.push_back({row0, end - row0});
  }
  return out;
}

// Bytes of one put of `rows` rows of n columns: the payload (bf16 2 bytes, fp8 1) and, on an fp8 scatter, the
// scales' put (one fp32 per row and 256 columns; 0 on bf16).
inline int64_t put_payload_bytes(int64_t rows, int64_t n, bool fp8) { return rows * n * (fp8 ? 1 : 2); }
inline int64_t put_scale_bytes(int64_t rows, int64_t n, bool fp8) {
  return fp8 ? rows * (n / numerics::kScatterScaleCols) * 4 : 0;
}

}  // namespace gemmar::kernels
