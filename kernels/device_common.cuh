// The device kernels of gemm_ar, one source for HIP and CUDA (kernels/gpu_compat.hpp). Every rounding point of
// the collective (bf16 stores, the fp32 reduce, the fp8 wire) calls reference/numerics_inline.hpp, the same
// header the CPU emulation uses, so the two agree bit for bit. Only the GEMM's fp32 accumulation order is
// hardware-defined; that is why the driver re-emulates the collective from the partials read back here.
// What every kernel source shares: the block size of the element-wise kernels, the bf16 pair packing the GEMMs'
// and the reduce's stores use, and the grid sizing (the SM count is read once per process).
#pragma once
#include "kernels/gpu_compat.hpp"
#include "kernels/kernels.hpp"
#include "reference/numerics_inline.hpp"

namespace gemmar::kernels::dev {

namespace nm = gemmar::numerics;

constexpr int kThreads = 256;

// A bf16 pair whose NaN halves (any payload, as the hardware's cvt.rn.bf16x2.f32 gives them) become the canonical
// 0x7fc0 of nm::f32_to_bf16.
[[maybe_unused]] __device__ __forceinline__ uint32_t bf16x2_canon_nan(uint32_t r) {
  if ((r & 0x7fffu) > 0x7f80u) r = (r & 0xffff0000u) | 0x7fc0u;
  if (((r >> 16) & 0x7fffu) > 0x7f80u) r = (r & 0x0000ffffu) | 0x7fc00000u;
  return r;
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  return uint32_t(nm::f32_to_bf16(lo)) | (uint32_t(nm::f32_to_bf16(hi)) << 16);
}

#if defined(GEMMAR_GPU_CUDA)
// Whether the current device is compute capability 9.x, where this build's sm_90a code (wgmma, the TMA) runs;
// read once per device. The GEMM dispatch and the pull's TMA stores fall back to their portable kernels elsewhere.
inline bool current_device_is_hopper() {
  static signed char hopper[kMaxWorld];  // 0 unknown, 1 yes, -1 no
  int dev = 0;
  if (gpuGetDevice(&dev) != gpuSuccess || dev < 0 || dev >= kMaxWorld) dev = 0;
  if (!hopper[dev]) {
    gpuDeviceProp prop{};
    hopper[dev] = gpuGetDeviceProperties(&prop, dev) == gpuSuccess && prop.major == 9 ? 1 : -1;
  }
  return hopper[dev] > 0;
}
#endif

inline int sm_count_cached() {
  static int sms = 0;
  if (!sms) {
    int dev = 0;
    gpuDeviceProp prop{};
    if (gpuGetDevice(&dev) == gpuSuccess && gpuGetDeviceProperties(&prop, dev) == gpuSuccess)
      sms = prop.multiProcessorCount;
    if (sms <= 0) sms = 80;
  }
  return sms;
}

inline int grid_for(int64_t work_items, int per_block) {
  const int64_t want = (work_items + per_block - 1) / per_block;
  const int64_t cap = int64_t(sm_count_cached()) * 8;
  return int(want < 1 ? 1 : (want > cap ? cap : want));
}

}  // namespace gemmar::kernels::dev
