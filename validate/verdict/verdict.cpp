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

// e4m3fnuz (gfx942) bytes read as e4m3fn are 2x their value (bias 8 vs 7), and fnuz's +-240 codes are fn's
// NaN: an output off by a power of two (relL2 |2^j - 1|: 1 for 2x, 3 for 4x, 0.5 and 0.75 the other way) or
// holding NaN is the signature. Empty when rel_l2 shows neither.
std::string fnuz_hint(std::optional<double> rel_l2) {
  const std::string fix = "if the operands are e4m3fnuz (gfx942, MI300X) they were read as e4m3fn (or the "
                          "reverse): check the fp8 dtype the kernels and the reference use";
  if (!rel_l2 || std::isnan(*rel_l2)) return "NaN in the output is what e4m3fnuz's +-240 codes become when read "
                                             "as e4m3fn (its NaN code): " + fix;
  for (const double pattern : {1.0, 3.0, 0.5, 0.75})
    if (std::fabs(*rel_l2 - pattern) <= 0.05 * pattern)
      return "relL2 " + sci(*rel_l2) + " is an output off by a power of two (relL2 " + sci(pattern) +
             "), the fnuz-as-fn signature: " + fix;
  return "";
}

// A run the benchmark stopped early (--stop-after scatter): only a fused or split run with a reduce-scatter
// stops anywhere; gemm-only and split-lsa run whole whatever the flag says.
bool is_partial(const RunRecord& r) {
  return r.stop_after && *r.stop_after != "all" && has_collective(r.config.mode) && r.config.mode != Mode::SplitLsa;
}

// The phases a partial run ran: up to and including the reduce-scatter (scatter, or the fused drain), plus the
// launch skew every multi-rank timing carries; its total and lower bound are theirs.
model::Prediction prefix_prediction(const model::Prediction& full) {
  model::Prediction p = full;
  p.phases.clear();
  p.total_us = p.lower_bound_us = p.in_server_us = 0;
  bool done = false;
  for (const auto& ph : full.phases) {
    if (ph.name == "skew" || !done) {
      p.phases.push_back(ph);
      p.total_us += ph.us;
      p.lower_bound_us += ph.lower_bound_us;
      if (ph.name != "skew") p.in_server_us += ph.us;
    }
    if (ph.name == "scatter" || ph.name == "drain") done = true;
  }
  return p;
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
  // Eager and graph times do not compare, nor does a run that stopped after the scatter with a full one.
  os << '|' << (r.timing.empty() ? "graph" : r.timing) << '|' << r.stop_after.value_or("all");
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
  void note(const std::string& text) {
    if (!v.context.contains("notes")) v.context["notes"] = nlohmann::json::array();
    v.context["notes"].push_back(text);
  }
  // A finding the timing model produced: an error only when the profile is calibrated on its hardware.
  void add_timing(const std::string& code, Severity sev, std::string msg) {
    if (sev == Severity::Error && e.profile && !e.profile->calibrated) {
      sev = Severity::Warning;
      msg += " (a warning only: profile " + e.profile_name + " is uncalibrated)";
    }
    add(code, sev, std::move(msg));
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
    // The benchmark does not validate gemm-only (rel_l2 NaN, validated true by design): its output is one
    // rank's partial, not an all-reduce. gemmar's own records (backend set) are validated in every mode.
    if (r.config.mode == Mode::GemmOnly && !r.backend && !rel_ok && r.validated && *r.validated) {
      note("gemm-only: the benchmark does not validate this mode (rel_l2 " + std::string(r.rel_l2 ? "NaN" : "absent") +
           " by design); only its time was judged");
      return;
    }
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
    if (r.rel_l2 && std::isnan(*r.rel_l2) && r.validated && !*r.validated) msg += " " + fnuz_hint(r.rel_l2) + ".";
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

  // --- NONDETERMINISTIC / STALE_ITERATION (docs/reliability.md): what checking every iteration found, within one record.
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
        const std::string fnuz = fnuz_hint(x);
        add("SILENT_TRANSFER", Severity::Error,
            "rel_l2 " + sci(x) + " matches " + std::to_string(j) + " of " + std::to_string(W) +
                " slices missing (sqrt(" + std::to_string(j) + "/" + std::to_string(W) + ")=" + sci(pattern) +
                ") against " + floor_txt + ": " + fix + (fnuz.empty() ? "" : "; or " + fnuz) + ".");
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
      if (const std::string fnuz = fnuz_hint(x); !fnuz.empty()) hint = fnuz;
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

  // --- PARTIAL_RUN: the benchmark stopped after the reduce-scatter (--stop-after scatter).
  void partial_run(const model::Prediction& prefix) {
    std::string phases;
    for (const auto& ph : prefix.phases)
      if (ph.name != "skew") phases += (phases.empty() ? "" : "+") + ph.name;
    add("PARTIAL_RUN", Severity::Warning,
        "stop_after=" + *r.stop_after + ": the run stopped after the reduce-scatter, so its output is incomplete "
        "(numerics not judged) and its time is judged on the phases it ran, " + phases + " (model " +
            us(prefix.total_us) + ", lower bound " + us(prefix.lower_bound_us) +
            "); it does not compare with full runs.");
  }

  // --- RACY_PUBLISH: a fence/chunks combination the benchmark itself documents as racy.
  void racy_publish_rule() {
    if (!racy_publish(r)) return;
    const std::string what = *r.fence == "none"
                                 ? "fence=none with chunks=" + std::to_string(r.chunks.value_or(1)) +
                                       ": the copy engine reads C while the GEMM still writes it, with no release"
                                 : "fence=" + *r.fence + " is a write-through fence the benchmark keeps only to "
                                                         "reproduce its race";
    add("RACY_PUBLISH", Severity::Warning,
        what + ": known racy (it passes the threshold some runs in ten), so a pass today says nothing about the "
               "next run; use --fence agent (correct, cheapest) or run it many times and compare rel_l2.");
  }

  // Which rank was slowest and by how much: the time counterpart of the per-rank relL2 spread.
  void per_rank_time() {
    const auto& t = r.per_rank_time_us;
    if (t.size() < 2) return;
    const auto mx = std::max_element(t.begin(), t.end());
    const auto mn = std::min_element(t.begin(), t.end());
    const int critical = r.critical_rank.value_or(int(mx - t.begin()));
    const double med = median(t);
    v.context["per_rank_time"] = {{"critical_rank", critical}, {"max_us", *mx}, {"min_us", *mn},
                                  {"median_us", med},          {"spread_us", *mx - *mn},
                                  {"over_median", med > 0 ? *mx / med - 1.0 : 0.0}};
  }

  // The model's view of this run, shared by the timing rules below.
  struct TimingBasis {
    model::Prediction pred;  // a partial run's: the prefix of phases it ran
    bool partial = false;
    bool eager = false;
    int launches = 0;           // kernels the model counts (eager: each paid its launch)
    double launch_extra = 0;    // eager: launches x the launch cost, added to the model
  };

  void timing() {
    const model::Profile& prof = *e.profile;
    TimingBasis tb;
    tb.partial = is_partial(r);
    tb.pred = tb.partial ? prefix_prediction(*e.prediction) : *e.prediction;
    if (tb.partial) partial_run(tb.pred);
    // Eager timing: every kernel pays its launch (graph replay hides it), so the model gets one launch-to-
    // completion cost per kernel on top.
    tb.eager = r.timing == "eager";
    for (const auto& ph : tb.pred.phases)
      if (ph.name != "skew" && ph.us > 0) ++tb.launches;
    tb.launch_extra = tb.eager ? tb.launches * prof.params.gemm.launch_us : 0.0;
    model_context(tb);
    grid_off_optimum(tb);

    const bool emulated = r.backend && *r.backend == "cpu-emulation";
    const bool have_time = r.max_rank_time_us && std::isfinite(*r.max_rank_time_us) && *r.max_rank_time_us > 0;
    if (!e.judge_timing || emulated || !have_time) return;
    const double t = *r.max_rank_time_us;
    if (tb.eager)
      add("EAGER_TIMING", Severity::Warning,
          "timing=eager: each of the " + std::to_string(tb.launches) + " kernels paid its launch (graph replay "
          "hides it), so the time is judged against the model plus " + std::to_string(tb.launches) + " x " +
              us(prof.params.gemm.launch_us) + " = " + us(tb.pred.total_us + tb.launch_extra) +
              "; eager and graph times do not compare (quote graph times).");
    phase_efficiency(tb.pred);
    against_model(tb, t);
    rank_time_divergence();
    against_baseline(t);
  }

  void model_context(const TimingBasis& tb) {
    const model::Profile& prof = *e.profile;
    v.context["model"] = {{"profile", e.profile_name},
                          {"calibrated", prof.calibrated},
                          {"total_us", tb.pred.total_us},
                          {"lower_bound_us", tb.pred.lower_bound_us},
                          {"model_band", prof.band(cfg.mode)},
                          {"run_to_run_spread", prof.run_to_run_spread},
                          {"pull_blocks", cfg.pull_blocks}};
    if (tb.partial) v.context["model"]["partial"] = true;
    if (tb.eager) v.context["model"]["eager_launch_us"] = tb.launch_extra;
    if (!prof.calibrated)
      note("profile " + e.profile_name + " is uncalibrated (" + prof.calibration + "): its timing findings are warnings");
  }

  // GRID_OFF_OPTIMUM: a configuration finding, judged on the model alone (a partial run never pulled).
  void grid_off_optimum(const TimingBasis& tb) {
    const std::optional<model::Sweep>& sw = e.pull_sweep;
    if (!sw || tb.partial) return;
    const double best = e.pull_sweep_best_us;
    v.context["pull_sweep"] = {{"optimum", sw->optimum}, {"band", {sw->band_lo, sw->band_hi}}, {"best_us", best}};
    const int g = cfg.pull_blocks;
    if (g >= sw->band_lo && g <= sw->band_hi) return;
    const double at_g = sweep_total_at(*sw, g, e.pull_at_grid_us);
    const double cost = at_g - best;
    const double frac = best > 0 ? cost / best : 0;
    add_timing("GRID_OFF_OPTIMUM", frac > e.profile->run_to_run_spread ? Severity::Error : Severity::Warning,
        "Wrong grid, not wrong transport: the pull kernel ran with " + std::to_string(g) +
            " blocks, outside the model's optimum band [" + std::to_string(sw->band_lo) + ", " +
            std::to_string(sw->band_hi) + "], which costs " + us(cost) + " (" + pct(frac) + ") over " +
            std::to_string(sw->optimum) + " blocks: set MORI_GEMM_AR_PULL_BLOCKS=" +
            std::to_string(sw->optimum) + ".");
  }

  // Each measured phase against its ceiling (the model's ceiling_us: FLOPs / bytes at the profile's measured
  // vendor-GEMM and copy rates), as nccl-tests' busbw column puts a collective beside the link.
  void phase_efficiency(const model::Prediction& pred) {
    nlohmann::json phase_eff = nlohmann::json::object();
    for (const auto& ph : pred.phases) {
      const auto m = r.phases_us.find(ph.name);
      if (m == r.phases_us.end() || ph.ceiling_us <= 0 || !(m->second > 0)) continue;
      phase_eff[ph.name] = {{"measured_us", m->second}, {"ceiling_us", ph.ceiling_us}, {"model_us", ph.us},
                      {"efficiency", ph.ceiling_us / m->second}};
    }
    if (!phase_eff.empty()) v.context["phase_efficiency"] = phase_eff;
  }

  // FASTER_THAN_PHYSICS below the lower bound, FASTER_THAN_MODEL well under the model, SLOWER_THAN_MODEL beyond
  // its band (naming the slow phase, or the pull grid that explains the time).
  void against_model(const TimingBasis& tb, double t) {
    const model::Profile& prof = *e.profile;
    const std::string& pname = e.profile_name;
    const model::Prediction& pred = tb.pred;
    const double band = prof.band(cfg.mode);  // the mode's measured leave-one-out error + spread
    if (t < pred.lower_bound_us) {
      add_timing("FASTER_THAN_PHYSICS", Severity::Error,
          us(t) + " is below the " + us(pred.lower_bound_us) + " that moving this run's bytes takes at the " +
              pname + " peak rates (model " + us(pred.total_us) +
              "): the data was not moved, suspect silent puts rather than a fast kernel.");
    } else if (t < pred.total_us * (1.0 - kFasterThanModel)) {
      add_timing("FASTER_THAN_MODEL", Severity::Warning,
          us(t) + " is " + pct(t / pred.total_us - 1.0) + " under the " + pname + " model's " + us(pred.total_us) +
              " (more than " + pct(kFasterThanModel).substr(1) + " faster, yet above the lower bound " +
              us(pred.lower_bound_us) + "): check that --profile names the hardware the run was on" +
              (has_collective(cfg.mode) ? ", or that the run moved all its data (a leg that moved part of it "
                                          "reads fast)."
                                        : " and the quant its GEMM ran (gemm-only moves no data)."));
    }
    const double expected_total = pred.total_us + tb.launch_extra;
    if (t <= expected_total * (1.0 + band)) return;
    const std::string msg = us(t) + " is " + pct(t / expected_total - 1.0) + " over the model's " +
                            us(expected_total) + (tb.eager ? " (eager: with the launches)" : "") + " (band " +
                            pct(band).substr(1) + ")";
    // With phases in the record the slow phase is named; only when it is the pull (or the record has no
    // phases) can the pull grid be the explanation.
    const SlowPhase sp = slow_phase(r.phases_us, pred, band);
    const std::optional<model::Sweep>& sw = e.pull_sweep;
    std::string why;
    if (sw && !tb.partial && !tb.eager && !r.pull_blocks && (sp.name.empty() || sp.name == "pull")) {
      // The benchmark does not print its grid: find the grid whose prediction explains the time.
      const model::SweepPoint* near = nullptr;
      for (const auto& pt : sw->points)
        if (!near || std::fabs(pt.total_us - t) < std::fabs(near->total_us - t)) near = &pt;
      if (near && (near->value < sw->band_lo || near->value > sw->band_hi) &&
          std::fabs(near->total_us - t) <= band * t)
        why = "which matches a pull grid of " + std::to_string(near->value) + " blocks (model " +
              us(near->total_us) + "): wrong grid, not wrong transport, check MORI_GEMM_AR_PULL_BLOCKS" +
              (sp.text.empty() ? "" : " (" + sp.text + ")");
    }
    if (why.empty()) why = sp.text;
    if (why.empty()) why = "compare its phases with `gemmar model` to find the slow one";
    add_timing("SLOWER_THAN_MODEL", Severity::Error, msg + (why.rfind("which", 0) == 0 ? ", " : ": ") + why + ".");
  }

  // RANK_DIVERGENCE in time: the slowest rank beyond 3x the run-to-run spread over the ranks' median.
  void rank_time_divergence() {
    const std::vector<double>& times = r.per_rank_time_us;
    if (times.size() < 2) return;
    const double med = median(times);
    const auto mx = std::max_element(times.begin(), times.end());
    const double lim = kRankTimeSpreads * e.profile->run_to_run_spread;
    if (med > 0 && *mx > med * (1.0 + lim)) {
      add("RANK_DIVERGENCE", Severity::Error,
          "Rank " + std::to_string(mx - times.begin()) + " took " + us(*mx) + " against the ranks' median " +
              us(med) + " (" + pct(*mx / med - 1.0) + ", beyond " + pct(lim).substr(1) +
              " = 3x the run-to-run spread; fastest rank " + us(*std::min_element(times.begin(), times.end())) +
              "): look for a throttled GPU or a slow link on that rank.");
    }
  }

  // REGRESSION / QUANT_MISMATCH against --baseline.
  void against_baseline(double t) {
    if (e.baseline.empty()) return;
    const double spread = e.profile->run_to_run_spread;
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
  j.v.context["pull_blocks"] = j.cfg.pull_blocks;
  if (r.world_assumed)
    j.note("world_size absent (an older benchmark version): assumed " + std::to_string(r.shape.world) +
           "; --world sets it");
  if (r.raw.is_object() && r.raw.contains("trace") && r.raw["trace"].is_object()) {
    const auto& tr = r.raw["trace"];
    std::string n = "judged with trace " + tr.value("file", std::string("?")) + " (" + tr.value("format", std::string("?")) +
                    ", " + std::to_string(tr.value("kernels_matched", 0)) + " kernels matched to phases, " +
                    std::to_string(tr.value("kernels_unmatched", 0)) + " unmatched";
    if (tr.contains("unmatched_names") && tr["unmatched_names"].is_array() && !tr["unmatched_names"].empty()) {
      n += ":";
      for (const auto& name : tr["unmatched_names"]) n += " " + (name.is_string() ? name.get<std::string>() : name.dump());
    }
    j.note(n + ")");
  }
  if (is_partial(r)) {
    j.collective = has_collective(j.eff.mode);  // numerics of an incomplete output mean nothing
  } else {
    j.numerics();
  }
  j.racy_publish_rule();
  j.per_rank_time();
  if (!e.profile) {
    j.add("INVALID_RECORD", Severity::Error,
          "Its profile field names no usable profile (" + e.profile_error + "): fix the field or pass --profile.");
  } else if (!e.prediction) {
    if (is_partial(r))
      j.add("PARTIAL_RUN", Severity::Warning,
            "stop_after=" + *r.stop_after + ": the run stopped after the reduce-scatter; its output is incomplete "
            "(numerics not judged).");
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
  Verdict v = failed_entry_verdict(source, "INVALID_RECORD", message);
  v.record.raw = raw;
  return v;
}

Verdict failed_entry_verdict(const std::string& source, const std::string& code, const std::string& message) {
  Verdict v;
  v.source = source;
  v.pass = false;
  v.record.source = source;
  v.context = {{"invalid", true}};
  v.findings.push_back({code, Severity::Error, message});
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
    const bool inv = is_invalid(v);
    const bool traced = !inv && v.record.raw.is_object() && v.record.raw.contains("trace");
    row.c[0] = v.source + (traced ? " [trace]" : "");
    row.c[1] = inv ? "-" : config_label(v.record.config);
    if (!inv && is_pull_wire(effective_config(v.record.config)))
      row.c[1] += "/pull=" + std::to_string(v.context.value("pull_blocks", v.record.pull_blocks.value_or(v.record.config.pull_blocks)));
    if (!inv && v.record.timing == "eager") row.c[1] += "/eager";
    if (!inv && is_partial(v.record)) row.c[1] += "/stop_after=" + *v.record.stop_after;
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
    if (vv.context.contains("per_rank_time")) {
      const auto& pr = vv.context["per_rank_time"];
      char buf[200];
      std::snprintf(buf, sizeof buf, "    ranks: slowest rank %d (%.1f us), %+.1f%% over the median %.1f us, spread %.1f us\n",
                    pr.value("critical_rank", 0), pr.value("max_us", 0.0), 100.0 * pr.value("over_median", 0.0),
                    pr.value("median_us", 0.0), pr.value("spread_us", 0.0));
      os << buf;
    }
    if (vv.context.contains("notes"))
      for (const auto& n : vv.context["notes"]) os << "    note: " << n.get<std::string>() << '\n';
    for (const auto& f : vs[ri - 1].findings)
      os << "    " << to_string(f.severity) << " " << f.code << ": " << f.message << '\n';
  }
  int fail = 0;
  for (const auto& v : vs) fail += v.pass ? 0 : 1;
  os << vs.size() << " run(s): " << (vs.size() - size_t(fail)) << " pass, " << fail << " fail\n";
  return os.str();
}

}  // namespace gemmar
