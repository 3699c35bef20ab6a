// The lab's variants of the caller guard's kernels (kernels/check/caller_guard_kernels.cuh, libgemmar_guard.so), as
// plug-ins of the product's own kernels: a subject's launch of one rank's sums (optionally only some of its block
// kinds, to time them apart) and of the judge. lab/testbed_guard.cu checks each against the product bit for bit and
// the product against the CPU reference (reference/guard_caller.cpp), then times them.
#pragma once
#include "kernels/check/gemmar_guard.h"
#include "kernels/gpu_compat.hpp"
#include "lab/variants.hpp"

namespace gemmar::lab {

// The sums kernel's block kinds (kernels/check/caller_guard_kernels.cuh): a launch of one kind alone is that kind's
// share of the kernel's time.
enum GuardKinds : int { kGuardPredict = 1, kGuardView = 2, kGuardWire = 4, kGuardAllKinds = 7 };

// One rank's record by `subject` (a Concern::Guard subject) for gg_sums' arguments, on `stream`: every block kind
// (kGuardAllKinds) or one kind alone. False when the subject has no such launch.
bool guard_sums(Subject, const gg_sums_args&, int kinds, gpuStream_t stream);
// The judge of gathered records by `subject`, on `stream`.
bool guard_judge(Subject, const gg_judge_args&, gpuStream_t stream);

}  // namespace gemmar::lab
