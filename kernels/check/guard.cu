#include "kernels/check/guard.hpp"

#include <algorithm>
#include <string>

#include "common/errors.hpp"
#include "kernels/gpu_compat.hpp"
#include "kernels/host_check.hpp"
#include "reference/numerics_inline.hpp"

namespace gemmar::kernels {
namespace {

namespace nm = gemmar::numerics;

constexpr int kColBlock = int(reference::kGuardColumnBlock);  // columns per row block
constexpr int kVec = 8;                                       // columns per thread: one 16-byte bf16 load
constexpr int kSumThreads = kColBlock / kVec;                 // 128
constexpr int kRowChunk = 128;                                // rows per block of the sums (S is a multiple)
constexpr int kRowBatch = 4;                                  // rows loaded before any is summed: loads in flight
constexpr int kSumWarps = kSumThreads / GEMMAR_WARP_SIZE;

struct SliceSources {
  const uint16_t* slice[kGuardMaxWorld];
};

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = GEMMAR_WARP_SIZE / 2; o > 0; o >>= 1) v = nm::add_rn(v, gemmar::gpu::shfl_xor(v, o));
  return v;
}

// Loads kVec columns col..col+7 of one row as raw words (fetch) and widens them to fp32 (widen): the fetches of a
// batch of rows are issued before any is widened, so each thread keeps kRowBatch 16-byte loads in flight (the
// first version loaded 4 bytes per thread per dependent step and ran ~10x under the HBM rate on the H200).
// Bf16Loader: bf16 rows of slice sources; WireLoader: the fp8 wire's codes widened as the receivers widen them
// (bf16(decode(code) * scale)).
struct Bf16Loader {
  SliceSources src;
  int64_t slice_rows, n;
  using Raw = uint4;
  __device__ Raw fetch(int64_t row, int64_t col) const {
    const int64_t p = row / slice_rows;
    return *reinterpret_cast<const uint4*>(src.slice[p] + (row - p * slice_rows) * n + col);
  }
  __device__ void widen(int64_t, const Raw& v, float (&x)[kVec]) const {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    for (int i = 0; i < 4; ++i) {
      x[2 * i] = nm::bf16_to_f32(uint16_t(w[i] & 0xffffu));
      x[2 * i + 1] = nm::bf16_to_f32(uint16_t(w[i] >> 16));
    }
  }
};
struct WireLoader {
  const uint8_t* q;
  const float* scale;
  int64_t n;
  using Raw = uint2;
  __device__ Raw fetch(int64_t row, int64_t col) const { return *reinterpret_cast<const uint2*>(q + row * n + col); }
  __device__ void widen(int64_t row, const Raw& v, float (&x)[kVec]) const {
    const float s = scale[row];
    for (int i = 0; i < kVec; ++i) {
      const uint32_t w = i < 4 ? v.x : v.y;
      x[i] = nm::bf16_to_f32(nm::wire_dequantize(uint8_t(w >> (8 * (i % 4))), s, false));
    }
  }
};

// Grid (column blocks, row chunks): per chunk and column, the sums over the chunk's rows (col_part[chunk * n +
// col], sequential over rows); per row and column block, the row sums (blk[row * nb + b]: per thread its 8
// columns in order, a fixed shuffle tree per warp, the warps in order).
template <typename Loader>
__global__ void __launch_bounds__(kSumThreads)
    guard_sums_kernel(Loader ld, int64_t n, int nb, float* col_part, float* col_part_abs, float* blk, float* blk_abs) {
  __shared__ float red[kSumWarps][kRowChunk];
  __shared__ float red_abs[kSumWarps][kRowChunk];
  const int b = blockIdx.x;
  const int64_t chunk = blockIdx.y;
  const int t = threadIdx.x;
  const int64_t col = int64_t(b) * kColBlock + kVec * t;
  const bool live = col < n;  // n is a multiple of kVec: a thread's columns are all live or none
  float c[kVec] = {}, a[kVec] = {};
  for (int i0 = 0; i0 < kRowChunk; i0 += kRowBatch) {
    typename Loader::Raw raw[kRowBatch] = {};
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j)
      if (live) raw[j] = ld.fetch(chunk * kRowChunk + i0 + j, col);
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j) {
      float x[kVec] = {};
      if (live) ld.widen(chunk * kRowChunk + i0 + j, raw[j], x);
      float s = 0, sa = 0;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        c[e] = nm::add_rn(c[e], x[e]);
        a[e] = nm::add_rn(a[e], nm::abs_f32(x[e]));
        s = nm::add_rn(s, x[e]);
        sa = nm::add_rn(sa, nm::abs_f32(x[e]));
      }
      if (blk) {
        s = warp_sum(s);
        sa = warp_sum(sa);
        if (t % GEMMAR_WARP_SIZE == 0) {
          red[t / GEMMAR_WARP_SIZE][i0 + j] = s;
          red_abs[t / GEMMAR_WARP_SIZE][i0 + j] = sa;
        }
      }
    }
  }
  if (live) {
    for (int e = 0; e < kVec; ++e) {
      col_part[chunk * n + col + e] = c[e];
      col_part_abs[chunk * n + col + e] = a[e];
    }
  }
  if (!blk) return;
  __syncthreads();
  for (int i = t; i < kRowChunk; i += kSumThreads) {
    float s = 0, sa = 0;
    for (int w = 0; w < kSumWarps; ++w) {
      s = nm::add_rn(s, red[w][i]);
      sa = nm::add_rn(sa, red_abs[w][i]);
    }
    const int64_t row = chunk * kRowChunk + i;
    blk[row * nb + b] = s;
    blk_abs[row * nb + b] = sa;
  }
}

// Per slice and column: the chunks of the slice summed in order. Grid-stride over slices * n.
__global__ void guard_finish_cols_kernel(const float* part, const float* part_abs, int64_t chunks_per_slice, int slices,
                                         int64_t n, float* col, float* col_abs) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < slices * n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = i / n, c = i % n;
    float v = 0, a = 0;
    for (int64_t k = 0; k < chunks_per_slice; ++k) {
      v = nm::add_rn(v, part[(s * chunks_per_slice + k) * n + c]);
      a = nm::add_rn(a, part_abs[(s * chunks_per_slice + k) * n + c]);
    }
    col[i] = v;
    col_abs[i] = a;
  }
}

// Per row: the row blocks summed in order (the output's row sums); and the sum of the wire's row scales.
__global__ void guard_finish_rows_kernel(const float* blk, const float* blk_abs, int64_t rows, int nb, float* row,
                                         float* row_abs) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows; i += int64_t(gridDim.x) * blockDim.x) {
    float v = 0, a = 0;
    for (int b = 0; b < nb; ++b) {
      v = nm::add_rn(v, blk[i * nb + b]);
      a = nm::add_rn(a, blk_abs[i * nb + b]);
    }
    row[i] = v;
    row_abs[i] = a;
  }
}
// One warp: lane l sums rows l, l + 32, ... in order, then a fixed shuffle tree (was one thread over S dependent
// loads). The scale sum only enters B_wire, never a bitwise comparison; the order is fixed all the same.
__global__ void guard_scale_sum_kernel(const float* scale, int64_t rows, float* out) {
  float v = 0;
  for (int64_t i = threadIdx.x; i < rows; i += GEMMAR_WARP_SIZE) v = nm::add_rn(v, scale[i]);
  v = warp_sum(v);
  if (threadIdx.x == 0) *out = v;
}

// The GEMM check: pred[row * nb + b] = sum_k A_deq[row, k] * bsum[b * K + k] (and |A_deq| . babs), sequential
// over k. A's scale: one per (row, a_scale_k columns of K), at kb * m + row (a_scale_k_major: blockscale's
// [K/128, M]) or row * (K / a_scale_k) + kb (ptpc: a_scale_k = K; mxfp8: 32). One thread per row and up to
// kPredBlocks column blocks: each A value read from shared memory once per k serves every block (float4 loads),
// the checksums are broadcasts. The first version (one thread per row and block, three scalar shared loads per
// two products) was bound by shared-memory instructions. A variant with 4 rows per thread, codes loaded from
// global memory and decoded in registers ran 787-790 us against this kernel's 724-726 us (M = 16384, 8 ranks,
// H200, 2026-12-04). Most likely the pass is bound by its instructions (a decode and 14 multiply-adds per A
// element; an estimate from the code, not a profile), which only the tensor cores would shorten.
constexpr int kPredRows = 128, kPredBlocks = 8, kPredK = 64, kPredPad = kPredK + 4;
__global__ void __launch_bounds__(kPredRows)
    guard_gemm_pred_kernel(const uint8_t* a, const float* a_scale, int64_t a_scale_k, bool a_scale_k_major,
                           bool fnuz_half, const float* bsum, const float* babs, int64_t m, int64_t k, int nb,
                           float* pred, float* pred_abs) {
  alignas(16) __shared__ float sa[kPredRows][kPredPad];
  alignas(16) __shared__ float sb[kPredBlocks][kPredK];
  alignas(16) __shared__ float sbabs[kPredBlocks][kPredK];
  const int t = threadIdx.x;
  const int64_t row0 = int64_t(blockIdx.x) * kPredRows;
  const int b0 = int(blockIdx.y) * kPredBlocks;
  const int live_blocks = nb - b0;
  float s[kPredBlocks] = {}, sab[kPredBlocks] = {};
  constexpr int kChunks = kPredK / 16;  // 16 codes per uint4
  for (int64_t k0 = 0; k0 < k; k0 += kPredK) {
    for (int i = t; i < kPredRows * kChunks; i += kPredRows) {
      const int rr = i / kChunks, part = i % kChunks;
      const int64_t row = row0 + rr;
      const uint4 w = *reinterpret_cast<const uint4*>(a + row * k + k0 + 16 * part);
      const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
      const int64_t kb = (k0 + 16 * part) / a_scale_k;  // 16 | 32: one scale per 16 codes
      const float sc = a_scale[a_scale_k_major ? kb * m + row : row * (k / a_scale_k) + kb];
      for (int e = 0; e < 16; ++e) {
        // gfx942: the stored fnuz code reads as half the fn value it encodes; times 2 is exact.
        float v = nm::dequantize_operand(uint8_t(ws[e / 4] >> (8 * (e % 4))), sc, fnuz_half);
        if (fnuz_half) v = nm::mul_rn(v, 2.0f);
        sa[rr][16 * part + e] = v;
      }
    }
    for (int i = t; i < kPredBlocks * kPredK; i += kPredRows) {
      const int bb = b0 + i / kPredK, kk = i % kPredK;
      sb[i / kPredK][kk] = bb < nb ? bsum[bb * k + k0 + kk] : 0.0f;
      sbabs[i / kPredK][kk] = bb < nb ? babs[bb * k + k0 + kk] : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < kPredK; kk += 4) {
      const float4 av = *reinterpret_cast<const float4*>(&sa[t][kk]);
      const float ar[4] = {av.x, av.y, av.z, av.w};
      const float aabs[4] = {nm::abs_f32(av.x), nm::abs_f32(av.y), nm::abs_f32(av.z), nm::abs_f32(av.w)};
#pragma unroll
      for (int bl = 0; bl < kPredBlocks; ++bl) {
        if (bl >= live_blocks) break;  // uniform: N = 7168 has 7 blocks, the 8th was computed for nothing
        const float4 bv = *reinterpret_cast<const float4*>(&sb[bl][kk]);
        const float4 bav = *reinterpret_cast<const float4*>(&sbabs[bl][kk]);
        const float br[4] = {bv.x, bv.y, bv.z, bv.w}, bar[4] = {bav.x, bav.y, bav.z, bav.w};
        // Fused multiply-adds: one rounding per step where B_gemm's gamma(K + 1) allows a rounded product and a
        // rounded sum. Measured on the H200 (M = 16384, 8 ranks): 783 -> 728 us, so the pass is not instruction
        // bound; likely the staging of A (byte-wise decode, one sync per 64 k, 128 blocks per rank): untuned.
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[bl] = fmaf(ar[e], br[e], s[bl]);
          sab[bl] = fmaf(aabs[e], bar[e], sab[bl]);
        }
      }
    }
    __syncthreads();
  }
  for (int bl = 0; bl < kPredBlocks; ++bl)
    if (b0 + bl < nb) {
      pred[(row0 + t) * nb + b0 + bl] = s[bl];
      pred_abs[(row0 + t) * nb + b0 + bl] = sab[bl];
    }
}

}  // namespace

struct DeviceGuard::Impl {
  struct Rank {
    int dev = 0;
    float *part = nullptr, *part_abs = nullptr;                                        // [m / 128][n] scratch
    float *pcol = nullptr, *pcol_abs = nullptr, *ocol = nullptr, *ocol_abs = nullptr;  // [W][n]
    float *pblk = nullptr, *pblk_abs = nullptr, *oblk = nullptr, *oblk_abs = nullptr;  // [m][nb]
    float *orow = nullptr, *orow_abs = nullptr;                                        // [m]
    float *wcol = nullptr, *wcol_abs = nullptr, *wscale = nullptr;                     // [n], [n], [1]
    float *pred = nullptr, *pred_abs = nullptr;                                        // [m][nb]
    float *bsum = nullptr, *babs = nullptr;                                            // [nb][k]
    bool has_weights = false;
    std::vector<float*> all() const {
      return {part, part_abs, pcol, pcol_abs, ocol,   ocol_abs, pblk,     pblk_abs, oblk, oblk_abs,
              orow, orow_abs, wcol, wcol_abs, wscale, pred,     pred_abs, bsum,     babs};
    }
  };
  int W;
  int64_t M, N, K, S;
  int nb;
  bool fp8;
  GuardPasses passes;
  std::vector<Rank> ranks;
};

DeviceGuard::DeviceGuard(int world, int64_t m, int64_t n, int64_t k, bool fp8_wire, const std::vector<int>& rank_device,
                         GuardPasses passes)
    : impl_(std::make_unique<Impl>()) {
  Impl& g = *impl_;
  GEMMAR_USAGE_CHECK(world >= 1 && world <= kGuardMaxWorld && m % (int64_t(world) * kRowChunk) == 0 && n % kVec == 0 &&
                         k % 128 == 0 && int(rank_device.size()) == world,
                     "--guard: the device guard needs M a multiple of world*128, N of 8, K of 128");
  g.W = world;
  g.M = m;
  g.N = n;
  g.K = k;
  g.S = m / world;
  g.nb = int(reference::guard_column_blocks(n));
  g.fp8 = fp8_wire;
  g.passes = passes;
  g.ranks.resize(size_t(world));
  for (int r = 0; r < world; ++r) {
    Impl::Rank& rk = g.ranks[size_t(r)];
    rk.dev = rank_device[size_t(r)];
    GPU_CHECK(gpuSetDevice(rk.dev));
    const int64_t chunks = m / kRowChunk;
    rk.part = dalloc<float>(chunks * n);
    rk.part_abs = dalloc<float>(chunks * n);
    for (float** p : {&rk.pcol, &rk.pcol_abs, &rk.ocol, &rk.ocol_abs}) *p = dalloc<float>(int64_t(world) * n);
    for (float** p : {&rk.pblk, &rk.pblk_abs, &rk.oblk, &rk.oblk_abs, &rk.pred, &rk.pred_abs})
      *p = dalloc<float>(m * g.nb);
    rk.orow = dalloc<float>(m);
    rk.orow_abs = dalloc<float>(m);
    rk.wcol = dalloc<float>(n);
    rk.wcol_abs = dalloc<float>(n);
    rk.wscale = dalloc<float>(1);
    rk.bsum = dalloc<float>(int64_t(g.nb) * k);
    rk.babs = dalloc<float>(int64_t(g.nb) * k);
  }
}

DeviceGuard::~DeviceGuard() {
  for (const auto& rk : impl_->ranks) {
    (void)gpuSetDevice(rk.dev);
    for (float* p : rk.all())
      if (p) (void)gpuFree(p);
  }
}

void DeviceGuard::set_weights(int rank, const reference::GuardWeights& w) {
  Impl& g = *impl_;
  Impl::Rank& rk = g.ranks.at(size_t(rank));
  GEMMAR_CHECK(w.k == g.K && w.blocks == g.nb, "guard: weights' checksum of the wrong shape");
  GPU_CHECK(gpuSetDevice(rk.dev));
  GPU_CHECK(gpuMemcpy(rk.bsum, w.bsum.data(), w.bsum.size() * 4, gpuMemcpyHostToDevice));
  GPU_CHECK(gpuMemcpy(rk.babs, w.babs.data(), w.babs.size() * 4, gpuMemcpyHostToDevice));
  rk.has_weights = true;
}

void DeviceGuard::enqueue(int rank, const GuardRankView& v, void* stream) {
  const Impl& g = *impl_;
  const Impl::Rank& rk = g.ranks.at(size_t(rank));
  auto s = static_cast<gpuStream_t>(stream);
  const dim3 grid(unsigned(g.nb), unsigned(g.M / kRowChunk));
  const int fin_grid = 1024;
  // The partial: column sums per slice, row-block sums.
  if (g.passes.partial) {
    Bf16Loader pl{{}, g.S, g.N};
    for (int p = 0; p < g.W; ++p) pl.src.slice[p] = v.partial_slice[p];
    guard_sums_kernel<<<grid, kSumThreads, 0, s>>>(pl, g.N, g.nb, rk.part, rk.part_abs, rk.pblk, rk.pblk_abs);
    guard_finish_cols_kernel<<<fin_grid, 256, 0, s>>>(rk.part, rk.part_abs, g.S / kRowChunk, g.W, g.N, rk.pcol,
                                                      rk.pcol_abs);
  }
  if (g.passes.output) {  // the output, as one source over all rows
    Bf16Loader ol{{}, g.M, g.N};
    ol.src.slice[0] = v.output;
    guard_sums_kernel<<<grid, kSumThreads, 0, s>>>(ol, g.N, g.nb, rk.part, rk.part_abs, rk.oblk, rk.oblk_abs);
    guard_finish_cols_kernel<<<fin_grid, 256, 0, s>>>(rk.part, rk.part_abs, g.S / kRowChunk, g.W, g.N, rk.ocol,
                                                      rk.ocol_abs);
    guard_finish_rows_kernel<<<fin_grid, 256, 0, s>>>(rk.oblk, rk.oblk_abs, g.M, g.nb, rk.orow, rk.orow_abs);
  }
  if (g.fp8 && v.wire && g.passes.wire) {  // the owner's slice as the wire carries it
    WireLoader wl{v.wire, v.wire_scale, g.N};
    guard_sums_kernel<<<dim3(unsigned(g.nb), unsigned(g.S / kRowChunk)), kSumThreads, 0, s>>>(
        wl, g.N, g.nb, rk.part, rk.part_abs, nullptr, nullptr);
    guard_finish_cols_kernel<<<fin_grid, 256, 0, s>>>(rk.part, rk.part_abs, g.S / kRowChunk, 1, g.N, rk.wcol,
                                                      rk.wcol_abs);
    guard_scale_sum_kernel<<<1, GEMMAR_WARP_SIZE, 0, s>>>(v.wire_scale, g.S, rk.wscale);
  }
  if (rk.has_weights && v.a && g.passes.gemm) {
    const dim3 pg(unsigned(g.M / kPredRows), unsigned((g.nb + kPredBlocks - 1) / kPredBlocks));
    guard_gemm_pred_kernel<<<pg, kPredRows, 0, s>>>(v.a, v.a_scale, v.a_scale_k, v.a_scale_k_major, v.a_fnuz_half,
                                                    rk.bsum, rk.babs, g.M, g.K, g.nb, rk.pred, rk.pred_abs);
  }
  GPU_CHECK(gpuGetLastError());
}

std::vector<reference::GuardSums> DeviceGuard::read() const {
  const Impl& g = *impl_;
  std::vector<reference::GuardSums> out(size_t(g.W));
  auto get = [](std::vector<float>& dst, const float* src, int64_t count) {
    dst.resize(size_t(count));
    GPU_CHECK(gpuMemcpy(dst.data(), src, size_t(count) * 4, gpuMemcpyDeviceToHost));
  };
  for (int r = 0; r < g.W; ++r) {
    const Impl::Rank& rk = g.ranks[size_t(r)];
    reference::GuardSums& s = out[size_t(r)];
    GPU_CHECK(gpuSetDevice(rk.dev));
    get(s.partial_col, rk.pcol, g.W * g.N);
    get(s.partial_col_abs, rk.pcol_abs, g.W * g.N);
    get(s.out_col, rk.ocol, g.W * g.N);
    get(s.out_col_abs, rk.ocol_abs, g.W * g.N);
    get(s.partial_blk, rk.pblk, g.M * g.nb);
    get(s.partial_blk_abs, rk.pblk_abs, g.M * g.nb);
    get(s.out_row, rk.orow, g.M);
    get(s.out_row_abs, rk.orow_abs, g.M);
    if (rk.has_weights) {
      get(s.gemm_pred, rk.pred, g.M * g.nb);
      get(s.gemm_pred_abs, rk.pred_abs, g.M * g.nb);
    }
    if (g.fp8) {
      get(s.wire_col, rk.wcol, g.N);
      std::vector<float> one;
      get(one, rk.wscale, 1);
      s.wire_scale_sum = one[0];
    }
  }
  return out;
}

}  // namespace gemmar::kernels
