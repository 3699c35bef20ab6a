// The bench's ceiling kernels: a 16-byte vector copy (the HBM ceiling), an empty kernel (the launch cost), and a
// kernel that holds every SM for a while (where a copy runs: copy-overlap).
#include "kernels/device_common.cuh"
#include "lab/lab_kernels.hpp"

namespace gemmar::lab {
namespace {

__global__ void copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, int64_t nv) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (; i + 3 * stride < nv; i += 4 * stride) {  // four independent 16-byte loads in flight per thread
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < nv; i += stride) dst[i] = src[i];
}

// One direction alone on the pull's grid: 16-byte loads (four in flight, folded into a word kept only if it is a
// value it cannot be) and 16-byte stores, to tell which direction a small grid's SMs run out of first.
__global__ void load_kernel(const uint4* __restrict__ src, int64_t nv, uint32_t* sink) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
  for (; i + 3 * stride < nv; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    acc ^= a.x ^ b.y ^ c.z ^ d.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}
__global__ void store_kernel(uint4* __restrict__ dst, int64_t nv) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (; i < nv; i += stride) dst[i] = make_uint4(uint32_t(i), 1u, 2u, 3u);
}

__global__ void empty_kernel() {}

// Occupies its thread slots for `ns` nanoseconds of the device's wall clock without touching memory: launched with
// 2048 threads per SM it leaves no SM a slot for another kernel's block, as a persistent GEMM's CTAs leave none.
__global__ void hold_sms_kernel(uint64_t ns) { gemmar::gpu::spin_for_us(float(ns) * 1e-3f); }

}  // namespace

gpuError_t launch_copy_kernel(void* dst, const void* src, int64_t bytes, gpuStream_t s, int blocks) {
  const int64_t nv = bytes / 16;
  const int grid = blocks > 0 ? blocks : dev::sm_count_cached() * 4;
  const int threads = blocks > 0 ? 1024 : 512;
  copy_kernel<<<unsigned(grid), threads, 0, s>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), nv);
  return gpuGetLastError();
}

gpuError_t launch_load_kernel(const void* src, int64_t bytes, uint32_t* sink, gpuStream_t s, int blocks) {
  load_kernel<<<unsigned(blocks), 1024, 0, s>>>(static_cast<const uint4*>(src), bytes / 16, sink);
  return gpuGetLastError();
}
gpuError_t launch_store_kernel(void* dst, int64_t bytes, gpuStream_t s, int blocks) {
  store_kernel<<<unsigned(blocks), 1024, 0, s>>>(static_cast<uint4*>(dst), bytes / 16);
  return gpuGetLastError();
}

gpuError_t launch_hold_sms(uint64_t ns, gpuStream_t s) {
  hold_sms_kernel<<<unsigned(dev::sm_count_cached() * 2), 1024, 0, s>>>(ns);
  return gpuGetLastError();
}

gpuError_t launch_empty(gpuStream_t s) {
  empty_kernel<<<1, 32, 0, s>>>();
  return gpuGetLastError();
}

}  // namespace gemmar::lab
