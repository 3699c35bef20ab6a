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
  // The measurement's timing: 1, the bench's one call per graph replay (Prediction::total_us); N, one call inside
  // a graph of N calls (per_call_in_graph_us).
  int graph_calls = 1;
  // Measured on another machine and stack than the profile's (mori's retest machine "v2-015"): the profile's
  // "machines" entry of that name scales the rates that differ there (machine_profile).
  std::string machine;
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
// totals, mori's committed sweeps and its READMEs' tables copied into model/ (tests/data/model/README.md names each
// one's commit and path). Rows marked use=check or dup= are not points (check_points has the former).
// Throws UsageError naming the file and line of a malformed row.
std::vector<CalPoint> load_mi355x_points(const std::string& data_dir);
// The README rows marked use=check: repeats of a fitted configuration that differ only in what moves no time
// (the workspace layouts), predicted and checked, not fitted.
std::vector<CalPoint> load_mi355x_check_points(const std::string& data_dir);

struct FitResult {
  Profile profile;           // the input profile with the fitted values in place
  double rms_log_error = 0;  // over the points fitted
  int iterations = 0;
};

// The model's value for the point: its total (per call in its graph), one phase, or the in-server layer total.
// `prof` is the profile of the point's machine (machine_profile).
double predicted_us(const Profile& prof, const CalPoint&);

// The profile for runs on `machine`: each leaf under the profile's "machines"."<machine>" multiplies the parameter
// of the same path (mori's retest ran on another machine and stack whose GEMM, links and remote stores run at other
// rates: README "2026-09-29 operator retest" :250-253 does not pool them). Empty machine: the profile itself.
// Throws UsageError when the profile has no such machine or a leaf names no parameter.
Profile machine_profile(const Profile&, const std::string& machine);

// Levenberg-Marquardt on log(predicted / measured) over `points`, starting from `start`'s values, each
// parameter kept inside [lo, hi].
FitResult fit_profile(const Profile& start, const std::vector<CalPoint>& points, const std::vector<FitParam>& params);

struct LooRow {
  const CalPoint* point;
  double fitted_error;  // predicted / measured - 1 with every point in the fit
  double loo_error;     // the same with this point left out of the fit (NaN when !scored)
};
// Fits on all points, then once per scored point without it. stride > 1 refits only every stride-th scored point
// (the others keep loo_error NaN): each refit starts from the full fit and is independent of the others, so a strided
// row is the very row of the full run, at 1/stride of its cost (the slow test tier's budget).
std::vector<LooRow> leave_one_out(const Profile& start, const std::vector<CalPoint>& points,
                                  const std::vector<FitParam>& params, FitResult* full_fit = nullptr, int stride = 1);

}  // namespace gemmar::model
