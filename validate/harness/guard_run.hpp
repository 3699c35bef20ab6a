// `gemmar run --guard` (docs/guard.md): the per-call guard of reference/guard.hpp inside the harness. The CPU
// backend computes every rank's sums of each checked call from the emulation's buffers (cpu_guard_sums); the GPU
// backend brings the sums its device kernels computed (kernels/check/guard.cu). Either way judge_guard_calls runs the
// one check of reference/guard.cpp on every call and summarises the findings for the record's `guard` field,
// which validate/verdict/guard_rules.cpp turns into GUARD_* findings.
#pragma once
#include <cstdint>
#include <vector>

#include "common/run_request.hpp"
#include "reference/emulation.hpp"
#include "reference/guard.hpp"
#include "validate/record/run_record.hpp"

namespace gemmar {

// The rows call `call` of a run reads (--guard-sample, the run's seed) among `candidates`: their positions in
// `candidates` (reference::guard_sample_positions) and the rows themselves.
struct GuardCallRows {
  std::vector<size_t> positions;
  std::vector<int64_t> rows;
};
GuardCallRows guard_call_sample(const RunRequest&, const std::vector<int64_t>& candidates, uint64_t call);

// Every rank's guard sums of one call of the CPU emulation over the rows the call samples: `rows` are the rows
// the emulation holds, `sampled` the call's rows among them, `partials` the call's fp32 partials (its
// iteration's inputs) and `outputs` what every rank's output held after it, both over `rows`. The partial a rank's GEMM
// produced carries the perturb-rank fault (reference::kPerturbFactor); the GEMM check's operands are the seed's,
// dequantized in their true format and scaled by the iteration's input factor.
std::vector<reference::GuardSums> cpu_guard_sums(const RunRequest&, const std::vector<int64_t>& rows,
                                                 const GuardCallRows& sampled, int iteration,
                                                 const reference::Partials& partials,
                                                 const reference::Bf16Outputs& outputs);

// Judges one call (every rank's sums, index = rank) over the context's rows and adds its findings to the tally.
void tally_guard_call(GuardReport&, const reference::GuardContext&, int iteration,
                      const std::vector<reference::GuardSums>&);

}  // namespace gemmar
