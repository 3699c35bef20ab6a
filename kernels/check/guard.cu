#include "kernels/check/guard.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "common/errors.hpp"
#include "kernels/gpu_compat.hpp"
#include "kernels/host_check.hpp"
#include "reference/guard_sample.hpp"
#include "reference/numerics_inline.hpp"

namespace gemmar::kernels {
namespace {

namespace nm = gemmar::numerics;

constexpr int kColBlock = int(reference::kGuardColumnBlock);  // columns per row block
constexpr int kVec = 8;                                       // columns per thread: one 16-byte bf16 load
constexpr int kSumThreads = kColBlock / kVec;                 // 128
constexpr int kRowChunk = 128;                                // listed rows per block of the sums, at most
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
  const uint8_t* q;  // the owner's slice: rows row0 .. row0 + S - 1
  const float* scale;
  int64_t row0, n;
  using Raw = uint2;
  __device__ Raw fetch(int64_t row, int64_t col) const {
    return *reinterpret_cast<const uint2*>(q + (row - row0) * n + col);
  }
  __device__ void widen(int64_t row, const Raw& v, float (&x)[kVec]) const {
    const float s = scale[row - row0];
    for (int i = 0; i < kVec; ++i) {
      const uint32_t w = i < 4 ? v.x : v.y;
      x[i] = nm::bf16_to_f32(nm::wire_dequantize(uint8_t(w >> (8 * (i % 4))), s, false));
    }
  }
};

// Grid (column blocks, chunks of the row list): per chunk and column, the sums over the chunk's `len` listed rows
// (col_part[chunk * n + col], sequential over rows); per listed row and column block, the row sums (blk[i * nb +
// b] for the i-th listed row: per thread its 8 columns in order, a fixed shuffle tree per warp, the warps in
// order). `rows` maps list positions to the loader's rows (reference/guard_sample.hpp; the identity when every row
// is read).
template <typename Loader>
__global__ void __launch_bounds__(kSumThreads)
    guard_sums_kernel(Loader ld, const int64_t* rows, int len, int64_t n, int nb, float* col_part, float* col_part_abs,
                      float* blk, float* blk_abs) {
  __shared__ float red[kSumWarps][kRowChunk];
  __shared__ float red_abs[kSumWarps][kRowChunk];
  const int b = blockIdx.x;
  const int64_t chunk = blockIdx.y;
  const int t = threadIdx.x;
  const int64_t col = int64_t(b) * kColBlock + kVec * t;
  const bool live = col < n;  // n is a multiple of kVec: a thread's columns are all live or none
  const int64_t* chunk_rows = rows + chunk * len;
  float c[kVec] = {}, a[kVec] = {};
  for (int i0 = 0; i0 < len; i0 += kRowBatch) {
    typename Loader::Raw raw[kRowBatch] = {};
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j)
      if (live && i0 + j < len) raw[j] = ld.fetch(chunk_rows[i0 + j], col);
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j) {
      if (i0 + j >= len) break;
      float x[kVec] = {};
      if (live) ld.widen(chunk_rows[i0 + j], raw[j], x);
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
  for (int i = t; i < len; i += kSumThreads) {
    float s = 0, sa = 0;
    for (int w = 0; w < kSumWarps; ++w) {
      s = nm::add_rn(s, red[w][i]);
      sa = nm::add_rn(sa, red_abs[w][i]);
    }
    const int64_t pos = chunk * len + i;
    blk[pos * nb + b] = s;
    blk_abs[pos * nb + b] = sa;
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

// Per listed row: the row blocks summed in order (the output's row sums).
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
// The sum of the wire's row scales over the owner's listed rows (slice-relative: rows[i] - row0). One warp: lane
// l sums the listed rows l, l + 32, ... in order, then a fixed shuffle tree. The scale sum only enters B_wire,
// never a bitwise comparison; the order is fixed all the same.
__global__ void guard_scale_sum_kernel(const float* scale, const int64_t* rows, int64_t count, int64_t row0,
                                       float* out) {
  float v = 0;
  for (int64_t i = threadIdx.x; i < count; i += GEMMAR_WARP_SIZE) v = nm::add_rn(v, scale[rows[i] - row0]);
  v = warp_sum(v);
  if (threadIdx.x == 0) *out = v;
}

// The call's rows (reference/guard_sample.hpp): one per stratum of `stride` rows, from (seed, call); the call
// counter lives on the device and advances once per launch, so every graph replay reads other rows with no host
// step between replays. Every rank keeps its own counter and draws from the same seed, so the ranks read the same
// rows in the same call.
__global__ void guard_pick_rows_kernel(uint64_t seed, int64_t stride, int64_t count, unsigned long long* call,
                                       int64_t* rows) {
  const uint64_t c = *call;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) rows[i] = guard_sample::row(seed, c, i, stride);
  __syncthreads();
  if (threadIdx.x == 0) *call = c + 1;
}

// The GEMM check over the listed rows: pred[i * nb + b] = sum_k A_deq[rows[i], k] * bsum[b * K + k] (and |A_deq| .
// babs). A block takes kPredRows listed rows and up to kPredBlocks column blocks; each thread 8 consecutive k
// (one 8-byte load of codes, all under one A scale: a_scale_k is 32, 128 or K) per step, every checksum value it
// loads serving the block's rows; then a fixed shuffle tree and the warps in order. A's scale: one per (row,
// a_scale_k columns of K), at kb * m + row (a_scale_k_major: blockscale's [K/128, M]) or row * (K / a_scale_k) + kb
// (ptpc: a_scale_k = K; mxfp8: 32). The order of the K terms is free under B_gemm's gamma(K + 1).
// The kernel before it (one thread per row over all K, A staged through shared memory) ran 724-726 us over every
// row at M = 16384 on 8 ranks of one H200 (2026-12-04); with one row in 32 it would have had 4 blocks per rank.
constexpr int kPredThreads = 256, kPredRows = 4, kPredBlocks = 8, kPredKVec = 8;
constexpr int kPredWarps = kPredThreads / GEMMAR_WARP_SIZE;
__global__ void __launch_bounds__(kPredThreads)
    guard_gemm_pred_kernel(const uint8_t* a, const float* a_scale, int64_t a_scale_k, bool a_scale_k_major,
                           bool fnuz_half, const float* bsum, const float* babs, const int64_t* rows, int64_t count,
                           int64_t m, int64_t k, int nb, float* pred, float* pred_abs) {
  __shared__ float red[kPredWarps][kPredRows][kPredBlocks][2];
  const int t = threadIdx.x;
  const int64_t i0 = int64_t(blockIdx.x) * kPredRows;
  const int b0 = int(blockIdx.y) * kPredBlocks;
  const int live_blocks = nb - b0 < kPredBlocks ? nb - b0 : kPredBlocks;
  float s[kPredRows][kPredBlocks] = {}, sab[kPredRows][kPredBlocks] = {};
  for (int64_t kc = int64_t(t) * kPredKVec; kc < k; kc += int64_t(kPredThreads) * kPredKVec) {
    float av[kPredRows][kPredKVec];
#pragma unroll
    for (int r = 0; r < kPredRows; ++r) {
      if (i0 + r >= count) {
        for (int e = 0; e < kPredKVec; ++e) av[r][e] = 0.0f;
        continue;
      }
      const int64_t row = rows[i0 + r];
      const uint2 w = *reinterpret_cast<const uint2*>(a + row * k + kc);
      const int64_t kb = kc / a_scale_k;
      const float sc = a_scale[a_scale_k_major ? kb * m + row : row * (k / a_scale_k) + kb];
#pragma unroll
      for (int e = 0; e < kPredKVec; ++e) {
        // gfx942: the stored fnuz code reads as half the fn value it encodes; times 2 is exact.
        float v = nm::dequantize_operand(uint8_t((e < 4 ? w.x : w.y) >> (8 * (e % 4))), sc, fnuz_half);
        if (fnuz_half) v = nm::mul_rn(v, 2.0f);
        av[r][e] = v;
      }
    }
#pragma unroll
    for (int bl = 0; bl < kPredBlocks; ++bl) {
      if (bl >= live_blocks) break;  // uniform
      const float4* bp = reinterpret_cast<const float4*>(bsum + int64_t(b0 + bl) * k + kc);
      const float4* ap = reinterpret_cast<const float4*>(babs + int64_t(b0 + bl) * k + kc);
      const float4 b_lo = bp[0], b_hi = bp[1], a_lo = ap[0], a_hi = ap[1];
      const float bv[kPredKVec] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
      const float bav[kPredKVec] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
#pragma unroll
      for (int r = 0; r < kPredRows; ++r)
#pragma unroll
        for (int e = 0; e < kPredKVec; ++e) {
          s[r][bl] = fmaf(av[r][e], bv[e], s[r][bl]);
          sab[r][bl] = fmaf(nm::abs_f32(av[r][e]), bav[e], sab[r][bl]);
        }
    }
  }
  const int warp = t / GEMMAR_WARP_SIZE, lane = t % GEMMAR_WARP_SIZE;
#pragma unroll
  for (int r = 0; r < kPredRows; ++r)
#pragma unroll
    for (int bl = 0; bl < kPredBlocks; ++bl) {
      if (bl >= live_blocks) break;
      const float v = warp_sum(s[r][bl]), va = warp_sum(sab[r][bl]);
      if (lane == 0) {
        red[warp][r][bl][0] = v;
        red[warp][r][bl][1] = va;
      }
    }
  __syncthreads();
  if (t < kPredRows * kPredBlocks) {
    const int r = t / kPredBlocks, bl = t % kPredBlocks;
    if (bl < live_blocks && i0 + r < count) {
      float v = 0, va = 0;
      for (int w = 0; w < kPredWarps; ++w) {
        v = nm::add_rn(v, red[w][r][bl][0]);
        va = nm::add_rn(va, red[w][r][bl][1]);
      }
      pred[(i0 + r) * nb + b0 + bl] = v;
      pred_abs[(i0 + r) * nb + b0 + bl] = va;
    }
  }
}

}  // namespace

struct DeviceGuard::Impl {
  struct Rank {
    int dev = 0;
    float *part = nullptr, *part_abs = nullptr;                                        // [L / len][n] scratch
    float *pcol = nullptr, *pcol_abs = nullptr, *ocol = nullptr, *ocol_abs = nullptr;  // [W][n]
    float *pblk = nullptr, *pblk_abs = nullptr, *oblk = nullptr, *oblk_abs = nullptr;  // [L][nb]
    float *orow = nullptr, *orow_abs = nullptr;                                        // [L]
    float *wcol = nullptr, *wcol_abs = nullptr, *wscale = nullptr;                     // [n], [n], [1]
    float *pred = nullptr, *pred_abs = nullptr;                                        // [L][nb]
    float *bsum = nullptr, *babs = nullptr;                                            // [nb][k]
    int64_t* rows = nullptr;                                                           // [L] the call's rows
    unsigned long long* call = nullptr;                                                // calls so far
    bool has_weights = false;
    std::vector<void*> all() const {
      return {part,     part_abs, pcol,     pcol_abs, ocol, ocol_abs, pblk, pblk_abs, oblk, oblk_abs, orow,
              orow_abs, wcol,     wcol_abs, wscale,   pred, pred_abs, bsum, babs,     rows, call};
    }
  };
  int W;
  int64_t M, N, K, S;
  int nb;
  bool fp8;
  GuardPasses passes;
  int64_t stride;  // one row of every `stride` read per call
  uint64_t seed;
  int64_t L, Ls;  // rows read per call, per slice
  int len;        // listed rows per chunk of the sums (divides Ls)
  std::vector<Rank> ranks;
};

DeviceGuard::DeviceGuard(int world, int64_t m, int64_t n, int64_t k, bool fp8_wire, const std::vector<int>& rank_device,
                         int64_t stride, uint64_t seed, GuardPasses passes)
    : impl_(std::make_unique<Impl>()) {
  Impl& g = *impl_;
  GEMMAR_USAGE_CHECK(world >= 1 && world <= kGuardMaxWorld && m % (int64_t(world) * kRowChunk) == 0 && n % kVec == 0 &&
                         k % 128 == 0 && int(rank_device.size()) == world,
                     "--guard: the device guard needs M a multiple of world*128, N of 8, K of 128");
  GEMMAR_USAGE_CHECK(guard_sample::valid_stride(stride), "--guard-sample: must divide 128, got ", stride);
  g.W = world;
  g.M = m;
  g.N = n;
  g.K = k;
  g.S = m / world;
  g.nb = int(reference::guard_column_blocks(n));
  g.fp8 = fp8_wire;
  g.passes = passes;
  g.stride = stride;
  g.seed = seed;
  g.L = m / stride;
  g.Ls = g.S / stride;
  // Every row: 128-row chunks, as many blocks as the data wants. A sample: short chunks (at most 16 rows, 4
  // batches of loads in flight per thread), so its few rows still spread over the device.
  g.len = int(std::gcd(g.Ls, int64_t(stride == 1 ? kRowChunk : 16)));
  std::vector<int64_t> identity(static_cast<size_t>(g.L));
  std::iota(identity.begin(), identity.end(), int64_t(0));
  g.ranks.resize(size_t(world));
  for (int r = 0; r < world; ++r) {
    Impl::Rank& rk = g.ranks[size_t(r)];
    rk.dev = rank_device[size_t(r)];
    GPU_CHECK(gpuSetDevice(rk.dev));
    const int64_t chunks = g.L / g.len;
    rk.part = dalloc<float>(chunks * n);
    rk.part_abs = dalloc<float>(chunks * n);
    for (float** p : {&rk.pcol, &rk.pcol_abs, &rk.ocol, &rk.ocol_abs}) *p = dalloc<float>(int64_t(world) * n);
    for (float** p : {&rk.pblk, &rk.pblk_abs, &rk.oblk, &rk.oblk_abs, &rk.pred, &rk.pred_abs})
      *p = dalloc<float>(g.L * g.nb);
    rk.orow = dalloc<float>(g.L);
    rk.orow_abs = dalloc<float>(g.L);
    rk.wcol = dalloc<float>(n);
    rk.wcol_abs = dalloc<float>(n);
    rk.wscale = dalloc<float>(1);
    rk.bsum = dalloc<float>(int64_t(g.nb) * k);
    rk.babs = dalloc<float>(int64_t(g.nb) * k);
    rk.rows = dalloc<int64_t>(g.L);
    rk.call = dalloc<unsigned long long>(1);
    GPU_CHECK(gpuMemcpy(rk.rows, identity.data(), identity.size() * sizeof(int64_t), gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemset(rk.call, 0, sizeof(unsigned long long)));
  }
}

DeviceGuard::~DeviceGuard() {
  for (const auto& rk : impl_->ranks) {
    (void)gpuSetDevice(rk.dev);
    for (void* p : rk.all())
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
  const int fin_grid = 1024;
  const int64_t chunks_per_slice = g.Ls / g.len;
  if (g.stride > 1) guard_pick_rows_kernel<<<1, 256, 0, s>>>(g.seed, g.stride, g.L, rk.call, rk.rows);
  const dim3 grid(unsigned(g.nb), unsigned(g.L / g.len));
  // The partial: column sums per slice, row-block sums.
  if (g.passes.partial) {
    Bf16Loader pl{{}, g.S, g.N};
    for (int p = 0; p < g.W; ++p) pl.src.slice[p] = v.partial_slice[p];
    guard_sums_kernel<<<grid, kSumThreads, 0, s>>>(pl, rk.rows, g.len, g.N, g.nb, rk.part, rk.part_abs, rk.pblk,
                                                   rk.pblk_abs);
    guard_finish_cols_kernel<<<fin_grid, 256, 0, s>>>(rk.part, rk.part_abs, chunks_per_slice, g.W, g.N, rk.pcol,
                                                      rk.pcol_abs);
  }
  if (g.passes.output) {  // the output, as one source over all rows
    Bf16Loader ol{{}, g.M, g.N};
    ol.src.slice[0] = v.output;
    guard_sums_kernel<<<grid, kSumThreads, 0, s>>>(ol, rk.rows, g.len, g.N, g.nb, rk.part, rk.part_abs, rk.oblk,
                                                   rk.oblk_abs);
    guard_finish_cols_kernel<<<fin_grid, 256, 0, s>>>(rk.part, rk.part_abs, chunks_per_slice, g.W, g.N, rk.ocol,
                                                      rk.ocol_abs);
    guard_finish_rows_kernel<<<fin_grid, 256, 0, s>>>(rk.oblk, rk.oblk_abs, g.L, g.nb, rk.orow, rk.orow_abs);
  }
  if (g.fp8 && v.wire && g.passes.wire) {  // the owner's slice as the wire carries it: its own listed rows
    const int64_t* own_rows = rk.rows + rank * g.Ls;
    WireLoader wl{v.wire, v.wire_scale, rank * g.S, g.N};
    guard_sums_kernel<<<dim3(unsigned(g.nb), unsigned(chunks_per_slice)), kSumThreads, 0, s>>>(
        wl, own_rows, g.len, g.N, g.nb, rk.part, rk.part_abs, nullptr, nullptr);
    guard_finish_cols_kernel<<<fin_grid, 256, 0, s>>>(rk.part, rk.part_abs, chunks_per_slice, 1, g.N, rk.wcol,
                                                      rk.wcol_abs);
    guard_scale_sum_kernel<<<1, GEMMAR_WARP_SIZE, 0, s>>>(v.wire_scale, own_rows, g.Ls, rank * g.S, rk.wscale);
  }
  if (rk.has_weights && v.a && g.passes.gemm) {
    const dim3 pg(unsigned((g.L + kPredRows - 1) / kPredRows), unsigned((g.nb + kPredBlocks - 1) / kPredBlocks));
    guard_gemm_pred_kernel<<<pg, kPredThreads, 0, s>>>(v.a, v.a_scale, v.a_scale_k, v.a_scale_k_major, v.a_fnuz_half,
                                                       rk.bsum, rk.babs, rk.rows, g.L, g.M, g.K, g.nb, rk.pred,
                                                       rk.pred_abs);
  }
  GPU_CHECK(gpuGetLastError());
}

reference::GuardCall DeviceGuard::read() const {
  const Impl& g = *impl_;
  reference::GuardCall call;
  call.sums.resize(size_t(g.W));
  auto get = [](auto& dst, const auto* src, int64_t count) {
    dst.resize(size_t(count));
    GPU_CHECK(gpuMemcpy(dst.data(), src, size_t(count) * sizeof(*src), gpuMemcpyDeviceToHost));
  };
  for (int r = 0; r < g.W; ++r) {
    const Impl::Rank& rk = g.ranks[size_t(r)];
    reference::GuardSums& s = call.sums[size_t(r)];
    GPU_CHECK(gpuSetDevice(rk.dev));
    std::vector<int64_t> rows;
    get(rows, rk.rows, g.L);
    // Every rank drew from the same seed and call count: a rank that read other rows is a broken guard, not a
    // finding about the op.
    if (r == 0)
      call.rows = std::move(rows);
    else
      GEMMAR_CHECK(rows == call.rows, "guard: rank ", r, " read other rows than rank 0 in the same call");
    get(s.partial_col, rk.pcol, g.W * g.N);
    get(s.partial_col_abs, rk.pcol_abs, g.W * g.N);
    get(s.out_col, rk.ocol, g.W * g.N);
    get(s.out_col_abs, rk.ocol_abs, g.W * g.N);
    get(s.partial_blk, rk.pblk, g.L * g.nb);
    get(s.partial_blk_abs, rk.pblk_abs, g.L * g.nb);
    get(s.out_row, rk.orow, g.L);
    get(s.out_row_abs, rk.orow_abs, g.L);
    if (rk.has_weights) {
      get(s.gemm_pred, rk.pred, g.L * g.nb);
      get(s.gemm_pred_abs, rk.pred_abs, g.L * g.nb);
    }
    if (g.fp8) {
      get(s.wire_col, rk.wcol, g.N);
      std::vector<float> one;
      get(one, rk.wscale, 1);
      s.wire_scale_sum = one[0];
    }
  }
  return call;
}

}  // namespace gemmar::kernels
