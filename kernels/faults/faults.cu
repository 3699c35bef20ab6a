// Fault injection on the device: the straggler delay, the no-release pattern over what a gather landed, the poison
// count, the scale perturbation, the fnuz recode and the flipped bit (common/faults.cpp lists what each one models).
#include "kernels/device_common.cuh"
#include "reference/no_release_pattern.hpp"

namespace gemmar::kernels::dev {
namespace {

// One thread per 64-byte line of every (owner, row) of the set: rows outside the owner's hit bands cost one
// mask test; a stale line is four 16-byte stores (pre-reduce bf16 contents, or fp8 zero codes).
// Straggler injection: spins for delays_us[idx] microseconds, read from device memory when it runs (so a graph
// replays the delay the host wrote before that replay, not the one seen at capture).
__global__ void straggle_spin_kernel(const float* delays_us, int idx) {
  const float us = delays_us[idx];
  if (!(us > 0.0f)) return;
  gemmar::gpu::spin_for_us(us);
}

__global__ void __launch_bounds__(kThreads)
    no_release_kernel(NoReleaseSet set, int count, int receiver, uint64_t seed, uint64_t threshold, int64_t slice_rows,
                      int64_t n, bool fp8) {
  const int64_t elem_bytes = fp8 ? 1 : 2;
  const int64_t lines = n * elem_bytes / no_release::kLineBytes;
  const int64_t per_src = slice_rows * lines;
  const int64_t total = per_src * count;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int s = int(i / per_src);
    const int64_t rem = i - int64_t(s) * per_src;
    const int64_t lrow = rem / lines, line = rem - lrow * lines;
    const int owner = set.owner[s];
    const int64_t row = int64_t(owner) * slice_rows + lrow;
    if (!((set.band_mask[s] >> no_release::band_of(row, owner, slice_rows)) & 1u)) continue;
    if (!no_release::line_stale(seed, receiver, row, line, threshold)) continue;
    const int64_t byte_off = lrow * n * elem_bytes + line * no_release::kLineBytes;
    uint4* dst = reinterpret_cast<uint4*>(static_cast<uint8_t*>(set.landed[s]) + byte_off);
    if (fp8) {
#pragma unroll
      for (int v = 0; v < 4; ++v) dst[v] = make_uint4(0u, 0u, 0u, 0u);
    } else {
      const uint4* src = reinterpret_cast<const uint4*>(reinterpret_cast<const uint8_t*>(set.pre[s]) + byte_off);
#pragma unroll
      for (int v = 0; v < 4; ++v) dst[v] = src[v];
    }
  }
}

__global__ void count_poison_kernel(const uint16_t* p, int64_t elems, unsigned long long* counter) {
  unsigned long long c = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < elems; i += int64_t(gridDim.x) * blockDim.x)
    c += p[i] == 0xffffu ? 1u : 0u;
  if (c) atomicAdd(counter, c);
}

__global__ void scale_f32_kernel(float* x, int64_t elems, float factor) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < elems; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = nm::mul_rn(x[i], factor);
}

// fn code -> the fnuz code of the same value. fnuz(bits) = fn(bits) / 2, so the fnuz code of v is the fn code
// of 2v: exponent + 1 for normals, significand * 2 for subnormals (which is code * 2); -0 becomes +0.
__global__ void fp8_recode_kernel(uint8_t* x, int64_t elems, bool zero_negzero_only) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < elems; i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t c = x[i];
    const uint32_t sign = c & 0x80u, mag = c & 0x7fu;
    if (zero_negzero_only) {
      if (c == 0x80u) x[i] = 0;
      continue;
    }
    uint32_t out;
    if (mag == 0)
      out = 0;
    else if ((mag >> 3) == 0)
      out = sign | (mag * 2u);
    else
      out = sign | (mag + 8u > 0x7fu ? 0x7fu : mag + 8u);
    x[i] = uint8_t(out);
  }
}

__global__ void flip_bits_kernel(uint16_t* at, uint16_t mask) { *at ^= mask; }

}  // namespace

gpuError_t launch_no_release(const NoReleaseSet& set, int count, int receiver, uint64_t seed, uint64_t line_threshold,
                             int64_t slice_rows, int64_t n, bool fp8, gpuStream_t s) {
  if (count <= 0) return gpuSuccess;
  const int64_t lines = n * (fp8 ? 1 : 2) / no_release::kLineBytes;
  const int grid = grid_for(int64_t(count) * slice_rows * lines, kThreads);
  no_release_kernel<<<unsigned(grid), kThreads, 0, s>>>(set, count, receiver, seed, line_threshold, slice_rows, n, fp8);
  return gpuGetLastError();
}

gpuError_t launch_count_poison(const uint16_t* p, int64_t elems, unsigned long long* counter, gpuStream_t s) {
  count_poison_kernel<<<unsigned(grid_for(elems, kThreads * 8)), kThreads, 0, s>>>(p, elems, counter);
  return gpuGetLastError();
}

gpuError_t launch_scale_f32(float* x, int64_t elems, float factor, gpuStream_t s) {
  scale_f32_kernel<<<unsigned(grid_for(elems, kThreads * 4)), kThreads, 0, s>>>(x, elems, factor);
  return gpuGetLastError();
}

gpuError_t launch_fp8_recode(uint8_t* x, int64_t elems, bool zero_negzero_only, gpuStream_t s) {
  fp8_recode_kernel<<<unsigned(grid_for(elems, kThreads * 8)), kThreads, 0, s>>>(x, elems, zero_negzero_only);
  return gpuGetLastError();
}

gpuError_t launch_flip_bits(uint16_t* at, uint16_t mask, gpuStream_t s) {
  flip_bits_kernel<<<1, 1, 0, s>>>(at, mask);
  return gpuGetLastError();
}

gpuError_t launch_straggle_spin(const float* delays_us, int idx, gpuStream_t s) {
  straggle_spin_kernel<<<1, 1, 0, s>>>(delays_us, idx);
  return gpuGetLastError();
}

}  // namespace gemmar::kernels::dev
