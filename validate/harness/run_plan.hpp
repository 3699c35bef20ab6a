// What `gemmar run` and `gemmar validate` share: which configs to run (one, or every mode and wire the
// backend supports), on which backend, at which M values, and how results are printed.
#pragma once
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/harness/python_runner.hpp"
#include "validate/harness/run_driver.hpp"

namespace gemmar {

struct RunPlan {
  std::string backend;  // "cpu" | "gpu" | "python"
  std::vector<int64_t> m_values;
  std::vector<Config> configs;
  // Every run's parameters; its shape.m and config are replaced by each (m, config) of the plan. --dump DIR: each
  // run's tensors for `gemmar verify`: DIR/rank<r>.safetensors for a single run, else
  // DIR/run<i>-<config>-m<M>/rank<r>.safetensors (verify takes DIR and judges each subdirectory).
  RunRequest request;
  // --baseline runs: each outcome is judged against them too (REGRESSION, QUANT_MISMATCH), by the same judge.
  std::vector<RunRecord> baseline;
  // --backend python: the implementation, what it said of itself, how its runner is started (python_runner.hpp).
  PythonPlan python;
};

// Every mode x wire x transport of docs/spec.md 1.1 that exists (split-lsa bf16 only; gemm-only once), at `base`'s
// quant and pull grid.
std::vector<Config> all_configs(const Config& base);

// Every (m, config) of the plan is a shape the op can run, and every injected fault acts on at least one of them
// (common/faults.hpp check_faults_act): UsageError naming the option otherwise.
void validate_plan(const RunPlan&);

// Told of each run as it completes: its outcome, its 0-based index in the plan's order (every config at the first M,
// then the next M) and its wall seconds.
using PlanObserver = std::function<void(const RunOutcome&, size_t index, double seconds)>;

// Runs every (m, config) of the plan; prints each RESULT_JSON line to `log` as it completes (if non-null). Before
// each run the OpenMP threads are fitted to the cores other processes leave free (cpu_threads.hpp). The Python
// backend's notes (waits, retries) go to stderr.
std::vector<RunOutcome> execute_plan(const RunPlan&, std::ostream* log, const PlanObserver& observer = {});

// The peak resident memory the plan is expected to reach on the host, in bytes (docs/reliability.md "Memory"):
// 64 MiB + every rank's operands (W (N + R) K) + per M the partials shared by its configs (8 W R N + 4 R N, and
// 4 W R N more with gemm-only; the three largest M kept) + the largest run's own buffers ((14 + 2 C) W R N: the
// emulated outputs, the checked iterations' copies, the re-emulation), R the rows checked and C the iterations checked.
// Fitted to /usr/bin/time peaks of `gemmar run --backend cpu` and `gemmar validate`: it lies 3-27% above every one
// measured.
int64_t plan_memory_bytes(const RunPlan&);
nlohmann::json plan_outcomes_to_json(const RunPlan&, const std::vector<RunOutcome>&);
// The benchmark's line: "RESULT_JSON {...}".
std::string result_json_line(const RunOutcome&);

}  // namespace gemmar
