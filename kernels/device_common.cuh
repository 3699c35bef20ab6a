// The device kernels of gemm_ar, one source for HIP and CUDA (kernels/gpu_compat.hpp). Every rounding point of
// the collective (bf16 stores, the fp32 reduce, the fp8 wire) calls reference/numerics_inline.hpp, the same
// header the CPU emulation uses, so the two agree bit for bit. Only the GEMM's fp32 accumulation order is
// hardware-defined; that is why the driver re-emulates the collective from the partials read back here.
// What every kernel source shares: the block size of the element-wise kernels, the bf16 pair packing the GEMMs'
// and the reduce's stores use, the grid sizing (the SM count is read once per process), whether the device runs
// the sm_90a kernels, and the one place a kernel's shared-memory attribute is set.
#pragma once
#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "kernels/gpu_compat.hpp"
#include "kernels/kernels.hpp"
#include "kernels/tile_slices.hpp"
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

// Whether the current device is compute capability 9.x, where this build's sm_90a code (wgmma, the TMA) runs;
// read once per device. The GEMM dispatch and the pull's TMA stores fall back to their portable kernels elsewhere
// (and always in a build without the sm_90a kernels).
inline bool current_device_is_sm90() {
#if defined(GEMMAR_GPU_SM90)
  static signed char sm90[kMaxWorld];  // 0 unknown, 1 yes, -1 no
  int dev = 0;
  if (gpuGetDevice(&dev) != gpuSuccess || dev < 0 || dev >= kMaxWorld) dev = 0;
  if (!sm90[dev]) {
    gpuDeviceProp prop{};
    sm90[dev] = gpuGetDeviceProperties(&prop, dev) == gpuSuccess && prop.major == 9 ? 1 : -1;
  }
  return sm90[dev] > 0;
#else
  return false;
#endif
}

// A kernel's dynamic shared memory above the default 48 KiB is an attribute of the kernel on each device: set once
// per (kernel, device), the first time it is launched there (never inside a graph capture: the pipeline's launch 0
// runs eagerly first). A failed set is not remembered, so the next launch tries again.
template <typename Kernel>
gpuError_t set_smem_once(Kernel kern, int bytes) {
  static std::mutex mu;
  static std::vector<std::pair<const void*, int>> done;  // (kernel, device)
  int dev = 0;
  if (gpuGetDevice(&dev) != gpuSuccess) dev = 0;
  const std::pair<const void*, int> key{reinterpret_cast<const void*>(kern), dev};
  std::lock_guard<std::mutex> lock(mu);
  if (std::find(done.begin(), done.end(), key) != done.end()) return gpuSuccess;
  const gpuError_t e = gpuFuncSetAttribute(kern, gpuFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e == gpuSuccess) done.push_back(key);
  return e;
}

// Where a GEMM tile's rows go: the destination of its first row's slice, returned indexable by absolute row; null
// where the slice is dropped (the silent-scatter fault drops the stores, not the count). Whole-tile slices
// (slice_rows a multiple of 128) give one destination per tile; a tile straddling two slices (relaxed rows) stores
// through its first slice's destination, which GemmDest then requires to be consecutive slices of one buffer.
__device__ __forceinline__ uint16_t* tile_dest(const GemmDest& d, int64_t m0, int& slice) {
  slice = int(m0 / d.slice_rows);
  uint16_t* base = d.dst[slice];
  return base ? base - int64_t(slice) * d.slice_rows * d.ldd : nullptr;
}

// The last slice the tile from row m0 reaches with its real rows (GemmDest::rows): `slice` (its first row's) for
// whole-tile slices, the next one for a tile straddling two (mori's relaxed epilogue: dest_end =
// (min(row_lo + BLOCK_M, M) - 1) // slice_rows).
__device__ __forceinline__ int tile_last_slice(const GemmDest& d, int64_t m0, int slice) {
  return kernels::tile_last_slice(m0, kBlockM, d.rows, d.slice_rows, slice);
}

// `tiles` counts of the slices [slice, last] (the slices a tile's rows reach), after the caller's release.
__device__ __forceinline__ void count_tiles(const GemmDest& d, int slice, int last, unsigned tiles) {
  for (int p = slice; p <= last; ++p) atomicAdd(d.counters + p, tiles);
}

// The block's tile (from row m0) is stored: one count of it for every slice it reaches, after a fence (the release
// a put waiting on the counter needs).
__device__ __forceinline__ void tile_done(const GemmDest& d, int64_t m0, int slice) {
  __syncthreads();
  if (threadIdx.x == 0 && d.counters) {
    __threadfence();  // the tile's stores are visible before its count (the release the put waits on)
    count_tiles(d, slice, tile_last_slice(d, m0, slice), 1u);
  }
}

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
