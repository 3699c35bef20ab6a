// fused-sdma's put loop (kernels/pipeline/put_plan.hpp): the rows and bytes of each (destination, chunk) put as
// mori's kernels_fused.py @f3bff0ae puts them, for both chunk rules and --chunk-bands' short tail.
#include "kernels/pipeline/put_plan.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gemmar::kernels
