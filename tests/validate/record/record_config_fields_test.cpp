// Run records and the config field table: mori's RESULT_JSON of 2026-09 (bench_gemm_ar.py @d5443336 :561-604,
// with scatter_dtype, chunk_bands, relaxed_rows and sdma_queues) keeps its knobs through a read and a write, a
// record of the version gemmar followed before (fc892894, none of them) keeps its meaning, and a record of a
// combination mori refuses is refused with mori's reason.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/config_fields.hpp"
#include "common/errors.hpp"
#include "validate/record/run_record.hpp"

namespace {

using namespace gemmar;
using nlohmann::json;

// A fused-sdma line as bench_gemm_ar.py @d5443336 prints it (sort_keys), at W=8 blockscale M=9216 with
// --chunk-bands 2: 9 bands per destination, so chunks = ceil(9 / 2) = 5.
json mori_2026_09_line() {
  return json::parse(R"({"atomic_order": "acq_rel", "block_m": 128, "block_n": 256, "chunk_bands": 2, "chunks": 5,
    "critical_rank": 0, "fuse_quantize": false, "fuse_reduce_push": false, "gather_bands": 8, "gather_dtype": "bf16",
    "gather_transport": "sdma", "k": 2048, "lane_transpose": true, "m": 9216, "max_rank_time_us": 700.5,
    "mode": "fused-sdma", "n": 7168, "per_rank_time_us": [700.5, 690, 691, 692, 693, 694, 695, 696],
    "permlane": true, "publish": "writethrough", "quant": "blockscale", "rel_l2": 0.0262, "relaxed_rows": false,
    "resolved_tile_order": "rotated", "scatter_dtype": "fp8", "sdma_queues": 8, "stop_after": "all",
    "swap_ab": true, "tile_order": "auto", "timing": "graph", "validated": true, "world_size": 8})");
}

std::string refusal(const json& j) {
  try {
    run_record_from_json(j, "bench.log:7");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RecordConfigFields, MoriLineKeepsItsKnobsThroughAWriteAndARead) {
  const RunRecord r = run_record_from_json(mori_2026_09_line(), "bench.log:7");
  EXPECT_EQ(r.config.scatter_dtype, WireDtype::Fp8);
  EXPECT_EQ(r.config.chunk_bands, 2);
  EXPECT_FALSE(r.config.relaxed_rows);
  EXPECT_EQ(r.config.sdma_queues, 8);
  ASSERT_TRUE(r.chunks);
  EXPECT_EQ(*r.chunks, 5);
  EXPECT_EQ(r.config.chunks, 0) << "under --chunk-bands the printed chunks is derived, not asked";
  EXPECT_EQ(effective_chunks(r.shape, r.config), 5);

  const json written = run_record_to_json(r);
  EXPECT_EQ(written.at("scatter_dtype"), "fp8");
  EXPECT_EQ(written.at("chunk_bands"), 2);
  EXPECT_EQ(written.at("relaxed_rows"), false);
  EXPECT_EQ(written.at("chunks"), 5);
  const RunRecord again = run_record_from_json(written, "again");
  EXPECT_EQ(config_to_metadata(again.config), config_to_metadata(r.config));
  EXPECT_EQ(config_label(again.config), "fused-sdma/blockscale/bf16/sdma/scatter-fp8/chunk-bands-2");
}

// fc892894's RESULT_JSON: no scatter_dtype, chunk_bands, relaxed_rows or sdma_queues; its chunks is the bench's
// resolved count and stays the asked one (8 divides the 16 bands at M = 16384).
TEST(RecordConfigFields, RecordWithoutTheNewKeysKeepsItsMeaning) {
  json j = mori_2026_09_line();
  for (const char* k : {"scatter_dtype", "chunk_bands", "relaxed_rows", "sdma_queues"}) j.erase(k);
  j["m"] = 16384;
  j["chunks"] = 8;
  j["rel_l2"] = 0.00235;
  const RunRecord r = run_record_from_json(j, "old.log:1");
  EXPECT_EQ(r.config.scatter_dtype, WireDtype::Bf16);
  EXPECT_EQ(r.config.chunk_bands, 0);
  EXPECT_FALSE(r.config.relaxed_rows);
  EXPECT_EQ(r.config.chunk_rule, ChunkRule::Bench);
  EXPECT_EQ(r.config.chunks, 8);
  EXPECT_EQ(config_label(r.config), "fused-sdma/blockscale/bf16/sdma");
  const json written = run_record_to_json(r);
  EXPECT_EQ(written.at("scatter_dtype"), "bf16");
  EXPECT_EQ(written.at("chunks"), 8);
}

TEST(RecordConfigFields, CombinationsMoriRefusesAreRefusedWithMorisReason) {
  json split = mori_2026_09_line();
  split["mode"] = "split-sdma";
  split.erase("chunk_bands");
  split["chunks"] = nullptr;
  EXPECT_NE(refusal(split).find("bench.log:7: --scatter-dtype: fp8 with --mode split-sdma: FP8 scatter experiment is "
                                "wired only through fused-sdma"),
            std::string::npos)
      << refusal(split);
  json lsa = mori_2026_09_line();
  lsa["mode"] = "split-lsa";
  lsa["scatter_dtype"] = "bf16";
  lsa["gather_dtype"] = "fp8";
  lsa.erase("chunk_bands");
  EXPECT_NE(refusal(lsa).find("--mode split-lsa has no fp8 gather leg (build_lsa_ar takes no gather_dtype)"),
            std::string::npos)
      << refusal(lsa);
  json relaxed = mori_2026_09_line();
  relaxed["relaxed_rows"] = true;
  relaxed["m"] = 9220;  // not a multiple of W = 8
  EXPECT_NE(refusal(relaxed).find("m=9220 must divide by world_size=8"), std::string::npos) << refusal(relaxed);
  json typo = mori_2026_09_line();
  typo["scatter_dtype"] = "e4m3";
  EXPECT_NE(refusal(typo).find("bench.log:7: field scatter_dtype: unknown value 'e4m3' (accepted: bf16|fp8)"),
            std::string::npos)
      << refusal(typo);
}
