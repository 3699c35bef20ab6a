// The fp8 wire's receive side (the dequantize of landed slices, and the pull over peer pointers): the row walk
// every widen shares, and the ways of writing a row the op runs (convert/convert.cu's launch_widen chooses by
// gemm/heuristics.hpp widen_stores_by_tma). The lab's widen variants (lab/convert/) are other codecs of the same
// walk.
#pragma once
#include <algorithm>
#include <type_traits>

#include "kernels/convert/fp8_wire.cuh"

namespace gemmar::kernels::dev {

constexpr int kWidenThreadsLocal = 256;  // the local dequantize: many small blocks, several per SM
constexpr int kWidenThreadsPull = 1024;  // the pull: its grid is fixed by --pull-blocks, so each block is as
                                         // large as a block can be (bytes in flight per block, Little's law)

namespace {

// How a lane reads a row's codes and writes their bf16 (a codec of widen_rows_kernel): kCodeBytes of codes per
// load, and store() writes code vector v's bf16 into the row's output. Int8Codec is the op's: 8-byte code loads,
// the integer decode (dequant8), one 16-byte store, so each warp's store is contiguous.
struct Int8Codec {
  static constexpr int kCodeBytes = 8;
  using Code = uint2;
  __device__ __forceinline__ static void store(uint4* op, int v, const uint2& q, float sc, bool sc_finite) {
    op[v] = dequant8(q.x, q.y, sc, sc_finite);
  }
};

// One warp per (source, row) at a time, the rows of all `count` sources walked grid-stride by the warps, so every
// warp runs on its own (no block barrier: loads of one warp overlap the conversions of another). A lane takes the
// row's code vectors lane + 32j, issues 112 bytes of loads before it converts any, then stores. 32-bit indices
// (checked by the launcher).
template <class Codec>
__global__ void __launch_bounds__(kWidenThreadsPull) widen_rows_kernel(Fp8Sources src, int count, int rows, int n) {
  constexpr int kVecs = 112 / Codec::kCodeBytes;  // loads in flight per lane
  using CodeVec = typename Codec::Code;
  const int nv = n / Codec::kCodeBytes;
  const int lane = int(threadIdx.x) % GEMMAR_WARP_SIZE;
  const int warps = int(blockDim.x) / GEMMAR_WARP_SIZE;
  const int units = count * rows;
  for (int unit = int(blockIdx.x) * warps + int(threadIdx.x) / GEMMAR_WARP_SIZE; unit < units;
       unit += int(gridDim.x) * warps) {
    const int s = unit / rows, row = unit - s * rows;
    const CodeVec* qp = reinterpret_cast<const CodeVec*>(src.q[s] + int64_t(row) * n);
    uint4* op = reinterpret_cast<uint4*>(src.out[s] + int64_t(row) * n);
    const float sc = src.scale[s][row];
    const bool sc_finite = (__float_as_uint(sc) & 0x7f800000u) != 0x7f800000u;
    for (int v0 = lane; v0 < nv; v0 += GEMMAR_WARP_SIZE * kVecs) {
      CodeVec q[kVecs];
#pragma unroll
      for (int j = 0; j < kVecs; ++j) {
        const int v = v0 + GEMMAR_WARP_SIZE * j;
        if (v < nv) q[j] = qp[v];
      }
#pragma unroll
      for (int j = 0; j < kVecs; ++j) {
        const int v = v0 + GEMMAR_WARP_SIZE * j;
        if (v >= nv) break;
        Codec::store(op, v, q[j], sc, sc_finite);
      }
    }
  }
}

}  // namespace

// The register-store walk of Codec: blocks = 0 is the local dequantize's grid (256-thread blocks filling the
// device, up to 8 per SM), blocks > 0 the pull's fixed grid of 1024-thread blocks. Enqueues only: the caller reads
// gpuGetLastError.
template <class Codec>
void launch_widen_rows(const Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks, gpuStream_t s) {
  if (blocks > 0) {
    widen_rows_kernel<Codec><<<unsigned(blocks), kWidenThreadsPull, 0, s>>>(src, count, int(rows), int(n));
  } else {
    const int64_t warps = kWidenThreadsLocal / GEMMAR_WARP_SIZE, units = int64_t(count) * rows;  // a warp each
    const int grid = int(std::min<int64_t>((units + warps - 1) / warps, int64_t(sm_count_cached()) * 8));
    widen_rows_kernel<Codec><<<unsigned(grid), kWidenThreadsLocal, 0, s>>>(src, count, int(rows), int(n));
  }
}

// The widen with int8's loads and decode whose bf16 leave shared memory by the TMA's bulk stores (convert.cu), on
// compute capability 9.x; false (nothing launched) elsewhere.
bool launch_widen_bulk_store(const Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks, gpuStream_t s);
// Whether launch_widen can take these rows (32-bit indices, 16-column vectors).
inline bool widen_shape_ok(int count, int64_t rows, int64_t n) {
  return int64_t(count) * rows < (int64_t(1) << 31) && n < (int64_t(1) << 31) && n % 16 == 0;
}

}  // namespace gemmar::kernels::dev
