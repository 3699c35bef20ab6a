// What a log says besides its run records (issue 27), read line by line alongside log_reader:
// - sweep.py's stdout (ROCm/mori benchmark/cco/flydsl/gemm_ar/sweep.py @4488353a): `# preset P: N points -> OUT`,
//   `[i/N] k=v ...` per point, `  ok` per RESULT_JSON, `  FAILED: <last line>` (or `FAILED: TIMEOUT after Ts`),
//   then `K of N points FAILED:` with one `  k=v ...` line per failed point, or `all N points ok -> OUT`;
// - bench_gemm_ar.py's per-rank verdicts, printed before rank 0's RESULT_JSON (@fc892894):
//   `[rank R] VALIDATION FAILED relL2=4.123e-03`, and in gemm-only `[rank R] GEMM VALIDATION FAILED relL2=...`;
// - `[gemm_ar]` lines that are not the benchmark's `mode=` summary (pytest's `[gemm_ar] fused-sdma  m=4096
//   quant=blockscale  1148.8 us relL2=2.36e-03`): counted, never a run;
// - RESULT_JSON embedded in another line's repr (pytest -vv `CompletedProcess(... stdout='...RESULT_JSON {..}\n..')`):
//   counted, never a record (the run printed it on its own line too, or the repr is clipped).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "validate/record/mori_lines.hpp"

namespace gemmar {

// One `[rank R] (GEMM )VALIDATION FAILED relL2=X` line.
struct RankValidationFailure {
  int rank = 0;
  double rel_l2 = 0;
  bool gemm_only = false;  // "GEMM VALIDATION FAILED": gemm-only validates each rank's own partial
  std::string source;
};

struct SweepPoint {
  int index = 0;     // 1-based, as printed
  std::string desc;  // "m=4096 mode=split-sdma"
  std::string source;
  int ok_lines = 0;                    // `  ok` lines under it (one per RESULT_JSON the point printed)
  std::optional<std::string> failure;  // the text after `FAILED: `
};

// sweep.py's stdout, when the log is one.
struct SweepLog {
  std::string preset;    // from `# preset P: ...`, may be empty
  std::string out_path;  // where the records went (the .jsonl), when printed
  int total = 0;         // N of `[i/N]`
  std::vector<SweepPoint> points;
  std::optional<int> summary_failed;  // `K of N points FAILED:`
  bool summary_all_ok = false;        // `all N points ok -> OUT`
  std::string last_source;            // the last sweep line seen
  bool seen() const { return !points.empty() || summary_failed || summary_all_ok; }
};

// Line-level state the reader keeps across lines.
struct LogContext {
  SweepLog sweep;
  std::vector<RankValidationFailure> pending_rank_failures;  // since the last record
  int64_t unread_gemm_ar_lines = 0;  // `[gemm_ar]` lines without `mode=`: not the benchmark's summary
  std::string first_unread_gemm_ar;  // its source and text
  int64_t embedded_records = 0;      // RESULT_JSON inside another line (a repr), skipped
  bool in_failed_summary = false;    // after `K of N points FAILED:`: the indented lines name the points
  MoriLog mori;                      // mori's other lines (mori_lines.hpp): refusals, pytest's gate, wire checks
};

// Reads one line (colour-stripped, rank prefix removed) into `ctx`; true when the line was one of the shapes
// above (so the caller does not read it again as anything else).
bool read_context_line(const std::string& payload, std::optional<int> rank, const std::string& source, LogContext& ctx);
// A `[rank R] (GEMM )VALIDATION FAILED relL2=X` line, if this is one.
std::optional<RankValidationFailure> rank_validation_line(const std::string& payload, const std::string& source);
// True when RESULT_JSON in `line` sits inside another line's text (a Python repr: preceded by an escaped
// newline or a quote), not at the start of its own line.
bool embedded_result_json(const std::string& line, size_t marker_pos);

}  // namespace gemmar
