// The analytic timing model: per-phase predictions from a hardware profile stored as data.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.hpp"
#include "model/profile.hpp"

namespace gemmar::model {

// A hardware profile (model/profiles/*.json). Parsed and validated on load: a missing field, a wrong type
// or a negative bandwidth is a UsageError naming the file and the field.
struct Profile {
  std::string name;
  nlohmann::json source;  // the document as loaded (every parameter with its "source" note)
  // Relative band around the model's total within which a measured run is "as the model says"
  // (the model's calibrated error plus run-to-run spread); beyond it SLOWER_THAN_MODEL.
  double model_band = 0.10;
  // Per mode, where the profile's model_band_by_mode gives one (the mode's measured leave-one-out error plus
  // the spread): band(mode) falls back to model_band.
  std::map<Mode, double> model_band_by_mode;
  double band(Mode m) const {
    const auto it = model_band_by_mode.find(m);
    return it == model_band_by_mode.end() ? model_band : it->second;
  }
  double run_to_run_spread = 0.02;
  // Whether the parameters are calibrated on measurements of this hardware; only a calibrated profile's
  // timing findings are errors (an uncalibrated one's are warnings). `calibration` says why, either way.
  bool calibrated = false;
  std::string calibration;
  // What the model's times stand for ("calibration" in the profile, docs/check.md "Which profile is which"):
  // Implementation: an implementation's measured speed (mi355x: mori's runs), so slower than the model beyond its
  // band is a fault (SLOWER_THAN_MODEL, an error). Ceiling: what the hardware allows (vendor GEMM, copy
  // ceilings), so slower is inefficiency, a warning carrying each phase's efficiency. A profile file without the
  // key is read as Ceiling (basis_stated false): a model of unknown basis never fails a healthy run.
  enum class Basis { Implementation, Ceiling };
  Basis basis = Basis::Ceiling;
  bool basis_stated = false;
  std::string basis_source;  // the key's "source" note, or why the default was taken
  // The devices this profile is the default for ("devices" in the profile): case-insensitive substrings of the
  // device's name (`family`: a vendor's catch-all, matched only when no profile's `names` match), whether it models
  // ranks that own a device each or share one, and whether it is the profile of the CPU emulation and of a device
  // no profile names (exactly one built-in profile is).
  struct Devices {
    std::vector<std::string> names, family;
    enum class Ranks { Any, Own, Shared } ranks = Ranks::Any;
    bool fallback = false;
  } devices;
  // The physical parameters, validated (model/profile.hpp).
  Params params;
  std::string origin;  // "profiles/NAME.json" or the file path: what error messages name
};

std::string to_string(Profile::Basis);  // "implementation" | "ceiling"

// The embedded profile names (mi300x, mi355x, h200, h200-1gpu): every model/profiles/*.json.
std::vector<std::string> builtin_profile_names();
// The built-in names for a help text, "mi355x|h200|...": the fallback profile first. The overload takes the
// profiles (name -> JSON text) instead of the embedded ones.
std::string profile_choices();
std::string profile_choices(const std::map<std::string, std::string>& profiles);
// The profile a run defaults to: on backend "gpu", the profile whose "devices" name the device (the longest name
// that the device's contains; a "family" name only when no name matches) and fit its ranks per device; otherwise,
// and for a device no profile names, the profile marked "fallback". The overload takes the profiles (name -> JSON text)
// instead of the embedded ones.
std::string default_profile_for(const std::string& backend, const std::string& device, int ranks_per_device);
std::string default_profile_for(const std::map<std::string, std::string>& profiles, const std::string& backend,
                                const std::string& device, int ranks_per_device);

// name: mi355x|mi300x|h200|h200-1gpu (embedded) or a path to a JSON file.
Profile load_profile(const std::string& name_or_file);

struct Phase {
  std::string name;  // gemm, scatter, drain, reduce, quantize, gather, dequantize, pull, allreduce
  double us = 0;
  double bytes = 0;   // bytes this phase moves (docs/spec.md 1.1 table)
  std::string bound;  // compute|hbm|link|latency
  // Breakdown of what the phase moves (bytes above is the docs/spec.md 1.1 figure): FLOPs, bytes over the
  // links (peer traffic; local HBM on a one-device profile), bytes through local HBM.
  double flops = 0;
  double link_bytes = 0;
  double hbm_bytes = 0;
  // The phase's FLOPs / bytes at the device's measured ceiling rate, nothing else (no launch, latency or wave
  // quantization): the GEMM at gemm.fp8_tflops_dense (the vendor GEMM's measured rate on the profiles that
  // measure it; on one device the W ranks' GEMMs' FLOPs, their tiles sharing the SMs, or their C stores at the copy
  // ceiling where longer), kernels through HBM at hbm peak x efficiency (the copy ceiling), copy-engine legs at the
  // copy-engine / link rate. 0 for phases that move nothing (drain, barrier-only gathers, skew).
  // measured efficiency of a phase = ceiling_us / measured us.
  double ceiling_us = 0;
  // This phase's share of Prediction::lower_bound_us (bytes and FLOPs at peak rates); the shares sum to it,
  // so a run that stopped early (the benchmark's --stop-after) is bounded by the sum over the phases it ran.
  double lower_bound_us = 0;
};

struct Prediction {
  double total_us = 0;
  double lower_bound_us = 0;  // below this the run cannot have moved its bytes at peak rates
  std::vector<Phase> phases;
  // total_us is what the standalone benchmark measures (max over ranks, graph replay): the phases plus
  // the "skew" phase. in_server_us is the same pipeline without the cross-rank launch skew, i.e. what the
  // serving engine's per-layer phase capture sums to.
  double in_server_us = 0;
  bool fused_engaged = true;  // false when a fused mode was asked below the profile's fused_min_m
  std::vector<std::string> notes;
};

Prediction predict(const Profile&, const Shape&, const Config&);

// One call's time inside a graph of `calls` back-to-back calls (mori's 8-call feature harness, README "2026-09-29
// operator retest" :186), where total_us is the bench's one call per graph replay: the ranks start a replay
// unsynchronised, and only the first call of the graph waits out that skew (the later ones start as the previous
// call's gather ends on every rank), so each call carries 1/calls of the "skew" phase.
double per_call_in_graph_us(const Prediction&, int calls);

struct SweepPoint {
  int value;
  double total_us;
};
struct Sweep {
  std::vector<SweepPoint> points;
  int optimum = 0;
  int band_lo = 0, band_hi = 0;  // values within 1% of the best
};
// values: each >= 1, at least one (UsageError naming --values otherwise). The band is the contiguous run
// of values (sorted) around the optimum whose totals are within 1% of the best.
Sweep sweep_pull_blocks(const Profile&, const Shape&, const Config&, const std::vector<int>& values);
// The default grid list of `gemmar model sweep` (8 ... 1024).
const std::vector<int>& default_pull_grid();

nlohmann::json to_json(const Prediction&);
nlohmann::json to_json(const Sweep&);

}  // namespace gemmar::model
