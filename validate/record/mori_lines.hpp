// The lines today's mori prints besides bench_gemm_ar.py's records (issue 46; /work/mori-notes/print-shapes.md has
// every shape with its file:line@commit), read line by line alongside log_reader:
// - test_gemm_ar_bench.py @e7606746 with -s: `[gemm_ar] {mode:<11s} m= n= k= quant=  {us:9.1f} us  relL2=`
//   (:100-104), the model-shape block `[gemm_ar] model shape m= n= k=` + two `  <mode> <us> us  relL2=<x>` rows
//   (:122-128), and its ordering assertion `AssertionError: fused-sdma (F us) did not beat split-sdma (S us)` (:132);
// - refusals before anything runs: bench_gemm_ar.py @d5443336's SystemExit for split-lsa with an fp8 gather
//   (:274-285) and ValueError for an fp8 scatter outside fused-sdma (:287-288); sweep.py @4488353a's
//   `BUILD_CCO_SDMA is OFF -- ...` (require_sdma, :199-216);
// - sweep.py's stderr: `# occupancy before|after: ... GiB/card` and `# NOTE: occupancy moved across the sweep;
//   ... Re-run before trusting these.` (:335, :357-362);
// - gemm_ar_wire_reference.py @f3bff0ae: `GATHER_WIRE_CHECK <rank> {python dict repr}` on every rank (:126).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gemmar {

// A refusal of mori's before any kernel ran: what was refused and mori's own words.
struct MoriRefusal {
  // "split_lsa_fp8_gather" | "fp8_scatter_not_fused" (a configuration the benchmark refuses) | "sdma_compiled_out"
  // (sweep.py: the build has no SDMA queues, an environment finding)
  std::string kind;
  std::string text;  // the line as printed (rank prefix removed)
  std::string source;
  int lines = 0;  // how many ranks printed it
};

// test_gemm_ar_bench.py's one ordering gate, `assert f < s` (:132-136), from its model-shape block (when fused did
// not beat split) or from the assertion pytest printed.
struct OrderingGate {
  double fused_us = 0, split_us = 0;
  std::string source;
  bool from_assertion = false;
};

// One `GATHER_WIRE_CHECK <rank> {...}` line: the rank and its stats (wire_reduce_rel_l2, wire_gather_scale_rel_l2,
// wire_gather_midpoint_flips).
struct GatherWireCheck {
  int rank = 0;
  nlohmann::json stats;
  std::string source;
};

// What mori's other lines said, kept across the log.
struct MoriLog {
  std::vector<MoriRefusal> refusals;
  std::vector<OrderingGate> ordering;
  std::vector<GatherWireCheck> gather_wire_checks;
  std::string occupancy_before, occupancy_after;  // sweep.py's rocm-smi readings, as printed
  std::string occupancy_note;                     // the NOTE line's source, when sweep.py printed it
  bool seen() const {
    return !refusals.empty() || !ordering.empty() || !gather_wire_checks.empty() || !occupancy_note.empty();
  }
};

// Reads one line (colour-stripped, rank prefix removed) into `log`; true when it was one of the shapes above.
bool read_mori_line(const std::string& payload, const std::string& source, MoriLog& log);

// test_gemm_ar_bench.py's per-mode line as a record object (mode, m, n, k, quant, max_rank_time_us, rel_l2 and
// "printed_by": "test_gemm_ar_bench.py"), or nullopt when the line is not one (the older pytest print without n
// and k is not: it cannot be judged).
std::optional<nlohmann::json> pytest_bench_record(const std::string& payload);

// The model-shape block (:122-128): its header's shape, and a row of it as a record object.
struct ModelShapeHeader {
  long long m = 0, n = 0, k = 0;
};
std::optional<ModelShapeHeader> pytest_model_shape_header(const std::string& payload);
std::optional<nlohmann::json> pytest_model_shape_row(const std::string& payload, const ModelShapeHeader&);
// The block's closing `fused is +21.8% against split` line.
bool pytest_model_shape_end(const std::string& payload);

// A Python literal (a dict or tuple repr: single-quoted strings, nan/inf, True/False/None) as JSON; nullopt when
// it is not one.
std::optional<nlohmann::json> python_literal(const std::string& text);

}  // namespace gemmar
