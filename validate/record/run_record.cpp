#include "validate/record/run_record.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "common/errors.hpp"
#include "validate/record/python_json.hpp"

namespace gemmar {

namespace {

[[noreturn]] void bad_field(const std::string& source, const std::string& field, const std::string& what) {
  throw UsageError(source + ": field '" + field + "' " + what);
}

const char* type_name(const nlohmann::json& v) { return v.type_name(); }

double get_number(const nlohmann::json& j, const std::string& key, const std::string& source) {
  const auto& v = j.at(key);
  if (!v.is_number()) bad_field(source, key, std::string("must be a number, got ") + type_name(v));
  return v.get<double>();
}

int64_t get_int(const nlohmann::json& j, const std::string& key, const std::string& source) {
  const auto& v = j.at(key);
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return int64_t(d);
  }
  bad_field(source, key, std::string("must be an integer, got ") + (v.is_number() ? v.dump() : type_name(v)));
}

std::string get_string(const nlohmann::json& j, const std::string& key, const std::string& source) {
  const auto& v = j.at(key);
  if (!v.is_string()) bad_field(source, key, std::string("must be a string, got ") + type_name(v));
  return v.get<std::string>();
}

bool get_bool(const nlohmann::json& j, const std::string& key, const std::string& source) {
  const auto& v = j.at(key);
  if (v.is_boolean()) return v.get<bool>();
  // Python writes bools as true/false, but hand-edited logs use 0/1.
  if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) return v.get<int64_t>() == 1;
  bad_field(source, key, std::string("must be a boolean, got ") + (v.is_number() ? v.dump() : type_name(v)));
}

std::vector<double> get_number_array(const nlohmann::json& j, const std::string& key, const std::string& source) {
  const auto& v = j.at(key);
  if (!v.is_array()) bad_field(source, key, std::string("must be an array of numbers, got ") + type_name(v));
  std::vector<double> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number())
      bad_field(source, key + "[" + std::to_string(i) + "]", std::string("must be a number, got ") + type_name(v[i]));
    out.push_back(v[i].get<double>());
  }
  return out;
}

bool present(const nlohmann::json& j, const char* key) { return j.contains(key) && !j.at(key).is_null(); }

template <typename Parse>
auto parse_enum_field(const nlohmann::json& j, const std::string& key, const std::string& source, Parse parse) {
  const std::string s = get_string(j, key, source);
  try {
    return parse(s, key);
  } catch (const UsageError& e) {
    throw UsageError(source + ": field " + e.what());
  }
}

}  // namespace

RunRecord run_record_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw UsageError(source + ": a run record must be a JSON object, got " + j.type_name());
  RunRecord r;
  r.source = source;
  r.raw = j;
  for (const char* key : {"mode", "m", "n", "k", "world_size"})
    if (!present(j, key)) bad_field(source, key, "is missing (required: mode, m, n, k, world_size)");

  r.config.mode = parse_enum_field(j, "mode", source, parse_mode);
  r.shape.m = get_int(j, "m", source);
  r.shape.n = get_int(j, "n", source);
  r.shape.k = get_int(j, "k", source);
  const int64_t world = get_int(j, "world_size", source);
  if (world < 1 || world > 512) bad_field(source, "world_size", "is " + std::to_string(world) + ", not in [1, 512]");
  r.shape.world = int(world);
  if (present(j, "quant")) r.config.quant = parse_enum_field(j, "quant", source, parse_quant);
  if (present(j, "gather_dtype")) r.config.gather_dtype = parse_enum_field(j, "gather_dtype", source, parse_wire);
  if (present(j, "gather_transport"))
    r.config.gather_transport = parse_enum_field(j, "gather_transport", source, parse_transport);
  if (present(j, "fuse_quantize")) r.config.fuse_quantize = get_bool(j, "fuse_quantize", source);

  if (present(j, "max_rank_time_us")) r.max_rank_time_us = get_number(j, "max_rank_time_us", source);
  if (present(j, "per_rank_time_us")) r.per_rank_time_us = get_number_array(j, "per_rank_time_us", source);
  if (j.contains("rel_l2")) {
    // Python writes float('nan') as NaN, but a None (no check ran) as null: both mean "not validated".
    r.rel_l2 = j.at("rel_l2").is_null() ? std::numeric_limits<double>::quiet_NaN() : get_number(j, "rel_l2", source);
  }
  if (present(j, "validated")) r.validated = get_bool(j, "validated", source);
  if (present(j, "timing")) {
    const auto& t = j.at("timing");
    r.timing = t.is_string() ? t.get<std::string>() : t.dump();
  }

  if (present(j, "pull_blocks")) {
    const int64_t b = get_int(j, "pull_blocks", source);
    if (b < 1 || b > 65536) bad_field(source, "pull_blocks", "is " + std::to_string(b) + ", not in [1, 65536]");
    r.pull_blocks = int(b);
    r.config.pull_blocks = int(b);
  }
  if (present(j, "per_rank_rel_l2")) r.per_rank_rel_l2 = get_number_array(j, "per_rank_rel_l2", source);
  if (present(j, "per_slice_rel_l2")) r.per_slice_rel_l2 = get_number_array(j, "per_slice_rel_l2", source);
  if (present(j, "phases_us")) {
    const auto& p = j.at("phases_us");
    if (!p.is_object()) bad_field(source, "phases_us", std::string("must be an object name -> us, got ") + p.type_name());
    for (auto it = p.begin(); it != p.end(); ++it) {
      if (it->is_null()) continue;  // the benchmark's table has null for phases a wire does not run
      if (!it->is_number())
        bad_field(source, "phases_us." + it.key(), std::string("must be a number, got ") + it->type_name());
      r.phases_us[it.key()] = it->get<double>();
    }
  }
  if (present(j, "profile")) r.profile = get_string(j, "profile", source);
  if (present(j, "backend")) r.backend = get_string(j, "backend", source);
  if (present(j, "stop_after")) r.stop_after = get_string(j, "stop_after", source);
  auto count = [&](const char* key) -> std::optional<int64_t> {
    if (!present(j, key)) return std::nullopt;
    const int64_t v = get_int(j, key, source);
    // -1 was the old "not checked" spelling of wrong_elements.
    if (v < 0) return std::nullopt;
    return v;
  };
  r.wrong_elements = count("wrong_elements");
  r.checked_rows = count("checked_rows");
  r.poisoned_elements = count("poisoned_elements");
  if (present(j, "rel_l2_all_views")) r.rel_l2_all_views = get_number(j, "rel_l2_all_views", source);
  if (present(j, "rel_l2_all_views_stderr"))
    r.rel_l2_all_views_stderr = get_number(j, "rel_l2_all_views_stderr", source);
  if (present(j, "seed")) {
    const auto& v = j.at("seed");
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      bad_field(source, "seed", std::string("must be a non-negative integer, got ") + (v.is_number() ? v.dump() : type_name(v)));
    r.seed = v.get<uint64_t>();
  }
  if (present(j, "inject")) r.inject = get_string(j, "inject", source);
  if (present(j, "device")) r.device = get_string(j, "device", source);
  if (present(j, "gemm_impl")) r.gemm_impl = get_string(j, "gemm_impl", source);
  if (present(j, "unfused_baseline")) r.unfused_baseline = get_string(j, "unfused_baseline", source);
  if (present(j, "unfused_baseline_us")) r.unfused_baseline_us = get_number(j, "unfused_baseline_us", source);
  if (present(j, "iterations_checked")) r.iterations_checked = int(std::clamp<int64_t>(get_int(j, "iterations_checked", source), 0, 1 << 30));
  if (present(j, "check_every")) r.check_every = int(std::clamp<int64_t>(get_int(j, "check_every", source), 0, 1 << 30));
  if (present(j, "wrong_elements_per_iteration"))
    for (double v : get_number_array(j, "wrong_elements_per_iteration", source)) {
      if (!(v >= 0 && v < 9e15 && v == std::floor(v)))
        bad_field(source, "wrong_elements_per_iteration", "must hold non-negative integers");
      r.wrong_elements_per_iteration.push_back(int64_t(v));
    }
  r.stale_elements = count("stale_elements");
  if (present(j, "nondeterministic_iterations")) {
    const auto& v = j.at("nondeterministic_iterations");
    if (!v.is_array()) bad_field(source, "nondeterministic_iterations", std::string("must be an array, got ") + type_name(v));
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string where = "nondeterministic_iterations[" + std::to_string(i) + "]";
      if (!v[i].is_object()) bad_field(source, where, std::string("must be an object, got ") + type_name(v[i]));
      NondeterministicIteration nd;
      if (present(v[i], "iteration")) nd.iteration = int(std::clamp<int64_t>(get_int(v[i], "iteration", source), 0, 1 << 30));
      if (present(v[i], "repeat_of")) nd.repeat_of = int(std::clamp<int64_t>(get_int(v[i], "repeat_of", source), 0, 1 << 30));
      if (present(v[i], "ranks"))
        for (double x : get_number_array(v[i], "ranks", source)) nd.ranks.push_back(int(std::clamp(x, -1.0, 1e6)));
      r.nondeterministic_iterations.push_back(nd);
    }
  }
  if (present(j, "straggle_us")) r.straggle_us = get_number(j, "straggle_us", source);

  // The sizes and combinations the op itself rejects mean the record cannot describe a real run.
  try {
    validate_shape_config(r.shape, r.config, false);
  } catch (const UsageError& e) {
    throw UsageError(source + ": " + e.what());
  }
  if (has_collective(r.config.mode) && !traits(r.config.mode).fp8_wire && r.config.gather_dtype == WireDtype::Fp8)
    bad_field(source, "gather_dtype", "is fp8 but " + to_string(r.config.mode) + " is a bf16-only all-reduce");
  return r;
}

nlohmann::json run_record_to_json(const RunRecord& r) {
  nlohmann::json j = r.raw.is_object() ? r.raw : nlohmann::json::object();
  j["mode"] = to_string(r.config.mode);
  j["world_size"] = r.shape.world;
  j["m"] = r.shape.m;
  j["n"] = r.shape.n;
  j["k"] = r.shape.k;
  j["quant"] = to_string(r.config.quant);
  j["gather_dtype"] = to_string(r.config.gather_dtype);
  j["gather_transport"] = to_string(r.config.gather_transport);
  j["fuse_quantize"] = r.config.fuse_quantize;
  if (r.max_rank_time_us) j["max_rank_time_us"] = *r.max_rank_time_us;
  if (!r.per_rank_time_us.empty()) j["per_rank_time_us"] = r.per_rank_time_us;
  if (r.rel_l2) j["rel_l2"] = *r.rel_l2;
  if (r.validated) j["validated"] = *r.validated;
  if (!r.timing.empty()) j["timing"] = r.timing;
  j["pull_blocks"] = r.pull_blocks.value_or(r.config.pull_blocks);
  if (!r.per_rank_rel_l2.empty()) j["per_rank_rel_l2"] = r.per_rank_rel_l2;
  if (!r.per_slice_rel_l2.empty()) j["per_slice_rel_l2"] = r.per_slice_rel_l2;
  if (!r.phases_us.empty()) {
    nlohmann::json p = nlohmann::json::object();
    for (const auto& [name, us] : r.phases_us) p[name] = us;
    j["phases_us"] = p;
  }
  if (r.profile) j["profile"] = *r.profile;
  if (r.backend) j["backend"] = *r.backend;
  if (r.stop_after) j["stop_after"] = *r.stop_after;
  if (r.wrong_elements) j["wrong_elements"] = *r.wrong_elements;
  if (r.checked_rows) j["checked_rows"] = *r.checked_rows;
  if (r.poisoned_elements) j["poisoned_elements"] = *r.poisoned_elements;
  if (r.rel_l2_all_views) j["rel_l2_all_views"] = *r.rel_l2_all_views;
  if (r.rel_l2_all_views_stderr) j["rel_l2_all_views_stderr"] = *r.rel_l2_all_views_stderr;
  if (r.seed) j["seed"] = *r.seed;
  if (r.inject) j["inject"] = *r.inject;
  if (r.device) j["device"] = *r.device;
  if (r.gemm_impl) j["gemm_impl"] = *r.gemm_impl;
  if (r.unfused_baseline) j["unfused_baseline"] = *r.unfused_baseline;
  if (r.iterations_checked) j["iterations_checked"] = *r.iterations_checked;
  if (r.check_every) j["check_every"] = *r.check_every;
  if (!r.wrong_elements_per_iteration.empty()) j["wrong_elements_per_iteration"] = r.wrong_elements_per_iteration;
  if (r.stale_elements) j["stale_elements"] = *r.stale_elements;
  if (!r.nondeterministic_iterations.empty()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& nd : r.nondeterministic_iterations)
      a.push_back({{"iteration", nd.iteration}, {"repeat_of", nd.repeat_of}, {"ranks", nd.ranks}});
    j["nondeterministic_iterations"] = a;
  }
  if (r.straggle_us) j["straggle_us"] = *r.straggle_us;
  if (r.unfused_baseline_us) {
    j["unfused_baseline_us"] = *r.unfused_baseline_us;
    if (r.max_rank_time_us && *r.max_rank_time_us > 0)
      j["fused_vs_unfused"] = *r.unfused_baseline_us / *r.max_rank_time_us;
  }
  return j;
}

}  // namespace gemmar
