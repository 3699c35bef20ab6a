// The GUARD_* rules (docs/check.md, docs/guard.md): a record's `guard` field (what `gemmar run --guard`'s per-call
// guard found over the run's checked calls) turned into findings. Kept apart from the numeric and timing rules:
// the guard's verdict rests on its own checksums alone.
#pragma once
#include <vector>

#include "validate/record/run_record.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar::verdict_rules {

// One error finding per GUARD_* code the guard raised (GUARD_REDUCE, GUARD_GATHER, GUARD_WIRE, GUARD_GEMM), with
// how many calls it flagged and the first call's message; a warning GUARD_NO_CALLS when the guard checked none.
std::vector<Finding> guard_findings(const RunRecord&);

}  // namespace gemmar::verdict_rules
