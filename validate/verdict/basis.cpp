// The bases a record is judged on, each derived once: the numerics basis (floors, the worst rank, the band, the
// silent-transfer signatures, the per-rank spread), the timing basis (the model's prediction as this run ran it),
// the phases against their ceilings and the matching baseline runs. The rules (rules.cpp) only read them.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "validate/verdict/judge_basis.hpp"

namespace gemmar::verdict_detail {

using namespace verdict_rules;

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

// A run the benchmark stopped early (--stop-after scatter): only a fused or split run with a reduce-scatter
// stops anywhere; gemm-only and split-lsa run whole whatever the flag says.
bool stopped_early(const RunRecord& r) {
  return r.stop_after && *r.stop_after != "all" && has_collective(r.config.mode) &&
         !traits(r.config.mode).two_stage_allreduce;
}

// A benchmark gemm-only run left unvalidated (rel_l2 NaN, validated true): bench_gemm_ar.py checks gemm-only's
// GEMM against its rank's partial (e.g. @fc892894), so NaN there is a version before that check or
// --skip-validation. gemmar's own records (backend set) are validated in every mode.
bool benchmark_skips_validation(const RunRecord& r, const NumericsBasis& n) {
  return !has_collective(r.config.mode) && !r.backend && !n.rel_ok && r.validated && *r.validated;
}

bool printed_by_test(const RunRecord& r) { return r.raw.is_object() && r.raw.contains("printed_by"); }

// bench_gemm_ar.py @d5443336's keys that change the run and are not in the config label yet, where they differ from
// its defaults (scatter_dtype bf16, chunk_bands 0, relaxed_rows false), so records of older versions still match.
std::string time_knobs(const RunRecord& r) {
  std::string s;
  if (!r.raw.is_object()) return s;
  for (const char* knob : {"scatter_dtype", "chunk_bands", "relaxed_rows"}) {
    const auto it = r.raw.find(knob);
    if (it == r.raw.end() || it->is_null() || *it == "bf16" || *it == 0 || *it == false) continue;
    s += std::string("|") + knob + "=" + it->dump();
  }
  return s;
}

namespace {

// The benchmark's rel_l2 is the minimum over ranks; the worst rank decides correctness.
void worst_rank_error(const RunRecord& r, NumericsBasis& n) {
  if (n.rel_ok) n.worst = *r.rel_l2;
  for (size_t i = 0; i < r.per_rank_rel_l2.size(); ++i) {
    const double x = r.per_rank_rel_l2[i];
    if (std::isfinite(x) && (!n.worst || x > *n.worst)) {
      n.worst = x;
      n.worst_rank = int(i);
    }
  }
}

// The floors for this run's own shape, quant and wire, and the band around the expected one.
void floor_band(const RunRecord& r, const Expectations& e, NumericsBasis& n) {
  const WireDtype scatter = n.scatter_fp8 ? WireDtype::Fp8 : WireDtype::Bf16;
  const WireDtype gather = n.gather_fp8 ? WireDtype::Fp8 : WireDtype::Bf16;
  const auto pair = n.collective ? wire_floor(e, scatter, gather) : std::nullopt;
  if (n.collective && e.floors) {
    n.floor_bf16 = e.floors->bf16;
    n.floor_fp8 = e.floors->fp8;
    if (n.scatter_fp8) n.without_leg = wire_floor(e, WireDtype::Bf16, gather)->rel_l2;
  }
  if (pair) {
    n.expected = pair->rel_l2;
    // The floor is estimated on rows_evaluated sampled rows; the run's own relL2 averages over M rows, so
    // its row-to-row noise is the floor's stderr scaled by sqrt(rows/M).
    const double rows = double(std::max<int64_t>(e.floors ? e.floors->rows_evaluated : 1, 1));
    n.sigma = pair->stderr_ * std::sqrt(1.0 + rows / double(std::max<int64_t>(r.shape.m, 1)));
  }
  // The benchmark's fp8 gate covers an fp8 gather or an fp8 scatter (bench_gemm_ar.py @d5443336 :530-543).
  n.accept_max = n.fp8 ? kFp8AcceptMax : kBf16AcceptMax;
  n.upper = n.accept_max;
  n.tol = kFloorMargin;
  if (n.expected) {
    n.tol = std::max(kFloorMargin, kFloorSigmas * *n.sigma / *n.expected);
    n.upper = std::min(n.upper, *n.expected * (1.0 + n.tol));
  }
  n.floor_txt = n.expected ? ("the " + n.wire + " floor " + sci(*n.expected))
                : n.scatter_fp8 && e.floors
                    ? "mori's fp8 gate " + sci(n.accept_max) + " (no " + n.wire + " floor is derived in this build)"
                    : ("the benchmark's bound " + sci(n.accept_max));
}

// SILENT_TRANSFER's signatures: slices at relL2 >= kSliceOffRelL2 (NaN is not "never arrived": a slice of
// padding rows only has no sampled row, and NaN in the output is NOT_VALIDATED's), else an order-one error
// of sqrt(j/W) for j slices missing.
void silent_signatures(const RunRecord& r, NumericsBasis& n) {
  if (!n.collective) return;
  for (size_t i = 0; i < r.per_slice_rel_l2.size(); ++i)
    if (r.per_slice_rel_l2[i] >= kSliceOffRelL2) n.slices_off.push_back(int(i));
  if (!n.slices_off.empty()) {
    n.silent = true;
    return;
  }
  if (!n.worst || *n.worst < kSilentMinRelL2) return;
  const int W = r.shape.world;
  const double x = *n.worst;
  const int j = std::clamp(int(std::lround(double(W) * x * x)), 1, W);
  const double pattern = std::sqrt(double(j) / double(W));
  if (std::fabs(x - pattern) <= kSilentPatternTol * pattern) {
    n.silent = true;
    n.missing_slices = j;
    n.missing_pattern = pattern;
  }
}

// Every rank ends with the same sum; on the fp8 wire a rank's own rows never cross the wire, so a rank whose
// slice holds more of the real rows (M not a multiple of W*BLOCK_M, or M < W*S) legitimately sees less error.
// Each rank is compared at its own expectation: own rows at the bf16 floor, the rest at the per-row fp8 error
// implied by the fp8 floor.
void rank_spread(const RunRecord& r, const Config& cfg, NumericsBasis& n) {
  std::vector<double>& pr = n.rank_rel;
  for (double x : r.per_rank_rel_l2)
    if (std::isfinite(x)) pr.push_back(x);
  // Only the gather's fp8 spares the owner's rows; an fp8 scatter rounds every row's peer partials alike.
  if (n.gather_fp8 && !n.scatter_fp8 && n.floor_bf16 && n.floor_fp8 && pr.size() == r.per_rank_rel_l2.size() &&
      int(pr.size()) == r.shape.world && r.shape.world > 1) {
    const double world = r.shape.world, fb2 = *n.floor_bf16 * *n.floor_bf16, f82 = *n.floor_fp8 * *n.floor_fp8;
    const double e82 = std::max(fb2, (f82 - fb2 / world) * world / (world - 1.0));
    const double real = double(r.shape.m), S = double(slice_rows(r.shape, cfg));  // the run's row plan
    for (size_t i = 0; i < pr.size(); ++i) {
      const double own = std::clamp(real - double(i) * S, 0.0, S);
      const double expect = std::sqrt((own * fb2 + (real - own) * e82) / real);
      pr[i] *= *n.floor_fp8 / expect;
    }
  }
  if (pr.size() < 2) return;
  const auto [mn, mx] = std::minmax_element(pr.begin(), pr.end());
  // Relative to the error level itself: ranks that all lost their data (relL2 ~0.93 each) differ by
  // sampling noise far above the floor, and that is not divergence.
  n.rank_scale = std::max(n.expected ? *n.expected : 0.0, median(pr));
  n.rank_spread = *mx - *mn;
}

NumericsBasis numerics_basis(const RunRecord& r, const Expectations& e, const Config& cfg, const Config& eff) {
  NumericsBasis n;
  n.collective = has_collective(eff.mode);
  n.gather_fp8 = n.collective && uses_fp8_wire(eff);
  n.scatter_fp8 = n.collective && scatter_fp8(r);
  n.fp8 = n.gather_fp8 || n.scatter_fp8;
  n.wire = n.scatter_fp8  ? std::string("fp8-scatter/") + (n.gather_fp8 ? "fp8" : "bf16") + "-gather"
           : n.gather_fp8 ? "fp8"
                          : "bf16";
  n.rel_ok = r.rel_l2 && std::isfinite(*r.rel_l2);
  n.judged = !stopped_early(r);
  if (!n.judged) return n;
  worst_rank_error(r, n);
  floor_band(r, e, n);
  silent_signatures(r, n);
  rank_spread(r, cfg, n);
  return n;
}

// The phases a run that stopped early ran: up to and including the reduce-scatter (scatter, or the fused drain), plus
// the launch skew every multi-rank timing carries; its total and lower bound are theirs.
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

TimingBasis timing_basis(const RunRecord& r, const Expectations& e) {
  TimingBasis tb;
  tb.stopped_early = stopped_early(r);
  tb.pred = tb.stopped_early ? prefix_prediction(*e.prediction) : *e.prediction;
  // Eager timing: every kernel pays its launch (graph replay hides it), so the model gets one launch-to-
  // completion cost per kernel on top.
  tb.eager = r.timing == "eager";
  for (const auto& ph : tb.pred.phases)
    if (ph.name != "skew" && ph.us > 0) ++tb.launches;
  tb.launch_extra = tb.eager ? tb.launches * e.profile->params.sync.eager_launch_us : 0.0;
  return tb;
}

// Each measured phase against its ceiling (the model's ceiling_us: FLOPs / bytes at the profile's measured
// vendor-GEMM and copy rates), as nccl-tests' busbw column puts a collective beside the link.
std::map<std::string, PhaseEfficiency> phase_efficiency(const RunRecord& r, const model::Prediction& pred) {
  std::map<std::string, PhaseEfficiency> out;
  for (const auto& ph : pred.phases) {
    const auto m = r.phases_us.find(ph.name);
    if (m == r.phases_us.end() || ph.ceiling_us <= 0 || !(m->second > 0)) continue;
    out[ph.name] = {m->second, ph.ceiling_us, ph.us, ph.ceiling_us / m->second};
  }
  return out;
}

// Shape and config decide which runs are the "same" for a baseline; the pull grid only matters where there
// is a pull.
std::string match_key(const RunRecord& r, const Config& cfg, bool with_quant) {
  std::ostringstream os;
  const Config eff = effective_config(cfg);
  Config c = cfg;
  if (!with_quant) c.quant = Quant::Blockscale;
  os << r.shape.m << ',' << r.shape.n << ',' << r.shape.k << ',' << r.shape.world << '|' << config_label(c);
  if (with_quant && !r.quant_known) os << "|quant?";  // matches no baseline of a known quant, nor one unknown
  if (has_pull(eff)) os << "|pull=" << cfg.pull_blocks;
  os << time_knobs(r);
  // Eager and graph times do not compare, nor does a run that stopped after the scatter with a full one.
  os << '|' << (r.timing.empty() ? "graph" : r.timing) << '|' << r.stop_after.value_or("all");
  return os.str();
}

std::optional<BaselineBasis> baseline_basis(const RunRecord& r, const Expectations& e, const Config& cfg) {
  if (e.baseline.empty()) return std::nullopt;
  BaselineBasis b;
  const std::string key = match_key(r, cfg, true), loose = match_key(r, cfg, false);
  std::vector<double> times;
  for (const auto& run : e.baseline) {
    Config bc = run.config;
    bc.pull_blocks = run.pull_blocks.value_or(cfg.pull_blocks);
    if (!run.max_rank_time_us || !std::isfinite(*run.max_rank_time_us)) continue;
    if (match_key(run, bc, true) == key) {
      b.same.push_back(&run);
      times.push_back(*run.max_rank_time_us);
    } else if (match_key(run, bc, false) == loose) {
      b.other_quant.push_back(&run);
    }
  }
  if (!times.empty()) b.median_us = median(times);
  return b;
}

// "NVIDIA H200 (8 ranks on 1 device)" (kernels/pipeline/engine.cu's device string): more ranks than devices.
bool device_string_shared(const std::optional<std::string>& device) {
  if (!device) return false;
  const std::string& d = *device;
  const std::string mid = " ranks on ";
  const size_t at = d.find(mid);
  if (at == std::string::npos) return false;
  size_t begin = at;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(d[begin - 1]))) --begin;
  size_t end = at + mid.size();
  while (end < d.size() && std::isdigit(static_cast<unsigned char>(d[end]))) ++end;
  if (begin == at || end == at + mid.size() || at - begin > 9 || end - at - mid.size() > 9) return false;
  return std::stoll(d.substr(begin, at - begin)) > std::stoll(d.substr(at + mid.size(), end - at - mid.size()));
}

}  // namespace

Basis make_basis(const RunRecord& r, const Expectations& e) {
  Basis b{e, e.config, effective_config(e.config), {}, std::nullopt, std::nullopt, false, {}, std::nullopt, true, {}};
  b.num = numerics_basis(r, e, b.cfg, b.eff);
  b.shared_device = device_string_shared(r.device) || (e.profile && e.profile->params.one_device);
  b.record_quant_printed = r.quant_known && r.quant_inference.empty();
  if (r.fence && *r.fence != "none" && b.cfg.mode == Mode::FusedSdma) b.unpriced_fence = *r.fence;
  if (!e.profile) return b;
  const bool emulated = r.backend && *r.backend == "cpu-emulation";
  const bool have_time = r.max_rank_time_us && std::isfinite(*r.max_rank_time_us) && *r.max_rank_time_us > 0;
  if (e.judge_timing && !emulated && have_time) b.time_us = *r.max_rank_time_us;
  if (b.time_us) b.baseline = baseline_basis(r, e, b.cfg);
  if (!e.prediction) return b;
  b.timing = timing_basis(r, e);
  if (b.time_us) b.phase_efficiency = phase_efficiency(r, b.timing->pred);
  return b;
}

}  // namespace gemmar::verdict_detail
