// The Python backend (`gemmar validate|run --backend python --impl ...`, docs/python.md): an implementation of the op
// written in Python (mori's public op through python/gemmar_mori_impl.py, python/gemmar_torch_impl.py, any other) is
// driven by python/gemmar_runner.py, one process per rank (torchrun, or gemmar's own W processes) or every rank in
// one process, as the implementation says. gemmar asks it what it supports (describe), runs its self-test, then
// its runs; each run comes back as a RESULT_JSON line (the benchmark's record, its times as mori's bench times
// them) and a tensor dump, which gemmar verifies (verify.hpp) and merges into one record for the one judge
// (python_judge.hpp). Between two process starts gemmar waits for the copy engines' queues (mori's README), and
// a run that failed to create its SDMA queues (hsaKmtCreateQueueExt) is retried once, and named.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.hpp"

namespace gemmar {

struct RunOutcome;
struct RunPlan;
struct SelftestResult;

// The options of --backend python (validate/cli/run_options.cpp; docs/python.md lists them with their defaults).
struct PythonOptions {
  std::string impl;                    // --impl: MODULE:CALLABLE, FILE.py:CALLABLE or mori
  std::string python = "python3";      // --python: the interpreter (torch, and mori for --impl mori)
  std::string launcher = "auto";       // --launcher auto|torchrun|direct (one rank per process)
  std::string spawn = "auto";          // --spawn auto|once|per-run
  std::optional<double> queue_wait_s;  // --queue-wait: default the implementation's queue_wait_s
  double run_timeout_s = 900;          // --run-timeout: a run (or a start) silent this long is stopped
  int warmup = 10;                     // --warmup: untimed calls and replays before the timed ones
  bool keep_dumps = false;             // --keep-dumps (validate: the dumps stay in OUT/dumps)
  std::filesystem::path runner;        // python/gemmar_runner.py (validate/cli/data_dir.hpp)
};

// What the implementation said of itself (the runner's DESCRIBE_JSON).
struct PythonImpl {
  std::string name, placement, array;  // placement "one" (a process per rank) or "all"; array "torch"|"numpy"
  std::string device;                  // the first visible device's name ("" without one)
  int device_count = 0;
  int world = 0;  // the W it runs at: --world, else the visible devices (placement "one"), else the default
  double queue_wait_s = 0;
  bool torchrun = false;  // the interpreter can run torch.distributed.run
  std::vector<int64_t> m_values;
  nlohmann::json raw;
};

struct PythonPlan {
  PythonOptions options;
  PythonImpl impl;
  std::vector<Config> declined;    // candidates its supports() refused (at some M)
  std::filesystem::path work_dir;  // plans, logs and (without --dump) the dumps; "" = a temp dir per call
  std::string launcher, spawn;     // resolved: torchrun|direct|single, once|per-run
  double queue_wait_s = 0;         // resolved
};

// Asks the implementation (one process, no ranks) what it is and which of `candidates` it supports at each of the
// M values (`m_values` empty: its own default_m, else `fallback_m`), at `world` (0: the visible devices for a
// process per rank, else `default_world`). Keeps the configs supported at every M in `configs`, the others in
// plan.declined. EnvironmentError (exit 3) naming what is missing (python, torch, the module, mori), UsageError
// (exit 2) for a bad --impl.
void describe_python_impl(PythonPlan& plan, Shape& shape, std::vector<Config>& configs, std::vector<int64_t>& m_values,
                          const std::vector<int64_t>& fallback_m, int default_world);

// The implementation's self_test for each config of the plan, at its smallest M, in one start of the runner.
std::vector<SelftestResult> python_selftest(const RunPlan&, std::ostream* notes);

// Told of each run as it is judged: its outcome, its 0-based index in the plan's order, its wall seconds.
using PythonRunObserver = std::function<void(const RunOutcome&, size_t index, double seconds)>;

// Every (m, config) of the plan through the runner; each run judged as its RESULT_JSON arrives, its RESULT_JSON
// line (the record and its verdict) printed to `log`; waits, retries and failures named on `notes`.
std::vector<RunOutcome> execute_python_plan(const RunPlan&, std::ostream* log, std::ostream* notes,
                                            const PythonRunObserver& observer = {});

// The JSON form of a config for the runner (every field of Config, gemmar's spellings).
nlohmann::json python_config_json(const Config&);

}  // namespace gemmar
