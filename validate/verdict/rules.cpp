// Every rule of the judge: a function (record, basis) -> at most one hit, and the table that gives each its code,
// its severity, when that severity is lowered and what it reads (docs/check.md lists the same codes; the test
// tests/validate/verdict/verdict_codes_test.cpp holds the table, the docs, the fault table and the detection
// matrix to one list).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "validate/verdict/judge_basis.hpp"
#include "validate/verdict/mori_verdicts.hpp"

namespace gemmar::verdict_detail {

using namespace verdict_rules;

namespace {

using Hits = std::optional<Hit>;

// e4m3fnuz (gfx942) bytes read as e4m3fn are 2x their value (bias 8 vs 7), and fnuz's +-240 codes are fn's
// NaN: an output off by a power of two (relL2 |2^j - 1|: 1 for 2x, 3 for 4x, 0.5 and 0.75 the other way) or
// holding NaN is the signature. Empty when rel_l2 shows neither, and for NaN when the record states the
// operands are e4m3fn codes (a dump typed F8_E4M3): no e4m3fnuz operands there to be read as e4m3fn.
std::string fnuz_hint(const RunRecord& r, std::optional<double> rel_l2) {
  const std::string fix =
      "if the operands are e4m3fnuz (gfx942, MI300X) they were read as e4m3fn (or the "
      "reverse): check the fp8 dtype the kernels and the reference use";
  const bool stated_fn = r.operand_dtype && *r.operand_dtype == "F8_E4M3";
  if (r.config.quant == Quant::Mxfp8) {  // e4m3fn only: the same signatures are the ue8m0 scales'
    const bool nan = !rel_l2 || std::isnan(*rel_l2);
    bool pow2 = false;
    for (const double pattern : {1.0, 3.0, 0.5, 0.75})
      pow2 = pow2 || (!nan && std::fabs(*rel_l2 - pattern) <= 0.05 * pattern);
    return nan || pow2 ? mxfp8_scale_hint(nan) : "";
  }
  if (!rel_l2 || std::isnan(*rel_l2)) {
    if (stated_fn) return "";
    return "NaN in the output is what e4m3fnuz's +-240 codes become when read "
           "as e4m3fn (its NaN code): " +
           fix;
  }
  for (const double pattern : {1.0, 3.0, 0.5, 0.75})
    if (std::fabs(*rel_l2 - pattern) <= 0.05 * pattern)
      return "relL2 " + sci(*rel_l2) + " is an output off by a power of two (relL2 " + sci(pattern) +
             "), the fnuz-as-fn signature: " + fix;
  return "";
}

// test_gemm_ar_bench.py @e7606746 prints its line before it asserts `validated is True` (:105) and relL2 < 3e-3
// (:106): the line carries no validated, so its relL2 against that gate is the check.
Hits test_gate(const RunRecord& r, const Basis& b) {
  if (b.num.rel_ok && *r.rel_l2 < kBf16AcceptMax) return {};
  return Hit{"test_gemm_ar_bench.py's own gate failed: relL2 " + (r.rel_l2 ? sci(*r.rel_l2) : std::string("absent")) +
             " is not below 3e-3 (:106; its line has no validated field, which the test asserts after printing, "
             ":105): the output is wrong, so its time measures nothing."};
}

// --- NOT_VALIDATED: the benchmark's own check did not run or did not pass.
Hits not_validated(const RunRecord& r, const Basis& b) {
  if (benchmark_skips_validation(r, b.num)) return {};
  if (printed_by_test(r)) return test_gate(r, b);
  std::vector<std::string> why;
  if (!r.rel_l2)
    why.push_back("carries no rel_l2");
  else if (!b.num.rel_ok)
    why.push_back("has rel_l2 " + sci(*r.rel_l2) + " (the output holds NaN/inf or the check was skipped)");
  if (!r.validated)
    why.push_back("carries no validated field (the benchmark's check was skipped)");
  else if (!*r.validated)
    why.push_back("has validated=false (the benchmark's own bound rejected it)");
  if (why.empty()) return {};
  std::string msg = "The run ";
  for (size_t i = 0; i < why.size(); ++i) msg += (i ? " and " : "") + why[i];
  msg += (r.validated && !*r.validated && b.num.rel_ok)
             ? ": its output is wrong (see the numerics findings), so its time measures nothing; do not quote it."
             : ": rerun with validation on and look at the output for NaN before trusting its time.";
  if (r.rel_l2 && std::isnan(*r.rel_l2) && r.validated && !*r.validated)
    if (const std::string fnuz = fnuz_hint(r, r.rel_l2); !fnuz.empty()) msg += " " + fnuz + ".";
  return Hit{msg};
}

// --- COLLECTIVE_MISMATCH: gemmar's own bit-exact check of the output tensors.
Hits collective_mismatch(const RunRecord& r, const Basis&) {
  if (!r.wrong_elements || *r.wrong_elements <= 0) return {};
  const int64_t rows = r.checked_rows.value_or(0);
  // wrong_elements counts every checked iteration's wrong elements.
  // checked_elements: one iteration's elements read back (every element of a dump); wrong_elements sums every
  // checked iteration's.
  const int64_t per_iteration = r.checked_elements.value_or(rows * r.shape.n * r.shape.world);
  const int64_t total = per_iteration * std::max<int64_t>(1, r.iterations_checked.value_or(1));
  std::ostringstream m;
  m << *r.wrong_elements;
  if (total > 0) m << " of " << total;
  if (r.wrong_elements_basis && *r.wrong_elements_basis == "wire")
    m << " checked output elements of the fp8 wire's gathered views match no quantization recipe of the owner's "
         "reduced row, nor mori's tolerance (the dump holds no partials: the reduce itself is not re-emulated): "
         "the quantize, gather or dequantize did not compute what it should (see the other findings).";
  else
    m << " checked output elements differ bit for bit from the collective re-emulated over this run's own "
         "partials: the reduce-scatter/all-gather did not compute what it should (see the other findings).";
  if (r.first_wrong_element) m << " First: " << *r.first_wrong_element << ".";
  return Hit{m.str()};
}

// --- RANK_DISAGREEMENT: the collective makes views equal (the bf16 wire: every rank's; the fp8 wire: every
// non-owner's copy of a slice), so any difference is a fault; without partials it is the bit-level check.
Hits rank_disagreement(const RunRecord& r, const Basis&) {
  if (!r.disagreeing_elements || *r.disagreeing_elements == 0) return {};
  return Hit{std::to_string(*r.disagreeing_elements) +
             " output elements differ between ranks where the collective makes every view equal"
             " (the bf16 wire: all views; the fp8 wire: all but the slice owner's): ranks read different data"
             " (a missing release, a stale or unwritten view, a gather that did not land everywhere)."};
}

// --- UNWRITTEN_OUTPUT: output elements still holding the poison written before the run.
Hits unwritten_output(const RunRecord& r, const Basis&) {
  if (!r.poisoned_elements || *r.poisoned_elements <= 0) return {};
  return Hit{std::to_string(*r.poisoned_elements) +
             " output elements still hold the poison written before the run: no kernel or copy wrote them "
             "(a skipped tile, a put that never landed, a grid that does not cover the output)."};
}

// --- NONDETERMINISTIC within one record (docs/reliability.md): repeats of the same inputs must give the same bits.
Hits nondeterministic_iterations(const RunRecord& r, const Basis&) {
  if (r.nondeterministic_iterations.empty()) return {};
  const auto& nd = r.nondeterministic_iterations.front();  // one finding; the record lists every iteration
  std::ostringstream m;
  m << "Iteration " << nd.iteration << " ran on the same inputs as iteration " << nd.repeat_of
    << " but its output bits differ on rank" << (nd.ranks.size() == 1 ? " " : "s ");
  for (size_t i = 0; i < nd.ranks.size(); ++i) m << (i ? ", " : "") << nd.ranks[i];
  m << ": the result depends on timing (a race: a missing wait, a flag read before it is set, a sum in arrival "
       "order)";
  if (r.straggle_us) m << "; stragglers of up to " << us(*r.straggle_us) << " were injected";
  return Hit{m.str() + "."};
}

// --- STALE_ITERATION: a first iteration right and a later one wrong (or wrong elements holding the previous
// iteration's values) is state carried from one iteration to the next.
Hits stale_iteration(const RunRecord& r, const Basis&) {
  const auto& w = r.wrong_elements_per_iteration;
  std::vector<size_t> bad;
  for (size_t i = 1; i < w.size(); ++i)
    if (w[i] > 0) bad.push_back(i);
  const bool first_right_later_wrong = w.size() > 1 && w[0] == 0 && !bad.empty();
  const int64_t stale = r.stale_elements.value_or(0);
  if (!first_right_later_wrong && stale == 0) return {};
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
       "satisfied by the previous replay's signal, a host value baked into the capture.";
  return Hit{m.str()};
}

// --- FLOOR_UNAVAILABLE: the reference could not derive the floors of this shape.
Hits floor_unavailable(const RunRecord&, const Basis& b) {
  if (!b.num.collective || b.e.floors || b.e.floor_error.empty()) return {};
  return Hit{"The reference floors could not be derived for this shape (" + b.e.floor_error +
             "), so only the benchmark's own bounds were applied."};
}

// --- SILENT_TRANSFER: order-one error in the shape of whole slices missing.
std::string silent_slices_text(const RunRecord& r, const NumericsBasis& n, const std::string& fix) {
  const auto& off = n.slices_off;
  std::string list;
  for (size_t i = 0; i < off.size() && i < 8; ++i) list += (i ? "," : "") + std::to_string(off[i]);
  if (off.size() > 8) list += ",...";
  // Missing shares leave a slice at most all-zero (relL2 1: a silent gather on the fp8 wire dequantizes
  // zero codes). Above 1 by the margin with every slice off, the buffer holds other data altogether.
  const auto measured = std::count_if(r.per_slice_rel_l2.begin(), r.per_slice_rel_l2.end(),
                                      [](double v) { return !std::isnan(v); });  // NaN: a slice of padding only
  const bool all_off = int64_t(off.size()) == int64_t(measured);
  std::string cause = fix;
  if (all_off && n.worst && *n.worst > 1.0 + kNotThisRunMargin) {
    char above[200];
    std::snprintf(above, sizeof above,
                  "every slice is off and relL2 %.3f is above the 1.000 of an all-zero output, more than "
                  "missing shares can give: the output holds another run's data (stale, never written by "
                  "this run) or the ",
                  *n.worst);
    cause = std::string(above) + fix;
  } else if (all_off) {
    cause = fix +
            "; every slice is off, so also check that this run wrote its output at all (a stale "
            "buffer from an earlier run reads the same)";
  }
  return std::to_string(off.size()) + " of " + std::to_string(r.per_slice_rel_l2.size()) + " slices (owners " + list +
         ") have relL2 >= " + sci(kSliceOffRelL2) + " against " + n.floor_txt + ": " + cause + ".";
}

Hits silent_transfer(const RunRecord& r, const Basis& b) {
  const NumericsBasis& n = b.num;
  if (!n.silent) return {};
  const std::string fix =
      traits(b.eff.mode).scatter_by_copy_engine
          ? "copy-engine puts did nothing: check the host library was built with SDMA queues"
          : "peer stores never landed: check the peer windows are mapped and the barrier waits for them";
  if (!n.slices_off.empty()) return Hit{silent_slices_text(r, n, fix)};
  const std::string fnuz = fnuz_hint(r, *n.worst);
  const int W = r.shape.world, j = n.missing_slices;
  return Hit{"rel_l2 " + sci(*n.worst) + " matches " + std::to_string(j) + " of " + std::to_string(W) +
             " slices missing (sqrt(" + std::to_string(j) + "/" + std::to_string(W) + ")=" + sci(n.missing_pattern) +
             ") against " + n.floor_txt + ": " + fix + (fnuz.empty() ? "" : "; or " + fnuz) + "."};
}

// --- NUMERICS_ABOVE_FLOOR / WIRE_NOT_USED / NUMERICS_BELOW_FLOOR: the worst rank against the floor's band,
// each only where the one before it did not fire.
bool above_floor(const NumericsBasis& n) { return n.worst && !n.silent && *n.worst > n.upper; }

// Below the geometric mean of two floors: the run sits at the lower one.
bool nearer_lower(double x, double lower, double upper) {
  return std::log(x) < 0.5 * (std::log(lower) + std::log(upper));
}

bool wire_not_used_at(const NumericsBasis& n) {
  if (!n.worst || n.silent || above_floor(n) || !n.fp8) return false;
  const double x = *n.worst;
  if (x <= kFp8AcceptMin) return true;  // mori's lower bound: "above 5e-3 says the fp8 wire was actually taken"
  // An fp8 scatter at the floor it would have without that leg (its pair floor derived), or with both legs fp8 at
  // the bf16 floor: neither leg engaged.
  if (n.scatter_fp8)
    return (n.expected && n.without_leg && nearer_lower(x, *n.without_leg, *n.expected)) ||
           (n.gather_fp8 && n.floor_bf16 && n.floor_fp8 && nearer_lower(x, *n.floor_bf16, *n.floor_fp8));
  return n.floor_bf16 && n.floor_fp8 && nearer_lower(x, *n.floor_bf16, *n.floor_fp8);
}

Hits numerics_above_floor(const RunRecord& r, const Basis& b) {
  const NumericsBasis& n = b.num;
  if (!above_floor(n)) return {};
  const double x = *n.worst;
  const std::string who = n.worst_rank >= 0 ? " (rank " + std::to_string(n.worst_rank) + ")" : "";
  std::string hint = n.scatter_fp8 ? "look at the fp8 scatter's tile scales (amax/448 per 256 columns) and their "
                                     "widening in the reduce, or an unreleased store"
                     : n.fp8 ? "look for a wrong scale, an fnuz/fn mix-up or an unreleased store on the gather leg"
                             : "look for a stale or unreleased slice, a wrong scale or a skipped rank in the reduce";
  if (const std::string fnuz = fnuz_hint(r, x); !fnuz.empty()) hint = fnuz;
  return Hit{"rel_l2 " + sci(x) + who + " is " + sci(x / (n.expected ? *n.expected : n.accept_max)) + "x " +
             n.floor_txt + " (limit " + sci(n.upper) + "): " + hint + "."};
}

// WIRE_NOT_USED of an fp8 scatter (bench_gemm_ar.py @d5443336 --scatter-dtype fp8): which leg never engaged.
Hit scatter_not_used(const NumericsBasis& n, double x) {
  const bool neither = n.gather_fp8 && (x <= kFp8AcceptMin ||
                                        (n.floor_bf16 && n.floor_fp8 && nearer_lower(x, *n.floor_bf16, *n.floor_fp8)));
  const std::string at = n.without_leg && !neither
                             ? "at the floor it would have with a bf16 scatter, " + sci(*n.without_leg) +
                                   (n.expected ? ", not the " + n.wire + " floor " + sci(*n.expected) : "")
                         : n.floor_bf16 ? "at the bf16 floor " + sci(*n.floor_bf16)
                                        : "below mori's fp8 lower bound " + sci(kFp8AcceptMin);
  return Hit{
      "This run asked for an fp8 scatter" + std::string(n.gather_fp8 ? " and an fp8 gather" : "") + " but has rel_l2 " +
      sci(x) + ", " + at + ": " +
      (neither ? "neither fp8 leg engaged" : "the scatter leg's fp8 never engaged (the partials crossed as bf16)") +
      ", so the run measured another wire; check that scatter_dtype reaches the GEMM's epilogue and the reduce "
      "widens fp8 (mori's gate 5e-3 < relL2 < 4e-2 applies to either fp8 leg, bench_gemm_ar.py @d5443336 "
      ":530-543)."};
}

Hits wire_not_used(const RunRecord&, const Basis& b) {
  const NumericsBasis& n = b.num;
  if (!wire_not_used_at(n)) return {};
  const double x = *n.worst;
  if (n.scatter_fp8) return scatter_not_used(n, x);
  if (n.floor_bf16 && n.floor_fp8)
    return Hit{
        "This fp8-wire run has rel_l2 " + sci(x) + ", at the bf16 floor " + sci(*n.floor_bf16) +
        " rather than the fp8 floor " + sci(*n.floor_fp8) +
        ": the fp8 wire never engaged, check that gather_dtype reaches the kernels and the quantize kernel runs."};
  return Hit{"This fp8-wire run has rel_l2 " + sci(x) + ", below the benchmark's fp8 lower bound " +
             sci(kFp8AcceptMin) + ": the fp8 wire never engaged, check that gather_dtype reaches the kernels."};
}

Hits numerics_below_floor(const RunRecord& r, const Basis& b) {
  const NumericsBasis& n = b.num;
  if (!n.worst || n.silent || above_floor(n) || wire_not_used_at(n)) return {};
  if (!n.expected || !n.rel_ok || !(*r.rel_l2 < *n.expected * (1.0 - n.tol))) return {};
  return Hit{"rel_l2 " + sci(*r.rel_l2) + " is below " + n.floor_txt + " by more than " + pct(n.tol).substr(1) +
             ": check that the reference is not computed from the output's own rounding."};
}

// --- RANK_DIVERGENCE (numerics): every rank ends with the same sum; different errors mean different data.
Hits rank_divergence_numerics(const RunRecord& r, const Basis& b) {
  const NumericsBasis& n = b.num;
  if (!n.rank_spread || !(n.rank_scale > 0) || !(*n.rank_spread > kRankSpreadRel * n.rank_scale)) return {};
  const auto& pr = n.rank_rel;
  const auto [mn, mx] = std::minmax_element(pr.begin(), pr.end());
  const int lo = int(mn - pr.begin()), hi = int(mx - pr.begin());
  const bool raw = pr.size() == r.per_rank_rel_l2.size();
  const double lo_v = raw ? r.per_rank_rel_l2[size_t(lo)] : *mn, hi_v = raw ? r.per_rank_rel_l2[size_t(hi)] : *mx;
  return Hit{"Per-rank relL2 ranges from " + sci(lo_v) + " (rank " + std::to_string(lo) + ") to " + sci(hi_v) +
             " (rank " + std::to_string(hi) + ") against " + n.floor_txt +
             ": ranks read different data, the signature of a missing release before the copy engine reads the "
             "reduce output (use cache-bypassing stores or a system-scope release)."};
}

// --- RACY_PUBLISH: a fence/chunks combination mori's own history shows racy (run_record.hpp says which).
Hits racy_publish_rule(const RunRecord& r, const Basis&) {
  const std::string why = racy_publish_reason(r);
  if (why.empty()) return {};
  return Hit{why +
             ": the copy engine may read C before the GEMM's stores land, so a pass today says nothing about "
             "the next run; use the default fence and chunks of a current mori, or run it many times and "
             "compare rel_l2."};
}

// --- INVALID_RECORD: the record's profile field names no usable profile.
Hits unusable_profile(const RunRecord&, const Basis& b) {
  if (b.e.profile) return {};
  return Hit{"Its profile field names no usable profile (" + b.e.profile_error + "): fix the field or pass --profile."};
}

// --- PARTIAL_RUN: the benchmark stopped after the reduce-scatter (--stop-after scatter).
Hits partial_run(const RunRecord& r, const Basis& b) {
  if (!stopped_early(r) || !b.e.profile) return {};
  if (!b.timing)
    return Hit{"stop_after=" + *r.stop_after +
               ": the run stopped after the reduce-scatter; its output is "
               "incomplete (numerics not judged)."};
  const model::Prediction& prefix = b.timing->pred;
  std::string phases;
  for (const auto& ph : prefix.phases)
    if (ph.name != "skew") phases += (phases.empty() ? "" : "+") + ph.name;
  return Hit{"stop_after=" + *r.stop_after +
             ": the run stopped after the reduce-scatter, so its output is "
             "incomplete (numerics not judged) and its time is judged on the phases it ran, " +
             phases + " (model " + us(prefix.total_us) + ", lower bound " + us(prefix.lower_bound_us) +
             "); it does not compare with full runs."};
}

// --- MODEL_UNAVAILABLE: the timing model rejects this config.
Hits model_unavailable(const RunRecord&, const Basis& b) {
  if (!b.e.profile || b.e.prediction) return {};
  return Hit{"The timing model cannot predict this config (" + b.e.model_error + "), so its time was not judged."};
}

}  // namespace

std::string ratio(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fx", x);
  return buf;
}

std::string quant_label(const RunRecord& r, const Config& cfg) {
  return r.quant_known ? to_string(cfg.quant) : "quant unknown";
}

std::string record_config_label(const RunRecord& r) {
  std::string s = config_label(r.config);
  if (scatter_fp8(r) && s.find("scatter") == std::string::npos) s += "/scatter-fp8";  // as config_label names it
  if (r.quant_known) return s;
  const std::string q = "/" + to_string(r.config.quant);
  if (const size_t at = s.find(q); at != std::string::npos) s.replace(at, q.size(), "/quant?");
  return s;
}

namespace {

// The `[rank R] (GEMM )VALIDATION FAILED relL2=X` lines bench_gemm_ar.py printed before this record (the reader
// attaches them as raw.rank_validation_failures), each against the floor. RESULT_JSON's rel_l2 is rank 0's own;
// validated is the minimum over ranks, so a clean rel_l2 with validated=false means another rank failed.
std::string rank_lines_detail(const RunRecord& r, const NumericsBasis& n, double& worst_failed, bool& gemm_lines) {
  if (r.raw.is_object() && r.raw.contains("rank_validation_failures")) {
    const auto& list = r.raw["rank_validation_failures"];
    std::string ranks, values;
    for (const auto& f : list) {
      const double x = f.value("rel_l2", 0.0);
      worst_failed = std::max(worst_failed, x);
      gemm_lines = gemm_lines || f.value("gemm_only", false);
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(f.value("rank", 0));
      values +=
          (values.empty() ? "" : ", ") + sci(x) + (n.expected ? " (" + ratio(x / *n.expected) + " the floor)" : "");
    }
    if (list.empty()) return "";
    const std::string basis = n.expected || !n.scatter_fp8 ? ""
                                                           : " (compared with mori's gate 5e-3 < relL2 < 4e-2: no " +
                                                                 n.wire + " floor is derived in this build)";
    return std::string(list.size() == 1 ? " Rank " : " Ranks ") + ranks + " printed " +
           (gemm_lines ? "GEMM VALIDATION FAILED (its own partial against the reference)" : "VALIDATION FAILED") +
           " with relL2 " + values +
           (n.expected ? ", " + (n.scatter_fp8 ? n.floor_txt : "floor " + sci(*n.expected)) : basis) + " (" +
           list.front().value("source", std::string()) + ").";
  }
  if (r.rel_l2 && std::isfinite(*r.rel_l2) && r.validated && !*r.validated && benchmark_accepts(*r.rel_l2, n.fp8))
    return " rel_l2 is rank 0's own and passes; validated is the minimum over ranks, so another rank failed "
           "(its [rank R] VALIDATION FAILED line is not in this log).";
  return "";
}

}  // namespace

void explain_not_validated(const RunRecord& r, const Basis& b, std::vector<Finding>& findings) {
  auto it = std::find_if(findings.begin(), findings.end(), [](const Finding& f) { return f.code == "NOT_VALIDATED"; });
  if (it == findings.end()) return;
  const bool other_numerics = std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
    return f.code != "NOT_VALIDATED" && f.severity == Severity::Error;
  });
  double worst_failed = 0;
  bool gemm_lines = false;
  std::string detail = rank_lines_detail(r, b.num, worst_failed, gemm_lines);
  const double sig = std::max(worst_failed, r.rel_l2 && std::isfinite(*r.rel_l2) ? *r.rel_l2 : 0.0);
  if ((!has_collective(b.cfg.mode) || gemm_lines) && quant_traits(b.cfg.quant).a.k_major && sig >= 0.17 && sig <= 0.32)
    detail += " relL2 " + sci(sig) +
              " on the GEMM alone is mori's wrong-scale-order signature: the A 1x128 "
              "scale read in the other order (column-major [M, K/128] flattened with reshape(-1) gave 0.26; "
              "tests/python/cco/test_gemm_ar_op.py @1531cfe8, README \"Scales\"): check how the scales were "
              "laid out, not the collective.";
  if (detail.empty()) return;
  std::string& msg = it->message;
  if (!other_numerics) {
    const std::string see = " (see the numerics findings)";
    if (const size_t at = msg.find(see); at != std::string::npos) msg.erase(at, see.size());
  }
  msg += detail;
}

// Defined in rules_timing.cpp.
Hits grid_off_optimum(const RunRecord&, const Basis&);
Hits eager_timing(const RunRecord&, const Basis&);
Hits faster_than_physics(const RunRecord&, const Basis&);
Hits faster_than_model(const RunRecord&, const Basis&);
Hits slower_than_model(const RunRecord&, const Basis&);
Hits rank_divergence_time(const RunRecord&, const Basis&);
Hits regression(const RunRecord&, const Basis&);
Hits quant_mismatch(const RunRecord&, const Basis&);

namespace {

// When a rule's severity is lowered below the table's (docs/check.md "Which profile is which").
enum class Grading {
  Fixed,
  ModelBasis,    // an error only on a calibrated implementation profile: a ceiling's or an uncalibrated one's warns
  SharedDevice,  // a warning when the ranks share one device
  WithinSpread,  // the rule's own grading (Hit::minor); a warning on an uncalibrated profile
};

// What a rule reads; it runs only where that exists.
enum class Needs { Output, Record, Model, ModelAndTime, Time };

struct Rule {
  const char* code;
  Severity severity;
  Grading grading;
  Needs needs;
  Hits (*fn)(const RunRecord&, const Basis&);
};

// The judge, in the order the findings appear.
const std::vector<Rule>& rules() {
  static const std::vector<Rule> t = {
      {"NOT_VALIDATED", Severity::Error, Grading::Fixed, Needs::Output, not_validated},
      {"COLLECTIVE_MISMATCH", Severity::Error, Grading::Fixed, Needs::Output, collective_mismatch},
      {"RANK_DISAGREEMENT", Severity::Error, Grading::Fixed, Needs::Output, rank_disagreement},
      {"UNWRITTEN_OUTPUT", Severity::Error, Grading::Fixed, Needs::Output, unwritten_output},
      {"NONDETERMINISTIC", Severity::Error, Grading::Fixed, Needs::Output, nondeterministic_iterations},
      {"STALE_ITERATION", Severity::Error, Grading::Fixed, Needs::Output, stale_iteration},
      {"FLOOR_UNAVAILABLE", Severity::Warning, Grading::Fixed, Needs::Output, floor_unavailable},
      {"SILENT_TRANSFER", Severity::Error, Grading::Fixed, Needs::Output, silent_transfer},
      {"NUMERICS_ABOVE_FLOOR", Severity::Error, Grading::Fixed, Needs::Output, numerics_above_floor},
      {"WIRE_NOT_USED", Severity::Error, Grading::Fixed, Needs::Output, wire_not_used},
      {"NUMERICS_BELOW_FLOOR", Severity::Warning, Grading::Fixed, Needs::Output, numerics_below_floor},
      {"RANK_DIVERGENCE", Severity::Error, Grading::Fixed, Needs::Output, rank_divergence_numerics},
      {"RACY_PUBLISH", Severity::Warning, Grading::Fixed, Needs::Record, racy_publish_rule},
      {"INVALID_RECORD", Severity::Error, Grading::Fixed, Needs::Record, unusable_profile},
      {"PARTIAL_RUN", Severity::Warning, Grading::Fixed, Needs::Record, partial_run},
      {"MODEL_UNAVAILABLE", Severity::Warning, Grading::Fixed, Needs::Record, model_unavailable},
      {"GRID_OFF_OPTIMUM", Severity::Error, Grading::WithinSpread, Needs::Model, grid_off_optimum},
      {"EAGER_TIMING", Severity::Warning, Grading::Fixed, Needs::ModelAndTime, eager_timing},
      {"FASTER_THAN_PHYSICS", Severity::Error, Grading::Fixed, Needs::ModelAndTime, faster_than_physics},
      {"FASTER_THAN_MODEL", Severity::Warning, Grading::Fixed, Needs::ModelAndTime, faster_than_model},
      {"SLOWER_THAN_MODEL", Severity::Error, Grading::ModelBasis, Needs::ModelAndTime, slower_than_model},
      {"RANK_DIVERGENCE", Severity::Error, Grading::SharedDevice, Needs::ModelAndTime, rank_divergence_time},
      {"REGRESSION", Severity::Error, Grading::Fixed, Needs::Time, regression},
      {"QUANT_MISMATCH", Severity::Warning, Grading::Fixed, Needs::Time, quant_mismatch},
  };
  return t;
}

bool runs(Needs needs, const Basis& b) {
  switch (needs) {
    case Needs::Output:
      return b.num.judged;
    case Needs::Record:
      return true;
    case Needs::Model:
      return b.timing.has_value();
    case Needs::ModelAndTime:
      return b.timing && b.time_us;
    case Needs::Time:
      return b.time_us.has_value();
  }
  return false;
}

std::string efficiency_text(const Basis& b) {
  std::string s;
  for (const auto& [name, pe] : b.phase_efficiency)
    s += (s.empty() ? "" : ", ") + name + " " + std::to_string(int(std::lround(pe.efficiency * 100))) + "%";
  return s.empty() ? "" : "; efficiency against the ceilings: " + s;
}

// The table's severity for this hit, and the words that say why it is lower.
Severity grade(const Rule& rule, const Hit& hit, const Basis& b, std::string& msg) {
  const model::Profile* p = b.e.profile.get();
  const std::string name = b.e.profile_name;
  if (rule.severity == Severity::Warning || rule.grading == Grading::Fixed) return rule.severity;
  if (rule.grading == Grading::WithinSpread && hit.minor) return Severity::Warning;
  if (rule.grading == Grading::SharedDevice) {
    if (!b.shared_device) return rule.severity;
    msg +=
        " (a warning: the ranks share one device and are scheduled together, so a spread says nothing about "
        "one rank's GPU or link)";
    return Severity::Warning;
  }
  if (p && !p->calibrated) {
    msg += " (a warning only: profile " + name + " is uncalibrated)";
    return Severity::Warning;
  }
  // A record that did not print its quant (an older bench_gemm_ar.py): the model's time depends on the quant's
  // GEMM, so a prediction for a guessed quant cannot fail the run.
  if (rule.grading == Grading::ModelBasis && (!b.record_quant_printed)) {
    msg += " (a warning: the record does not print its quant, so the model's time is for a guessed one)";
    return Severity::Warning;
  }
  // A release the model does not price (bench_gemm_ar.py --fence: 'all' "adds a buffer_inv that costs 20us";
  // kernels_fused.py measured an explicit agent fence at 90 us of a 350 us run): slower than the model is expected.
  if (rule.grading == Grading::ModelBasis && !b.unpriced_fence.empty()) {
    msg += " (a warning: the run's fence '" + b.unpriced_fence +
           "' adds a release before each push that the model, calibrated on mori's default fence none, does not "
           "price)";
    return Severity::Warning;
  }
  if (rule.grading == Grading::ModelBasis && p && p->basis == model::Profile::Basis::Ceiling) {
    msg += " (a warning: profile " + name +
           " models the hardware's ceilings, not an implementation, so slower "
           "means below the ceiling, not broken" +
           efficiency_text(b) + (p->basis_stated ? "" : "; " + p->basis_source) +
           "; a slowdown against an earlier run fails with --baseline)";
    return Severity::Warning;
  }
  return rule.severity;
}

const char* grading_text(Grading g) {
  switch (g) {
    case Grading::Fixed:
      return "";
    case Grading::ModelBasis:
      return "warning on an uncalibrated profile, a ceiling profile, a record without its quant or a fused-sdma fence "
             "other than none (unpriced)";
    case Grading::SharedDevice:
      return "warning when the ranks share one device";
    case Grading::WithinSpread:
      return "warning when within the run-to-run spread or on an uncalibrated profile";
  }
  return "";
}

const char* needs_text(Needs n) {
  switch (n) {
    case Needs::Output:
      return "output";
    case Needs::Record:
      return "record";
    case Needs::Model:
      return "model";
    case Needs::ModelAndTime:
      return "model+time";
    case Needs::Time:
      return "time";
  }
  return "";
}

}  // namespace

std::vector<Finding> apply_rules(const RunRecord& r, const Basis& b) {
  std::vector<Finding> out;
  for (const Rule& rule : rules()) {
    if (!runs(rule.needs, b)) continue;
    const Hits hit = rule.fn(r, b);
    if (!hit) continue;
    std::string msg = hit->message;
    const Severity sev = grade(rule, *hit, b, msg);
    out.push_back({rule.code, sev, std::move(msg)});
  }
  explain_not_validated(r, b, out);
  return out;
}

}  // namespace gemmar::verdict_detail

namespace gemmar {

const std::vector<RuleInfo>& rule_table() {
  static const std::vector<RuleInfo> t = [] {
    std::vector<RuleInfo> v;
    for (const auto& r : verdict_detail::rules())
      v.push_back({r.code, r.severity, verdict_detail::grading_text(r.grading), verdict_detail::needs_text(r.needs)});
    // Findings made outside judge(): across the runs of one check (across_runs.hpp), and entries of a log that
    // are not runs (failed_entry_verdict, invalid_record_verdict).
    v.push_back({"NONDETERMINISTIC", Severity::Error, "", "across runs"});
    v.push_back({"BENCHMARK_FAILED", Severity::Error, "", "entry"});
    v.push_back({"RUNS_MISSING", Severity::Error, "", "entry"});
    v.push_back({"INVALID_RECORD", Severity::Error, "", "entry"});
    // Log-level entries and other producers' records (log_verdicts.hpp).
    v.push_back({"BENCHMARK_EXIT", Severity::Warning, "", "entry"});
    v.push_back({"SWEEP_FAILED", Severity::Error, "", "entry"});
    v.push_back({"SWEEP_STDOUT", Severity::Warning, "", "entry"});
    v.push_back({"OTHER_RECORD", Severity::Warning, "", "entry"});
    v.push_back({"SELF_TEST_FAILED", Severity::Error, "", "entry"});
    // mori's refusals, its tests' own gates and sweep.py's occupancy note (mori_verdicts.hpp).
    v.push_back({"CONFIG_REFUSED", Severity::Error, "", "entry"});
    v.push_back({"SDMA_COMPILED_OUT", Severity::Error, "", "entry"});
    v.push_back({"MORI_GATE", Severity::Error, "", "entry"});
    v.push_back({"OCCUPANCY_MOVED", Severity::Warning, "", "entry"});
    // The per-call checksum guard (guard_rules.hpp), judged on the record's guard field.
    for (const char* code : {"GUARD_REDUCE", "GUARD_GATHER", "GUARD_WIRE", "GUARD_GEMM"})
      v.push_back({code, Severity::Error, "", "record"});
    v.push_back({"GUARD_NO_CALLS", Severity::Warning, "", "record"});
    return v;
  }();
  return t;
}

std::vector<std::string> finding_codes() {
  std::set<std::string> codes;
  for (const auto& r : rule_table()) codes.insert(r.code);
  return {codes.begin(), codes.end()};
}

}  // namespace gemmar
