#include "validate/verdict/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <tuple>

#include "common/errors.hpp"
#include "model/model.hpp"
#include "reference/floors.hpp"

namespace gemmar {

using namespace verdict_rules;

namespace {

std::string sci(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string us(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f us", v);
  return buf;
}

std::string pct(double frac) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * frac);
  return buf;
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
  return {worst->name, "the " + worst->name + " phase took " + us(t) + " against the model's " + us(worst->us) +
                           " (+" + us(worst_excess) + ", " + pct(worst_excess / worst->us) + ", " + worst->bound +
                           "-bound in the model)"};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double sweep_total_at(const model::Sweep& sw, int value, double fallback) {
  for (const auto& pt : sw.points)
    if (pt.value == value) return pt.total_us;
  return fallback;
}

bool is_pull_wire(const Config& eff) {
  return has_collective(eff.mode) && uses_fp8_wire(eff) && eff.gather_transport == Transport::Lsa;
}

// Shape and config decide which runs are the "same" for a baseline; the pull grid only matters where there
// is a pull.
std::string match_key(const RunRecord& r, const Config& cfg, bool with_quant) {
  std::ostringstream os;
  const Config eff = effective_config(cfg);
  Config c = cfg;
  if (!with_quant) c.quant = Quant::Blockscale;
  os << r.shape.m << ',' << r.shape.n << ',' << r.shape.k << ',' << r.shape.world << '|' << config_label(c);
  if (is_pull_wire(eff)) os << "|pull=" << cfg.pull_blocks;
  return os.str();
}

struct Judge {
  Judge(const RunRecord& record, const Expectations& expectations)
      : r(record), e(expectations), cfg(expectations.config), eff(effective_config(expectations.config)) {}
  const RunRecord& r;
  const Expectations& e;
  Verdict v;
  Config cfg, eff;
  // Derived once by numerics(), used by its parts.
  bool collective = false, fp8 = false, rel_ok = false;
  std::string wire;
  std::optional<double> worst;  // the worst rank's relL2 (the benchmark's is the minimum over ranks)
  int worst_rank = -1;
  std::optional<double> floor_bf16, floor_fp8, expected, sigma;
  double accept_max = 0, upper = 0, tol = 0;
  std::string floor_txt;
  bool silent = false;

  void add(const std::string& code, Severity sev, std::string msg) {
    v.findings.push_back({code, sev, std::move(msg)});
    if (sev == Severity::Error) v.pass = false;
  }

  void numerics() {
    collective = has_collective(eff.mode);
    fp8 = collective && uses_fp8_wire(eff);
    wire = fp8 ? "fp8" : "bf16";
    not_validated();
    output_checks();
    iteration_checks();
    worst_rank_error();
    floors();
    silent_transfer();
    against_floor();
    rank_divergence_numerics();
  }

  // --- NOT_VALIDATED: the benchmark's own check did not run or did not pass.
  void not_validated() {
    rel_ok = r.rel_l2 && std::isfinite(*r.rel_l2);
    std::vector<std::string> why;
    if (!r.rel_l2) why.push_back("carries no rel_l2");
    else if (!rel_ok) why.push_back("has rel_l2 " + sci(*r.rel_l2) + " (the output holds NaN/inf or the check was skipped)");
    if (!r.validated) why.push_back("carries no validated field (the benchmark's check was skipped)");
    else if (!*r.validated) why.push_back("has validated=false (the benchmark's own bound rejected it)");
    if (why.empty()) return;
    std::string msg = "The run ";
    for (size_t i = 0; i < why.size(); ++i) msg += (i ? " and " : "") + why[i];
    msg += (r.validated && !*r.validated && rel_ok)
               ? ": its output is wrong (see the numerics findings), so its time measures nothing; do not quote it."
               : ": rerun with validation on and look at the output for NaN before trusting its time.";
    add("NOT_VALIDATED", Severity::Error, msg);
  }

  // --- COLLECTIVE_MISMATCH / UNWRITTEN_OUTPUT: what gemmar's own checks of the output tensors found.
  void output_checks() {
    if (r.wrong_elements && *r.wrong_elements > 0) {
      const int64_t rows = r.checked_rows.value_or(0);
      const int64_t total = rows * r.shape.n * r.shape.world;
      std::ostringstream m;
      m << *r.wrong_elements;
      if (total > 0) m << " of " << total;
      m << " checked output elements differ bit for bit from the collective re-emulated over this run's own "
           "partials: the reduce-scatter/all-gather did not compute what it should (see the other findings)";
      add("COLLECTIVE_MISMATCH", Severity::Error, m.str() + ".");
    }
    if (r.poisoned_elements && *r.poisoned_elements > 0) {
      add("UNWRITTEN_OUTPUT", Severity::Error,
          std::to_string(*r.poisoned_elements) +
              " output elements still hold the poison written before the run: no kernel or copy wrote them "
              "(a skipped tile, a put that never landed, a grid that does not cover the output).");
    }
  }

  // --- NONDETERMINISTIC / STALE_ITERATION (issue 15): what checking every iteration found, within one record.
  // Repeats of the same inputs must give the same bits; a first iteration right and a later one wrong (or wrong
  // elements holding the previous iteration's values) is state carried from one iteration to the next.
  void iteration_checks() {
    for (const auto& nd : r.nondeterministic_iterations) {
      std::ostringstream m;
      m << "Iteration " << nd.iteration << " ran on the same inputs as iteration " << nd.repeat_of
        << " but its output bits differ on rank" << (nd.ranks.size() == 1 ? " " : "s ");
      for (size_t i = 0; i < nd.ranks.size(); ++i) m << (i ? ", " : "") << nd.ranks[i];
      m << ": the result depends on timing (a race: a missing wait, a flag read before it is set, a sum in arrival "
           "order)";
      if (r.straggle_us) m << "; stragglers of up to " << us(*r.straggle_us) << " were injected";
      add("NONDETERMINISTIC", Severity::Error, m.str() + ".");
      break;  // one finding; the record lists every iteration
    }
    const auto& w = r.wrong_elements_per_iteration;
    std::vector<size_t> bad;
    for (size_t i = 1; i < w.size(); ++i)
      if (w[i] > 0) bad.push_back(i);
    const bool first_right_later_wrong = w.size() > 1 && w[0] == 0 && !bad.empty();
    const int64_t stale = r.stale_elements.value_or(0);
    if (!first_right_later_wrong && stale == 0) return;
    const int step = std::max(1, r.check_every.value_or(1));
    std::ostringstream m;
    if (first_right_later_wrong) {
      m << "The first iteration's output is right but checked iteration" << (bad.size() == 1 ? " " : "s ");
      for (size_t i = 0; i < bad.size() && i < 8; ++i) m << (i ? ", " : "") << int(bad[i]) * step;
      if (bad.size() > 8) m << ", ...";
      m << " hold wrong elements (";
      for (size_t i = 0; i < bad.size() && i < 8; ++i) m << (i ? ", " : "") << w[bad[i]];
      m << ")";
    } else {
      m << "Wrong elements of later iterations";
    }
    if (stale > 0) m << "; " << stale << " of them hold what the previous iteration's inputs give";
    m << ": state carried from one iteration (graph replay) to the next: a flag not reset between replays, a wait "
         "satisfied by the previous replay's signal, a host value baked into the capture";
    add("STALE_ITERATION", Severity::Error, m.str() + ".");
  }

  // The benchmark's rel_l2 is the minimum over ranks; the worst rank decides correctness.
  void worst_rank_error() {
    if (rel_ok) worst = *r.rel_l2;
    for (size_t i = 0; i < r.per_rank_rel_l2.size(); ++i) {
      const double x = r.per_rank_rel_l2[i];
      if (std::isfinite(x) && (!worst || x > *worst)) {
        worst = x;
        worst_rank = int(i);
      }
    }
  }

  // The floors for this run's own shape, quant and wire, and the band around the expected one.
  void floors() {
    if (collective && e.floors) {
      const FloorExpectation& fl = *e.floors;
      floor_bf16 = fl.bf16;
      floor_fp8 = fl.fp8;
      expected = fp8 ? fl.fp8 : fl.bf16;
      // The floor is estimated on rows_evaluated sampled rows; the run's own relL2 averages over M rows, so
      // its row-to-row noise is the floor's stderr scaled by sqrt(rows/M).
      const double se = fp8 ? fl.fp8_stderr : fl.bf16_stderr;
      const double rows = double(std::max<int64_t>(fl.rows_evaluated, 1));
      sigma = se * std::sqrt(1.0 + rows / double(std::max<int64_t>(r.shape.m, 1)));
      v.context["floors"] = {{"bf16", fl.bf16},          {"fp8", fl.fp8},
                             {"bf16_stderr", fl.bf16_stderr}, {"fp8_stderr", fl.fp8_stderr},
                             {"rows_evaluated", fl.rows_evaluated}, {"wire", wire}, {"derived_at_m", fl.derived_at_m}};
    } else if (collective && !e.floor_error.empty()) {
      add("FLOOR_UNAVAILABLE", Severity::Warning,
          "The reference floors could not be derived for this shape (" + e.floor_error +
              "), so only the benchmark's own bounds were applied.");
    }
    accept_max = fp8 ? kFp8AcceptMax : kBf16AcceptMax;
    upper = accept_max;
    tol = kFloorMargin;
    if (expected) {
      tol = std::max(kFloorMargin, kFloorSigmas * *sigma / *expected);
      upper = std::min(upper, *expected * (1.0 + tol));
      v.context["numerics"] = {{"expected_floor", *expected}, {"tolerance", tol}, {"upper", upper},
                               {"lower", *expected * (1.0 - tol)}, {"accept_max", accept_max}};
    } else {
      v.context["numerics"] = {{"upper", upper}, {"accept_max", accept_max}};
    }
    floor_txt = expected ? ("the " + wire + " floor " + sci(*expected)) : ("the benchmark's bound " + sci(accept_max));
  }

  // --- SILENT_TRANSFER: order-one error in the shape of whole slices missing.
  void silent_transfer() {
    if (!collective) return;
    const int W = r.shape.world;
    std::vector<int> off;
    // NaN is not "never arrived": a slice of padding rows only (small M at large W) has no sampled row, and
    // an output holding NaN (e.g. e4m3fnuz codes read as e4m3fn) is NOT_VALIDATED's, not a silent put's.
    for (size_t i = 0; i < r.per_slice_rel_l2.size(); ++i)
      if (r.per_slice_rel_l2[i] >= kSliceOffRelL2) off.push_back(int(i));
    const std::string fix = traits(eff.mode).scatter_by_copy_engine
                                ? "copy-engine puts did nothing: check the host library was built with SDMA queues"
                                : "peer stores never landed: check the peer windows are mapped and the barrier waits for them";
    if (!off.empty()) {
      std::string list;
      for (size_t i = 0; i < off.size() && i < 8; ++i) list += (i ? "," : "") + std::to_string(off[i]);
      if (off.size() > 8) list += ",...";
      silent = true;
      // Missing shares leave a slice at most all-zero (relL2 1: a silent gather on the fp8 wire dequantizes
      // zero codes). Above 1 by the margin with every slice off, the buffer holds other data altogether.
      const bool all_off = off.size() == r.per_slice_rel_l2.size();
      std::string cause = fix;
      if (all_off && worst && *worst > 1.0 + kNotThisRunMargin) {
        char above[200];
        std::snprintf(above, sizeof above,
                      "every slice is off and relL2 %.3f is above the 1.000 of an all-zero output, more than "
                      "missing shares can give: the output holds another run's data (stale, never written by "
                      "this run) or the ", *worst);
        cause = std::string(above) + fix;
      } else if (all_off) {
        cause = fix + "; every slice is off, so also check that this run wrote its output at all (a stale "
                      "buffer from an earlier run reads the same)";
      }
      add("SILENT_TRANSFER", Severity::Error,
          std::to_string(off.size()) + " of " + std::to_string(r.per_slice_rel_l2.size()) + " slices (owners " +
              list + ") have relL2 >= " + sci(kSliceOffRelL2) + " against " + floor_txt + ": " + cause + ".");
    } else if (worst && *worst >= kSilentMinRelL2) {
      const double x = *worst;
      const int j = std::clamp(int(std::lround(double(W) * x * x)), 1, W);
      const double pattern = std::sqrt(double(j) / double(W));
      if (std::fabs(x - pattern) <= kSilentPatternTol * pattern) {
        silent = true;
        add("SILENT_TRANSFER", Severity::Error,
            "rel_l2 " + sci(x) + " matches " + std::to_string(j) + " of " + std::to_string(W) +
                " slices missing (sqrt(" + std::to_string(j) + "/" + std::to_string(W) + ")=" + sci(pattern) +
                ") against " + floor_txt + ": " + fix + ".");
      }
    }
  }

  // --- NUMERICS_ABOVE_FLOOR / WIRE_NOT_USED / NUMERICS_BELOW_FLOOR.
  void against_floor() {
    if (!worst || silent) return;
    const double x = *worst;
    const std::string who = worst_rank >= 0 ? " (rank " + std::to_string(worst_rank) + ")" : "";
    if (x > upper) {
      std::string hint = fp8 ? "look for a wrong scale, an fnuz/fn mix-up or an unreleased store on the gather leg"
                             : "look for a stale or unreleased slice, a wrong scale or a skipped rank in the reduce";
      add("NUMERICS_ABOVE_FLOOR", Severity::Error,
          "rel_l2 " + sci(x) + who + " is " + sci(x / (expected ? *expected : accept_max)) + "x " + floor_txt +
              " (limit " + sci(upper) + "): " + hint + ".");
    } else if (fp8 && floor_bf16 && floor_fp8 &&
               (x <= kFp8AcceptMin || std::log(x) < 0.5 * (std::log(*floor_bf16) + std::log(*floor_fp8)))) {
      add("WIRE_NOT_USED", Severity::Error,
          "This fp8-wire run has rel_l2 " + sci(x) + ", at the bf16 floor " + sci(*floor_bf16) +
              " rather than the fp8 floor " + sci(*floor_fp8) +
              ": the fp8 wire never engaged, check that gather_dtype reaches the kernels and the quantize kernel runs.");
    } else if (fp8 && !floor_fp8 && x <= kFp8AcceptMin) {
      add("WIRE_NOT_USED", Severity::Error,
          "This fp8-wire run has rel_l2 " + sci(x) + ", below the benchmark's fp8 lower bound " + sci(kFp8AcceptMin) +
              ": the fp8 wire never engaged, check that gather_dtype reaches the kernels.");
    } else if (expected && rel_ok && *r.rel_l2 < *expected * (1.0 - tol)) {
      add("NUMERICS_BELOW_FLOOR", Severity::Warning,
          "rel_l2 " + sci(*r.rel_l2) + " is below " + floor_txt + " by more than " + pct(tol).substr(1) +
              ": check that the reference is not computed from the output's own rounding.");
    }
  }

  // --- RANK_DIVERGENCE (numerics): every rank ends with the same sum; different errors mean different data.
  void rank_divergence_numerics() {
    std::vector<double> pr;
    for (double x : r.per_rank_rel_l2)
      if (std::isfinite(x)) pr.push_back(x);
    // On the fp8 wire a rank's own rows never cross the wire, so a rank whose slice holds more of the real rows
    // (M not a multiple of W*BLOCK_M, or M < W*S) legitimately sees less error. Each rank is compared at its
    // own expectation: own rows at the bf16 floor, the rest at the per-row fp8 error implied by the fp8 floor.
    if (fp8 && floor_bf16 && floor_fp8 && pr.size() == r.per_rank_rel_l2.size() &&
        int(pr.size()) == r.shape.world && r.shape.world > 1) {
      const double world = r.shape.world, fb2 = *floor_bf16 * *floor_bf16, f82 = *floor_fp8 * *floor_fp8;
      const double e82 = std::max(fb2, (f82 - fb2 / world) * world / (world - 1.0));
      const double real = double(r.shape.m), S = double(slice_rows(r.shape, cfg.quant));
      for (size_t i = 0; i < pr.size(); ++i) {
        const double own = std::clamp(real - double(i) * S, 0.0, S);
        const double expect = std::sqrt((own * fb2 + (real - own) * e82) / real);
        pr[i] *= *floor_fp8 / expect;
      }
    }
    if (pr.size() < 2) return;
    const auto [mn, mx] = std::minmax_element(pr.begin(), pr.end());
    // Relative to the error level itself: ranks that all lost their data (relL2 ~0.93 each) differ by
    // sampling noise far above the floor, and that is not divergence.
    const double scale = std::max(expected ? *expected : 0.0, median(pr));
    const double spread = *mx - *mn;
    v.context["per_rank_rel_l2_spread"] = spread;
    if (scale > 0 && spread > kRankSpreadRel * scale) {
      const int lo = int(mn - pr.begin()), hi = int(mx - pr.begin());
      const bool raw = pr.size() == r.per_rank_rel_l2.size();
      const double lo_v = raw ? r.per_rank_rel_l2[size_t(lo)] : *mn, hi_v = raw ? r.per_rank_rel_l2[size_t(hi)] : *mx;
      add("RANK_DIVERGENCE", Severity::Error,
          "Per-rank relL2 ranges from " + sci(lo_v) + " (rank " + std::to_string(lo) + ") to " + sci(hi_v) +
              " (rank " + std::to_string(hi) + ") against " + floor_txt +
              ": ranks read different data, the signature of a missing release before the copy engine reads the "
              "reduce output (use cache-bypassing stores or a system-scope release).");
    }
  }

  void timing() {
    const std::string& pname = e.profile_name;
    const model::Profile& prof = *e.profile;
    const bool emulated = r.backend && *r.backend == "cpu-emulation";
    const bool have_time = r.max_rank_time_us && std::isfinite(*r.max_rank_time_us) && *r.max_rank_time_us > 0;
    const double spread = prof.run_to_run_spread;
    const model::Prediction& pred = *e.prediction;
    v.context["model"] = {{"profile", pname},
                          {"total_us", pred.total_us},
                          {"lower_bound_us", pred.lower_bound_us},
                          {"model_band", prof.model_band},
                          {"run_to_run_spread", spread},
                          {"pull_blocks", cfg.pull_blocks}};

    // --- GRID_OFF_OPTIMUM: a configuration finding, judged on the model alone.
    const std::optional<model::Sweep>& sw = e.pull_sweep;
    if (sw) {
      const double best = e.pull_sweep_best_us;
      v.context["pull_sweep"] = {{"optimum", sw->optimum}, {"band", {sw->band_lo, sw->band_hi}}, {"best_us", best}};
      const int g = cfg.pull_blocks;
      if (g < sw->band_lo || g > sw->band_hi) {
        const double at_g = sweep_total_at(*sw, g, e.pull_at_grid_us);
        const double cost = at_g - best;
        const double frac = best > 0 ? cost / best : 0;
        add("GRID_OFF_OPTIMUM", frac > spread ? Severity::Error : Severity::Warning,
            "Wrong grid, not wrong transport: the pull kernel ran with " + std::to_string(g) +
                " blocks, outside the model's optimum band [" + std::to_string(sw->band_lo) + ", " +
                std::to_string(sw->band_hi) + "], which costs " + us(cost) + " (" + pct(frac) + ") over " +
                std::to_string(sw->optimum) + " blocks: set MORI_GEMM_AR_PULL_BLOCKS=" +
                std::to_string(sw->optimum) + ".");
      }
    }

    if (!e.judge_timing || emulated || !have_time) return;
    const double t = *r.max_rank_time_us;

    // Each measured phase against its ceiling (the model's ceiling_us: FLOPs / bytes at the profile's measured
    // vendor-GEMM and copy rates), as nccl-tests' busbw column puts a collective beside the link.
    nlohmann::json phase_eff = nlohmann::json::object();
    for (const auto& ph : pred.phases) {
      const auto m = r.phases_us.find(ph.name);
      if (m == r.phases_us.end() || ph.ceiling_us <= 0 || !(m->second > 0)) continue;
      phase_eff[ph.name] = {{"measured_us", m->second}, {"ceiling_us", ph.ceiling_us}, {"model_us", ph.us},
                      {"efficiency", ph.ceiling_us / m->second}};
    }
    if (!phase_eff.empty()) v.context["phase_efficiency"] = phase_eff;

    // --- FASTER_THAN_PHYSICS
    if (t < pred.lower_bound_us) {
      add("FASTER_THAN_PHYSICS", Severity::Error,
          us(t) + " is below the " + us(pred.lower_bound_us) + " that moving this run's bytes takes at the " +
              pname + " peak rates (model " + us(pred.total_us) +
              "): the data was not moved, suspect silent puts rather than a fast kernel.");
    }
    // --- SLOWER_THAN_MODEL
    const double slow_limit = pred.total_us * (1.0 + prof.model_band);
    if (t > slow_limit) {
      std::string msg = us(t) + " is " + pct(t / pred.total_us - 1.0) + " over the model's " + us(pred.total_us) +
                        " (band " + pct(prof.model_band).substr(1) + ")";
      // With phases in the record the slow phase is named; only when it is the pull (or the record has no
      // phases) can the pull grid be the explanation.
      const SlowPhase sp = slow_phase(r.phases_us, pred, prof.model_band);
      std::string why;
      if (sw && !r.pull_blocks && (sp.name.empty() || sp.name == "pull")) {
        // The benchmark does not print its grid: find the grid whose prediction explains the time.
        const model::SweepPoint* near = nullptr;
        for (const auto& pt : sw->points)
          if (!near || std::fabs(pt.total_us - t) < std::fabs(near->total_us - t)) near = &pt;
        if (near && (near->value < sw->band_lo || near->value > sw->band_hi) &&
            std::fabs(near->total_us - t) <= prof.model_band * t)
          why = "which matches a pull grid of " + std::to_string(near->value) + " blocks (model " +
                us(near->total_us) + "): wrong grid, not wrong transport, check MORI_GEMM_AR_PULL_BLOCKS" +
                (sp.text.empty() ? "" : " (" + sp.text + ")");
      }
      if (why.empty()) why = sp.text;
      if (why.empty()) why = "compare its phases with `gemmar model` to find the slow one";
      add("SLOWER_THAN_MODEL", Severity::Error, msg + (why.rfind("which", 0) == 0 ? ", " : ": ") + why + ".");
    }

    // --- RANK_DIVERGENCE (time)
    std::vector<double> times;
    for (double x : r.per_rank_time_us)
      if (std::isfinite(x)) times.push_back(x);
    if (times.size() >= 2) {
      const double med = median(times);
      const auto mx = std::max_element(times.begin(), times.end());
      const double lim = kRankTimeSpreads * spread;
      if (med > 0 && *mx > med * (1.0 + lim)) {
        add("RANK_DIVERGENCE", Severity::Error,
            "Rank " + std::to_string(mx - times.begin()) + " took " + us(*mx) + " against the ranks' median " +
                us(med) + " (" + pct(*mx / med - 1.0) + ", beyond " + pct(lim).substr(1) +
                " = 3x the run-to-run spread): look for a throttled GPU or a slow link on that rank.");
      }
    }

    // --- REGRESSION / QUANT_MISMATCH against --baseline.
    if (!e.baseline.empty()) {
      const std::string key = match_key(r, cfg, true);
      const std::string loose = match_key(r, cfg, false);
      std::vector<double> same;
      std::vector<const RunRecord*> same_src, other_quant;
      for (const auto& b : e.baseline) {
        Config bc = b.config;
        bc.pull_blocks = b.pull_blocks.value_or(cfg.pull_blocks);
        if (!b.max_rank_time_us || !std::isfinite(*b.max_rank_time_us)) continue;
        if (match_key(b, bc, true) == key) {
          same.push_back(*b.max_rank_time_us);
          same_src.push_back(&b);
        } else if (match_key(b, bc, false) == loose) {
          other_quant.push_back(&b);
        }
      }
      if (!same.empty()) {
        const double base = median(same);
        v.context["baseline"] = {{"source", same_src.front()->source}, {"runs", same.size()}, {"time_us", base}};
        if (t > base * (1.0 + spread)) {
          add("REGRESSION", Severity::Error,
              us(t) + " is " + pct(t / base - 1.0) + " slower than the baseline's " + us(base) + " (" +
                  same_src.front()->source + ", same shape and config), beyond the " + pct(spread).substr(1) +
                  " run-to-run spread.");
        }
      } else if (!other_quant.empty()) {
        const RunRecord& b = *other_quant.front();
        const double bt = *b.max_rank_time_us;
        add("QUANT_MISMATCH", Severity::Warning,
            "The baseline has this shape and config only as " + to_string(b.config.quant) + " (" + b.source + ", " +
                us(bt) + ", this " + to_string(cfg.quant) + " run " + pct(t / bt - 1.0) +
                "), so the difference is the quant mode, not machine drift: compare against a " +
                to_string(cfg.quant) + " baseline.");
      }
    }
  }
};

}  // namespace

std::string to_string(Severity s) { return s == Severity::Error ? "error" : "warning"; }

namespace verdict_rules {
bool benchmark_accepts(double rel_l2, bool fp8_wire) {
  if (!std::isfinite(rel_l2)) return false;
  return fp8_wire ? (rel_l2 > kFp8AcceptMin && rel_l2 < kFp8AcceptMax) : rel_l2 < kBf16AcceptMax;
}
}  // namespace verdict_rules

Verdict judge(const RunRecord& r, const Expectations& e) {
  Judge j(r, e);
  j.v.source = r.source;
  j.v.record = r;
  j.v.context = nlohmann::json::object();
  j.v.context["config"] = config_label(j.cfg);
  j.numerics();
  if (!e.profile) {
    j.add("INVALID_RECORD", Severity::Error,
          "Its profile field names no usable profile (" + e.profile_error + "): fix the field or pass --profile.");
  } else if (!e.prediction) {
    j.add("MODEL_UNAVAILABLE", Severity::Warning,
          "The timing model cannot predict this config (" + e.model_error + "), so its time was not judged.");
  } else {
    j.timing();
  }
  return j.v;
}

Verdict judge(const RunRecord& r, const JudgeOptions& o) { return judge(r, expectations_for(r, o)); }

std::vector<Verdict> judge_all(const std::vector<RunRecord>& runs, const JudgeOptions& o) {
  std::vector<Verdict> out;
  out.reserve(runs.size());
  for (const auto& r : runs) out.push_back(judge(r, o));
  return out;
}

Verdict invalid_record_verdict(const std::string& source, const std::string& message, const nlohmann::json& raw) {
  Verdict v;
  v.source = source;
  v.pass = false;
  v.record.source = source;
  v.record.raw = raw;
  v.context = {{"invalid", true}};
  v.findings.push_back({"INVALID_RECORD", Severity::Error, message});
  return v;
}

namespace {
bool is_invalid(const Verdict& v) { return v.context.is_object() && v.context.contains("invalid"); }

nlohmann::json finite_or_null(const std::optional<double>& x) {
  if (!x || !std::isfinite(*x)) return nullptr;
  return *x;
}
}  // namespace

nlohmann::json to_json(const std::vector<Verdict>& vs) {
  nlohmann::json runs = nlohmann::json::array();
  int pass = 0, fail = 0;
  for (const auto& v : vs) {
    nlohmann::json f = nlohmann::json::array();
    for (const auto& x : v.findings)
      f.push_back({{"code", x.code}, {"severity", to_string(x.severity)}, {"message", x.message}});
    nlohmann::json run = {{"source", v.source}, {"verdict", v.pass ? "pass" : "fail"}, {"findings", f}};
    if (!is_invalid(v)) {
      run["config"] = config_label(v.record.config);
      run["m"] = v.record.shape.m;
      run["n"] = v.record.shape.n;
      run["k"] = v.record.shape.k;
      run["world_size"] = v.record.shape.world;
      run["time_us"] = finite_or_null(v.record.max_rank_time_us);
      run["rel_l2"] = finite_or_null(v.record.rel_l2);
      run["record"] = run_record_to_json(v.record);
    }
    run["context"] = v.context;
    (v.pass ? pass : fail)++;
    runs.push_back(std::move(run));
  }
  return {{"runs", runs}, {"summary", {{"runs", vs.size()}, {"pass", pass}, {"fail", fail}}}};
}

std::string verdict_table(const std::vector<Verdict>& vs) {
  struct Row { std::string c[7]; };
  std::vector<Row> rows;
  rows.push_back({{"source", "config", "M", "time", "rel_l2", "verdict", "findings"}});
  for (const auto& v : vs) {
    Row row;
    row.c[0] = v.source;
    const bool inv = is_invalid(v);
    row.c[1] = inv ? "-" : config_label(v.record.config);
    if (!inv && is_pull_wire(effective_config(v.record.config)))
      row.c[1] += "/pull=" + std::to_string(v.record.pull_blocks.value_or(v.record.config.pull_blocks));
    row.c[2] = inv ? "-" : std::to_string(v.record.shape.m);
    row.c[3] = inv || !v.record.max_rank_time_us ? "-" : us(*v.record.max_rank_time_us);
    row.c[4] = inv || !v.record.rel_l2 ? "-" : sci(*v.record.rel_l2);
    row.c[5] = v.pass ? "pass" : "FAIL";
    std::string codes;
    for (const auto& f : v.findings)
      codes += (codes.empty() ? "" : ",") + f.code + (f.severity == Severity::Warning ? "(w)" : "");
    row.c[6] = codes.empty() ? "-" : codes;
    rows.push_back(row);
  }
  size_t width[7] = {};
  for (const auto& row : rows)
    for (int i = 0; i < 7; ++i) width[i] = std::max(width[i], row.c[i].size());
  std::ostringstream os;
  for (size_t ri = 0; ri < rows.size(); ++ri) {
    for (int i = 0; i < 7; ++i) {
      os << rows[ri].c[i];
      if (i < 6) os << std::string(width[i] - rows[ri].c[i].size() + 2, ' ');
    }
    os << '\n';
    if (ri == 0) continue;
    // Informational: each phase's efficiency against its ceiling, and a fused run against the unfused baseline.
    const Verdict& vv = vs[ri - 1];
    if (vv.context.contains("phase_efficiency")) {
      os << "    vs ceiling:";
      for (const auto& [name, e] : vv.context["phase_efficiency"].items())
        os << " " << name << " " << int(std::lround(e.value("efficiency", 0.0) * 100)) << "%";
      os << '\n';
    }
    if (vv.record.unfused_baseline_us && vv.record.max_rank_time_us && *vv.record.max_rank_time_us > 0) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3f", *vv.record.unfused_baseline_us / *vv.record.max_rank_time_us);
      os << "    fused vs unfused (" << vv.record.unfused_baseline.value_or("baseline") << ", "
         << us(*vv.record.unfused_baseline_us) << "): " << buf << "x\n";
    }
    for (const auto& f : vs[ri - 1].findings)
      os << "    " << to_string(f.severity) << " " << f.code << ": " << f.message << '\n';
  }
  int fail = 0;
  for (const auto& v : vs) fail += v.pass ? 0 : 1;
  os << vs.size() << " run(s): " << (vs.size() - size_t(fail)) << " pass, " << fail << " fail\n";
  return os.str();
}

}  // namespace gemmar
