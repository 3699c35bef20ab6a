// Rules that judge runs against each other rather than one record alone (the judge in verdict.hpp is a pure
// function of one record). A log holding the same config several times is evidence no single record carries.
#pragma once
#include <string>
#include <vector>

#include "validate/verdict/verdict.hpp"

namespace gemmar {

// The runs that are "the same config" for a repeat: shape, config, pull grid, the GEMM and the benchmark's
// kernel knobs (block sizes, tile order, chunks, fence, gemm_impl, ...), timing and stop_after.
std::string repeat_key(const RunRecord&, int pull_blocks);

// NONDETERMINISTIC (error): runs of the same config whose rel_l2 differ by more than
// verdict_rules::kNondeterministicRel relative. The reduce order is fixed, so the op is deterministic and
// every repeat must give the same relL2 to the last digit; a difference is a race that happened to pass the
// threshold (mori's own tests catch races that pass three runs in ten this way). Each run of the group gets
// the finding, naming the others. Invalid entries and runs without a finite rel_l2 take no part.
void judge_repeats(std::vector<Verdict>&);

}  // namespace gemmar
