// Inside the verdict library: what a record is judged on, derived once per record (the numerics basis from the
// floors and the record's errors, the timing basis from the model), and the rules that read it. Every rule is a
// function (record, basis) -> at most one hit; rules.cpp lists them with their code and severity in one table.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "common/stats.hpp"
#include "model/model.hpp"
#include "validate/record/run_record.hpp"
#include "validate/verdict/expectations.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar::verdict_detail {

// The numerics of the record against the floors of its wire.
struct NumericsBasis {
  bool judged = false;  // false for a run that stopped early: the numerics of an incomplete output mean nothing
  bool collective = false, fp8 = false;  // fp8: either leg carried fp8 (mori's two-sided gate applies)
  bool scatter_fp8 = false, gather_fp8 = false;
  bool rel_ok = false;  // rel_l2 present and finite
  // "bf16" | "fp8" (the gather) | "fp8-scatter/bf16-gather" | "fp8-scatter/fp8-gather"
  std::string wire;
  std::optional<double> worst;  // the worst rank's relL2 (the benchmark's rel_l2 is the minimum over ranks)
  int worst_rank = -1;
  // floor_bf16 / floor_fp8: the bf16 scatter's floors (bf16 and fp8 gather); expected: this run's wire pair's floor;
  // without_leg: the floor the run would sit at had its fp8 scatter crossed as bf16 (WIRE_NOT_USED of that leg).
  std::optional<double> floor_bf16, floor_fp8, expected, sigma, without_leg;
  double accept_max = 0, upper = 0, tol = 0;
  std::string floor_txt;  // "the bf16 floor 2.35e-3" or "the benchmark's bound 3e-3"
  // SILENT_TRANSFER's two signatures: slices whose relL2 says they never arrived, or an error of sqrt(j/W).
  std::vector<int> slices_off;
  int missing_slices = 0;  // j of the sqrt(j/W) pattern; 0: no match
  double missing_pattern = 0;
  bool silent = false;  // either signature: NUMERICS_ABOVE_FLOOR stays quiet
  // Per-rank relL2, each at its own expectation on the fp8 wire, and their spread.
  std::vector<double> rank_rel;
  double rank_scale = 0;
  std::optional<double> rank_spread;
};

// The model's view of the run.
struct TimingBasis {
  model::Prediction pred;      // a run that stopped early: the prefix of phases it ran
  bool stopped_early = false;  // stop_after before the end (stopped_early(record))
  bool eager = false;
  int launches = 0;         // kernels the model counts (eager: each paid its launch)
  double launch_extra = 0;  // eager: launches x the launch cost, added to the model
};

// The baseline runs this record matches (same shape and config; or the same but for the quant).
struct BaselineBasis {
  std::vector<const RunRecord*> same, other_quant;
  double median_us = 0;  // of `same`
};

struct Basis {
  const Expectations& e;
  Config cfg, eff;
  NumericsBasis num;
  std::optional<TimingBasis> timing;  // the profile and a prediction exist
  std::optional<double> time_us;      // the time judged: present, positive, a GPU time, timing judged
  bool shared_device = false;         // the ranks ran on one device (--ranks-per-device, the one-GPU emulation)
  std::map<std::string, PhaseEfficiency> phase_efficiency;  // measured phases against their ceilings
  std::optional<BaselineBasis> baseline;
  bool record_quant_printed = true;  // false: the quant was inferred from an older benchmark's keys, or unknown
  // A fused-sdma run's release before the epilogue push other than mori's default "none" (bench_gemm_ar.py: 'agent'
  // and 'all' are correct and cost more), which the model, calibrated on runs at fence none, does not price.
  std::string unpriced_fence;
};

Basis make_basis(const RunRecord&, const Expectations&);
VerdictContext context_of(const RunRecord&, const Basis&);

// A rule's finding before the table gives it its code and severity. `minor`: the rule itself grades this one
// below the table's severity (GRID_OFF_OPTIMUM within the run-to-run spread).
struct Hit {
  std::string message;
  bool minor = false;
};

// Text helpers shared by the rules and the table printer.
std::string sci(double);
std::string us(double);
std::string pct(double frac);
bool stopped_early(const RunRecord&);
// A benchmark gemm-only run that its benchmark left unvalidated (rel_l2 NaN or absent, validated true).
bool benchmark_skips_validation(const RunRecord&, const NumericsBasis&);
std::string ratio(double x);  // "2.5x"
// A record read from test_gemm_ar_bench.py's -s print (log_reader: "printed_by"), which carries no validated.
bool printed_by_test(const RunRecord&);
// The record's knobs that change its run but are not in config_label yet (scatter_dtype, chunk_bands, relaxed_rows),
// "|k=v" each where it differs from bench_gemm_ar.py's default: baselines and repeats match on them.
std::string time_knobs(const RunRecord&);
// The run's quant as a reader should see it: "quant unknown" when the record did not say and it cannot be
// inferred; its config label with "/quant?" then.
std::string quant_label(const RunRecord&, const Config&);
std::string record_config_label(const RunRecord&);
// NOT_VALIDATED, explained after every rule ran (bench_gemm_ar.py's per-rank lines, mori's signatures).
void explain_not_validated(const RunRecord&, const Basis&, std::vector<Finding>&);

}  // namespace gemmar::verdict_detail
