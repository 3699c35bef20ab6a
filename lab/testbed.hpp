// The lab's one device testbed (CUTLASS testbed.h's shape): every subject of lab/variants.hpp over its concern's
// cases (lab/testbed_plan.hpp), each checked against the CPU reference before it is timed, on device 0.
//   gemm      every quant x K x edge M: the sampled rows' error against the CPU's GEMM (reference/, the bf16
//             rounding when right), every element written, the whole output bit for bit against the op's own
//             choice where the subject shares its arithmetic (same_bits); then timed in alternation with
//             cuBLASLt on the same operands (its blockscale GEMM on the same codes where it has none for the quant)
//   widen     the dequantize's and two pulls' grids: every element bit for bit against numerics::wire_dequantize
//             (the ceiling: against the codes it copies); then timed in alternation with the op's widen, beside
//             cudaMemcpy
//   pipeline  the op end to end on one device (8 ranks): every output element against the collective the device
//             recomputes from its own partials, the partials' sampled rows against the CPU's GEMM, no poison left,
//             every output row read back bit for bit against the op's; then timed in alternation with the op
//   guard     the caller guard's kernels (libgemmar_guard.so) on mori's targets: every rank's record within its fp32
//             rounding of the CPU reference's, the judge's cells equal to the CPU judge's, each variant's bit for
//             bit the product's; then timed beside the product (the sums by block kind, the judge, a call)
// One `TESTBED_JSON {...}` line per (subject, case), a subject that does not run a case says why
// ("applies": false, or "ran": false with the launch's error); then `TESTBED_SUMMARY {...}`.
#pragma once
#include <vector>

#include "common/modes.hpp"
#include "lab/variants.hpp"

namespace gemmar::lab {

// True when every check of every subject that ran passed. `quants`: the gemm concern's cases of these quants only
// (all of them when empty).
bool run_testbed(const std::vector<Concern>&, const std::vector<Quant>& quants = {});

// lab/testbed_{gemm,widen,pipeline,guard}.cu: one concern each. `tally` counts the lines printed, the subjects that ran
// and those whose checks failed.
struct TestbedTally {
  int lines = 0, ran = 0, failed = 0;
};
void testbed_gemm(TestbedTally&, const std::vector<Quant>& quants);
void testbed_widen(TestbedTally&);
void testbed_pipeline(TestbedTally&);
void testbed_guard(TestbedTally&);
// One pipeline config of one's own (gemmar_gpu_bench pipeline), as testbed_pipeline runs each of its cases.
struct PipelineCase;
void testbed_pipeline_case(const PipelineCase&, TestbedTally&);

}  // namespace gemmar::lab
