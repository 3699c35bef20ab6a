// The analytic timing model (issue 3): per-phase predictions from a hardware profile stored as data.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.hpp"

namespace gemmar::model {

// A hardware profile (model/profiles/*.json). Parsed and validated on load: a missing field, a wrong type
// or a negative bandwidth is a UsageError naming the file and the field.
struct Profile {
  std::string name;
  nlohmann::json source;  // the document as loaded (every parameter with its "source" note)
  // Relative band around the model's total within which a measured run is "as the model says"
  // (the model's calibrated error plus run-to-run spread); beyond it SLOWER_THAN_MODEL.
  double model_band = 0.10;
  double run_to_run_spread = 0.02;
  // ... the physical parameters are implementation detail of model/ (see profile.hpp)
};

// name: mi355x|mi300x|h200|h200-1gpu (embedded) or a path to a JSON file.
Profile load_profile(const std::string& name_or_file);

struct Phase {
  std::string name;   // gemm, scatter, drain, reduce, quantize, gather, dequantize, pull, allreduce
  double us = 0;
  double bytes = 0;   // bytes this phase moves (SPEC 1.1 table)
  std::string bound;  // compute|hbm|link|latency
};

struct Prediction {
  double total_us = 0;
  double lower_bound_us = 0;  // below this the run cannot have moved its bytes at peak rates
  std::vector<Phase> phases;
};

Prediction predict(const Profile&, const Shape&, const Config&);

struct SweepPoint { int value; double total_us; };
struct Sweep {
  std::vector<SweepPoint> points;
  int optimum = 0;
  int band_lo = 0, band_hi = 0;  // values within 1% of the best
};
Sweep sweep_pull_blocks(const Profile&, const Shape&, const Config&, const std::vector<int>& values);

nlohmann::json to_json(const Prediction&);
nlohmann::json to_json(const Sweep&);

}  // namespace gemmar::model
