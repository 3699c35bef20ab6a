// The pipeline subjects as plug-ins of the op's pipeline (kernels/pipeline/hooks.hpp). Measured: the copy streams
// at the least priority made fused-sdma's GEMM phase 1.5% shorter on an H200 and its drain as much longer, and
// changed nothing on an H100 (ptpc 4096 x 7168 x 2048; docs/results/h100-h200-1gpu-2026-12-06-puts,
// h100-1gpu-2026-12-06-release); with one GEMM launch per slice fused-sdma's GEMM phase was 76% (M = 4096) and
// 86% (16384) of gemm-only's where the persistent launch's was 96% and 99% (H200,
// docs/results/h200-1gpu-2026-12-04-session6); each guard pass's share of the guard's phase:
// docs/results/h100-1gpu-2026-12-05-guard2.
#include "kernels/host_check.hpp"
#include "lab/lab_kernels.hpp"

namespace gemmar::lab {

kernels::PipelineHooks pipeline_hooks(Subject s) {
  kernels::PipelineHooks h;
  switch (s) {
    case Subject::PipelinePutLow:
      h.make_streams = [](gpuStream_t* comp, gpuStream_t* copy) {
        int least = 0, greatest = 0;
        GPU_CHECK(gpuDeviceGetStreamPriorityRange(&least, &greatest));
        GPU_CHECK(gpuStreamCreateWithPriority(comp, gpuStreamNonBlocking, greatest));
        GPU_CHECK(gpuStreamCreateWithPriority(copy, gpuStreamNonBlocking, least));
      };
      break;
    case Subject::PipelinePerSlice:
      h.fused_sdma_per_slice = true;
      break;
    case Subject::PipelinePortableGemm:
      h.gemm = [](const dev::GemmOperands& op, int64_t m_begin, int64_t m_end, const dev::GemmDest& d, gpuStream_t st) {
        return launch_gemm_subject(Subject::GemmFamilyPortable, op, m_begin, m_end, d, st);
      };
      break;
    case Subject::PipelineGuardPartial:
      h.guard_passes = {true, false, false, false};
      break;
    case Subject::PipelineGuardOutput:
      h.guard_passes = {false, true, false, false};
      break;
    case Subject::PipelineGuardWire:
      h.guard_passes = {false, false, true, false};
      break;
    case Subject::PipelineGuardGemm:
      h.guard_passes = {false, false, false, true};
      break;
    default:
      break;
  }
  return h;
}

}  // namespace gemmar::lab
