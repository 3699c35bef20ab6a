// Everything the lab's testbed runs, in one table (plain C++: tests/kernels checks it on the CPU). A subject is
// either the op's own code (`product`: launch_gemm's choice, each of its kernel families forced, the pipeline as
// the op runs it), run here so the testbed checks it on any device, or a measurement variant of the lab (lab/gemm,
// lab/convert, lab/pipeline_variants.cu, lab/guard), which the op never links. Each runs through the testbed
// (lab/testbed.hpp): checked against the CPU reference before it is timed, and timed beside the vendor's GEMM or the
// product's own kernel in the same process. Promoting a variant is a commit that makes it the product's code and
// deletes the loser, with the numbers in docs/results/ (lab/README.md).
#pragma once
#include <cstdint>
#include <vector>

#include "common/modes.hpp"

namespace gemmar::lab {

enum class Concern { Gemm, Widen, Pipeline, Guard };

enum class Subject {
  // gemm: one GEMM of the quant at M x N x K, against the CPU reference and cuBLASLt
  GemmProduct,             // launch_gemm's choice, one GEMM on the device
  GemmProductShared,       // launch_gemm's choice where 8 GEMMs share the device (GemmDest::concurrent_gemms = 8)
  GemmFamilyWgmma,         // the generic sm_90a kernel forced at every K (the op's kernel for other K, PerStep32)
  GemmFamilyPortable,      // the portable kernels forced (the op's off compute capability 9.x, and AMD's twin)
  GemmWgmma4InStep,        // lab: the tuned kernel with its warpgroups in step (no lag)
  GemmWgmma4ShareA,        // lab: clusters of two CTAs along N sharing A by TMA multicast
  GemmWgmma4ShareAB,       // lab: clusters of 2 x 2 CTAs sharing A along N and B along M
  GemmWgmma4ShareB,        // lab: clusters of two along M sharing B at every M and for one GEMM alone
  GemmWgmma4BandMajor,     // lab: the tuned kernel with its tiles in band-major order (no groups of bands)
  GemmWgmma4MxLag1,        // lab: the op's mxfp8 kernel (PerStep32, K = 2048) with its warpgroups 1 K block apart
  GemmWgmma4MxProducer64,  // lab: the op's mxfp8 kernel with its producer at 64 registers (no spills)
  // widen: the fp8 wire's dequantize (the local grid) and pull (a fixed grid), against the CPU's wire_dequantize
  WidenProduct,    // launch_widen's choice
  WidenRegisters,  // lab: int8's register stores at every grid
  WidenBulkStore,  // lab: int8's stores through the TMA at every grid
  WidenInt16,      // lab: 16-byte code loads, the integer decode
  WidenHw16,       // lab: 16-byte code loads, the conversion unit
  WidenCeiling,    // lab: the register walk's accesses without the arithmetic (its output is the codes widened)
  // pipeline: the op end to end on one device (8 ranks), against the collective recomputed on the device from the
  // GPU's partials and the partials against the CPU reference, timed beside the product pipeline
  PipelineProduct,       // run_gemm_ar as the op runs it
  PipelinePutLow,        // lab: the copy streams at the device's least priority, the compute streams at its most
  PipelinePerSlice,      // fused-sdma's GEMM per destination slice: the op's fallback forced (no stream waits)
  PipelinePortableGemm,  // the op with its portable GEMM kernels forced (its path off Hopper, AMD's twin)
  PipelineGuardPartial,  // lab: the guard's partial pass alone (the others' sums zero: its phase, not a verdict)
  PipelineGuardOutput,   // lab: the guard's output pass alone
  PipelineGuardWire,     // lab: the guard's fp8 wire pass alone
  PipelineGuardGemm,     // lab: the guard's GEMM check alone
  // guard: the caller guard's kernels (libgemmar_guard.so) on one rank's inputs and the gathered records, against
  // the CPU reference (reference/guard_caller.cpp) and the product bit for bit, timed beside the product
  GuardProduct,        // the library's kernels as gg_sums and gg_judge launch them
  GuardPredictSplitK,  // lab: one listed row per prediction block, its K walked by the block's 128 threads
  GuardJudgeTree,      // lab: the judge of the product before 2026-12-07 (its cells merged by a shared-memory tree)
  GuardViewRows8,      // lab: view blocks of 8 listed rows (one round of loads), not 32
  kCount
};

struct SubjectInfo {
  Subject id;
  const char* name;  // the testbed's and gemmar_gpu_bench's spelling
  Concern concern;
  bool product;     // the op's own code (else a lab variant)
  bool same_bits;   // must equal GemmProduct's / WidenProduct's / PipelineProduct's output bit for bit
  const char* was;  // the environment spelling in the records before the lab (docs/results), or ""
  const char* what;
};

// Every subject, in enum order.
const std::vector<SubjectInfo>& subjects();
const SubjectInfo& subject_info(Subject);
// The subject of that name; false when there is none.
bool find_subject(const char* name, Subject* out);
const char* to_string(Concern);

// Whether a GEMM subject runs this problem on a compute capability 9.x device (M is the padded M, a multiple of
// 128; n and k multiples of 128). Only gemm subjects take a problem.
bool gemm_applies(Subject, Quant, int64_t m, int64_t n, int64_t k);

}  // namespace gemmar::lab
