// The verdict engine: judges a run record against the reference floors and the timing model. Finding codes
// and thresholds are one list for every command (docs/check.md explains each).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/record/run_record.hpp"
#include "validate/verdict/expectations.hpp"

namespace gemmar {

enum class Severity { Warning, Error };

struct Finding {
  std::string code;  // docs/check.md lists every code
  Severity severity = Severity::Error;
  std::string message;  // one sentence a kernel engineer can act on
};

// What a verdict was judged against, typed; written as the "context" object of check/validate --json.
struct FloorsContext {
  double bf16 = 0, fp8 = 0, bf16_stderr = 0, fp8_stderr = 0;
  int64_t rows_evaluated = 0, derived_at_m = 0;
  std::string wire;
};
struct NumericsContext {
  std::optional<double> expected_floor, tolerance, lower;  // when a floor was derived
  double upper = 0, accept_max = 0;
};
struct ModelContext {
  std::string profile;
  bool calibrated = false;
  std::string calibration;  // "implementation" | "ceiling" (model::Profile::Basis)
  double total_us = 0, lower_bound_us = 0, model_band = 0, run_to_run_spread = 0;
  int pull_blocks = 0;
  bool stopped_early = false;  // the run stopped after its reduce-scatter (stop_after): a prefix of phases
  std::optional<double> eager_launch_us;
};
struct PullSweepContext {
  int optimum = 0, band_lo = 0, band_hi = 0;
  double best_us = 0;
};
struct PhaseEfficiency {
  double measured_us = 0, ceiling_us = 0, model_us = 0, efficiency = 0;  // efficiency = ceiling / measured
};
struct PerRankTimeContext {
  int critical_rank = 0;
  double max_us = 0, min_us = 0, median_us = 0, spread_us = 0, over_median = 0;
};
struct BaselineContext {
  std::string source;
  size_t runs = 0;
  double time_us = 0;
};
struct VerdictContext {
  bool invalid = false;       // an entry that is not a readable run (INVALID_RECORD, BENCHMARK_FAILED, RUNS_MISSING)
  bool log_level = false;     // a finding about the log, not a run (BENCHMARK_FAILED, SWEEP_*, RUNS_MISSING)
  bool other_record = false;  // another producer's record (the op worker's cases): judged by its own fields
  std::string config;
  int pull_blocks = 0;  // the grid the run was judged at
  std::optional<FloorsContext> floors;
  std::optional<NumericsContext> numerics;
  std::optional<double> per_rank_rel_l2_spread;
  std::optional<ModelContext> model;
  std::optional<PullSweepContext> pull_sweep;
  std::map<std::string, PhaseEfficiency> phase_efficiency;
  std::optional<PerRankTimeContext> per_rank_time;
  std::optional<BaselineContext> baseline;
  std::vector<std::string> notes;
};
nlohmann::json to_json(const VerdictContext&);

struct Verdict {
  std::string source;
  bool pass = true;
  std::vector<Finding> findings;
  RunRecord record;
  VerdictContext context;  // floors, model prediction, band used: what the verdict was judged against
};

// The judge's rules, one row per (code, rule), in the order they run (docs/check.md lists the same codes).
// `severity` is the most a rule gives; `grading` says when it gives less; `judged_on` what it reads.
struct RuleInfo {
  const char* code;
  Severity severity;
  const char* grading;    // "" (fixed) or when the severity is lowered
  const char* judged_on;  // "output", "record", "model", "model+time", "time", "across runs", "entry"
};
const std::vector<RuleInfo>& rule_table();
// Every code a verdict can carry, each once, sorted.
std::vector<std::string> finding_codes();

// The judge: a pure function of the record and what it is judged against. Every rule lives here.
Verdict judge(const RunRecord&, const Expectations&);
// expectations_for + judge: what run, validate, check and verify call.
Verdict judge(const RunRecord&, const JudgeOptions&);
std::vector<Verdict> judge_all(const std::vector<RunRecord>&, const JudgeOptions&);

nlohmann::json to_json(const std::vector<Verdict>&);     // {"runs": [...]} as docs/spec.md section 4
std::string verdict_table(const std::vector<Verdict>&);  // the human table

// A record that could not be read (bad JSON, missing or wrong-typed field): a failing verdict with one
// INVALID_RECORD finding carrying `message`; `raw` is kept when the line parsed as JSON.
Verdict invalid_record_verdict(const std::string& source, const std::string& message,
                               const nlohmann::json& raw = nullptr);

// An entry that is not a run but fails the check (BENCHMARK_FAILED, RUNS_MISSING): one finding of `code`.
Verdict failed_entry_verdict(const std::string& source, const std::string& code, const std::string& message);

std::string to_string(Severity);  // "error" | "warning"

// The thresholds the rules use (docs/check.md explains each); exposed so tests and reports quote the same.
namespace verdict_rules {
inline constexpr double kBf16AcceptMax = 3e-3;  // the benchmark's own bf16 bound (outer guard)
inline constexpr double kFp8AcceptMin = 5e-3;   // the benchmark's fp8 bounds (outer guard)
inline constexpr double kFp8AcceptMax = 4e-2;
inline constexpr double kFloorMargin = 0.20;       // relative allowance above/below the derived floor
inline constexpr double kFloorSigmas = 4.0;        // floor stderr multiples, when larger than the margin
inline constexpr double kSilentMinRelL2 = 0.25;    // ten times the fp8 floor: order-one error
inline constexpr double kSilentPatternTol = 0.10;  // |rel_l2 - sqrt(j/W)| within 10% for j missing slices
inline constexpr double kNotThisRunMargin = 0.05;  // every slice off and rel_l2 > 1 + this: not this run's data
inline constexpr double kSliceOffRelL2 = 0.4;      // a slice with this error never arrived (W=2 silent gather: 0.5)
inline constexpr double kRankSpreadRel = 0.10;     // per-rank relL2 spread, relative to the floor
inline constexpr double kRankTimeSpreads = 3.0;    // per-rank time: this many run-to-run spreads
// Ranks sharing one device (--ranks-per-device, the one-GPU emulation) are scheduled together: healthy runs on one
// H200 spread their per-rank times by up to 8.9% (gemm-only at M = 4096, docs/results/h200-1gpu-2026-12-03-gemm4;
// collective modes at most 1.3%, docs/results/h200-1gpu-2026-12-0*); beyond this it is a warning there, since no
// rank can have a throttled GPU or a slow link of its own.
inline constexpr double kSharedDeviceRankSpread = 0.10;
inline constexpr int64_t kFloorCanonicalM = 16384;    // floors are per-row statistics: derived once at this M
inline constexpr double kFasterThanModel = 0.25;      // a run this far under the model (above the lower bound)
inline constexpr double kNondeterministicRel = 1e-6;  // same config, same data: rel_l2 must repeat to this
// The benchmark's own acceptance of one rank's relL2: bf16 below kBf16AcceptMax; fp8 strictly inside
// (kFp8AcceptMin, kFp8AcceptMax), the lower bound proving the fp8 wire was used. NaN is never accepted.
bool benchmark_accepts(double rel_l2, bool fp8_wire);
}  // namespace verdict_rules

}  // namespace gemmar
