// fused-sdma's put loop as mori runs it, in plain C++ (tested on the CPU: tests/kernels/kernels_put_plan_test.cpp):
// the rows of each (destination, chunk) put of chunk_plan(shape, config), and the bytes each put carries on a bf16
// or an fp8 scatter. mori: kernels_fused.py @f3bff0ae compile_fused_gemm_scatter's put loop: chunk c of a
// destination puts `live_bands = min(m_tiles_per_peer - c * chunk_bands, chunk_bands)` bands of BLOCK_M rows at
// `c * chunk_bytes` (full-chunk stride), `put_bytes = live_bands * BLOCK_M * N * scatter_elem_bytes`, and on an fp8
// scatter the scales' put `put_bytes * 4 // BLOCK_N` right after it on the same queue.
//
// Relaxed rows (mori's --relaxed-rows; kernels_fused.py @f3bff0ae compile_fused_gemm_scatter, the epilogue branch
// `if const_expr(fuse and not direct_lsa and relaxed_rows)`): M is a multiple of W only, each rank owns
// S = M / W rows, and a BLOCK_M tile may straddle two owners and two chunks. mori's thread 0 of each tile then
// loops over every owner `dest` its rows [row_lo, min(row_lo + BLOCK_M, M)) reach and every chunk of that owner's
// slice they reach (chunk c = slice rows [c * chunk_bands * BLOCK_M, min((c + 1) * chunk_bands * BLOCK_M, S))), and
// adds one to counter (dest, chunk) for each; the chunk's put leaves when its counter reaches a multiple of
// `expected` = (the BLOCK_M tiles of the whole M touching the chunk's global rows) x (the N tiles). The put carries
// exactly the chunk's rows (seg_hi - seg_lo: a short last chunk, nothing past the slice) from the sender's staged
// partial at row dest * S + seg_lo to the owner's slot at row seg_lo; the own destination counts but is not put.
// Rows of the last tile past M are neither stored nor quantized (`if row < M`) nor put. The functions below are that
// arithmetic, for mori's chunks (chunk_rows = chunk_bands * BLOCK_M) and for gemmar's per-destination counters
// (chunk_rows >= S: one segment per owner, its tiles gemmar's dev::kBlockM rows).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/config.hpp"
#include "kernels/tile_slices.hpp"
#include "reference/numerics_inline.hpp"
#include "reference/quant.hpp"

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

// ---- relaxed rows: which counters a tile signals, and what completes each (mori's relaxed epilogue) --------------

// The tiles of `tile_rows` rows (tile t = rows [t * tile_rows, (t + 1) * tile_rows)) touching rows [lo, hi):
// mori's `(global_hi + BLOCK_M - 1) // BLOCK_M - global_lo // BLOCK_M`.
inline int64_t tiles_touching(int64_t lo, int64_t hi, int64_t tile_rows) {
  return hi <= lo ? 0 : (hi + tile_rows - 1) / tile_rows - lo / tile_rows;
}

// One (destination, chunk) counter of the put loop and the put it releases.
struct ChunkSignal {
  int dest = 0;
  int chunk = 0;
  int64_t row0 = 0;         // the chunk's first row in the destination's slice (mori seg_lo)
  int64_t rows = 0;         // seg_hi - seg_lo
  int64_t global_row0 = 0;  // dest * S + row0: the rows of the sender's partial the put reads (mori global_lo)
  int64_t expected = 0;     // the counts that complete it: tiles_touching(its global rows) x the N tiles
};

// Every (destination, chunk) counter of a run of `world` slices of `slice_rows` rows, chunks of `chunk_rows` rows
// (the last one short), tiles of `tile_rows` rows, `n_tiles` tiles along N; in (dest, chunk) order.
inline std::vector<ChunkSignal> chunk_signals(int world, int64_t slice_rows, int64_t chunk_rows, int64_t tile_rows,
                                              int64_t n_tiles) {
  std::vector<ChunkSignal> out;
  const int64_t chunks = (slice_rows + chunk_rows - 1) / chunk_rows;
  for (int d = 0; d < world; ++d)
    for (int64_t c = 0; c < chunks; ++c) {
      ChunkSignal s;
      s.dest = d;
      s.chunk = int(c);
      s.row0 = c * chunk_rows;
      s.rows = std::min(slice_rows, s.row0 + chunk_rows) - s.row0;
      s.global_row0 = int64_t(d) * slice_rows + s.row0;
      s.expected = tiles_touching(s.global_row0, s.global_row0 + s.rows, tile_rows) * n_tiles;
      out.push_back(s);
    }
  return out;
}

// The (destination, chunk) counters tile `tile` (rows from tile * tile_rows, the rows past m not its) adds one to,
// in mori's loop order (dest ascending, then chunk): dest_begin = row_lo // S .. dest_end = (row_hi - 1) // S, and
// per dest the chunks local_lo // chunk_rows .. (local_hi - 1) // chunk_rows.
struct SignalSlot {
  int dest = 0;
  int chunk = 0;
};
inline std::vector<SignalSlot> tile_signal_slots(int64_t tile, int64_t m, int64_t slice_rows, int64_t chunk_rows,
                                                 int64_t tile_rows) {
  std::vector<SignalSlot> out;
  const int64_t row_lo = tile * tile_rows, row_hi = std::min(row_lo + tile_rows, m);
  if (row_hi <= row_lo) return out;
  for (int64_t d = row_lo / slice_rows; d <= (row_hi - 1) / slice_rows; ++d) {
    const int64_t local_lo = std::max<int64_t>(row_lo - d * slice_rows, 0);
    const int64_t local_hi = std::min(row_hi - d * slice_rows, slice_rows);
    for (int64_t c = local_lo / chunk_rows; c <= (local_hi - 1) / chunk_rows; ++c) out.push_back({int(d), int(c)});
  }
  return out;
}

// gemmar's GEMM counts per destination slice (dev::GemmDest::counters), every tile once for each slice its rows
// reach (as mori's relaxed epilogue counts each owner it reaches; kernels/tile_slices.hpp tile_last_slice): the
// count slice p reaches when every tile touching it is stored. Whole-tile slices: (S / tile_rows) x n_tiles each.
inline std::vector<unsigned> slice_counter_targets(int world, int64_t slice_rows, int64_t tile_rows, int64_t n_tiles) {
  std::vector<unsigned> out;
  for (const ChunkSignal& s : chunk_signals(world, slice_rows, slice_rows, tile_rows, n_tiles))
    out.push_back(unsigned(s.expected));
  return out;
}

// fused-sdma's GEMM as one launch per destination slice (where the copy stream cannot wait on a counter), in the
// order rank `rank`'s puts leave ((rank + 1) % W first, the own slice last): launch j holds the whole tiles of
// `tile_rows` rows touching slice p = (rank + j) % W that no earlier launch holds, so when it is done every tile of
// slice p is (a tile straddling two slices runs once, in the first of their launches). Rows [begin, end), both
// multiples of tile_rows (end clipped to the tiles covering m); empty where earlier launches hold all of p's tiles.
struct LaunchRows {
  int slice = 0;
  int64_t begin = 0, end = 0;
};
inline std::vector<LaunchRows> slice_launch_rows(int world, int rank, int64_t slice_rows, int64_t tile_rows) {
  const int64_t m = int64_t(world) * slice_rows, tiles = (m + tile_rows - 1) / tile_rows;
  std::vector<char> launched(static_cast<size_t>(tiles), 0);
  std::vector<LaunchRows> out;
  for (int j = 1; j <= world; ++j) {
    const int p = (rank + j) % world;
    const int64_t first = int64_t(p) * slice_rows / tile_rows;
    const int64_t last = (int64_t(p + 1) * slice_rows - 1) / tile_rows;
    // Only the first and the last tile can be a neighbour's (the own slice's last one: (rank + 1)'s, launched first).
    int64_t b = first, e = last;
    while (b <= e && launched[size_t(b)]) ++b;
    while (e >= b && launched[size_t(e)]) --e;
    for (int64_t t = b; t <= e; ++t) launched[size_t(t)] = 1;
    out.push_back({p, b * tile_rows, b <= e ? (e + 1) * tile_rows : b * tile_rows});
  }
  return out;
}

// Relaxed rows: the GEMM runs over whole tiles of `tile_rows`, so A is extended from its M real rows to `rows` (M
// rounded up): the rows past M zero codes with unit scales (their partial rows are zeros nobody owns, puts, reduces
// or reads: mori's last tile loads them as zeros and stores none), the scales re-laid for the new row count
// (blockscale's [K/128, M] is column-major: its stride is the row count).
inline void pad_a_rows(reference::QuantizedMatrix& a, Quant q, int64_t rows) {
  if (rows == a.rows) return;
  const ScaleBlock& sb = scale_block(q, false);
  const int64_t m = a.rows, k = a.cols, step = scale_k_extent(sb, k);
  std::vector<float> scales(static_cast<size_t>(scale_count(sb, rows, k)), 1.0f);
  for (int64_t row = 0; row < m; row += sb.rows)
    for (int64_t col = 0; col < k; col += step)
      scales[size_t(scale_index(sb, rows, k, row, col))] = a.scales[size_t(scale_index(sb, m, k, row, col))];
  a.scales = std::move(scales);
  a.codes.resize(static_cast<size_t>(rows * k), 0);
  a.rows = rows;
}

}  // namespace gemmar::kernels
