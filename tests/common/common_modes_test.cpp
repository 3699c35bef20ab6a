#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/config.hpp"
#include "common/modes.hpp"

using namespace gemmar;
namespace fs = std::filesystem;

TEST(CommonModes, EnumeratorsAreTheTableRows) {
  for (std::size_t i = 0; i < std::size(kModeTable); ++i) EXPECT_EQ(int(kModeTable[i].mode), int(i));
  for (std::size_t i = 0; i < std::size(kQuantTable); ++i) EXPECT_EQ(int(kQuantTable[i].quant), int(i));
  EXPECT_EQ(all_modes().size(), std::size(kModeTable));
  for (const QuantTraits& t : kQuantTable) EXPECT_EQ(parse_quant(t.name), t.quant);
  for (const ModeTraits& t : kModeTable) EXPECT_EQ(to_string(t.mode), t.name);
  EXPECT_STREQ(mode_spellings(), "gemm-only|split-sdma|fused-sdma|split-lsa|fused-lsa");
  EXPECT_STREQ(quant_spellings(), "blockscale|ptpc|mxfp8");
}

// The geometry the switch statements spelled out before the table (docs/spec.md 1.2), for a 256 x 2048 A and a
// 1024 x 2048 B.
TEST(CommonModes, ScaleGeometryMatchesTheSpec) {
  const ScaleBlock& ba = scale_block(Quant::Blockscale, false);
  const ScaleBlock& bb = scale_block(Quant::Blockscale, true);
  EXPECT_EQ(scale_count(ba, 256, 2048), 16 * 256);
  EXPECT_EQ(scale_index(ba, 256, 2048, 5, 300), (300 / 128) * 256 + 5);  // column-major [K/128, M]
  EXPECT_EQ(scale_count(bb, 1000, 2048), 8 * 16);                        // rows rounded up to 128
  EXPECT_EQ(scale_index(bb, 1024, 2048, 300, 700), (300 / 128) * 16 + 700 / 128);
  const ScaleBlock& p = scale_block(Quant::Ptpc, true);
  EXPECT_EQ(scale_count(p, 1024, 2048), 1024);
  EXPECT_EQ(scale_index(p, 1024, 2048, 77, 2000), 77);
  const ScaleBlock& mx = scale_block(Quant::Mxfp8, false);
  EXPECT_EQ(scale_count(mx, 4, 2048), 4 * 64);
  EXPECT_EQ(scale_index(mx, 4, 2048, 3, 100), 3 * 64 + 100 / 32);
  EXPECT_TRUE(quant_traits(Quant::Mxfp8).e8m0_scales);
  EXPECT_FALSE(quant_traits(Quant::Ptpc).e8m0_scales);
}

namespace {
nlohmann::json cxx_tables() {
  nlohmann::json j;
  for (const ModeTraits& t : kModeTable)
    j["modes"][t.name] = {{"collective", t.collective},
                          {"fused", t.fused},
                          {"scatter_by_copy_engine", t.scatter_by_copy_engine},
                          {"two_stage_allreduce", t.two_stage_allreduce},
                          {"fp8_wire", t.fp8_wire}};
  auto block = [](const ScaleBlock& s) { return nlohmann::json{{"rows", s.rows}, {"k", s.k}, {"k_major", s.k_major}}; };
  for (const QuantTraits& t : kQuantTable)
    j["quants"][t.name] = {
        {"block_m", t.block_m}, {"e8m0_scales", t.e8m0_scales}, {"a", block(t.a)}, {"b", block(t.b)}};
  return j;
}
}  // namespace

// python/gemmar_dump.py lays out the scales a benchmark hands it from its own copy of the rows: a new quant or a
// changed block in common/modes.hpp without the python side fails here.
TEST(CommonModes, PythonMirrorEqualsTheTable) {
  if (std::system("/usr/bin/python3 -c 'import json' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const fs::path py = fs::path(GEMMAR_TEST_DATA_DIR).parent_path().parent_path() / "python";
  const std::string cmd =
      "/usr/bin/python3 -c 'import json, sys; sys.path.insert(0, sys.argv[1]); import gemmar_dump "
      "as g; print(json.dumps({\"modes\": g.MODES, \"quants\": g.QUANTS}))' '" +
      py.string() + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  ASSERT_TRUE(p);
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p.get())) > 0;) text.append(buf, n);
  ASSERT_FALSE(text.empty()) << cmd;
  EXPECT_EQ(nlohmann::json::parse(text), cxx_tables());
}
