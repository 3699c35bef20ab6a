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

// `gemmar run --guard` (docs/guard.md): the per-call guard's outcome over the run's checked calls. Per finding
// code, how many calls it flagged, the first such iteration and its message.
struct GuardCode {
  int calls = 0;
  int first_iteration = 0;
  std::string message;
};
struct GuardReport {
  int calls = 0;              // calls (iterations / replays) the guard checked
  int flagged_calls = 0;      // calls with at least one finding
  int sample = 0;             // --guard-sample: one row of every `sample` read per call (0: not stated)
  int64_t rows_per_call = 0;  // rows the guard read per call (the last call's), of every rank
  std::map<std::string, GuardCode> codes;
};

struct RunRecord {
  std::string source;  // "file:line" (or "run:N") for messages
  // --- The benchmark's fields. Absent optional fields stay nullopt; NaN is kept as NaN.
  Shape shape;
  Config config;
  std::optional<double> max_rank_time_us;
  std::vector<double> per_rank_time_us;
  std::optional<double> rel_l2;  // the benchmark's (minimum over ranks when validated)
  std::optional<bool> validated;
  std::string timing;                     // "graph" | "eager" (empty: not printed, graph assumed)
  std::optional<std::string> stop_after;  // "all", or the last phase run ("scatter"): a run that stopped early
  std::optional<int> critical_rank;       // the slowest rank (argmax of per_rank_time_us)
  // The benchmark's kernel knobs (bench_gemm_ar.py prints them; null or absent when they do not apply).
  std::optional<int> chunks;         // pushes per destination in a fused epilogue (> 1: known racy)
  std::optional<std::string> fence;  // release before the epilogue push (raw-wt*: known racy)
  std::optional<int> block_m, block_n;
  std::optional<std::string> tile_order;  // auto | rotated | linear
  // world_size was absent (older benchmark versions): shape.world is the reader's default (--world, 8).
  bool world_assumed = false;
  // quant was absent. Inferred ptpc when the record has bench_gemm_ar.py's own keys (every version before its
  // --quant flag made per-token/per-channel operands); otherwise unknown: config.quant stays blockscale for
  // the floors only, the table says "quant?" and a baseline of any quant is a QUANT_MISMATCH, never a match.
  bool quant_known = true;
  std::string quant_inference;  // the note saying which (empty when quant was printed)
  // --- gemmar's optional fields (any producer may add them).
  std::optional<int> pull_blocks;  // defaults to config.pull_blocks (64) when absent
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
  std::optional<int64_t> nonfinite_elements;  // NaN or inf in any view
  // Elements where ranks' views differ although the collective makes them equal (the bf16 wire: every view; the
  // fp8 wire: every view but the slice owner's), counted per differing view against the majority.
  std::optional<int64_t> disagreeing_elements;
  // The first wrong element found, named: "rank 3, row 1234, col 56, iteration 0" (run, validate).
  std::optional<std::string> first_wrong_element;
  // `run --backend gpu`: the device-side full compare (kernels/check/output_compare.hpp) ran on every checked
  // iteration; its kernel time (median over them, us) and the bytes it read per iteration.
  std::optional<double> full_compare_us;
  std::optional<int64_t> full_compare_bytes;
  // The fp8 wire's quantization recipe that reproduces the gathered views exactly (reference/quant.hpp
  // WireRecipe), or how they were accepted within mori's tolerance.
  std::optional<std::string> wire_recipe;
  // What wrong_elements were judged against: "partials" (the collective re-emulated over the run's own partials:
  // run, validate, a verify dump with partials) or "wire" (a verify dump without partials: only the fp8 wire's
  // gathered views, against the recipes and mori's tolerance). Absent: "partials".
  std::optional<std::string> wrong_elements_basis;
  // The dtype a tensor dump stated for its operand codes ("F8_E4M3": e4m3fn by definition; "U8": the metadata's
  // fp8_format). With F8_E4M3 the e4m3fnuz/e4m3fn mix-up hint for NaN is not given.
  std::optional<std::string> operand_dtype;
  std::optional<double> rel_l2_all_views;  // relL2 over every rank's view of the checked rows
  std::optional<double> rel_l2_all_views_stderr;
  std::optional<uint64_t> seed;
  std::optional<std::string> inject;  // the fault injected on purpose ("none" when clean)
  std::optional<std::string> device;  // e.g. "NVIDIA H200 (8 ranks on 1 device)"
  // --- The GEMM that computed the partials ("gemmar" | "cublaslt", as the benchmark's --gemm-impl), and for a
  // fused run the unfused baseline measured in the same run: what it was and its time. RESULT_JSON also
  // carries fused_vs_unfused = unfused_baseline_us / max_rank_time_us (> 1: fusing pays).
  std::optional<std::string> gemm_impl;
  std::optional<std::string> unfused_baseline;
  std::optional<double> unfused_baseline_us;
  // --- Per-iteration checks (docs/reliability.md; run, validate): each checked iteration (0, check_every,
  // 2*check_every,
  // ...) ran on its own inputs; wrong_elements is their sum. stale_elements: wrong elements of an iteration
  // that hold what the previous iteration's inputs give there. nondeterministic_iterations: repeats of the
  // same inputs whose bits differ. straggle_us: the random per-rank delays' bound, when injected.
  std::optional<int> iterations_checked;
  std::optional<int> check_every;
  std::vector<int64_t> wrong_elements_per_iteration;
  std::optional<int64_t> stale_elements;
  std::vector<NondeterministicIteration> nondeterministic_iterations;
  std::optional<double> straggle_us;
  std::optional<GuardReport> guard;  // `--guard`: what the per-call guard found
  nlohmann::json raw;                // the whole input object (fields gemmar does not model are kept)
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
// Why the fence/chunks combination is one mori's own history shows racy, or empty: a raw-wt* fence on a
// fused-sdma run (bench_gemm_ar.py, every version: "Every raw-wt fence mode is known-racy"), or chunks > 1 on
// a fused-sdma run of a version before the s_waitcnt fix (records without quant: those versions pinned chunks
// to 1 because > 1 "produced wrong output about 3 runs in 10"; the fix, README "The chunks race: it was the
// GEMM, and it is gone", made 8 the default). Never fused-lsa: its epilogue stores straight into the peers, no
// copy engine reads C, and the fence does not apply.
std::string racy_publish_reason(const RunRecord&);
// The benchmark's field names plus gemmar's; NaN written as NaN (like Python's json.dumps).
nlohmann::json run_record_to_json(const RunRecord&);

}  // namespace gemmar
