// gemmar report's view of where a run's time went: the machine and profile a run belongs to, the timing model of
// its config at its own shape (as `gemmar check` computes it, validate/verdict/expectations.cpp), and per group the
// table of each phase (measured, model, ceiling, lower bound, GEMM TFLOP/s, collective bandwidths) and the speedup
// against the split baseline. docs/report.md, "Where the time went".
#pragma once
#include <istream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/config.hpp"
#include "validate/record/run_record.hpp"

namespace gemmar::report {

// A machine named in a log's own text (a header such as "8x MI355X (gfx950)", a device line "NVIDIA H200"): the
// first device token of the first 64 KiB, and where ("file:line"). Reads from the stream's current position and
// leaves it cleared and back there.
struct MachineHint {
  std::string machine, where;
};
std::optional<MachineHint> machine_hint(std::istream&, const std::string& name);

// The profile a run is modelled with, the rule `gemmar check` judges it by (expectations_for): the record's own,
// else the one its check context names, else default_profile() of its backend and device; the device is the
// record's, else the machine its log names. Ranks per device are read from gemmar's device text ("8 ranks on 1
// device"), else 1.
std::string profile_for_run(const RunRecord&, const std::string& context_profile, const std::string& machine);

// The model of a config at a shape under a profile, computed once per process: {total_us, lower_bound_us,
// in_server_us, profile, notes, phases: [[name, us]], phase_detail: [{name, us, ceiling_us, lower_bound_us, bytes,
// link_bytes, hbm_bytes, flops, bound}]}. `error` instead when the profile cannot be loaded or the model rejects
// the config (both are the record's, not the user's: the page says why and falls back).
struct ModelResult {
  nlohmann::json model;  // null on error
  bool one_device = false;
  std::string error;
};
ModelResult model_for(const std::string& profile, const Shape&, const Config&);

// The split baseline of a config, as mori measures its margin (tests/python/cco/test_gemm_ar_bench.py @e7606746:
// fused-sdma against split-sdma at the same shape and quant): split-sdma with the same quant and wire; split-lsa (a
// bf16 all-reduce) against split-sdma bf16/sdma. nullopt for gemm-only and split-sdma itself.
std::optional<Config> split_baseline(const Config&);

// The per-phase table of one group: `measured` [[name, us]] (medians), `total_us` the measured total, `model` a
// model_for() document (or null). Rows per phase (every name either side returns, none hard-coded), then
// "unattributed" (total minus the measured phases) and "total"; the GEMM's TFLOP/s; algbw and busbw of the
// collective legs (nccl-tests' definitions). docs/report.md lists every field.
nlohmann::json phase_table(const nlohmann::json& measured, std::optional<double> total_us, const nlohmann::json& model,
                           const Shape&, const Config& effective, int ranks_per_device);

}  // namespace gemmar::report
