// What a run is judged against: the reference's predicted floors for its wire, the timing model's prediction
// and pull-grid sweep for its profile, and the baseline runs. The judge (verdict.hpp) is a pure function of a
// record and these expectations; this provider is the one place that derives them, each once per process
// (floors also once across processes, on disk: reference/floors.hpp).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "reference/floors.hpp"
#include "validate/record/run_record.hpp"

namespace gemmar {

// The options a judging command passes (check's flags; run/validate fill them from the plan).
struct JudgeOptions {
  std::optional<std::string> profile;  // overrides the record's; default: default_profile() of its backend
  std::optional<int> pull_blocks;      // for records that carry no pull_blocks (else 64)
  std::vector<RunRecord> baseline;     // --baseline runs, matched by config and shape
  bool judge_timing = true;            // false: times are not judged (CPU emulation: not GPU times)
  bool floors_at_run_m = false;        // derive floors at the run's own M, not kFloorCanonicalM
};

struct FloorExpectation {
  double bf16 = 0, fp8 = 0;  // the bf16 scatter's floors: bf16 and fp8 gather
  double bf16_stderr = 0, fp8_stderr = 0;
  int64_t rows_evaluated = 0;
  int64_t derived_at_m = 0;
};

// The floor of one (scatter, gather) wire pair and its sampling error.
struct WireFloor {
  double rel_l2 = 0, stderr_ = 0;
};
// An fp8 scatter's floors (bench_gemm_ar.py --scatter-dtype fp8), with a bf16 and with an fp8 gather: unset until the
// reference emulates the fp8 scatter's tile quantization (reference/floors.hpp); the rules then judge such a run by
// mori's own gate alone, and say so.
struct Fp8ScatterFloors {
  std::optional<WireFloor> bf16_gather, fp8_gather;
};

struct Expectations {
  Config config;  // the record's config with the pull grid it was judged at
  // Floors: nullopt for gemm-only (no wire) or when they could not be derived (floor_error says why).
  std::optional<FloorExpectation> floors;
  Fp8ScatterFloors fp8_scatter_floors;
  std::string floor_error;
  // Timing model: profile nullptr when the name is unusable (profile_error); prediction nullopt when the
  // model rejects the config (model_error).
  std::string profile_name;
  bool profile_from_options = false;  // --profile (a bad one is the user's error, not the record's)
  // Neither --profile nor the record named one (no profile field, no device string): mi355x by default.
  bool profile_defaulted = false;
  std::shared_ptr<const model::Profile> profile;
  std::string profile_error;
  std::optional<model::Prediction> prediction;
  std::string model_error;
  // The slowest of the other machines the profile was calibrated on (its "machines": mori's retest node v2-015,
  // another MI355X node and stack): a run there is healthy too, so SLOWER_THAN_MODEL compares with the slower of
  // the two. Empty name and 0 when the profile lists none or none is slower than `prediction`.
  std::string slowest_machine;
  double slowest_machine_total_us = 0;
  std::optional<model::Sweep> pull_sweep;  // for configs with a pull (fp8 wire over CU loads)
  double pull_sweep_best_us = 0;           // the model's total at the optimum
  double pull_at_grid_us = 0;              // the model's total at the record's own grid
  bool judge_timing = true;
  std::vector<RunRecord> baseline;
};

// The floor of the run's (scatter, gather) pair; nullopt when it was not derived (no floors, or an fp8 scatter's).
std::optional<WireFloor> wire_floor(const Expectations&, WireDtype scatter, WireDtype gather);

// bench_gemm_ar.py @d5443336's --scatter-dtype (RESULT_JSON "scatter_dtype"): true when the reduce-scatter leg
// carried fp8. Read from the record as printed until the config's field table carries it.
bool scatter_fp8(const RunRecord&);

// The profile a run is judged against when none is named: by backend and device. CPU emulation: mi355x (its
// times are not judged). A GPU: h200 for NVIDIA H100/H200 with one rank per device, h200-1gpu for W ranks on
// one NVIDIA device; mi355x (gfx950) or mi300x (gfx942) on AMD. `device` is the device's name as the runtime
// reports it; `ranks_per_device` is the effective count (>= 1).
std::string default_profile(const std::string& backend, const std::string& device, int ranks_per_device);

// Derives (or reuses) everything `record` is judged against. Never throws for the record's own faults (a bad
// profile field, a config the model rejects): those become the errors above and the judge reports them.
// Throws UsageError for a bad options.profile.
Expectations expectations_for(const RunRecord&, const JudgeOptions&);

}  // namespace gemmar
