// The fp8 wire's standalone conversions: the quantize (bf16 -> codes + row scales) and the widen (codes -> bf16,
// both the local dequantize and the pull over peer pointers; convert/widen.cuh). The exhaustive device selftest of
// the conversions is the lab's (lab/convert/).
#include "kernels/convert/widen.cuh"
#include "kernels/gemm/heuristics.hpp"

namespace gemmar::kernels::dev {
namespace {

constexpr int kQuantThreads = 128;
constexpr int kQuantVecs = 8;  // 16-byte vectors per thread held in registers: rows up to 128*8*8 = 8192 columns

// One row per block, read once: the row stays in registers (kQuantVecs x 16 B per thread) across the block's
// NaN-propagating amax, then is scaled and narrowed from there. Rows wider than 8192 columns take the
// two-pass quantize_row.
__global__ void __launch_bounds__(kQuantThreads)
    quantize_kernel(const uint16_t* in, int64_t n, uint8_t* q_out, float* q_scale) {
  const int64_t row = blockIdx.x;
  const uint16_t* rp = in + row * n;
  const int nv = int(n / 8);
  if (nv > kQuantThreads * kQuantVecs) {
    quantize_row(rp, n, q_out + row * n, q_scale + row);
    return;
  }
  uint4 x[kQuantVecs];
#pragma unroll
  for (int i = 0; i < kQuantVecs; ++i) {
    const int v = int(threadIdx.x) + i * kQuantThreads;
    x[i] = v < nv ? reinterpret_cast<const uint4*>(rp)[v] : make_uint4(0u, 0u, 0u, 0u);
  }
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kQuantVecs; ++i) {
    float f[8];
    unpack8(x[i], f);
#pragma unroll
    for (int e = 0; e < 8; ++e) amax = nm::amax_step(amax, f[e]);
  }
  amax = block_amax(amax);
  const float inv = nm::wire_inv_scale(amax, false);
  uint2* qp = reinterpret_cast<uint2*>(q_out + row * n);
#pragma unroll
  for (int i = 0; i < kQuantVecs; ++i) {
    const int v = int(threadIdx.x) + i * kQuantThreads;
    if (v < nv) qp[v] = quant8(x[i], inv);
  }
  if (threadIdx.x == 0) q_scale[row] = nm::wire_scale(amax, false);
}

constexpr int kBulkVecs = 14;  // code vectors per lane per round, as int8's 112 bytes of loads in flight
// A warp's round of bf16: 7 KiB (224 KiB for 32 warps).
[[maybe_unused]] constexpr int kBulkStageBytes = kBulkVecs * 32 * 16;

// The pull with its stores through the TMA. A pull's grid is smaller than the device (mori's 64 blocks), and an SM
// stores through its load/store path at a fixed rate: on the H100, 16-byte stores alone on 64 blocks of 1024
// threads move 2450-2498 GB/s where loads alone move 3110-3137, so int8's pull (two bytes written per byte read)
// was held to 0.82 of cudaMemcpy by its stores. Here each warp converts a round of int8's row (14 code vectors per
// lane, the same loads) into its own 7 KiB of shared memory (lane-contiguous 16-byte stores: no bank conflicts)
// and lane 0 sends that run to global memory with one bulk copy, which leaves the SM by the TMA, not the
// load/store path (docs/results/h100-1gpu-2026-12-06-pull). Before the next round
// overwrites the stage, lane 0 waits until the copy has read it (wait_group.read), not for the global write.
// An empty body where there is no TMA: the launcher runs int8 there.
__global__ void __launch_bounds__(kWidenThreadsPull)
    widen_bulk_store_kernel(Fp8Sources src, int count, int rows, int n) {
#if defined(GEMMAR_TMA_STORE_PASS)
  extern __shared__ __align__(128) uint4 stage_all[];
  const int nv = n / 8;
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int warps = int(blockDim.x) / 32;
  uint4* stage = stage_all + warp * (kBulkStageBytes / 16);
  const uint32_t stage_s = static_cast<uint32_t>(__cvta_generic_to_shared(stage));
  const int units = count * rows;
  for (int unit = int(blockIdx.x) * warps + warp; unit < units; unit += int(gridDim.x) * warps) {
    const int s = unit / rows, row = unit - s * rows;
    const uint2* qp = reinterpret_cast<const uint2*>(src.q[s] + int64_t(row) * n);
    uint4* op = reinterpret_cast<uint4*>(src.out[s] + int64_t(row) * n);
    const float sc = src.scale[s][row];
    const bool sc_finite = (__float_as_uint(sc) & 0x7f800000u) != 0x7f800000u;
    for (int base = 0; base < nv; base += 32 * kBulkVecs) {
      uint2 q[kBulkVecs];
#pragma unroll
      for (int j = 0; j < kBulkVecs; ++j) {
        const int v = base + lane + 32 * j;
        if (v < nv) q[j] = qp[v];
      }
      if (lane == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
      __syncwarp();
#pragma unroll
      for (int j = 0; j < kBulkVecs; ++j) {
        const int v = base + lane + 32 * j;
        if (v < nv) stage[lane + 32 * j] = dequant8(q[j].x, q[j].y, sc, sc_finite);
      }
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      __syncwarp();
      if (lane == 0) {
        const int bytes = min(32 * kBulkVecs, nv - base) * 16;
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(op + base), "r"(stage_s),
                     "r"(bytes)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      }
    }
  }
  if (lane == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
  (void)src, (void)count, (void)rows, (void)n;
#endif
}

}  // namespace

gpuError_t launch_quantize(const uint16_t* in, int64_t rows, int64_t n, uint8_t* q_out, float* q_scale, gpuStream_t s) {
  quantize_kernel<<<unsigned(rows), kQuantThreads, 0, s>>>(in, n, q_out, q_scale);
  return gpuGetLastError();
}

bool launch_widen_bulk_store(const Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks, gpuStream_t s) {
  if (!current_device_is_sm90()) return false;
  // For the largest block (the pull's 1024 threads); the local grid's 256-thread blocks need less.
  if (set_smem_once(widen_bulk_store_kernel, kWidenThreadsPull / 32 * kBulkStageBytes) != gpuSuccess) return false;
  const int threads = blocks > 0 ? kWidenThreadsPull : kWidenThreadsLocal;
  const int64_t warps = threads / 32, units = int64_t(count) * rows;
  const int grid =
      blocks > 0 ? blocks : int(std::min<int64_t>((units + warps - 1) / warps, int64_t(sm_count_cached()) * 8));
  widen_bulk_store_kernel<<<unsigned(grid), threads, int(warps) * kBulkStageBytes, s>>>(src, count, int(rows), int(n));
  return true;
}

gpuError_t launch_widen(const Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks, gpuStream_t s) {
  if (count <= 0) return gpuSuccess;
  if (!widen_shape_ok(count, rows, n)) return gpuErrorInvalidValue;
  if (!(widen_stores_by_tma(blocks, sm_count_cached(), current_device_is_sm90()) &&
        launch_widen_bulk_store(src, count, rows, n, blocks, s)))
    launch_widen_rows<Int8Codec>(src, count, rows, n, blocks, s);
  return gpuGetLastError();
}

}  // namespace gemmar::kernels::dev
