// Verdicts on what today's mori says beside bench_gemm_ar.py's runs (issue 46; /work/mori-notes/print-shapes.md):
// its refusals (CONFIG_REFUSED, SDMA_COMPILED_OUT), the gates its own tests state (MORI_GATE: test_gemm_ar_bench.py's
// fused-beats-split, the schedule worker's limits, the wire reference's tolerances), sweep.py's occupancy warning
// (OCCUPANCY_MOVED), and the causes behind the exceptions its tests and op raise.
#pragma once
#include <string>
#include <vector>

#include "validate/record/log_reader.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar {

// One entry per refusal, per distinct ordering failure, for the GATHER_WIRE_CHECK lines together, and for sweep.py's
// occupancy note. `name` is the input's name.
std::vector<Verdict> mori_log_verdicts(const MoriLog&, const std::string& name);

// The failures a refusal explains removed: torchrun's exit codes and ChildFailedError, and the refusal's own
// traceback. What is left is a failure of its own (BENCHMARK_FAILED).
std::vector<LogFailure> failures_unexplained(const std::vector<LogFailure>&, const MoriLog&);

// An exception mori raised, read: `quoted` is the text to quote (mori's appended SDMA-build hint dropped where it
// cannot be the cause), `cause` what it means (empty when mori's own words say it).
struct ExceptionReading {
  std::string quoted, cause;
};
ExceptionReading read_mori_exception(const std::string& exception);

// gemm_ar_schedule_worker.py @f3bff0ae's RESULT_JSON summary (:191-208): no mode, per_rank_max_rel_l2 and plans.
bool is_schedule_worker_summary(const nlohmann::json&);
// Judged by the worker's own limits (0.045 with an fp8 leg, else 0.003, :147-157), its booleans, and each wire
// check against gemm_ar_wire_reference.py's tolerances: MORI_GATE (error) naming each; notes otherwise.
Verdict schedule_worker_verdict(const LogEntry&);

// The cause the op worker's `<label>_rows` diagnostics (gemm_ar_op_worker.py @54e74a02 :195-207) point at.
std::string op_worker_rows_cause(const std::string& key, const nlohmann::json& rows);

// An mxfp8 run's NaN or power-of-two error, which is never e4m3fnuz read as e4m3fn: mori's op takes e4m3fn only
// (op.py FP8_DTYPES) and the scaled MFMA is gfx950's; ue8m0 byte 0xFF is NaN and an exponent off by one is 2x.
std::string mxfp8_scale_hint(bool nan);

}  // namespace gemmar
