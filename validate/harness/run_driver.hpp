// One harness, thin plug-ins: a backend (the CPU emulation, or the GPU kernels) only executes one config
// and hands back what it produced; this driver generates the operands, poisons nothing itself (backends
// poison their outputs before the kernels write them), checks every output against the reference, times,
// judges with the verdict engine and builds the RESULT_JSON record. `gemmar run` and `gemmar validate` use it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/faults.hpp"
#include "common/run_request.hpp"
#include "validate/record/run_record.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar {

struct BackendResult {
  std::string backend;  // "cpu-emulation" | "gpu"
  // Output rows that were checked, as bf16 bits, per rank: outputs[rank][i * N + col] is row rows[i].
  std::vector<int64_t> rows;
  std::vector<std::vector<uint16_t>> outputs;
  // Every checked iteration's outputs (same rows), iteration_outputs[k] being iteration iteration_index[k]'s,
  // on the inputs of reference::iteration_input_scale(seed, iteration, rank). `outputs` is iteration 0's.
  // Empty: the backend ran one iteration only (outputs).
  std::vector<int> iteration_index;
  std::vector<std::vector<std::vector<uint16_t>>> iteration_outputs;
  // The backend's own fp32 partials for the same rows, per rank (GPU: read back from the GEMM output), so the
  // collective can be re-emulated from them and compared bit for bit on the bf16 wire. Empty if unavailable.
  std::vector<std::vector<float>> partials;
  // Timing (GPU only): median over graph replays, per phase, per rank.
  std::map<std::string, double> phases_us;
  std::vector<double> per_rank_time_us;
  std::optional<double> total_us;
  std::string device;        // e.g. "NVIDIA H200 (8 ranks on 1 device)"
  int ranks_per_device = 1;  // as the backend placed them (W on one device when emulated there)
  // Output elements still holding the poison the backend wrote before the run; nullopt: not counted.
  std::optional<int64_t> poisoned_elements;
  // GPU: the GEMM that computed the partials ("gemmar" | "cublaslt"), and for a fused run the unfused baseline
  // measured in the same process on the same operands: the vendor GEMM, then the split all-reduce of the same
  // wire (split-sdma, same gather dtype and transport), its total in us and what it was.
  std::string gemm_impl;
  std::optional<double> unfused_baseline_us;
  std::string unfused_baseline;
  // `--guard`: the per-call guard's tally over the calls it checked (validate/harness/guard_run.hpp). The CPU
  // emulation checks each checked iteration over `rows`; the GPU every replay, over every padded row, from the
  // sums its device kernels computed.
  std::optional<GuardReport> guard;
  // GPU: the device-side full compare of every checked iteration (common/run_request.hpp FullCompare), in
  // iteration_index's order; empty where it did not run (CPU, gemm-only, one rank).
  std::vector<FullCompare> full_compares;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Runs one config end to end on the given operands, returns the sampled rows (the rows listed in
  // `rows_to_return`) of every rank's output and partials, and timings where it has them.
  virtual BackendResult execute(const RunRequest&, const std::vector<int64_t>& rows_to_return) = 0;
  // Why it cannot run this request's relaxed rows (mori's --relaxed-rows: M padded to a multiple of W only, so a
  // BLOCK_M tile may straddle two owners) as mori does, completing "--relaxed-rows: the <name> backend ..."; empty
  // when it runs them. A refused run is refused by run_and_check (exit 2), never handed a padded run in its place.
  virtual std::string relaxed_rows_refusal(const RunRequest&) const {
    return "pads M to W * BLOCK_M (its tiles never straddle two owners); run relaxed rows on the cpu backend";
  }
};

std::unique_ptr<Backend> make_cpu_backend();
// Defined in validate/harness/run_gpu.cpp when built with GEMMAR_HIP or GEMMAR_CUDA; throws EnvironmentError
// (exit 3) when no GPU is present or the build has no kernels.
std::unique_ptr<Backend> make_gpu_backend();
bool gpu_backend_built();

struct RunOutcome {
  RunRecord record;           // RESULT_JSON fields + gemmar's
  Expectations expectations;  // what the judge used (floors, model): the RESULT_JSON line carries them
  Verdict verdict;
};

RunOutcome run_and_check(Backend&, const RunRequest&);
// A record judged as `gemmar check` judges it (its times only where it has them), with `opts`' profile and baseline.
RunOutcome judge_outcome(RunRecord rec, JudgeOptions opts);

// The transport self-test (`gemmar selftest`, the first step of `gemmar validate`): every rank's window holds
// rank+1 (GPU: operands whose GEMM gives exactly rank+1), one scatter/reduce/gather of the config; every element
// of every rank's output must equal W(W+1)/2 exactly. A wrong element names its leg: the owner's own rows wrong
// = the scatter leg (the missing sum says how much never arrived), a peer's view wrong while the owner's is
// right = the gather leg owner -> peer.
struct SelftestResult {
  Config config;
  bool pass = true;
  int64_t wrong_elements = 0;
  int64_t checked_elements = 0;
  std::string message;  // "" when it passed; else names the leg, ranks and what was found
  double seconds = 0;
};
SelftestResult run_selftest(Backend&, const Shape&, const Config&, const Faults&);

}  // namespace gemmar
