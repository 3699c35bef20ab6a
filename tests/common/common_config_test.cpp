#include <gtest/gtest.h>

#include "common/config.hpp"
#include "common/errors.hpp"

using namespace gemmar;

TEST(CommonConfig, PaddingBlockscaleIsWorldTimes128) {
  Shape s;
  s.m = 4000;
  EXPECT_EQ(padded_m(s, Quant::Blockscale), 4096);
  EXPECT_EQ(slice_rows(s, Quant::Blockscale), 512);
  EXPECT_EQ(padded_m(s, Quant::Ptpc), 4096);
  s.m = 16384;
  EXPECT_EQ(slice_rows(s, Quant::Blockscale), 2048);
}

TEST(CommonConfig, BadShapesAreUsageErrors) {
  Config c;
  Shape s;
  s.k = 2000;
  EXPECT_THROW(validate_shape_config(s, c), UsageError);
  s = Shape{};
  s.world = 6;
  EXPECT_THROW(validate_shape_config(s, c), UsageError);
  s = Shape{};
  s.n = 7168 + 128;
  c.gather_dtype = WireDtype::Fp8;
  EXPECT_THROW(validate_shape_config(s, c), UsageError);
  c.gather_dtype = WireDtype::Bf16;
  EXPECT_NO_THROW(validate_shape_config(s, c));
  s = Shape{};
  s.m = 1000;
  EXPECT_THROW(validate_shape_config(s, c, /*require_padded=*/true), UsageError);
  s.m = int64_t(1) << 40;
  EXPECT_THROW(validate_shape_config(s, c), UsageError);
}

TEST(CommonConfig, ParseNamesTheOptionOnUnknownValue) {
  try {
    parse_mode("fused-nvl");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--mode"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("fused-sdma"), std::string::npos);
  }
  EXPECT_EQ(parse_mode("split-lsa"), Mode::SplitLsa);
  EXPECT_EQ(to_string(Quant::Mxfp8), "mxfp8");
}

TEST(CommonConfig, SplitLsaIsBf16Only) {
  Config c;
  c.mode = Mode::SplitLsa;
  c.gather_dtype = WireDtype::Fp8;
  EXPECT_FALSE(uses_fp8_wire(c));
  EXPECT_EQ(config_label(c), "split-lsa/blockscale/bf16/lsa");
}
