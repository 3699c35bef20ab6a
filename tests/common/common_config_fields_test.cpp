// The config field table (common/config_fields.hpp): one row per Config field, JSON and dump-metadata round trips,
// the readers' error wording, and python/gemmar_dump.py's CONFIG against the table.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/config_fields.hpp"
#include "common/errors.hpp"
#include "support/cli.hpp"

using namespace gemmar;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Every field away from its default (a config mori runs: the op's wo_b schedule at DeepSeek-V4-Flash TP4).
Config every_knob_set() {
  Config c;
  c.quant = Quant::Mxfp8;
  c.gather_dtype = WireDtype::Fp8;
  c.gather_transport = Transport::Lsa;
  c.pull_blocks = 96;
  c.fuse_quantize = true;
  c.fuse_reduce_push = true;
  c.gather_bands = 4;
  c.publish = Publish::Fence;
  c.scatter_dtype = WireDtype::Fp8;
  c.chunk_rule = ChunkRule::Op;
  c.schedule = Schedule::WoB;
  c.chunks = 3;
  c.chunk_bands = 2;
  c.relaxed_rows = true;
  c.logical_m = 4200;
  c.sdma_queues = 1;
  c.mode = Mode::SplitSdma;
  return c;
}

std::string error_of(const json& j) {
  Config c;
  try {
    config_from_json(j, "x.log:3", c);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// A field added to Config without a row would be dropped by every reader: the setter of each row must move the
// config away from its default, and all of them together must reach every_knob_set().
TEST(CommonConfigFields, EveryRowReadsAndWritesItsOwnMember) {
  const Config dflt, all = every_knob_set();
  std::set<std::string> keys, flags;
  for (const ConfigField& f : config_fields()) {
    EXPECT_TRUE(keys.insert(f.key).second) << f.key << " twice";
    EXPECT_TRUE(flags.insert(f.flag).second) << f.flag << " twice";
    EXPECT_NE(field_text(f, all), field_text(f, dflt)) << f.key << ": every_knob_set() leaves it at its default";
    EXPECT_EQ(find_config_field(f.key), &f);
    for (const char* k : f.old_keys) EXPECT_EQ(find_config_field(k), &f) << k;
  }
  EXPECT_EQ(keys.size(), 17u) << "a new Config member needs its row (and every_knob_set() its value)";
  Config c;
  for (const ConfigField& f : config_fields()) {
    if (f.kind == FieldKind::Enum)
      f.set_text(c, field_text(f, all), f.key);
    else
      f.set_int(c, f.get_int(all));
  }
  EXPECT_EQ(config_to_metadata(c), config_to_metadata(all));
  EXPECT_EQ(config_label(c), config_label(all));
}

// Config -> JSON -> Config and Config -> metadata -> Config keep every field; a document without the new keys keeps
// the defaults they had before the keys existed.
TEST(CommonConfigFields, JsonAndMetadataRoundTripsKeepEveryField) {
  const Config all = every_knob_set();
  const json j = config_to_json(all);
  EXPECT_EQ(j.at("scatter_dtype"), "fp8");
  EXPECT_EQ(j.at("relaxed_rows"), true);
  EXPECT_EQ(j.at("chunk_bands"), 2);
  EXPECT_EQ(j.at("schedule"), "wo_b");
  Config back;
  config_from_json(j, "doc", back);
  EXPECT_EQ(config_to_metadata(back), config_to_metadata(all));
  Config meta_back;
  config_from_metadata(config_to_metadata(all), "rank0.safetensors", meta_back);
  EXPECT_EQ(config_to_metadata(meta_back), config_to_metadata(all));

  const json old = {{"mode", "split-sdma"}, {"quant", "ptpc"}, {"gather_dtype", "fp8"}, {"fuse_quantize", false}};
  Config o;
  config_from_json(old, "old.json", o);
  EXPECT_EQ(o.mode, Mode::SplitSdma);
  EXPECT_EQ(o.gather_dtype, WireDtype::Fp8);
  EXPECT_EQ(o.scatter_dtype, WireDtype::Bf16);
  EXPECT_EQ(o.chunk_bands, 0);
  EXPECT_FALSE(o.relaxed_rows);
  EXPECT_EQ(o.chunk_rule, ChunkRule::Bench);
  EXPECT_EQ(o.schedule, Schedule::None);
  EXPECT_EQ(o.sdma_queues, 8);
}

// mori's RESULT_JSON spellings (bench_gemm_ar.py @d5443336 :561-604): bools, nulls, Python's integral floats;
// the schedule worker's "scatter"/"gather" (gemm_ar_schedule_worker.py @f3bff0ae) as old keys.
TEST(CommonConfigFields, ReadsMorisSpellingsAndOldKeys) {
  Config c;
  config_from_json(json::parse(R"({"mode": "fused-sdma", "scatter_dtype": "fp8", "chunk_bands": 2.0,
                                   "relaxed_rows": 1, "sdma_queues": 8, "chunks": null, "schedule": "default"})"),
                   "r", c);
  EXPECT_EQ(c.scatter_dtype, WireDtype::Fp8);
  EXPECT_EQ(c.chunk_bands, 2);
  EXPECT_TRUE(c.relaxed_rows);
  EXPECT_EQ(c.schedule, Schedule::None);
  Config w;
  config_from_json(json::parse(R"({"quant": "mxfp8", "schedule": "wo_b", "scatter": "fp8", "gather": "bf16"})"), "w",
                   w);
  EXPECT_EQ(w.scatter_dtype, WireDtype::Fp8);
  EXPECT_EQ(w.gather_dtype, WireDtype::Bf16);
  EXPECT_NE(error_of(json::parse(R"({"gather_dtype": "fp8", "gather": "bf16"})"))
                .find("x.log:3: field 'gather' is bf16 but gather_dtype is fp8"),
            std::string::npos);
  // "skip" leaves a key to its reader (a record's chunks is the resolved count).
  Config s;
  config_from_json(json{{"chunks", 4}}, "r", s, {"chunks"});
  EXPECT_EQ(s.chunks, 0);
  apply_resolved_chunks(s, 4);
  EXPECT_EQ(s.chunks, 4);
  Config op;
  op.chunk_rule = ChunkRule::Op;
  apply_resolved_chunks(op, 3);
  EXPECT_EQ(op.chunks, 0) << "the op's chunks are derived, never asked";
}

// The wording of each reader: the record reader's for JSON, verify's for metadata, the option's on the command line.
TEST(CommonConfigFields, BadValuesAreNamedAsEachReaderNamesThem) {
  EXPECT_EQ(error_of(json{{"scatter_dtype", "fp4"}}),
            "x.log:3: field scatter_dtype: unknown value 'fp4' (accepted: bf16|fp8)");
  EXPECT_EQ(error_of(json{{"chunk_bands", "2"}}), "x.log:3: field 'chunk_bands' must be an integer, got string");
  EXPECT_EQ(error_of(json{{"chunk_bands", -1}}), "x.log:3: field 'chunk_bands' is -1, not in [0, 4096]");
  EXPECT_EQ(error_of(json{{"relaxed_rows", "yes"}}), "x.log:3: field 'relaxed_rows' must be a boolean, got string");
  EXPECT_EQ(error_of(json{{"schedule", 1}}), "x.log:3: field 'schedule' must be a string, got number");
  Config c;
  try {
    config_from_metadata({{"relaxed_rows", "yes"}}, "rank1.safetensors", c);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "rank1.safetensors: metadata relaxed_rows='yes' is not a boolean (0|1|true|false)");
  }
  try {
    config_from_metadata({{"sdma_queues", "0"}}, "rank1.safetensors", c);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "rank1.safetensors: metadata sdma_queues='0' is not an integer in [1, 64]");
  }
  try {
    set_field_option(*find_config_field("chunk_bands"), c, int64_t(5000));
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--chunk-bands: 5000 is out of range [0, 4096] (0: the chunk rule decides)"),
              std::string::npos)
        << e.what();
  }
  try {
    set_field_option(*find_config_field("schedule"), c, "wob");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--schedule: unknown value 'wob'"), std::string::npos) << e.what();
  }
}

// python/gemmar_dump.py's CONFIG is the table's keys with its defaults as text: a row added here without the python
// side (or a changed default) fails.
TEST(CommonConfigFields, PythonDumpConfigEqualsTheTable) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  const fs::path py = fs::path(GEMMAR_TEST_DATA_DIR).parent_path().parent_path() / "python";
  const auto r = test::run_program(
      "/usr/bin/python3",
      {"-c",
       "import json, sys; sys.path.insert(0, sys.argv[1]); import gemmar_dump as g; "
       "print(json.dumps({'config': g.CONFIG, 'true': g._config_text(True), 'two': g._config_text(2)}))",
       py.string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string& text = r.out;
  const json got = json::parse(text);
  json want = json::object();
  for (const auto& [key, value] : config_to_metadata(Config{})) want[key] = value;
  EXPECT_EQ(got.at("config"), want);
  EXPECT_EQ(got.at("true"), "1");  // what config_from_metadata reads as a bool
  EXPECT_EQ(got.at("two"), "2");
}
