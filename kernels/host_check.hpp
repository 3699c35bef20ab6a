// Host-side helpers of the kernels' orchestration (kernels/pipeline/) and the lab's bench (lab/): a runtime
// call that fails throws EnvironmentError naming the call and its place; device allocations; the median of timings.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "kernels/gpu_compat.hpp"

#define GPU_CHECK(expr)                                                                                \
  do {                                                                                                 \
    const gpuError_t gpu_check_err_ = (expr);                                                          \
    if (gpu_check_err_ != gpuSuccess)                                                                  \
      throw ::gemmar::EnvironmentError(std::string("GPU call failed: ") + #expr + ": " +               \
                                           gpuGetErrorString(gpu_check_err_) + " (" + __FILE__ + ":" + \
                                           std::to_string(__LINE__) + ")",                             \
                                       __FILE__, __LINE__);                                            \
  } while (0)

namespace gemmar::kernels {

template <typename T>
T* dalloc(int64_t count) {
  void* p = nullptr;
  GPU_CHECK(gpuMalloc(&p, size_t(std::max<int64_t>(count, 1)) * sizeof(T)));
  return static_cast<T*>(p);
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace gemmar::kernels
