// The row plan and chunk plan (common/config.hpp) against mori's own numbers: op.py counter_chunks(),
// _Schedule and _row_plan @f3bff0ae, tests/python/cco/test_gemm_ar_schedule.py @f3bff0ae, and bench_gemm_ar.py's
// run() @d5443336 (notes: /work/mori-notes/config-and-chunks.md).
#include <gtest/gtest.h>

#include <string>

#include "common/config.hpp"
#include "common/errors.hpp"

using namespace gemmar;

namespace {

// DeepSeek-V4-Pro wo_b under TP8 and V4-Flash under TP4: the two targets of op.py's wo_b profile.
Shape pro_tp8(int64_t m) { return Shape{m, 7168, 2048, 8}; }
Shape flash_tp4(int64_t m) { return Shape{m, 5120, 2048, 4}; }

Config op_config(Quant q, Schedule sched = Schedule::WoB) {
  Config c;
  c.quant = q;
  c.chunk_rule = ChunkRule::Op;
  c.schedule = sched;
  return c;
}

std::string usage_message(const Shape& s, const Config& c) {
  try {
    validate_shape_config(s, c);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Bands 1..16: the op's largest divisor <= 8 against the bench's 8 halved until it divides.
TEST(CommonChunks, OpAndBenchRulesOverBands) {
  const int op[] = {1, 2, 3, 4, 5, 6, 7, 8, 3, 5, 1, 6, 1, 7, 5, 8};
  const int bench[] = {1, 2, 1, 4, 1, 2, 1, 8, 1, 2, 1, 4, 1, 2, 1, 8};
  std::string differ;
  for (int b = 1; b <= 16; ++b) {
    EXPECT_EQ(op_counter_chunks(b), op[b - 1]) << b << " bands";
    EXPECT_EQ(bench_chunks(b, 0), bench[b - 1]) << b << " bands";
    if (op[b - 1] != bench[b - 1]) differ += std::to_string(b) + " ";
  }
  // The issue names 5, 9, 12 and 15; 3, 6, 7, 10 and 14 differ as well.
  EXPECT_EQ(differ, "3 5 6 7 9 10 12 14 15 ");
  // The bench halves an asked count too: 3 of 8 tiles runs as 1, 16 as 8.
  EXPECT_EQ(bench_chunks(8, 3), 1);
  EXPECT_EQ(bench_chunks(8, 16), 8);
}

// op.py counter_chunks()'s docstring: "at M=15360 the divisor rule measures 1104.8us against 1434.0us for a chunk
// count of 1" -- 15 bands at W=8, BLOCK_M 128; the bench's rule runs that M as one chunk.
TEST(CommonChunks, M15360IsFiveChunksUnderTheOpAndOneUnderTheBench) {
  Config c;
  EXPECT_EQ(chunk_plan(pro_tp8(15360), c).bands, 15);
  EXPECT_EQ(effective_chunks(pro_tp8(15360), c), 1);
  c.chunk_rule = ChunkRule::Op;
  const ChunkPlan p = chunk_plan(pro_tp8(15360), c);
  EXPECT_EQ(p.chunks, 5);
  EXPECT_EQ(p.chunk_bands, 3);
  EXPECT_EQ(p.tail_bands, 3);
}

// --chunk-bands N: ceil(bands / N) puts, the last one short.
TEST(CommonChunks, ShortTailPlanPutsTheRemainderLast) {
  const ChunkPlan p = short_tail_plan(9, 2);
  EXPECT_EQ(p.chunks, 5);
  EXPECT_EQ(p.chunk_bands, 2);
  EXPECT_EQ(p.tail_bands, 1);
  EXPECT_EQ(p.first_band(4), 8);
  EXPECT_EQ(p.band_count(4), 1);
  EXPECT_EQ(p.band_count(3), 2);
  EXPECT_EQ(short_tail_plan(8, 2).tail_bands, 2);
  EXPECT_EQ(short_tail_plan(3, 8).chunks, 1);
  EXPECT_EQ(short_tail_plan(3, 8).tail_bands, 3);
  // The bench's own arithmetic: --chunk-bands replaces --chunks, on any fused M.
  Config c;
  c.chunk_bands = 3;
  c.chunks = 8;
  const ChunkPlan q = chunk_plan(pro_tp8(16384), c);  // 16 bands
  EXPECT_EQ(q.chunks, 6);
  EXPECT_EQ(q.tail_bands, 1);
}

// test_same_padded_m_different_chunk_protocols_have_disjoint_slots: logical 8200 runs as 9216 rows in 5 chunks,
// while 9216 itself falls back to counter_chunks() = 3.
TEST(CommonChunks, WoBMaps8200To9216InFiveChunksAndTheFallbackInThree) {
  const Config c = op_config(Quant::Blockscale);
  const RowPlan tuned = row_plan(pro_tp8(8200), c);
  EXPECT_EQ(tuned.m_pad, 9216);
  EXPECT_EQ(tuned.chunk_bands, 2);
  EXPECT_FALSE(tuned.relaxed_rows);
  EXPECT_TRUE(tuned.measured);
  EXPECT_EQ(chunk_plan(pro_tp8(8200), c).chunks, 5);
  const RowPlan fallback = row_plan(pro_tp8(9216), c);
  EXPECT_EQ(fallback.m_pad, 9216);
  EXPECT_EQ(fallback.chunk_bands, 0);
  EXPECT_FALSE(fallback.measured);
  EXPECT_EQ(chunk_plan(pro_tp8(9216), c).chunks, 3);
  // -m as the physical M with --logical-m: the same plan.
  Config l = c;
  l.logical_m = 8200;
  EXPECT_EQ(chunk_plan(pro_tp8(9216), l).chunks, 5);
  EXPECT_NO_THROW(validate_shape_config(pro_tp8(9216), l));
  EXPECT_EQ(row_plan(pro_tp8(11264), c).chunk_bands, 1);
  EXPECT_EQ(row_plan(pro_tp8(13312), c).m_pad, 13312);
  // The TP8 profile is bf16 on both legs only.
  Config fp8 = c;
  fp8.gather_dtype = WireDtype::Fp8;
  EXPECT_FALSE(row_plan(pro_tp8(8200), fp8).measured);
}

// test_preparation_order_does_not_select_the_next_call: TP4 mxfp8, 4200 -> 4224 and 8200 -> 8256, relaxed, in 5 and
// 9 chunks of one band.
TEST(CommonChunks, WoBFlashPlansAreRelaxed) {
  const Config c = op_config(Quant::Mxfp8);
  const RowPlan a = row_plan(flash_tp4(4200), c), b = row_plan(flash_tp4(8200), c);
  EXPECT_EQ(a.m_pad, 4224);
  EXPECT_EQ(b.m_pad, 8256);
  EXPECT_TRUE(a.relaxed_rows && b.relaxed_rows);
  EXPECT_EQ(chunk_plan(flash_tp4(4200), c).chunks, 5);
  EXPECT_EQ(chunk_plan(flash_tp4(8200), c).chunks, 9);
  EXPECT_EQ(padded_m(flash_tp4(4200), c), 4224);
  EXPECT_EQ(slice_rows(flash_tp4(4200), c), 1056);
  // 11264 -> (11264, 2) on bf16 only: 11 bands in 6 puts, the last of one band.
  const ChunkPlan p = chunk_plan(flash_tp4(11264), c);
  EXPECT_EQ(p.chunks, 6);
  EXPECT_EQ(p.tail_bands, 1);
  // test_fp8_wire_has_explicit_storage_and_profile: an fp8 scatter keeps 8200's plan (9 chunks) but not 11264's.
  for (WireDtype gather : {WireDtype::Bf16, WireDtype::Fp8}) {
    Config f = c;
    f.scatter_dtype = WireDtype::Fp8;
    f.gather_dtype = gather;
    f.gather_transport = Transport::Lsa;  // op.py's default transport
    EXPECT_EQ(chunk_plan(flash_tp4(8200), f).chunks, 9);
    EXPECT_EQ(row_plan(flash_tp4(11264), f).chunk_bands, 0);
  }
  // A bf16 scatter with an fp8 gather has no fitted profile; neither has an fp8 scatter with an fp8 sdma gather.
  Config g = c;
  g.gather_dtype = WireDtype::Fp8;
  EXPECT_FALSE(row_plan(flash_tp4(4200), g).measured);
  g.scatter_dtype = WireDtype::Fp8;
  g.gather_transport = Transport::Sdma;
  EXPECT_FALSE(row_plan(flash_tp4(4200), g).measured);
}

// test_unmeasured_inputs_keep_legacy_policy: other M, K, N or schedule pad to W * BLOCK_M with chunk_bands 0.
TEST(CommonChunks, UnmeasuredInputsKeepThePadding) {
  for (const Shape& base : {pro_tp8(1), flash_tp4(1)}) {
    const Config c = op_config(base.world == 8 ? Quant::Blockscale : Quant::Mxfp8);
    for (int64_t m : {1, 4096, 4201, 8199, 11265, 16384}) {
      Shape s = base;
      s.m = m;
      const RowPlan p = row_plan(s, c);
      EXPECT_EQ(p.m_pad, padded_m(s, c.quant)) << m;
      EXPECT_EQ(p.chunk_bands, 0) << m;
      EXPECT_FALSE(p.relaxed_rows) << m;
    }
    Shape k = base;
    k.m = 8200;
    k.k = 4096;
    EXPECT_FALSE(row_plan(k, c).measured);
    Shape n = base;
    n.m = 8200;
    n.n = 8192;
    EXPECT_FALSE(row_plan(n, c).measured);
    n.n = base.n;
    EXPECT_FALSE(row_plan(n, op_config(c.quant, Schedule::None)).measured);
  }
  EXPECT_THROW(wo_b_plan(pro_tp8(1), op_config(Quant::Blockscale), 0), UsageError);
}

// op.py _row_plan(): a physical M that is not the plan's padded M of the logical M, in op.py's words.
TEST(CommonChunks, PhysicalMOtherThanThePlanIsRefusedInOpsWords) {
  Config c = op_config(Quant::Mxfp8);
  c.logical_m = 8200;
  const std::string m = usage_message(flash_tp4(4224), c);
  EXPECT_NE(m.find("M=4224 does not match planned padded M=8256; use padded_m()/pad_rows() and pass the original "
                   "logical_m"),
            std::string::npos)
      << m;
  c.logical_m = 4200;
  EXPECT_EQ(usage_message(flash_tp4(4224), c), "");
  c.logical_m = 4000;  // unmeasured: padded to W * BLOCK_M = 1024, so 4096
  EXPECT_NE(usage_message(flash_tp4(4224), c).find("planned padded M=4096"), std::string::npos);
  c.logical_m = -1;
  EXPECT_NE(usage_message(flash_tp4(4224), c).find("--logical-m"), std::string::npos);
}

// Relaxed rows (kernels_fused.py compile_fused_gemm_scatter @f3bff0ae): fused-sdma, chunk_bands, a full tile per
// rank, M a multiple of W; M is then not padded.
TEST(CommonChunks, RelaxedRowsAllowOnlyWhatMoriAllows) {
  Config c;
  c.quant = Quant::Mxfp8;
  c.relaxed_rows = true;
  c.chunk_bands = 1;
  EXPECT_EQ(usage_message(flash_tp4(4224), c), "");
  EXPECT_EQ(padded_m(flash_tp4(4224), c), 4224);
  EXPECT_EQ(chunk_plan(flash_tp4(4224), c).bands, 5);
  EXPECT_NE(usage_message(flash_tp4(4222), c).find("must divide by world_size=4"), std::string::npos);
  EXPECT_NE(usage_message(flash_tp4(1020), c).find("a full tile per peer"), std::string::npos);
  c.chunk_bands = 0;
  EXPECT_NE(usage_message(flash_tp4(4224), c).find("without --chunk-bands"), std::string::npos);
  c.chunk_bands = 1;
  c.mode = Mode::SplitSdma;
  EXPECT_NE(usage_message(flash_tp4(4224), c).find("requires fused SDMA"), std::string::npos);
}

// Each refusal carries mori's reason (bench_gemm_ar.py run() @d5443336, kernels_fused.py @f3bff0ae, op.py).
TEST(CommonChunks, KnobsMoriRefusesAreRefusedWithMorisReason) {
  const Shape s = pro_tp8(16384);
  Config c;
  c.scatter_dtype = WireDtype::Fp8;
  EXPECT_EQ(usage_message(s, c), "");
  for (Mode m : {Mode::GemmOnly, Mode::SplitSdma, Mode::SplitLsa, Mode::FusedLsa}) {
    c.mode = m;
    EXPECT_NE(usage_message(s, c).find("FP8 scatter experiment is wired only through fused-sdma"), std::string::npos)
        << to_string(m);
  }
  c = Config{};
  c.mode = Mode::SplitLsa;
  c.gather_dtype = WireDtype::Fp8;
  // Refused where a config comes in; code that runs every mode and wire gets split-lsa's bf16 (effective_config).
  EXPECT_EQ(usage_message(s, c), "");
  try {
    validate_gather_wire(c);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--mode split-lsa has no fp8 gather leg (build_lsa_ar takes no "
                                         "gather_dtype); use split-sdma or fused-sdma for --gather-dtype fp8"),
              std::string::npos);
  }
  c = Config{};
  c.mode = Mode::SplitSdma;
  c.chunk_bands = 2;
  EXPECT_NE(usage_message(s, c).find("chunk_bands requires fused SDMA"), std::string::npos);
  c = Config{};
  c.schedule = Schedule::WoB;
  EXPECT_NE(usage_message(s, c).find("--chunk-rule op"), std::string::npos);
  c.chunk_rule = ChunkRule::Op;
  EXPECT_EQ(usage_message(s, c), "");
  c.chunk_bands = 2;
  EXPECT_NE(usage_message(s, c).find("takes no chunk_bands"), std::string::npos);
  c = op_config(Quant::Blockscale, Schedule::None);
  c.chunks = 4;
  EXPECT_NE(usage_message(s, c).find("the op takes no chunk count"), std::string::npos);
  c = Config{};
  c.sdma_queues = 0;
  EXPECT_NE(usage_message(s, c).find("--sdma-queues"), std::string::npos);
  EXPECT_THROW(validate_fp8_format(Quant::Mxfp8, Fp8Format::E4M3FNUZ), UsageError);
  EXPECT_NO_THROW(validate_fp8_format(Quant::Blockscale, Fp8Format::E4M3FNUZ));
}

TEST(CommonChunks, NewKnobsParseAndPrintAsMoriSpellsThem) {
  EXPECT_EQ(parse_scatter_wire("fp8"), WireDtype::Fp8);
  EXPECT_EQ(parse_schedule("wo_b"), Schedule::WoB);
  EXPECT_EQ(parse_schedule("default"), Schedule::None);  // op.py's spelling
  EXPECT_EQ(to_string(Schedule::None), "none");
  EXPECT_EQ(to_string(ChunkRule::Op), "op");
  try {
    parse_chunk_rule("divisor");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--chunk-rule: unknown value 'divisor' (accepted: bench|op)"),
              std::string::npos);
  }
  Config c;
  c.scatter_dtype = WireDtype::Fp8;
  c.chunk_bands = 2;
  EXPECT_EQ(config_label(c), "fused-sdma/blockscale/bf16/sdma/scatter-fp8/chunk-bands-2");
  EXPECT_EQ(config_label(Config{}), "fused-sdma/blockscale/bf16/sdma");
}
