#include "model/profile.hpp"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/config.hpp"
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

  bool has(const std::string& path) const {
    const nlohmann::json* node = &doc_;
    std::istringstream parts(path);
    for (std::string key; std::getline(parts, key, '.');) {
      if (!node->is_object() || !node->contains(key)) return false;
      node = &node->at(key);
    }
    return true;
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

// When a field must be present: always, only with a link between devices (xgmi, nvlink), only when the ranks
// share one device (medium hbm), or never (absent: `fallback`, or the value of the field `fallback_field`).
enum class Need { Always, Link, OneDevice, Optional };

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// One numeric parameter of the profile: its dotted path, its rule, when it is needed and where it goes.
struct Field {
  const char* path;
  Rule rule;
  Need need;
  double& (*at)(Params&);
  double fallback = kNaN;
  const char* fallback_field = nullptr;  // absent: this other field's value (read before this one)
};

#define GEMMAR_AT(member) [](Params& p) -> double& { return p.member; }
// The table docs/model.md describes field by field; the order is the reading order (a fallback_field comes first).
const Field kFields[] = {
    {"fused_min_m", Rule::NonNegative, Need::Always, GEMMAR_AT(fused_min_m)},
    {"gemm.fp8_tflops_dense", Rule::Positive, Need::Always, GEMMAR_AT(gemm.fp8_tflops_dense)},
    {"gemm.peak_tflops_dense", Rule::Positive, Need::Optional, GEMMAR_AT(gemm.peak_tflops_dense), kNaN,
     "gemm.fp8_tflops_dense"},
    {"gemm.compute_units", Rule::AtLeastOne, Need::Always, GEMMAR_AT(gemm.compute_units)},
    {"gemm.tile_n", Rule::AtLeastOne, Need::Always, GEMMAR_AT(gemm.tile_n)},
    {"gemm.achieved_efficiency", Rule::Fraction, Need::Always, GEMMAR_AT(gemm.achieved_efficiency)},
    {"gemm.launch_us", Rule::NonNegative, Need::Always, GEMMAR_AT(gemm.launch_us)},
    {"gemm.epilogue_slowdown", Rule::NonNegative, Need::Always, GEMMAR_AT(gemm.epilogue_slowdown)},
    {"gemm.tile_epilogue_us", Rule::NonNegative, Need::Optional, GEMMAR_AT(gemm.tile_epilogue_us), 0.0},
    {"gemm.remote_store_tile_us", Rule::NonNegative, Need::Optional, GEMMAR_AT(gemm.remote_store_tile_us), kNaN},
    {"gemm.partial_wave_compute_fraction", Rule::Fraction, Need::Optional,
     GEMMAR_AT(gemm.partial_wave_compute_fraction), 1.0},
    {"gemm.k_iter_latency_us", Rule::NonNegative, Need::Optional, GEMMAR_AT(gemm.k_iter_latency_us), 0.0},
    {"gemm.block_k", Rule::AtLeastOne, Need::Optional, GEMMAR_AT(gemm.block_k), 128.0},
    {"gemm.epilogue_cu_gbps", Rule::Positive, Need::Optional, GEMMAR_AT(gemm.epilogue_cu_gbps), kNaN},
    {"gemm.relaxed_tile_us", Rule::NonNegative, Need::Optional, GEMMAR_AT(gemm.relaxed_tile_us), kNaN},
    {"cache.capacity_mb", Rule::NonNegative, Need::Optional, GEMMAR_AT(cache.capacity_mb), 0.0},
    {"cache.miss_slowdown", Rule::NonNegative, Need::Optional, GEMMAR_AT(cache.miss_slowdown), 0.0},
    {"hbm.peak_gbps", Rule::Positive, Need::Always, GEMMAR_AT(hbm.peak_gbps)},
    {"hbm.efficiency", Rule::Fraction, Need::Always, GEMMAR_AT(hbm.efficiency)},
    {"hbm.latency_us", Rule::Positive, Need::Always, GEMMAR_AT(hbm.latency_us)},
    {"link.links", Rule::AtLeastOne, Need::Link, GEMMAR_AT(link.links)},
    {"link.gbps_per_direction", Rule::Positive, Need::Link, GEMMAR_AT(link.gbps_per_direction)},
    {"link.protocol_efficiency", Rule::Fraction, Need::Always, GEMMAR_AT(link.protocol_efficiency)},
    {"link.scatter_efficiency", Rule::Fraction, Need::Always, GEMMAR_AT(link.scatter_efficiency)},
    {"link.lsa_efficiency", Rule::Fraction, Need::Optional, GEMMAR_AT(link.lsa_efficiency), 1.0},
    {"link.remote_store_efficiency", Rule::Fraction, Need::Optional, GEMMAR_AT(link.remote_store_efficiency), kNaN,
     "link.scatter_efficiency"},
    {"link.lsa_bytes_in_flight", Rule::Positive, Need::Optional, GEMMAR_AT(link.lsa_bytes_in_flight), kInf},
    {"copy_engine.per_put_us", Rule::NonNegative, Need::Always, GEMMAR_AT(copy_engine.per_put_us)},
    {"copy_engine.aggregate_gbps", Rule::Positive, Need::Optional, GEMMAR_AT(copy_engine.aggregate_gbps), kInf},
    {"hbm.copy_gbps", Rule::Positive, Need::OneDevice, GEMMAR_AT(hbm.copy_gbps)},
    {"copy_engine.d2d_gbps", Rule::Positive, Need::OneDevice, GEMMAR_AT(copy_engine.d2d_gbps)},
    {"hbm.quantize_gbps", Rule::Positive, Need::OneDevice, GEMMAR_AT(hbm.quantize_gbps)},
    {"hbm.widen_gbps", Rule::Positive, Need::OneDevice, GEMMAR_AT(hbm.widen_gbps)},
    {"pull.block_gbps", Rule::Positive, Need::OneDevice, GEMMAR_AT(pull.block_gbps)},
    {"sync.kernel_launch_us", Rule::NonNegative, Need::Always, GEMMAR_AT(sync.kernel_launch_us)},
    {"sync.barrier_us", Rule::NonNegative, Need::Always, GEMMAR_AT(sync.barrier_us)},
    {"sync.eager_launch_us", Rule::NonNegative, Need::Optional, GEMMAR_AT(sync.eager_launch_us), kNaN,
     "gemm.launch_us"},
    {"sync.band_sync_us", Rule::NonNegative, Need::Optional, GEMMAR_AT(sync.band_sync_us), kNaN},
    {"sync.system_release_us", Rule::NonNegative, Need::Optional, GEMMAR_AT(sync.system_release_us), kNaN},
    {"sync.release_writeback_gbps", Rule::Positive, Need::Optional, GEMMAR_AT(sync.release_writeback_gbps), kNaN},
    {"sync.reduce_blocks", Rule::AtLeastOne, Need::Optional, GEMMAR_AT(sync.reduce_blocks), kNaN},
    {"sdma_fp8.gather_handoff_us", Rule::NonNegative, Need::Always, GEMMAR_AT(sdma_fp8.gather_handoff_us)},
    {"sdma_fp8.dequantize_handoff_us", Rule::NonNegative, Need::Always, GEMMAR_AT(sdma_fp8.dequantize_handoff_us)},
    {"pull.bytes_in_flight_per_block", Rule::Positive, Need::Always, GEMMAR_AT(pull.bytes_in_flight_per_block)},
    {"pull.remote_latency_us", Rule::Positive, Need::Always, GEMMAR_AT(pull.remote_latency_us)},
    {"pull.contention_k", Rule::NonNegative, Need::Always, GEMMAR_AT(pull.contention_k)},
    {"reduce_quantize.bytes_in_flight_per_wave", Rule::Positive, Need::Always,
     GEMMAR_AT(reduce_quantize.bytes_in_flight_per_wave)},
    {"standalone.rank_skew_us", Rule::NonNegative, Need::Always, GEMMAR_AT(standalone.rank_skew_us)},
};
#undef GEMMAR_AT

const Field& field(const char* path) {
  const Field* found = nullptr;
  for (const auto& f : kFields)
    if (std::string(f.path) == path) found = &f;
  GEMMAR_CHECK(found, "the profile field table has no ", path);
  return *found;
}

Medium parse_medium(const Reader& r) {
  const std::string medium = r.text("link.medium");
  if (medium == "xgmi") return Medium::Xgmi;
  if (medium == "nvlink") return Medium::Nvlink;
  if (medium == "hbm") return Medium::Hbm;
  r.fail("link.medium", "unknown medium '" + medium + "' (accepted: xgmi|nvlink|hbm)");
}

// "gemm.efficiency_ratio": {"ptpc": leaf, "mxfp8": leaf, ...}: one leaf per quant other than the base.
void read_efficiency_ratios(const nlohmann::json& doc, const Reader& r, Params& p) {
  if (!r.has("gemm.efficiency_ratio")) return;
  const auto& node = doc.at("gemm").at("efficiency_ratio");
  if (!node.is_object())
    r.fail("gemm.efficiency_ratio", "must be an object {\"QUANT\": {\"value\": ..., \"source\": ...}}");
  for (const auto& [name, _] : node.items()) {
    const std::string path = "gemm.efficiency_ratio." + name;
    Quant q{};
    try {
      q = parse_quant(name);
    } catch (const UsageError&) {
      r.fail(path, "not a quant");
    }
    if (q == base_quant()) r.fail(path, "the base quant's rate is gemm.achieved_efficiency; it takes no ratio");
    const double ratio = r.number(path, Rule::Positive);
    if (p.gemm.achieved_efficiency * ratio > 1) r.fail(path, "pushes the achieved efficiency above dense peak");
    p.gemm.efficiency_ratio[q] = ratio;
  }
}

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

std::string lowercase(const std::string& s) {
  std::string out;
  for (char c : s) out += char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> device_names(const Reader& r, const nlohmann::json& v, const char* key) {
  std::vector<std::string> out;
  if (!v.contains(key)) return out;
  const std::string path = std::string("devices.") + key;
  if (!v.at(key).is_array()) r.fail(path, "must be an array of device-name substrings");
  for (const auto& n : v.at(key)) {
    if (!n.is_string() || n.get<std::string>().empty()) r.fail(path, "every name must be a non-empty string");
    out.push_back(lowercase(n.get<std::string>()));
  }
  return out;
}

// "devices": {"value": {"names": [...], "family": [...], "ranks": "any"|"own"|"shared", "fallback": bool}, ...}.
void read_devices(const Reader& r, Profile& prof) {
  if (!r.has("devices")) return;
  const auto& v = r.leaf("devices");
  if (!v.is_object()) r.fail("devices", "value must be an object {\"names\": [...], \"ranks\": ..., ...}");
  for (const auto& [key, _] : v.items())
    if (key != "names" && key != "family" && key != "ranks" && key != "fallback")
      r.fail("devices." + key, "unknown key");
  prof.devices.names = device_names(r, v, "names");
  prof.devices.family = device_names(r, v, "family");
  const nlohmann::json ranks_json = v.value("ranks", nlohmann::json("any"));
  if (!ranks_json.is_string()) r.fail("devices.ranks", "must be one of any|own|shared");
  const std::string ranks = ranks_json.get<std::string>();
  if (ranks == "any")
    prof.devices.ranks = Profile::Devices::Ranks::Any;
  else if (ranks == "own")
    prof.devices.ranks = Profile::Devices::Ranks::Own;
  else if (ranks == "shared")
    prof.devices.ranks = Profile::Devices::Ranks::Shared;
  else
    r.fail("devices.ranks", "'" + ranks + "' is none of any|own|shared");
  if (v.contains("fallback") && !v.at("fallback").is_boolean()) r.fail("devices.fallback", "must be true or false");
  prof.devices.fallback = v.value("fallback", false);
}

Profile profile_from_text(const std::string& text, const std::string& origin) {
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
  read_devices(r, prof);
  prof.origin = origin;
  prof.source = std::move(doc);
  return prof;
}

}  // namespace

Params parse_params(const nlohmann::json& doc, const std::string& origin) {
  if (!doc.is_object()) throw UsageError(origin + ": the profile must be a JSON object");
  const Reader r(doc, origin);
  Params p;
  p.one_device = r.boolean("emulated_on_one_device");
  p.link.medium = parse_medium(r);
  const bool hbm = p.link.medium == Medium::Hbm;
  if (hbm && !p.one_device)
    r.fail("emulated_on_one_device", "link.medium hbm means the ranks share one device: must be true");
  for (const Field& f : kFields) {
    const bool needed = f.need == Need::Always || (f.need == Need::Link && !hbm) || (f.need == Need::OneDevice && hbm);
    const bool skipped = (f.need == Need::Link && hbm) || (f.need == Need::OneDevice && !hbm);
    if (skipped) continue;
    if (needed || r.has(f.path))
      f.at(p) = r.number(f.path, f.rule);
    else
      f.at(p) = f.fallback_field ? field(f.fallback_field).at(p) : f.fallback;
  }
  if (p.gemm.peak_tflops_dense < p.gemm.fp8_tflops_dense)
    r.fail("gemm.peak_tflops_dense", "is below gemm.fp8_tflops_dense: the peak bounds every achieved rate");
  read_efficiency_ratios(doc, r, p);
  return p;
}

Profile load_profile(const std::string& name_or_file) {
  const auto& embedded = embedded_profiles();
  if (const auto it = embedded.find(name_or_file); it != embedded.end())
    return profile_from_text(it->second, "profiles/" + name_or_file + ".json");
  std::error_code ec;
  if (std::filesystem::is_directory(name_or_file, ec))
    throw UsageError("--profile " + name_or_file + ": is a directory, not a profile file");
  std::ifstream in(name_or_file, std::ios::binary);
  if (!in)
    throw UsageError("--profile: '" + name_or_file + "' is neither a built-in profile (" + profile_choices() +
                     ") nor a readable file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return profile_from_text(ss.str(), name_or_file);
}

std::string to_string(Profile::Basis b) { return b == Profile::Basis::Implementation ? "implementation" : "ceiling"; }

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> v;
  for (const auto& [n, _] : embedded_profiles()) v.push_back(n);
  return v;
}

std::string profile_choices(const std::map<std::string, std::string>& profiles) {
  std::string fallback, others;
  for (const auto& [name, text] : profiles) {
    const bool first = profile_from_text(text, "profiles/" + name + ".json").devices.fallback;
    std::string& into = first ? fallback : others;
    into += (into.empty() ? "" : "|") + name;
  }
  return fallback.empty() ? others : others.empty() ? fallback : fallback + "|" + others;
}

std::string profile_choices() {
  static const std::string choices = profile_choices(embedded_profiles());
  return choices;
}

// Among the profiles whose "devices" fit the ranks per device, the one with the longest of its "names" that the
// device's name contains; none: the longest of a "family" (a vendor's catch-all); none either: the fallback. Two
// profiles that match as well as each other are a fault of the profiles, not of the run.
std::string default_profile_for(const std::map<std::string, std::string>& profiles, const std::string& backend,
                                const std::string& device, int ranks_per_device) {
  const std::string d = lowercase(device);
  struct Best {
    std::string name, tie;
    std::size_t len = 0;
    void offer(const std::string& profile, const std::vector<std::string>& names, const std::string& dev) {
      for (const auto& n : names) {
        if (dev.find(n) == std::string::npos || n.size() < len) continue;
        if (n.size() > len)
          tie.clear();
        else if (profile != name)
          tie = name;  // as long a name of another profile
        len = n.size();
        name = profile;
      }
    }
  } by_name, by_family;
  std::string fallback;
  for (const auto& [name, text] : profiles) {
    const Profile p = profile_from_text(text, "profiles/" + name + ".json");
    if (p.devices.fallback) {
      GEMMAR_CHECK(fallback.empty(), "profiles ", fallback, " and ", name, " are both the fallback profile");
      fallback = name;
    }
    using R = Profile::Devices::Ranks;
    if (backend != "gpu" || (p.devices.ranks == R::Own && ranks_per_device > 1) ||
        (p.devices.ranks == R::Shared && ranks_per_device <= 1))
      continue;
    by_name.offer(name, p.devices.names, d);
    by_family.offer(name, p.devices.family, d);
  }
  const Best& best = by_name.name.empty() ? by_family : by_name;
  GEMMAR_CHECK(best.tie.empty(), "device '", device, "' matches profiles ", best.name, " and ", best.tie,
               " as well as each other");
  GEMMAR_CHECK(!fallback.empty(), "no profile is marked \"fallback\" in its \"devices\"");
  return best.name.empty() ? fallback : best.name;
}

std::string default_profile_for(const std::string& backend, const std::string& device, int ranks_per_device) {
  return default_profile_for(embedded_profiles(), backend, device, ranks_per_device);
}

}  // namespace gemmar::model
