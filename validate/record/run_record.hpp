// One run of gemm_ar: what the real benchmark prints on its RESULT_JSON line, plus what gemmar's own checks
// measured. Every command that judges a run (run, validate, check, verify) builds this record and hands it
// to the same judge (validate/verdict/verdict.hpp), so the same run gets the same verdict whichever command
// judged it. Written and read back by run_record_to_json / run_record_from_json: a RESULT_JSON line that
// gemmar printed, piped into `gemmar check`, yields the same record.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.hpp"
#include "validate/record/python_json.hpp"

namespace gemmar {

// Two iterations on the same inputs whose output bits differ (docs/reliability.md): `iteration` repeated `repeat_of`'s
// inputs; `ranks` are the ranks whose outputs differ.
struct NondeterministicIteration {
  int iteration = 0;
  int repeat_of = 0;
  std::vector<int> ranks;
};

struct RunRecord {
  std::string source;  // "file:line" (or "run:N") for messages
  // --- The benchmark's fields. Absent optional fields stay nullopt; NaN is kept as NaN.
  Shape shape;
  Config config;
  std::optional<double> max_rank_time_us;
  std::vector<double> per_rank_time_us;
  std::optional<double> rel_l2;     // the benchmark's (minimum over ranks when validated)
  std::optional<bool> validated;
  std::string timing;               // "graph" | "eager" (empty: not printed, graph assumed)
  std::optional<std::string> stop_after;  // "all", or the last phase run ("scatter"): a partial run
  std::optional<int> critical_rank;  // the slowest rank (argmax of per_rank_time_us)
  // The benchmark's kernel knobs (bench_gemm_ar.py prints them; null or absent when they do not apply).
  std::optional<int> chunks;         // pushes per destination in a fused epilogue (> 1: known racy)
  std::optional<std::string> fence;  // release before the epilogue push (raw-wt*: known racy)
  std::optional<int> block_m, block_n;
  std::optional<std::string> tile_order;  // auto | rotated | linear
  // world_size was absent (older benchmark versions): shape.world is the reader's default (--world, 8).
  bool world_assumed = false;
  // --- gemmar's optional fields (any producer may add them).
  std::optional<int> pull_blocks;   // defaults to config.pull_blocks (64) when absent
  std::vector<double> per_rank_rel_l2;
  std::map<std::string, double> phases_us;
  std::optional<std::string> profile;
  // Per-slice relL2 (index = owning rank), when the producer knows it (gemmar run / validate / verify).
  std::vector<double> per_slice_rel_l2;
  std::optional<std::string> backend;  // "cpu-emulation" | "gpu" | "tensors" (gemmar verify)
  // --- The checks gemmar ran on the output itself (run, validate, verify). nullopt: that check did not run.
  // Output elements that differ bit for bit from the collective re-emulated over the run's own partials.
  std::optional<int64_t> wrong_elements;
  std::optional<int64_t> checked_rows;       // output rows compared (per rank)
  std::optional<int64_t> poisoned_elements;  // output elements still holding the poison written before the run
  // Output elements (all ranks' views) the element-wise checks compared: wrong_elements, nonfinite_elements and
  // disagreeing_elements count among these (every element by default; relL2 samples checked_rows rows).
  std::optional<int64_t> checked_elements;
  std::optional<int64_t> nonfinite_elements;    // NaN or inf in any view
  // Elements where ranks' views differ although the collective makes them equal (the bf16 wire: every view; the
  // fp8 wire: every view but the slice owner's), counted per differing view against the majority.
  std::optional<int64_t> disagreeing_elements;
  // The fp8 wire's quantization recipe that reproduces the gathered views exactly (reference/quant.hpp
  // WireRecipe), or how they were accepted within mori's tolerance.
  std::optional<std::string> wire_recipe;
  std::optional<double> rel_l2_all_views;    // relL2 over every rank's view of the checked rows
  std::optional<double> rel_l2_all_views_stderr;
  std::optional<uint64_t> seed;
  std::optional<std::string> inject;   // the fault injected on purpose ("none" when clean)
  std::optional<std::string> device;   // e.g. "NVIDIA H200 (8 ranks on 1 device)"
  // --- The GEMM that computed the partials ("gemmar" | "cublaslt", as the benchmark's --gemm-impl), and for a
  // fused run the unfused baseline measured in the same run: what it was and its time. RESULT_JSON also
  // carries fused_vs_unfused = unfused_baseline_us / max_rank_time_us (> 1: fusing pays).
  std::optional<std::string> gemm_impl;
  std::optional<std::string> unfused_baseline;
  std::optional<double> unfused_baseline_us;
  // --- Per-iteration checks (docs/reliability.md; run, validate): each checked iteration (0, check_every, 2*check_every,
  // ...) ran on its own inputs; wrong_elements is their sum. stale_elements: wrong elements of an iteration
  // that hold what the previous iteration's inputs give there. nondeterministic_iterations: repeats of the
  // same inputs whose bits differ. straggle_us: the random per-rank delays' bound, when injected.
  std::optional<int> iterations_checked;
  std::optional<int> check_every;
  std::vector<int64_t> wrong_elements_per_iteration;
  std::optional<int64_t> stale_elements;
  std::vector<NondeterministicIteration> nondeterministic_iterations;
  std::optional<double> straggle_us;
  nlohmann::json raw;                   // the whole input object (fields gemmar does not model are kept)
};

struct RecordDefaults {
  int world = 8;  // world_size when a record has neither world_size nor its alias world
};

// Throws UsageError with `source` and the field name on a wrong type, a missing required field (mode, m, n,
// k), a duplicate of world_size under its alias `world` with another value, or an impossible value: a time
// (max_rank_time_us, per_rank_time_us, unfused_baseline_us) that is NaN, infinite, zero or negative; a phase
// time that is NaN, infinite or negative; a negative rel_l2; a per_rank_time_us whose length is not world_size
// or whose maximum is not max_rank_time_us; a critical_rank that is not the slowest rank. rel_l2 may be NaN
// (the check did not run).
RunRecord run_record_from_json(const nlohmann::json& j, const std::string& source, const RecordDefaults& = {});
// True when the fence/chunks combination is one the benchmark itself documents as racy (raw-wt,
// raw-wt-agent, raw-wt-leader; none on a fused run with chunks > 1): a passing run proves nothing.
bool racy_publish(const RunRecord&);
// The benchmark's field names plus gemmar's; NaN written as NaN (like Python's json.dumps).
nlohmann::json run_record_to_json(const RunRecord&);

}  // namespace gemmar
