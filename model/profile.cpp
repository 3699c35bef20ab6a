#include "model/profile.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/errors.hpp"
#include "model/model.hpp"

namespace gemmar::model {
namespace {

enum class Rule { Positive, NonNegative, Fraction /* (0, 1] */, AtLeastOne };

class Reader {
 public:
  Reader(const nlohmann::json& doc, std::string origin) : doc_(doc), origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw UsageError(origin_ + ": " + path + ": " + what);
  }

  // The leaf {"value": ..., "source": "..."} at a dotted path.
  const nlohmann::json& leaf(const std::string& path) const {
    const nlohmann::json* node = &doc_;
    std::string walked;
    std::istringstream parts(path);
    for (std::string key; std::getline(parts, key, '.');) {
      walked += walked.empty() ? key : "." + key;
      if (!node->is_object()) fail(walked, "parent is not an object");
      const auto it = node->find(key);
      if (it == node->end()) fail(walked, "missing field");
      node = &*it;
    }
    if (!node->is_object()) fail(path, "must be an object {\"value\": ..., \"source\": \"...\"}");
    const auto src = node->find("source");
    if (src == node->end()) fail(path + ".source", "missing field (every parameter says where it comes from)");
    if (!src->is_string() || src->get<std::string>().empty()) fail(path + ".source", "must be a non-empty string");
    if (node->find("value") == node->end()) fail(path + ".value", "missing field");
    return (*node)["value"];
  }

  double number(const std::string& path, Rule rule) const {
    const auto& v = leaf(path);
    if (!v.is_number()) fail(path, std::string("must be a number, got ") + v.type_name());
    const double x = v.get<double>();
    if (!std::isfinite(x)) fail(path, "must be finite");
    switch (rule) {
      case Rule::Positive:
        if (!(x > 0)) fail(path, "must be > 0, got " + fmt(x));
        break;
      case Rule::NonNegative:
        if (!(x >= 0)) fail(path, "must be >= 0, got " + fmt(x));
        break;
      case Rule::Fraction:
        if (!(x > 0 && x <= 1)) fail(path, "must be in (0, 1], got " + fmt(x));
        break;
      case Rule::AtLeastOne:
        if (!(x >= 1)) fail(path, "must be >= 1, got " + fmt(x));
        break;
    }
    return x;
  }

  // An optional parameter: `fallback` when the profile does not have it.
  double number_or(const std::string& path, Rule rule, double fallback) const {
    const nlohmann::json* node = &doc_;
    std::istringstream parts(path);
    for (std::string key; std::getline(parts, key, '.');) {
      if (!node->is_object() || !node->contains(key)) return fallback;
      node = &node->at(key);
    }
    return number(path, rule);
  }

  bool boolean(const std::string& path) const {
    const auto& v = leaf(path);
    if (!v.is_boolean()) fail(path, std::string("must be true or false, got ") + v.type_name());
    return v.get<bool>();
  }

  std::string text(const std::string& path) const {
    const auto& v = leaf(path);
    if (!v.is_string()) fail(path, std::string("must be a string, got ") + v.type_name());
    return v.get<std::string>();
  }

 private:
  static std::string fmt(double x) {
    std::ostringstream os;
    os << x;
    return os.str();
  }
  const nlohmann::json& doc_;
  std::string origin_;
};

// "calibration": {"value": "implementation"|"ceiling", "source": why}: what the model's times stand for
// (Profile::Basis). Absent: ceiling, said in basis_source, so a file of unknown basis warns instead of failing.
void read_basis(const nlohmann::json& doc, const Reader& r, Profile& prof) {
  const auto c = doc.find("calibration");
  if (c == doc.end()) {
    prof.basis_source =
        "the profile does not say what it is calibrated on (no \"calibration\" key): read as "
        "\"ceiling\", so slower than the model is a warning; add \"calibration\": {\"value\": "
        "\"implementation\", \"source\": ...} to make it an error";
    return;
  }
  if (!c->is_object() || !c->contains("value") || !c->at("value").is_string() || !c->contains("source") ||
      !c->at("source").is_string() || c->at("source").get<std::string>().empty())
    r.fail("calibration", "must be {\"value\": \"implementation\"|\"ceiling\", \"source\": \"why\"}");
  const std::string v = c->at("value").get<std::string>();
  if (v != "implementation" && v != "ceiling")
    r.fail("calibration.value", "'" + v + "' is neither \"implementation\" nor \"ceiling\"");
  prof.basis = v == "implementation" ? Profile::Basis::Implementation : Profile::Basis::Ceiling;
  prof.basis_stated = true;
  prof.basis_source = c->at("source").get<std::string>();
}

}  // namespace

Params parse_params(const nlohmann::json& doc, const std::string& origin) {
  if (!doc.is_object()) throw UsageError(origin + ": the profile must be a JSON object");
  const Reader r(doc, origin);
  using R = Rule;
  Params p;
  p.one_device = r.boolean("emulated_on_one_device");
  p.fused_min_m = r.number("fused_min_m", R::NonNegative);

  p.gemm.fp8_tflops_dense = r.number("gemm.fp8_tflops_dense", R::Positive);
  p.gemm.peak_tflops_dense = r.number_or("gemm.peak_tflops_dense", R::Positive, p.gemm.fp8_tflops_dense);
  if (p.gemm.peak_tflops_dense < p.gemm.fp8_tflops_dense)
    r.fail("gemm.peak_tflops_dense", "is below gemm.fp8_tflops_dense: the peak bounds every achieved rate");
  p.gemm.compute_units = r.number("gemm.compute_units", R::AtLeastOne);
  p.gemm.tile_n = r.number("gemm.tile_n", R::AtLeastOne);
  p.gemm.achieved_efficiency = r.number("gemm.achieved_efficiency", R::Fraction);
  p.gemm.ptpc_efficiency_ratio = r.number("gemm.ptpc_efficiency_ratio", R::Positive);
  p.gemm.mxfp8_efficiency_ratio = r.number("gemm.mxfp8_efficiency_ratio", R::Positive);
  p.gemm.launch_us = r.number("gemm.launch_us", R::NonNegative);
  p.gemm.epilogue_slowdown = r.number("gemm.epilogue_slowdown", R::NonNegative);
  p.gemm.tile_epilogue_us = r.number_or("gemm.tile_epilogue_us", R::NonNegative, 0.0);
  p.gemm.remote_store_tile_us =
      r.number_or("gemm.remote_store_tile_us", R::NonNegative, std::numeric_limits<double>::quiet_NaN());
  p.gemm.partial_wave_compute_fraction = r.number_or("gemm.partial_wave_compute_fraction", R::Fraction, 1.0);
  p.gemm.k_iter_latency_us = r.number_or("gemm.k_iter_latency_us", R::NonNegative, 0.0);
  p.gemm.block_k = r.number_or("gemm.block_k", R::AtLeastOne, 128.0);
  p.cache.capacity_mb = r.number_or("cache.capacity_mb", R::NonNegative, 0.0);
  p.cache.miss_slowdown = r.number_or("cache.miss_slowdown", R::NonNegative, 0.0);
  for (const Quant q : {Quant::Ptpc, Quant::Mxfp8})
    if (p.gemm.achieved_efficiency * p.gemm.efficiency_ratio(q) > 1)
      r.fail("gemm." + to_string(q) + "_efficiency_ratio", "pushes the achieved efficiency above dense peak");

  p.hbm.peak_gbps = r.number("hbm.peak_gbps", R::Positive);
  p.hbm.efficiency = r.number("hbm.efficiency", R::Fraction);
  p.hbm.latency_us = r.number("hbm.latency_us", R::Positive);

  const std::string medium = r.text("link.medium");
  if (medium == "xgmi")
    p.link.medium = Medium::Xgmi;
  else if (medium == "nvlink")
    p.link.medium = Medium::Nvlink;
  else if (medium == "hbm")
    p.link.medium = Medium::Hbm;
  else
    r.fail("link.medium", "unknown medium '" + medium + "' (accepted: xgmi|nvlink|hbm)");
  if (p.link.medium != Medium::Hbm) {
    p.link.links = r.number("link.links", R::AtLeastOne);
    p.link.gbps_per_direction = r.number("link.gbps_per_direction", R::Positive);
  }
  p.link.protocol_efficiency = r.number("link.protocol_efficiency", R::Fraction);
  p.link.scatter_efficiency = r.number("link.scatter_efficiency", R::Fraction);
  p.link.lsa_efficiency = r.number_or("link.lsa_efficiency", R::Fraction, 1.0);
  p.link.lsa_bytes_in_flight =
      r.number_or("link.lsa_bytes_in_flight", R::Positive, std::numeric_limits<double>::infinity());

  p.copy_engine.per_put_us = r.number("copy_engine.per_put_us", R::NonNegative);
  p.copy_engine.aggregate_gbps =
      r.number_or("copy_engine.aggregate_gbps", R::Positive, std::numeric_limits<double>::infinity());
  if (p.link.medium == Medium::Hbm) {
    p.hbm.copy_gbps = r.number("hbm.copy_gbps", R::Positive);
    p.copy_engine.d2d_gbps = r.number("copy_engine.d2d_gbps", R::Positive);
    p.hbm.quantize_gbps = r.number("hbm.quantize_gbps", R::Positive);
    p.hbm.widen_gbps = r.number("hbm.widen_gbps", R::Positive);
    p.pull.block_gbps = r.number("pull.block_gbps", R::Positive);
    if (!p.one_device)
      r.fail("emulated_on_one_device", "link.medium hbm means the ranks share one device: must be true");
  }
  p.sync.kernel_launch_us = r.number("sync.kernel_launch_us", R::NonNegative);
  p.sync.barrier_us = r.number("sync.barrier_us", R::NonNegative);
  p.sync.eager_launch_us = r.number_or("sync.eager_launch_us", R::NonNegative, p.gemm.launch_us);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  p.sync.band_sync_us = r.number_or("sync.band_sync_us", R::NonNegative, nan);
  p.sync.system_release_us = r.number_or("sync.system_release_us", R::NonNegative, nan);
  p.sync.release_writeback_gbps = r.number_or("sync.release_writeback_gbps", R::Positive, nan);
  p.sync.reduce_blocks = r.number_or("sync.reduce_blocks", R::AtLeastOne, nan);
  p.sdma_fp8.gather_handoff_us = r.number("sdma_fp8.gather_handoff_us", R::NonNegative);
  p.sdma_fp8.dequantize_handoff_us = r.number("sdma_fp8.dequantize_handoff_us", R::NonNegative);
  p.pull.bytes_in_flight_per_block = r.number("pull.bytes_in_flight_per_block", R::Positive);
  p.pull.remote_latency_us = r.number("pull.remote_latency_us", R::Positive);
  p.pull.contention_k = r.number("pull.contention_k", R::NonNegative);
  p.reduce_quantize.bytes_in_flight_per_wave = r.number("reduce_quantize.bytes_in_flight_per_wave", R::Positive);
  p.standalone.rank_skew_us = r.number("standalone.rank_skew_us", R::NonNegative);
  return p;
}

Profile load_profile(const std::string& name_or_file) {
  const auto& embedded = embedded_profiles();
  std::string text, origin;
  if (const auto it = embedded.find(name_or_file); it != embedded.end()) {
    text = it->second;
    origin = "profiles/" + name_or_file + ".json";
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(name_or_file, ec))
      throw UsageError("--profile " + name_or_file + ": is a directory, not a profile file");
    std::ifstream in(name_or_file, std::ios::binary);
    if (!in) {
      std::string names;
      for (const auto& [n, _] : embedded) names += names.empty() ? n : "|" + n;
      throw UsageError("--profile: '" + name_or_file + "' is neither a built-in profile (" + names +
                       ") nor a readable file");
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    origin = name_or_file;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw UsageError(origin + ": not valid JSON: " + e.what());
  }
  Profile prof;
  prof.params = parse_params(doc, origin);
  const Reader r(doc, origin);
  const auto name = doc.find("name");
  if (name == doc.end() || !name->is_string() || name->get<std::string>().empty())
    r.fail("name", "missing or not a non-empty string");
  prof.name = name->get<std::string>();
  prof.model_band = r.number("model_band", Rule::Fraction);
  prof.run_to_run_spread = r.number("run_to_run_spread", Rule::Fraction);
  if (doc.contains("model_band_by_mode")) {
    const auto& bands = r.leaf("model_band_by_mode");
    if (!bands.is_object()) r.fail("model_band_by_mode", "value must be an object {\"mode\": band}");
    for (const auto& [mode, band] : bands.items()) {
      const std::string path = "model_band_by_mode." + mode;
      Mode m{};
      try {
        m = parse_mode(mode);
      } catch (const UsageError&) {
        r.fail(path, "not a mode");
      }
      if (!band.is_number() || !(band.get<double>() > 0 && band.get<double>() <= 1)) r.fail(path, "must be in (0, 1]");
      prof.model_band_by_mode[m] = band.get<double>();
    }
  }
  // "calibrated": {"value": true|false, "source": why}. A profile that does not say is uncalibrated: its
  // timing findings are warnings, never errors.
  if (const auto c = doc.find("calibrated"); c != doc.end()) {
    const nlohmann::json* v = c->is_object() && c->contains("value") ? &c->at("value") : &*c;
    if (!v->is_boolean()) r.fail("calibrated", "must be true or false (or {\"value\": bool, \"source\": why})");
    prof.calibrated = v->get<bool>();
    if (c->is_object() && c->contains("source") && c->at("source").is_string())
      prof.calibration = c->at("source").get<std::string>();
  } else {
    prof.calibration = "the profile does not say it is calibrated on measurements";
  }
  read_basis(doc, r, prof);
  prof.origin = origin;
  prof.source = std::move(doc);
  return prof;
}

std::string to_string(Profile::Basis b) { return b == Profile::Basis::Implementation ? "implementation" : "ceiling"; }

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> v;
  for (const auto& [n, _] : embedded_profiles()) v.push_back(n);
  return v;
}

}  // namespace gemmar::model
