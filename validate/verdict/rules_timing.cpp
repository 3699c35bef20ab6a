// The timing rules: the run's time against the model's prediction (its lower bound, its total and band), its
// ranks against each other, and against --baseline runs. Their codes and severities are in rules.cpp's table.
#include <algorithm>
#include <cmath>

#include "validate/verdict/judge_basis.hpp"

namespace gemmar::verdict_detail {

using namespace verdict_rules;
using Hits = std::optional<Hit>;

namespace {

double sweep_total_at(const model::Sweep& sw, int value, double fallback) {
  for (const auto& pt : sw.points)
    if (pt.value == value) return pt.total_us;
  return fallback;
}

// The phase of a slow run that is furthest over its prediction, when the record has phases_us and one of
// them exceeds the model by more than the band: "the pull phase took 320.0 us against the model's 228.1 us
// (+91.9 us, +40.3%)". Names are matched as the model spells them (gemm, drain, reduce, quantize, gather,
// dequantize, pull, scatter, allreduce); phases the model does not have are ignored.
struct SlowPhase {
  std::string name, text;  // empty when no phase is over the model by more than the band
};
SlowPhase slow_phase(const std::map<std::string, double>& measured, const model::Prediction& pred, double band) {
  const model::Phase* worst = nullptr;
  double worst_excess = 0;
  for (const auto& ph : pred.phases) {
    const auto it = measured.find(ph.name);
    if (it == measured.end() || !std::isfinite(it->second) || ph.us <= 0) continue;
    const double excess = it->second - ph.us;
    if (excess > band * ph.us && excess > worst_excess) {
      worst = &ph;
      worst_excess = excess;
    }
  }
  if (!worst) return {};
  const double t = measured.at(worst->name);
  return {worst->name, "the " + worst->name + " phase took " + us(t) + " against the model's " + us(worst->us) + " (+" +
                           us(worst_excess) + ", " + pct(worst_excess / worst->us) + ", " + worst->bound +
                           "-bound in the model)"};
}

// The benchmark does not print its grid: the grid whose prediction explains a slow time, when it lies outside
// the optimum band. Empty when none does (or the record names its grid, or the slow phase is not the pull).
std::string grid_explaining(const RunRecord& r, const Basis& b, double t, const SlowPhase& sp) {
  const std::optional<model::Sweep>& sw = b.e.pull_sweep;
  const TimingBasis& tb = *b.timing;
  if (!sw || tb.stopped_early || tb.eager || r.pull_blocks || !(sp.name.empty() || sp.name == "pull")) return "";
  const model::SweepPoint* near = nullptr;
  for (const auto& pt : sw->points)
    if (!near || std::fabs(pt.total_us - t) < std::fabs(near->total_us - t)) near = &pt;
  if (!near || (near->value >= sw->band_lo && near->value <= sw->band_hi) ||
      std::fabs(near->total_us - t) > b.e.profile->band(b.cfg.mode) * t)
    return "";
  return "which matches a pull grid of " + std::to_string(near->value) + " blocks (model " + us(near->total_us) +
         "): wrong grid, not wrong transport, check MORI_GEMM_AR_PULL_BLOCKS" +
         (sp.text.empty() ? "" : " (" + sp.text + ")");
}

// A record that names no profile (no profile field, no device) is judged against mi355x; 10x or more off that model
// (a newcomer's H200 log read "+3855%") it was most likely measured on other hardware.
std::string profile_hint(const Basis& b, double t, double model_us) {
  if (!b.e.profile_defaulted || b.e.profile_name != "mi355x" || !(model_us > 0) || !(t > 0)) return "";
  const double x = t / model_us;
  if (x < 10.0 && x > 0.1) return "";
  return " The record names no profile, so it was judged against the default mi355x, and it is " +
         ratio(x >= 1.0 ? x : 1.0 / x) + (x >= 1.0 ? " slower" : " faster") +
         " than that model: it was most likely measured on other hardware; pass --profile (mi300x, h200, "
         "h200-1gpu or a profile FILE).";
}

}  // namespace

// --- GRID_OFF_OPTIMUM: a configuration finding, judged on the model alone (a run that stopped early never pulled).
Hits grid_off_optimum(const RunRecord&, const Basis& b) {
  const std::optional<model::Sweep>& sw = b.e.pull_sweep;
  if (!sw || b.timing->stopped_early) return {};
  const int g = b.cfg.pull_blocks;
  if (g >= sw->band_lo && g <= sw->band_hi) return {};
  const double best = b.e.pull_sweep_best_us;
  const double cost = sweep_total_at(*sw, g, b.e.pull_at_grid_us) - best;
  const double frac = best > 0 ? cost / best : 0;
  return Hit{"Wrong grid, not wrong transport: the pull kernel ran with " + std::to_string(g) +
                 " blocks, outside the model's optimum band [" + std::to_string(sw->band_lo) + ", " +
                 std::to_string(sw->band_hi) + "], which costs " + us(cost) + " (" + pct(frac) + ") over " +
                 std::to_string(sw->optimum) + " blocks: set MORI_GEMM_AR_PULL_BLOCKS=" + std::to_string(sw->optimum) +
                 ".",
             !(frac > b.e.profile->run_to_run_spread)};
}

// --- EAGER_TIMING: each kernel paid its launch, so the model gets one launch cost per kernel on top.
Hits eager_timing(const RunRecord&, const Basis& b) {
  const TimingBasis& tb = *b.timing;
  if (!tb.eager) return {};
  return Hit{"timing=eager: each of the " + std::to_string(tb.launches) +
             " kernels paid its launch (graph replay "
             "hides it), so the time is judged against the model plus " +
             std::to_string(tb.launches) + " x " + us(b.e.profile->params.gemm.launch_us) + " = " +
             us(tb.pred.total_us + tb.launch_extra) + "; eager and graph times do not compare (quote graph times)."};
}

// --- FASTER_THAN_PHYSICS: below the time moving the run's bytes takes at the profile's peak rates, on every
// profile (a lower bound at peak rates holds whatever the model is calibrated on).
Hits faster_than_physics(const RunRecord&, const Basis& b) {
  const model::Prediction& pred = b.timing->pred;
  const double t = *b.time_us;
  if (!(t < pred.lower_bound_us)) return {};
  return Hit{us(t) + " is below the " + us(pred.lower_bound_us) + " that moving this run's bytes takes at the " +
             b.e.profile_name + " peak rates (model " + us(pred.total_us) +
             "): the data was not moved, suspect silent puts rather than a fast kernel (or --profile names slower "
             "hardware than the run's)." +
             profile_hint(b, t, pred.total_us)};
}

// --- FASTER_THAN_MODEL: well under the model yet above the lower bound.
Hits faster_than_model(const RunRecord&, const Basis& b) {
  const model::Prediction& pred = b.timing->pred;
  const double t = *b.time_us;
  if (t < pred.lower_bound_us || !(t < pred.total_us * (1.0 - kFasterThanModel))) return {};
  return Hit{us(t) + " is " + pct(t / pred.total_us - 1.0) + " under the " + b.e.profile_name + " model's " +
             us(pred.total_us) + " (more than " + pct(kFasterThanModel).substr(1) +
             " faster, yet above the lower bound " + us(pred.lower_bound_us) +
             "): check that --profile names the hardware the run was on" +
             (has_collective(b.cfg.mode) ? ", or that the run moved all its data (a leg that moved part of it reads "
                                           "fast)."
                                         : " and the quant its GEMM ran (gemm-only moves no data).") +
             profile_hint(b, t, pred.total_us)};
}

// --- SLOWER_THAN_MODEL: beyond the model's band, naming the slow phase or the pull grid that explains the time.
// An error only on a calibrated implementation profile (the table's grading).
Hits slower_than_model(const RunRecord& r, const Basis& b) {
  const TimingBasis& tb = *b.timing;
  const double band = b.e.profile->band(b.cfg.mode);  // the mode's measured leave-one-out error + spread
  const double t = *b.time_us;
  const double expected_total = tb.pred.total_us + tb.launch_extra;
  // Healthy on another machine the profile was calibrated on (a full run only: its phases are the profile's own).
  const bool other = !tb.stopped_early && b.e.slowest_machine_total_us > tb.pred.total_us;
  const double slowest = other ? b.e.slowest_machine_total_us + tb.launch_extra : expected_total;
  if (t <= slowest * (1.0 + band)) return {};
  const std::string msg =
      us(t) + " is " + pct(t / expected_total - 1.0) + " over the model's " + us(expected_total) +
      (tb.eager ? " (eager: with the launches)" : "") + " (band " + pct(band).substr(1) +
      (other ? "; " + us(slowest) + " on " + b.e.slowest_machine + ", the slowest machine it knows" : "") + ")";
  // With phases in the record the slow phase is named; only when it is the pull (or the record has no
  // phases) can the pull grid be the explanation.
  const SlowPhase sp = slow_phase(r.phases_us, tb.pred, band);
  std::string why = grid_explaining(r, b, t, sp);
  if (why.empty()) why = sp.text;
  if (why.empty()) why = "compare its phases with `gemmar model` to find the slow one";
  return Hit{msg + (why.rfind("which", 0) == 0 ? ", " : ": ") + why + "." + profile_hint(b, t, expected_total)};
}

// --- RANK_DIVERGENCE in time: the slowest rank beyond 3x the run-to-run spread over the ranks' median; on ranks
// sharing one device, beyond the measured spread of healthy shared-device runs (kSharedDeviceRankSpread).
Hits rank_divergence_time(const RunRecord& r, const Basis& b) {
  const std::vector<double>& times = r.per_rank_time_us;
  if (times.size() < 2) return {};
  const double med = median(times);
  const auto mx = std::max_element(times.begin(), times.end());
  const double spreads = kRankTimeSpreads * b.e.profile->run_to_run_spread;
  const double lim = b.shared_device ? std::max(spreads, kSharedDeviceRankSpread) : spreads;
  if (!(med > 0) || !(*mx > med * (1.0 + lim))) return {};
  const std::string basis =
      b.shared_device ? " = the spread of healthy runs with the ranks on one device" : " = 3x the run-to-run spread";
  return Hit{"Rank " + std::to_string(mx - times.begin()) + " took " + us(*mx) + " against the ranks' median " +
             us(med) + " (" + pct(*mx / med - 1.0) + ", beyond " + pct(lim).substr(1) + basis + "; fastest rank " +
             us(*std::min_element(times.begin(), times.end())) +
             (b.shared_device ? "): on one device look for another process on the GPU or one rank's kernels queued "
                                "behind the others'."
                              : "): look for a throttled GPU or a slow link on that rank.")};
}

// --- REGRESSION against --baseline runs of the same shape and config, on every profile.
Hits regression(const RunRecord&, const Basis& b) {
  if (!b.baseline || b.baseline->same.empty()) return {};
  const double base = b.baseline->median_us, spread = b.e.profile->run_to_run_spread, t = *b.time_us;
  if (!(t > base * (1.0 + spread))) return {};
  return Hit{us(t) + " is " + pct(t / base - 1.0) + " slower than the baseline's " + us(base) + " (" +
             b.baseline->same.front()->source + ", same shape and config), beyond the " + pct(spread).substr(1) +
             " run-to-run spread."};
}

// --- QUANT_MISMATCH: the baseline has this shape and config only in another quant.
Hits quant_mismatch(const RunRecord& r, const Basis& b) {
  if (!b.baseline || !b.baseline->same.empty() || b.baseline->other_quant.empty()) return {};
  const RunRecord& base = *b.baseline->other_quant.front();
  const double bt = *base.max_rank_time_us, t = *b.time_us;
  return Hit{"The baseline has this shape and config only as " + quant_label(base, base.config) + " (" + base.source +
             ", " + us(bt) + ", this " + quant_label(r, b.cfg) + " run " + pct(t / bt - 1.0) +
             "), so the difference may be the quant mode, not machine drift: compare against a " +
             quant_label(r, b.cfg) + " baseline" +
             (r.quant_known && base.quant_known ? "" : " (a record that does not print its quant cannot be matched)") +
             "."};
}

}  // namespace gemmar::verdict_detail
