// Profiles are data: every built-in loads, every parameter says where it comes from, and a broken file is
// a UsageError naming the file and the field path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "common/errors.hpp"
#include "model/model.hpp"

using namespace gemmar;
using nlohmann::json;

namespace {

std::string write_temp(const json& doc, const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / ("gemmar_model_profile_" + name + ".json");
  std::ofstream(path) << doc.dump();
  return path.string();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

void count_leaves(const json& j, int& leaves) {
  for (const auto& [k, v] : j.items()) {
    if (!v.is_object()) continue;
    if (v.contains("value")) {
      ++leaves;
      EXPECT_TRUE(v.contains("source") && v["source"].is_string() && !v["source"].get<std::string>().empty()) << k;
    } else {
      count_leaves(v, leaves);
    }
  }
}

}  // namespace

TEST(ModelProfile, EveryBuiltinLoadsAndEveryParameterHasASource) {
  const auto names = model::builtin_profile_names();
  for (const char* want : {"mi355x", "mi300x", "h200", "h200-1gpu"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const auto& n : names) {
    const auto p = model::load_profile(n);
    EXPECT_EQ(p.name, n);
    int leaves = 0;
    count_leaves(p.source, leaves);
    EXPECT_GE(leaves, 25) << n;
    EXPECT_GT(p.model_band, p.run_to_run_spread) << n;
  }
  const auto one = model::load_profile("h200-1gpu");
  EXPECT_TRUE(one.params.one_device);
  EXPECT_GT(one.params.hbm.copy_gbps, 0);
  EXPECT_GT(one.params.copy_engine.d2d_gbps, 0);
}

TEST(ModelProfile, LoadsFromAFileAndTheFileDrivesThePrediction) {
  json doc = model::load_profile("mi355x").source;
  doc["name"] = "mi355x-slow-links";
  doc["link"]["gbps_per_direction"]["value"] = 38.25;
  const auto path = write_temp(doc, "slow");
  const auto slow = model::load_profile(path);
  EXPECT_EQ(slow.name, "mi355x-slow-links");
  EXPECT_GT(model::predict(slow, Shape{}, Config{}).total_us,
            model::predict(model::load_profile("mi355x"), Shape{}, Config{}).total_us);
  std::filesystem::remove(path);
}

TEST(ModelProfile, MissingFieldNamesFileAndPath) {
  json doc = model::load_profile("mi355x").source;
  doc["link"].erase("gbps_per_direction");
  const auto path = write_temp(doc, "missing");
  const std::string e = error_of([&] { model::load_profile(path); });
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("link.gbps_per_direction: missing field"), std::string::npos) << e;
  std::filesystem::remove(path);
}

TEST(ModelProfile, NegativeOrZeroBandwidthNamesTheField) {
  for (double bad : {-76.5, 0.0}) {
    json doc = model::load_profile("mi355x").source;
    doc["hbm"]["peak_gbps"]["value"] = bad;
    const auto path = write_temp(doc, "negative");
    const std::string e = error_of([&] { model::load_profile(path); });
    EXPECT_NE(e.find(path + ": hbm.peak_gbps: must be > 0"), std::string::npos) << e;
    std::filesystem::remove(path);
  }
}

TEST(ModelProfile, WrongTypeMissingSourceAndBadEfficiencyNameTheField) {
  struct Case {
    std::function<void(json&)> mutate;
    std::string expect;
  };
  const std::vector<Case> cases{
      {[](json& d) { d["pull"]["remote_latency_us"]["value"] = "1.3"; }, "pull.remote_latency_us: must be a number"},
      {[](json& d) { d["gemm"]["achieved_efficiency"]["value"] = 1.5; }, "gemm.achieved_efficiency: must be in (0, 1]"},
      {[](json& d) { d["sync"]["barrier_us"].erase("source"); }, "sync.barrier_us.source: missing field"},
      {[](json& d) { d["link"]["medium"]["value"] = "pcie"; }, "link.medium: unknown medium"},
      {[](json& d) { d["emulated_on_one_device"]["value"] = 1; }, "emulated_on_one_device: must be true or false"},
      {[](json& d) { d["hbm"] = 8000; }, "hbm.peak_gbps: parent is not an object"},
      {[](json& d) { d["link"]["links"] = 7; }, "link.links: must be an object"},
      {[](json& d) { d.erase("model_band"); }, "model_band: missing field"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    json doc = model::load_profile("mi355x").source;
    cases[i].mutate(doc);
    const auto path = write_temp(doc, "case" + std::to_string(i));
    const std::string e = error_of([&] { model::load_profile(path); });
    EXPECT_NE(e.find(cases[i].expect), std::string::npos) << "case " << i << ": " << e;
    EXPECT_NE(e.find(path), std::string::npos) << e;
    std::filesystem::remove(path);
  }
}

TEST(ModelProfile, OneDeviceProfileNeedsTheMeasuredCopyRates) {
  json doc = model::load_profile("h200-1gpu").source;
  doc["copy_engine"].erase("d2d_gbps");
  const auto path = write_temp(doc, "nod2d");
  EXPECT_NE(error_of([&] { model::load_profile(path); }).find("copy_engine.d2d_gbps: missing field"),
            std::string::npos);
  std::filesystem::remove(path);
}

TEST(ModelProfile, UnknownNameAndBadJsonAreUsageErrors) {
  EXPECT_NE(error_of([] { model::load_profile("mi999x"); }).find("--profile"), std::string::npos);
  const auto path = std::filesystem::temp_directory_path() / "gemmar_model_profile_bad.json";
  std::ofstream(path) << "{\"name\": ";
  EXPECT_NE(error_of([&] { model::load_profile(path.string()); }).find("not valid JSON"), std::string::npos);
  std::filesystem::remove(path);
}

// Quants are data: the ratios are keyed by quant name, the base quant (achieved_efficiency's) takes none, a name
// that is no quant is refused, and a quant the profile does not list is predicted at the base's rate with a note.
TEST(ModelProfile, EfficiencyRatiosAreKeyedByQuant) {
  const auto prof = model::load_profile("mi355x");
  EXPECT_DOUBLE_EQ(prof.params.gemm.ratio(Quant::Ptpc),
                   prof.source["gemm"]["efficiency_ratio"]["ptpc"]["value"].get<double>());
  EXPECT_DOUBLE_EQ(prof.params.gemm.ratio(Quant::Blockscale), 1.0);
  struct Case {
    std::function<void(json&)> mutate;
    std::string expect;
  };
  const std::vector<Case> cases{
      {[](json& d) {
         d["gemm"]["efficiency_ratio"]["fp4"] = {{"value", 1.0}, {"source", "x"}};
       },
       "gemm.efficiency_ratio.fp4: not a quant"},
      {[](json& d) {
         d["gemm"]["efficiency_ratio"]["blockscale"] = {{"value", 1.0}, {"source", "x"}};
       },
       "gemm.efficiency_ratio.blockscale: the base quant's rate is gemm.achieved_efficiency"},
      {[](json& d) { d["gemm"]["efficiency_ratio"]["mxfp8"]["value"] = 9.0; },
       "gemm.efficiency_ratio.mxfp8: pushes the achieved efficiency above dense peak"},
      {[](json& d) { d["gemm"]["efficiency_ratio"]["ptpc"].erase("source"); }, "gemm.efficiency_ratio.ptpc.source"},
      {[](json& d) { d["gemm"]["efficiency_ratio"] = 1.5; }, "gemm.efficiency_ratio: must be an object"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    json doc = prof.source;
    cases[i].mutate(doc);
    const auto path = write_temp(doc, "ratio" + std::to_string(i));
    const std::string e = error_of([&] { model::load_profile(path); });
    EXPECT_NE(e.find(cases[i].expect), std::string::npos) << "case " << i << ": " << e;
    std::filesystem::remove(path);
  }
  json doc = prof.source;
  doc["gemm"]["efficiency_ratio"].erase("mxfp8");
  const auto path = write_temp(doc, "nomxfp8");
  const auto without = model::load_profile(path);
  std::filesystem::remove(path);
  Shape s;
  s.world = 4;
  s.n = 5120;
  Config c;
  c.mode = Mode::GemmOnly;
  c.quant = Quant::Mxfp8;
  const auto pr = model::predict(without, s, c);
  ASSERT_EQ(pr.notes.size(), 1u);
  EXPECT_NE(pr.notes[0].find("has no gemm.efficiency_ratio.mxfp8"), std::string::npos) << pr.notes[0];
  EXPECT_GT(pr.total_us, model::predict(prof, s, c).total_us);  // mxfp8's K loop is faster than blockscale's
  EXPECT_TRUE(model::predict(prof, s, c).notes.empty());
}

// Profiles are data all the way: the help lists the built-in names and each profile says which devices it is the
// default for, so one more file in model/profiles/ appears in both (the file glob embeds it).
TEST(ModelProfile, DevicesAndHelpComeFromTheProfiles) {
  EXPECT_EQ(model::profile_choices(), "mi355x|h200|h200-1gpu|mi300x");
  EXPECT_EQ(model::default_profile_for("gpu", "AMD Instinct MI355X", 1), "mi355x");
  EXPECT_EQ(model::default_profile_for("gpu", "gfx942", 1), "mi300x");
  EXPECT_EQ(model::default_profile_for("gpu", "NVIDIA H100 80GB HBM3", 1), "h200");
  EXPECT_EQ(model::default_profile_for("gpu", "NVIDIA H200", 8), "h200-1gpu");
  EXPECT_EQ(model::default_profile_for("gpu", "Some Future GPU", 1), "mi355x");
  EXPECT_EQ(model::default_profile_for("cpu", "AMD Instinct MI300X", 1), "mi355x");

  json doc = model::load_profile("mi355x").source;
  doc["name"] = "b300";
  doc["devices"] = {{"value", {{"names", {"B300", "blackwell ultra"}}, {"ranks", "own"}}},
                    {"source", "a test's profile file"}};
  const auto path = write_temp(doc, "b300");
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  auto profiles = model::embedded_profiles();
  profiles["b300"] = text.str();
  EXPECT_EQ(model::profile_choices(profiles), "mi355x|b300|h200|h200-1gpu|mi300x");
  EXPECT_EQ(model::default_profile_for(profiles, "gpu", "NVIDIA B300 SXM6", 1), "b300");
  // A name beats a family ("nvidia", h200's catch-all); with several ranks per device b300 does not fit.
  EXPECT_EQ(model::default_profile_for(profiles, "gpu", "NVIDIA B300 SXM6", 2), "h200-1gpu");
  EXPECT_EQ(model::default_profile_for(profiles, "gpu", "NVIDIA H200", 1), "h200");

  // Two profiles that name a device as well as each other are a fault of the profiles.
  doc["devices"]["value"]["names"] = {"h200"};
  doc["devices"]["value"]["ranks"] = "any";
  const auto clash = write_temp(doc, "clash");
  std::ifstream clash_in(clash);
  std::ostringstream clash_text;
  clash_text << clash_in.rdbuf();
  std::filesystem::remove(clash);
  profiles["b300"] = clash_text.str();
  try {
    model::default_profile_for(profiles, "gpu", "NVIDIA H200", 1);
    ADD_FAILURE() << "a tie between two profiles must not pick one";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matches profiles"), std::string::npos) << e.what();
  }

  doc["devices"]["value"]["ranks"] = "some";
  const auto bad = write_temp(doc, "b300bad");
  EXPECT_NE(error_of([&] { model::load_profile(bad); }).find("devices.ranks: 'some' is none of any|own|shared"),
            std::string::npos);
  std::filesystem::remove(bad);
}
