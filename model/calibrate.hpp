// Calibration of a profile's physical parameters on measured runs, and its leave-one-out check
// (docs/model.md "Calibration and leave-one-out"): a small least-squares fit, not hand-tuned numbers.
#pragma once
#include <string>
#include <vector>

#include "common/config.hpp"
#include "model/model.hpp"

namespace gemmar::model {

// One measured standalone total (max over ranks, graph replay) and where it comes from.
struct CalPoint {
  std::string source;  // "file:line" or "file: key"
  Shape shape;
  Config config;
  double measured_us = 0;
  // Empty: the standalone total (Prediction::total_us). Otherwise one in-server phase (its Phase::us), or
  // "layer_total" (Prediction::in_server_us): the serving engine's per-layer capture, no launch skew.
  std::string phase;
  // false: the point alone identifies one of the fitted parameters (the pull grid's 16 and 512 blocks fix the
  // pull's latency and contention; the ptpc GEMM alone its ratio to blockscale's), so leaving it out leaves that
  // parameter undetermined: fitted, not scored. `identifies` names what it fixes.
  bool scored = true;
  std::string identifies;
};

// A fitted parameter: its dotted path in the profile document and the physical range it must stay in.
struct FitParam {
  std::string path;
  double lo, hi;
};

// The value of the leaf {"value": v, "source": ...} at a dotted path of a profile document ("gemm.launch_us").
nlohmann::json::json_pointer value_pointer(const std::string& dotted);

// The parameters gemmar fits on an xGMI node (each with the mechanism it stands for in docs/model.md), with the
// quant ratios `prof` lists.
std::vector<FitParam> fit_parameters(const Profile& prof);

// The calibration points of the mi355x profile under `data_dir` (tests/data): mi355x_measured.json's standalone
// totals and mori's committed sweeps copied into model/ (model/README.md names each one's commit and path).
// Throws UsageError naming the file and line of a malformed row.
std::vector<CalPoint> load_mi355x_points(const std::string& data_dir);

struct FitResult {
  Profile profile;           // the input profile with the fitted values in place
  double rms_log_error = 0;  // over the points fitted
  int iterations = 0;
};

// The model's value for the point: its total, one phase, or the in-server layer total.
double predicted_us(const Profile&, const CalPoint&);

// Levenberg-Marquardt on log(predicted / measured) over `points`, starting from `start`'s values, each
// parameter kept inside [lo, hi].
FitResult fit_profile(const Profile& start, const std::vector<CalPoint>& points, const std::vector<FitParam>& params);

struct LooRow {
  const CalPoint* point;
  double fitted_error;  // predicted / measured - 1 with every point in the fit
  double loo_error;     // the same with this point left out of the fit (NaN when !scored)
};
// Fits on all points, then once per scored point without it.
std::vector<LooRow> leave_one_out(const Profile& start, const std::vector<CalPoint>& points,
                                  const std::vector<FitParam>& params, FitResult* full_fit = nullptr);

}  // namespace gemmar::model
