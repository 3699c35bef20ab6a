// Entries of a check that are not one benchmark run (issue 27): what a log says about the benchmark as a
// whole (it crashed, rank 0 exited 1 by design, sweep.py's stdout and its failed points) and RESULT_JSON
// records of other producers (the op worker's `{"case": ...}` self-tests). Log-level entries carry
// context.log_level, other records context.other_record; neither is counted as a run.
#pragma once
#include <string>
#include <vector>

#include "validate/record/log_reader.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar {

// BENCHMARK_FAILED (error): the log shows the benchmark failed; headline = the most telling failure (an
// exception the benchmark raised, with its text and hint, before a bare traceback header or torchrun's
// summary). When the only failures are torchrun reporting rank 0's exit code 1 and `run_not_validated` (the log
// holds a finished run with validated=false or a `[rank R] VALIDATION FAILED` line), that exit is
// bench_gemm_ar.py's by design (`return 0 if result["validated"] else 1`): BENCHMARK_EXIT, a warning.
Verdict benchmark_failed_verdict(const std::vector<LogFailure>& failures, bool run_not_validated);

// sweep.py's stdout (log_findings.hpp): SWEEP_FAILED (error) naming each failed point and its last line when
// a point failed or the summary says so; SWEEP_STDOUT (warning, the entry passes) when every point was ok:
// the records are in the .jsonl it names, not in this stdout.
Verdict sweep_verdict(const SweepLog&, const std::string& name);

// A RESULT_JSON object without `mode`. The op worker's cases (tests/python/cco/gemm_ar_op_worker.py
// @1531cfe8) are judged as test_gemm_ar_op.py judges them: every top-level boolean true, every top-level
// number (each is a relL2) below its FP8_FLOOR 3e-3 (SELF_TEST_FAILED, error, naming the fields; relL2 near
// 0.26 on scale_order is the wrong-scale-order signature). Anything else: OTHER_RECORD (warning), listed.
Verdict other_record_verdict(const LogEntry&);

// Every entry an input's log holds besides its records: BENCHMARK_FAILED / BENCHMARK_EXIT for the failures no
// refusal of mori's explains, sweep.py's stdout, and mori's refusals, gates and notes (mori_verdicts.hpp).
// `run_not_validated` as benchmark_failed_verdict takes it; `name` is the input's name.
std::vector<Verdict> log_level_verdicts(const LogReadStats&, const std::string& name, bool run_not_validated);

bool is_log_level(const Verdict&);
bool is_other_record(const Verdict&);

}  // namespace gemmar
