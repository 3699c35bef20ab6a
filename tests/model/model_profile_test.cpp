// Profiles are data: every built-in loads, every parameter says where it comes from, and a broken file is
// a UsageError naming the file and the field path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

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
