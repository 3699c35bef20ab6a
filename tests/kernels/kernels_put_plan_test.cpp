// fused-sdma's put loop (kernels/pipeline/put_plan.hpp): the rows and bytes of each (destination, chunk) put as
// mori's kernels_fused.py @f3bff0ae puts them, for both chunk rules and --chunk-bands' short tail; and relaxed rows
// (mori's relaxed epilogue): which counters a tile straddling two owners signals, what completes each, which rows
// each put carries, against the row plan the emulation owns rows by (common/config.hpp slice_rows), and the GPU's
// per-destination counters and per-slice launches.
#include "kernels/pipeline/put_plan.hpp"

#include <gtest/gtest.h>

#include "reference/operands.hpp"

namespace gemmar::kernels {
namespace {

Config fused(Quant q) {
  Config c;
  c.mode = Mode::FusedSdma;
  c.quant = q;
  return c;
}

int64_t total_rows(const std::vector<PutRows>& puts) {
  int64_t n = 0;
  for (const auto& p : puts) n += p.rows;
  return n;
}

// The puts tile the slice: consecutive, in order, every row once.
void expect_tiles_slice(const std::vector<PutRows>& puts, int64_t slice_rows) {
  int64_t next = 0;
  for (const auto& p : puts) {
    EXPECT_EQ(p.row0, next);
    EXPECT_GT(p.rows, 0);
    next = p.row0 + p.rows;
  }
  EXPECT_EQ(next, slice_rows);
}

TEST(KernelsPutPlan, BenchRuleHalvesEightUntilItDividesTheBands) {
  // W = 8 blockscale at M = 12288: 12 bands of 128 rows per destination; the bench halves 8 to 4 puts of 3 bands.
  const Shape s{12288, 7168, 2048, 8};
  Config c = fused(Quant::Blockscale);
  const auto puts = chunk_put_rows(chunk_plan(s, c), block_m(c.quant), slice_rows(s, c));
  ASSERT_EQ(puts.size(), 4u);
  for (const auto& p : puts) EXPECT_EQ(p.rows, 3 * 128);
  expect_tiles_slice(puts, 1536);
}

TEST(KernelsPutPlan, OpRuleTakesTheLargestDivisorUpToEight) {
  // 12 bands: the op's counter_chunks() takes 6 (2 bands a put) where the bench takes 4.
  const Shape s{12288, 7168, 2048, 8};
  Config c = fused(Quant::Blockscale);
  c.chunk_rule = ChunkRule::Op;
  const auto puts = chunk_put_rows(chunk_plan(s, c), block_m(c.quant), slice_rows(s, c));
  ASSERT_EQ(puts.size(), 6u);
  for (const auto& p : puts) EXPECT_EQ(p.rows, 2 * 128);
  expect_tiles_slice(puts, 1536);
}

TEST(KernelsPutPlan, ChunkBandsEndsInAShortPut) {
  // 12 bands, --chunk-bands 5: puts of 5, 5 and 2 bands (bench :325-329, ceil(bands / N) chunks).
  const Shape s{12288, 7168, 2048, 8};
  Config c = fused(Quant::Blockscale);
  c.chunk_bands = 5;
  const auto puts = chunk_put_rows(chunk_plan(s, c), block_m(c.quant), slice_rows(s, c));
  ASSERT_EQ(puts.size(), 3u);
  EXPECT_EQ(puts[0].rows, 5 * 128);
  EXPECT_EQ(puts[1].row0, 5 * 128);
  EXPECT_EQ(puts[2].row0, 10 * 128);
  EXPECT_EQ(puts[2].rows, 2 * 128);
  expect_tiles_slice(puts, 1536);
}

TEST(KernelsPutPlan, Mxfp8BandsAreTwoHundredFiftySixRows) {
  // W = 4 mxfp8 at M = 5120: 5 bands of 256 rows; the bench halves 8 to 1 put, the op takes 5 puts of one band.
  const Shape s{5120, 5120, 2048, 4};
  Config c = fused(Quant::Mxfp8);
  auto puts = chunk_put_rows(chunk_plan(s, c), block_m(c.quant), slice_rows(s, c));
  ASSERT_EQ(puts.size(), 1u);
  EXPECT_EQ(puts[0].rows, 1280);
  c.chunk_rule = ChunkRule::Op;
  puts = chunk_put_rows(chunk_plan(s, c), block_m(c.quant), slice_rows(s, c));
  ASSERT_EQ(puts.size(), 5u);
  for (const auto& p : puts) EXPECT_EQ(p.rows, 256);
  expect_tiles_slice(puts, 1280);
}

TEST(KernelsPutPlan, AChunkPastTheSliceIsClipped) {
  // A slice of 300 rows in bands of 128 (3 bands, the last one partly past the slice): 2 chunks of 2 bands put 256
  // rows, then the 44 rows left.
  ChunkPlan cp;
  cp.bands = 3;
  cp.chunks = 2;
  cp.chunk_bands = 2;
  cp.tail_bands = 1;
  const auto puts = chunk_put_rows(cp, 128, 300);
  ASSERT_EQ(puts.size(), 2u);
  EXPECT_EQ(puts[1].rows, 44);
  EXPECT_EQ(total_rows(puts), 300);
}

TEST(KernelsPutPlan, Fp8PutsCarryCodesThenOneScalePerRowAnd256Columns) {
  // mori: put_bytes = live_bands * BLOCK_M * N * scatter_elem_bytes; the scales' put put_bytes * 4 // BLOCK_N.
  EXPECT_EQ(put_payload_bytes(256, 7168, false), 256 * 7168 * 2);
  EXPECT_EQ(put_payload_bytes(256, 7168, true), 256 * 7168);
  EXPECT_EQ(put_scale_bytes(256, 7168, true), put_payload_bytes(256, 7168, true) * 4 / 256);
  EXPECT_EQ(put_scale_bytes(256, 5120, true), 256 * 20 * 4);
  EXPECT_EQ(put_scale_bytes(256, 7168, false), 0);
}

// ---- relaxed rows --------------------------------------------------------------------------------------------

Config relaxed(Quant q, int chunk_bands) {
  Config c = fused(q);
  c.chunk_bands = chunk_bands;
  c.relaxed_rows = true;
  return c;
}

// The relaxed shapes mori runs: the bench's --relaxed-rows (W = 4 blockscale M = 1040: S = 260, tiles straddle at
// rows 260, 520, 780), the op's wo_b Flash plans (W = 4 mxfp8 4224 and 8256, chunk_bands 1: S = 1056 and 2064) and
// a W = 8 blockscale one (M = 8200, S = 1025) in puts of 2 bands.
struct RelaxedCase {
  Shape shape;
  Config config;
};
std::vector<RelaxedCase> relaxed_cases() {
  return {
      {{1040, 1024, 128, 4}, relaxed(Quant::Blockscale, 1)},  {{1040, 1024, 128, 4}, relaxed(Quant::Blockscale, 2)},
      {{4224, 5120, 2048, 4}, relaxed(Quant::Mxfp8, 1)},      {{8256, 5120, 2048, 4}, relaxed(Quant::Mxfp8, 1)},
      {{8200, 7168, 2048, 8}, relaxed(Quant::Blockscale, 2)}, {{8200, 7168, 2048, 8}, relaxed(Quant::Blockscale, 3)}};
}

TEST(KernelsPutPlan, RelaxedPutsCarryEachOwnersRowsAsTheEmulationOwnsThem) {
  for (const RelaxedCase& rc : relaxed_cases()) {
    const Shape& s = rc.shape;
    validate_shape_config(s, rc.config);
    const int64_t S = slice_rows(s, rc.config), bm = block_m(rc.config.quant);
    ASSERT_EQ(S * s.world, s.m) << s.m;  // not padded: M / W rows an owner
    const ChunkPlan cp = chunk_plan(s, rc.config);
    const auto puts = chunk_put_rows(cp, bm, S);
    expect_tiles_slice(puts, S);
    // mori's (dest, chunk) segments: the same rows as the put loop's, the last chunk short, nothing past the slice.
    const auto sig = chunk_signals(s.world, S, int64_t(rc.config.chunk_bands) * bm, bm, s.n / 256);
    ASSERT_EQ(sig.size(), size_t(s.world) * puts.size()) << s.m;
    std::vector<int> seen(static_cast<size_t>(s.m), 0);
    for (const ChunkSignal& x : sig) {
      EXPECT_EQ(x.row0, puts[size_t(x.chunk)].row0);
      EXPECT_EQ(x.rows, puts[size_t(x.chunk)].rows);
      EXPECT_EQ(x.global_row0, x.dest * S + x.row0);
      for (int64_t g = x.global_row0; g < x.global_row0 + x.rows; ++g) {
        ++seen[size_t(g)];
        EXPECT_EQ(g / S, x.dest) << "row " << g << " put to another owner than the emulation's";
      }
    }
    for (int64_t g = 0; g < s.m; ++g) ASSERT_EQ(seen[size_t(g)], 1) << "row " << g << " of M = " << s.m;
  }
}

TEST(KernelsPutPlan, RelaxedTilesSignalEveryOwnerAndChunkTheyReach) {
  // W = 4 blockscale M = 1040, puts of one band: tile 2 (rows 256..383) holds owner 0's last 4 rows (its chunk 2)
  // and owner 1's first 124 (its chunk 0): it adds one to both counters, as mori's loop over dest and chunk does.
  const auto slots = tile_signal_slots(2, 1040, 260, 128, 128);
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].dest, 0);
  EXPECT_EQ(slots[0].chunk, 2);
  EXPECT_EQ(slots[1].dest, 1);
  EXPECT_EQ(slots[1].chunk, 0);
  // Owner 1's chunk 0 is rows 260..387 of M: tiles 2 and 3 touch it, so it completes at 2 x the N tiles; owner 0's
  // short chunk 2 (rows 256..259) at 1 x.
  const auto sig = chunk_signals(4, 260, 128, 128, 4);
  EXPECT_EQ(sig[2].rows, 4);
  EXPECT_EQ(sig[2].expected, 4);
  EXPECT_EQ(sig[3].dest, 1);
  EXPECT_EQ(sig[3].expected, 8);
  // The last tile (rows 1024..1151) holds 16 real rows, all owner 3's (its rows 244..259), across two of its chunks
  // (1: rows 128..255, 2: rows 256..259): one count each, its rows past M nobody's.
  const auto last = tile_signal_slots(8, 1040, 260, 128, 128);
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(last[0].dest, 3);
  EXPECT_EQ(last[0].chunk, 1);
  EXPECT_EQ(last[1].dest, 3);
  EXPECT_EQ(last[1].chunk, 2);
  EXPECT_TRUE(tile_signal_slots(9, 1040, 260, 128, 128).empty());
}

TEST(KernelsPutPlan, RelaxedCountersCompleteExactlyWhenEveryTileOfTheirRowsIsStored) {
  for (const RelaxedCase& rc : relaxed_cases()) {
    const Shape& s = rc.shape;
    const int64_t S = slice_rows(s, rc.config), bm = block_m(rc.config.quant);
    const int64_t chunk_rows = int64_t(rc.config.chunk_bands) * bm, n_tiles = s.n / 256;
    const auto sig = chunk_signals(s.world, S, chunk_rows, bm, n_tiles);
    const int64_t chunks = (S + chunk_rows - 1) / chunk_rows;
    // Every tile of every N tile adds its counts: each counter ends at its `expected`, the tiles counted into it
    // are exactly those holding some of its rows.
    std::vector<int64_t> count(sig.size(), 0);
    for (int64_t t = 0; t < (s.m + bm - 1) / bm; ++t)
      for (const SignalSlot& slot : tile_signal_slots(t, s.m, S, chunk_rows, bm)) {
        const ChunkSignal& x = sig[size_t(slot.dest * chunks + slot.chunk)];
        EXPECT_LT(x.global_row0, std::min((t + 1) * bm, s.m));
        EXPECT_GT(x.global_row0 + x.rows, t * bm);
        count[size_t(slot.dest * chunks + slot.chunk)] += n_tiles;
      }
    for (size_t i = 0; i < sig.size(); ++i) EXPECT_EQ(count[i], sig[i].expected) << "M = " << s.m << " counter " << i;
  }
}

// The GPU's GEMM counts per destination slice with its 128-row tiles, a tile once for each slice its real rows reach
// (tile_last_slice, as the epilogues call it): each counter ends at slice_counter_targets, the count the puts wait on
// and verify_counters checks; whole-tile slices keep S / 128 x N / 128.
TEST(KernelsPutPlan, TheGpuCountersReachTheirTargetsWithStraddlingTilesCountedTwice) {
  const std::vector<std::pair<Shape, bool>> shapes = {{{1040, 1024, 128, 4}, true},   {{4224, 5120, 2048, 4}, true},
                                                      {{8200, 7168, 2048, 8}, true},  {{8256, 5120, 2048, 4}, true},
                                                      {{1032, 1024, 128, 8}, true},   {{4096, 7168, 2048, 8}, false},
                                                      {{12288, 7168, 2048, 8}, false}};
  for (const auto& [s, relaxed_rows] : shapes) {
    const int64_t S = s.m / s.world, n_tiles = s.n / 128, tiles = (s.m + 127) / 128;
    const auto targets = slice_counter_targets(s.world, S, 128, n_tiles);
    ASSERT_EQ(targets.size(), size_t(s.world));
    std::vector<unsigned> count(static_cast<size_t>(s.world), 0);
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t m0 = t * 128;
      const int first = int(m0 / S);
      const int last = tile_last_slice(m0, 128, relaxed_rows ? s.m : 0, S, first);
      EXPECT_LE(last, first + 1);
      EXPECT_LT(last, s.world);
      for (int p = first; p <= last; ++p) count[size_t(p)] += unsigned(n_tiles);
    }
    for (int p = 0; p < s.world; ++p) {
      EXPECT_EQ(count[size_t(p)], targets[size_t(p)]) << "M = " << s.m << " slice " << p;
      if (!relaxed_rows) {
        EXPECT_EQ(targets[size_t(p)], unsigned(S / 128 * n_tiles));
      }
    }
  }
  // M = 1040, W = 4: slice 1 (rows 260..519) is touched by tiles 2, 3 and 4 (rows 256..639).
  EXPECT_EQ(slice_counter_targets(4, 260, 128, 8)[1], 3u * 8u);
}

// Where the copy stream cannot wait on a counter: one GEMM launch per destination slice in put order. The launches
// split the whole tiles without overlap, cover the GEMM's rows, and each slice's tiles are all run by the end of its
// own launch; whole-tile slices launch exactly their own rows, as before relaxed rows.
TEST(KernelsPutPlan, PerSliceLaunchesRunEveryTileOnceAndEachSliceByItsPut) {
  for (const int world : {2, 4, 8})
    for (const int64_t S : {128, 130, 200, 260, 384, 1025, 1056, 2064})
      for (int rank = 0; rank < world; ++rank) {
        const int64_t m = S * world, tiles = (m + 127) / 128;
        const auto launches = slice_launch_rows(world, rank, S, 128);
        ASSERT_EQ(launches.size(), size_t(world));
        std::vector<int> run(static_cast<size_t>(tiles), -1);  // the launch that runs each tile
        for (size_t j = 0; j < launches.size(); ++j) {
          const LaunchRows& lr = launches[j];
          EXPECT_EQ(lr.slice, (rank + int(j) + 1) % world);
          EXPECT_EQ(lr.begin % 128, 0);
          EXPECT_EQ(lr.end % 128, 0);
          EXPECT_LE(lr.begin, lr.end);
          for (int64_t t = lr.begin / 128; t < lr.end / 128; ++t) {
            ASSERT_LT(t, tiles);
            EXPECT_EQ(run[size_t(t)], -1) << "tile " << t << " run twice";
            run[size_t(t)] = int(j);
          }
          if (lr.slice != rank) {
            EXPECT_LT(lr.begin, lr.end) << "a peer's slice with nothing to launch";
          }
          if (S % 128 == 0) {
            EXPECT_EQ(lr.begin, lr.slice * S);
            EXPECT_EQ(lr.end, (lr.slice + 1) * S);
          }
        }
        for (int64_t t = 0; t < tiles; ++t) ASSERT_GE(run[size_t(t)], 0) << "tile " << t << " never run";
        for (size_t j = 0; j < launches.size(); ++j) {
          const int p = launches[j].slice;
          for (int64_t t = p * S / 128; t <= ((p + 1) * S - 1) / 128; ++t)
            EXPECT_LE(run[size_t(t)], int(j)) << "slice " << p << "'s tile " << t << " runs after its put";
        }
      }
}

// The GPU runs a relaxed M's GEMM over whole 128-row tiles: A's extension dequantizes to the same values on the real
// rows (every quant's scale layout re-laid for the new row count) and to zeros past M.
TEST(KernelsPutPlan, TheGemmsExtraRowsAreZeroAndTheRealOnesUnchanged) {
  for (const QuantTraits& qt : kQuantTable) {
    reference::OperandSpec spec;
    spec.shape = Shape{1040, 256, 256, 4};
    spec.quant = qt.quant;
    std::vector<int64_t> rows(1040);
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = int64_t(i);
    const reference::RankOperands op = reference::make_rank_operands(spec, 1, rows);
    reference::RankOperands padded = op;
    pad_a_rows(padded.a, qt.quant, 1152);
    ASSERT_EQ(padded.a.rows, 1152);
    ASSERT_EQ(int64_t(padded.a.scales.size()), scale_count(scale_block(qt.quant, false), 1152, 256));
    const auto want = reference::dequantized_a(op, qt.quant, Fp8Format::E4M3FN);
    const auto got = reference::dequantized_a(padded, qt.quant, Fp8Format::E4M3FN);
    ASSERT_EQ(got.size(), size_t(1152 * 256));
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << qt.name << " element " << i;
    for (size_t i = want.size(); i < got.size(); ++i) ASSERT_EQ(got[i], 0.0f) << qt.name << " element " << i;
  }
}

}  // namespace
}  // namespace gemmar::kernels
