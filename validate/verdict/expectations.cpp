#include "validate/verdict/expectations.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>

#include "common/errors.hpp"
#include "model/calibrate.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar {

namespace {

// The model and its profiles are pure functions of their inputs; `gemmar check` over a long log asks the
// same (profile, shape, config) many times, so each is computed once per process.
struct ModelCache {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const model::Profile>> profiles;
  std::map<std::string, model::Prediction> predictions;
  std::map<std::string, model::Sweep> sweeps;
};
ModelCache& model_cache() {
  static ModelCache c;
  return c;
}

std::string cache_key(const std::string& profile, const Shape& s, const Config& c) {
  std::ostringstream os;
  // config_label names the knobs that change the arithmetic but not the asked chunk count or the logical M.
  os << profile << '|' << s.m << ',' << s.n << ',' << s.k << ',' << s.world << '|' << config_label(c) << '|'
     << c.pull_blocks << '|' << c.chunks << '|' << c.logical_m;
  return os.str();
}

template <typename Map, typename Make>
auto cached(Map& map, const std::string& key, Make make) {
  auto& c = model_cache();
  {
    std::lock_guard lock(c.mu);
    auto it = map.find(key);
    if (it != map.end()) return it->second;
  }
  auto value = make();
  std::lock_guard lock(c.mu);
  return map.emplace(key, std::move(value)).first->second;
}

std::shared_ptr<const model::Profile> profile_for(const std::string& name) {
  return cached(model_cache().profiles, name, [&] {
    return std::shared_ptr<const model::Profile>(std::make_shared<model::Profile>(model::load_profile(name)));
  });
}

model::Prediction predict_cached(const std::string& pname, const model::Profile& p, const Shape& s, const Config& cfg) {
  return cached(model_cache().predictions, cache_key(pname, s, cfg), [&] { return model::predict(p, s, cfg); });
}

model::Sweep sweep_cached(const std::string& pname, const model::Profile& p, const Shape& s, const Config& cfg) {
  Config key_cfg = cfg;
  key_cfg.pull_blocks = 0;
  return cached(model_cache().sweeps, cache_key(pname, s, key_cfg),
                [&] { return model::sweep_pull_blocks(p, s, cfg, model::default_pull_grid()); });
}

// The slowest prediction over the profile's other machines (model::machine_profile), where it is slower.
void slowest_machine(const std::string& pname, const model::Profile& p, const Shape& s, Expectations& e) {
  const auto machines = p.source.find("machines");
  if (machines == p.source.end() || !machines->is_object()) return;
  for (const auto& [name, _] : machines->items()) {
    const std::string key = pname + "@" + name;
    const auto mp = cached(model_cache().profiles, key,
                           [&] { return std::make_shared<const model::Profile>(model::machine_profile(p, name)); });
    const double t = predict_cached(key, *mp, s, e.config).total_us;
    if (t > std::max(e.prediction->total_us, e.slowest_machine_total_us)) {
      e.slowest_machine = name;
      e.slowest_machine_total_us = t;
    }
  }
}

}  // namespace

std::optional<WireFloor> wire_floor(const Expectations& e, WireDtype scatter, WireDtype gather) {
  const bool fp8_gather = gather == WireDtype::Fp8;
  if (scatter == WireDtype::Fp8) return fp8_gather ? e.fp8_scatter_floors.fp8_gather : e.fp8_scatter_floors.bf16_gather;
  if (!e.floors) return std::nullopt;
  const FloorExpectation& fl = *e.floors;
  return fp8_gather ? WireFloor{fl.fp8, fl.fp8_stderr} : WireFloor{fl.bf16, fl.bf16_stderr};
}

bool scatter_fp8(const RunRecord& r) {
  return r.config.scatter_dtype == WireDtype::Fp8 ||
         (r.raw.is_object() && r.raw.contains("scatter_dtype") && r.raw["scatter_dtype"] == "fp8");
}

// The profiles say which devices they are the default for ("devices" in model/profiles/*.json).
std::string default_profile(const std::string& backend, const std::string& device, int ranks_per_device) {
  return model::default_profile_for(backend, device, ranks_per_device);
}

Expectations expectations_for(const RunRecord& r, const JudgeOptions& o) {
  Expectations e;
  e.config = r.config;
  e.config.pull_blocks = r.pull_blocks ? *r.pull_blocks : o.pull_blocks.value_or(Config{}.pull_blocks);
  e.judge_timing = o.judge_timing;
  e.baseline = o.baseline;
  const Config eff = effective_config(e.config);

  if (has_collective(eff.mode)) {
    try {
      // The floor is a per-row statistic (iid rows; padding rows are zero in both output and reference), so
      // M only sets how many rows there are: one derivation per (N, K, W, quant) serves every M.
      Shape fs = r.shape;
      if (!o.floors_at_run_m) fs.m = verdict_rules::kFloorCanonicalM;
      const auto& fl = reference::cached_floors(fs, e.config.quant);
      e.floors = FloorExpectation{fl.bf16, fl.fp8, fl.bf16_stderr, fl.fp8_stderr, fl.rows_evaluated, fs.m};
      // The fp8 scatter's pairs (reference::FloorResult::pair): its floor, and the bf16 scatter's beside it for the
      // scatter leg's WIRE_NOT_USED.
      for (const WireDtype g : {WireDtype::Bf16, WireDtype::Fp8}) {
        const reference::PairFloor p = fl.pair(WireDtype::Fp8, g);
        (g == WireDtype::Bf16 ? e.fp8_scatter_floors.bf16_gather : e.fp8_scatter_floors.fp8_gather) =
            WireFloor{p.value, p.stderr_};
      }
    } catch (const Error& err) {
      e.floor_error = err.what();
    }
  }

  e.profile_from_options = o.profile.has_value();
  e.profile_defaulted = !o.profile && !r.profile && !r.device;
  e.profile_name = o.profile   ? *o.profile
                   : r.profile ? *r.profile
                               : default_profile(r.backend.value_or("gpu"), r.device.value_or(""), 1);
  try {
    e.profile = profile_for(e.profile_name);
  } catch (const UsageError& err) {
    if (o.profile) throw;  // a bad --profile is the user's, rejected before judging
    e.profile_error = err.what();
    return e;
  }
  // A record that names its fp8 scatter only in the raw line (scatter_dtype) is priced with it: the model charges
  // the scatter leg its e4m3 codes and scales and the epilogue's quantize (docs/model.md "fp8 scatter").
  if (scatter_fp8(r)) e.config.scatter_dtype = WireDtype::Fp8;
  try {
    e.prediction = predict_cached(e.profile_name, *e.profile, r.shape, e.config);
    // The profile's other machines are stacks as well as nodes (v2-015: MORI fd35a5ec, whose bench prints its
    // quant): a record whose quant had to be inferred came from a bench before --quant and so not from them.
    if (r.quant_inference.empty()) slowest_machine(e.profile_name, *e.profile, r.shape, e);
    if (has_pull(eff)) {
      e.pull_sweep = sweep_cached(e.profile_name, *e.profile, r.shape, e.config);
      double best = INFINITY;
      for (const auto& pt : e.pull_sweep->points)
        if (pt.value == e.pull_sweep->optimum) best = pt.total_us;
      if (!std::isfinite(best))
        for (const auto& pt : e.pull_sweep->points) best = std::min(best, pt.total_us);
      e.pull_sweep_best_us = best;
      e.pull_at_grid_us = e.prediction->total_us;
    }
  } catch (const UsageError& err) {
    e.model_error = err.what();
    e.prediction.reset();
    e.pull_sweep.reset();
  }
  return e;
}

}  // namespace gemmar
