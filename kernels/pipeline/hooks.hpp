// The pipeline's plug points: what the lab (lab/) swaps in to run one of its variants through the whole op. The
// op itself (run_gemm_ar) runs every concern's winner, which is what an empty PipelineHooks means; nothing here is
// read from the environment. GPU-typed (streams, launchers): inside kernels/ and the lab only.
#pragma once
#include <functional>

#include "kernels/check/guard.hpp"
#include "kernels/gemm_ar.hpp"
#include "kernels/kernels.hpp"

namespace gemmar::kernels {

struct PipelineHooks {
  // Every rank's GEMM launch (empty: dev::launch_gemm, the op's dispatch).
  std::function<gpuError_t(const dev::GemmOperands&, int64_t m_begin, int64_t m_end, const dev::GemmDest&, gpuStream_t)>
      gemm;
  // The fp8 wire's widen, both the dequantize and the pull (empty: dev::launch_widen).
  std::function<gpuError_t(const dev::Fp8Sources&, int count, int64_t rows, int64_t n, int blocks, gpuStream_t)> widen;
  // Creates a rank's compute and copy streams on the current device; throws EnvironmentError on failure (empty:
  // both non-blocking at the default priority, as every other stream of the run).
  std::function<void(gpuStream_t* comp, gpuStream_t* copy)> make_streams;
  // fused-sdma: one GEMM launch per destination slice, each put after its launch, even where the driver has the
  // stream memory operations the one persistent launch needs (where it has none, the op runs this anyway).
  bool fused_sdma_per_slice = false;
  // The device guard's passes (all; one left out leaves its sums zero, so the guard then flags calls).
  GuardPasses guard_passes;
};

// run_gemm_ar with the lab's plug-ins.
RunOutput run_gemm_ar(const DeviceRun&, const OperandFn&, const PipelineHooks&);

}  // namespace gemmar::kernels
