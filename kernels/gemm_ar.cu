// The host API of one gemm_ar run (kernels/gemm_ar.hpp): the engine (kernels/pipeline/engine.hpp) with the legs the
// mode's traits plan (kernels/pipeline/plan.cu), and the device queries.
#include "kernels/gemm_ar.hpp"

#include "kernels/host_check.hpp"
#include "kernels/pipeline/engine.hpp"

namespace gemmar::kernels {

int device_count() {
  int n = 0;
  if (gpuGetDeviceCount(&n) != gpuSuccess) {
    (void)gpuGetLastError();
    return 0;
  }
  return n;
}

std::string device_name(int device) {
  gpuDeviceProp prop{};
  GPU_CHECK(gpuGetDeviceProperties(&prop, device));
  return prop.name;
}

RunOutput run_gemm_ar(const DeviceRun& plan, const OperandFn& gen, const PipelineHooks& hooks) {
  Engine e(plan, gen, hooks);
  return e.run();
}

RunOutput run_gemm_ar(const DeviceRun& plan, const OperandFn& gen) { return run_gemm_ar(plan, gen, PipelineHooks{}); }

}  // namespace gemmar::kernels
