// Which destination slices a GEMM tile's rows reach: the arithmetic the GEMM epilogues count with
// (kernels/device_common.cuh tile_last_slice) and the put plan's host tests check (kernels/pipeline/put_plan.hpp),
// written once for both. Plain integer operations only (compiled for the host and the device).
#pragma once
#include <cstdint>

#include "reference/numerics_inline.hpp"  // GEMMAR_HD

namespace gemmar::kernels {

// The last slice the tile of `tile_rows` rows from row m0 reaches with its real rows (the first `rows` rows of the
// problem; rows <= 0: every slice is whole tiles, so the tile's first row's slice `first` is its only one). mori's
// relaxed epilogue (kernels_fused.py @f3bff0ae compile_fused_gemm_scatter): row_hi = min(row_lo + BLOCK_M, M),
// dest_end = (row_hi - 1) // slice_rows.
GEMMAR_HD inline int tile_last_slice(int64_t m0, int64_t tile_rows, int64_t rows, int64_t slice_rows, int first) {
  if (rows <= 0) return first;
  const int64_t end = m0 + tile_rows < rows ? m0 + tile_rows : rows;
  return int((end - 1) / slice_rows);
}

}  // namespace gemmar::kernels
