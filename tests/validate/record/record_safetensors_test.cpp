// The safetensors reader and writer (validate/record/safetensors.hpp): a round trip, and every lie a header can
// tell rejected with a UsageError (exit 2) that names the file and, where there is one, the tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "support/cli.hpp"
#include "validate/record/safetensors.hpp"

namespace {

namespace fs = std::filesystem;
using gemmar::test::scratch_dir;
using gemmar::test::slurp;
using gemmar::test::write_text;
namespace st = gemmar::safetensors;

// A file written by hand: header text as given, then `data_bytes` bytes of data.
std::string raw_file(const std::string& header, size_t data_bytes) {
  std::string s(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char(n >> (8 * i));
  return s + header + std::string(data_bytes, '\x01');
}

std::string open_error(const fs::path& p) {
  try {
    (void)st::File::open(p.string());
  } catch (const gemmar::UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(RecordSafetensors, RoundTrip) {
  const fs::path d = scratch_dir("st");
  const std::vector<float> f{1.0f, -2.5f, 3.0f, 4.0f, 5.0f, 6.0f};
  const std::vector<uint16_t> h{0x3f80, 0xc000};
  const std::vector<uint8_t> u{7, 8, 9};
  st::write_file((d / "x.safetensors").string(), {{"rank", "3"}, {"quant", "blockscale"}},
                 {{"f", "F32", {2, 3}, f.data(), 24}, {"h", "BF16", {2}, h.data(), 4}, {"u", "U8", {3}, u.data(), 3}});
  const st::File file = st::File::open((d / "x.safetensors").string());
  EXPECT_EQ(file.metadata().at("rank"), "3");
  EXPECT_EQ(file.metadata().at("quant"), "blockscale");
  const auto& t = file.tensor("f");
  EXPECT_EQ(t.dtype, "F32");
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  std::vector<float> back(6);
  std::memcpy(back.data(), file.data(t), 24);
  EXPECT_EQ(back, f);
  EXPECT_EQ(file.data(file.tensor("u"))[2], 9);
  EXPECT_EQ(file.names().size(), 3u);
  // The header is padded to 8 bytes as the reference implementation does.
  const std::string bytes = slurp(d / "x.safetensors");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[size_t(i)]);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(open_error(d / "x.safetensors"), "");
  try {
    (void)file.tensor("nope");
    FAIL();
  } catch (const gemmar::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no tensor 'nope'"), std::string::npos);
  }
}

struct Bad {
  const char* name;
  std::string bytes;
  const char* expect;  // a fragment of the message
};

TEST(RecordSafetensors, EveryHeaderLieIsAUsageErrorNamingFileAndTensor) {
  const fs::path d = scratch_dir("st_bad");
  const std::string ok = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::vector<Bad> cases{
      {"short", std::string("abc"), "too short"},
      {"len_past_end", raw_file(ok, 8).substr(0, 20), "runs past the end"},
      {"not_json", raw_file("{not json", 0), "not valid JSON"},
      {"not_object", raw_file("[1,2]", 0), "not a JSON object"},
      {"unknown_dtype", raw_file(R"({"t":{"dtype":"F99","shape":[2],"data_offsets":[0,8]}})", 8),
       "tensor 't': unknown dtype"},
      {"shape_lies", raw_file(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "tensor 't': shape [3]"},
      {"truncated", raw_file(ok, 5), "tensor 't': its bytes end at 8"},
      {"overlap",
       raw_file(
           R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"u":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           8),
       "overlaps"},
      {"hole", raw_file(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "a hole"},
      {"tail", raw_file(ok, 12), "no tensor covers"},
      {"meta_not_string", raw_file(R"({"__metadata__":{"rank":3}})", 0), "'rank' is not a string"},
      {"offsets_bad", raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8]}})", 8), "data_offsets must be"},
      {"neg_shape", raw_file(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "non-negative"},
  };
  for (const auto& c : cases) {
    const fs::path p = d / (std::string(c.name) + ".safetensors");
    write_text(p, c.bytes);
    const std::string msg = open_error(p);
    EXPECT_NE(msg.find(p.string()), std::string::npos) << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": " << msg;
  }
  EXPECT_NE(open_error(d / "missing.safetensors").find("cannot open"), std::string::npos);
}

}  // namespace
