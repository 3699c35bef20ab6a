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

// NONDETERMINISTIC across runs, judged as mori's own stability test does (tests/python/cco/test_gemm_ar.py
// test_fused_is_stable_across_repeats @72c47dee: every relL2 == pytest.approx(first, rel=1e-6)), and only on
// repeats that each pass on their own: error when such clean repeats differ beyond that tolerance (a race
// that happened to pass the threshold), each of them naming the others. A repeat that fails on its own
// already fails the log; the clean repeats of its config get a warning naming it (a pass there proves
// nothing about the next run). Invalid entries and runs without a finite rel_l2 take no part.
void judge_repeats(std::vector<Verdict>&);

}  // namespace gemmar
