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
// Listed rows per block when sampling: 32 rather than 16 gives fewer blocks, so fewer arrivals, fences and finishes
// per byte (138-146 us against 156-170 us of guard phase: docs/results/h100-1gpu-2026-12-05-guard2).
constexpr int kSampledChunk = 32;
// Rows loaded before any is summed (loads in flight). 4 rather than 8: at the 64 registers of 8 blocks per SM, 8
// spilled and was slower (docs/results/h100-1gpu-2026-12-05-guard2/call6-variants).
constexpr int kRowBatch = 4;
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
  const uint16_t* base;  // row row0 of the rows this block reads (a chunk never crosses a slice)
  int64_t row0, n;
  using Raw = uint4;
  __device__ Raw fetch(int64_t row, int64_t col) const {
    return *reinterpret_cast<const uint4*>(base + (row - row0) * n + col);
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

// One call of the guard on one rank is one launch: ten launches per rank, each waiting for the one before, had
// cost about half of the phase (docs/results/h100-1gpu-2026-12-05-guard). The blocks of every pass share one grid
// and every block derives its listed rows itself (reference/guard_sample.hpp, from the seed and the call count);
// a reduction across blocks (a slice's chunks per column, a listed row's column blocks, the wire's chunks) is done
// by the last block to finish its share, found by an arrival counter that the same block resets. The reductions
// run in the same fixed order whichever block arrives last, so equal data still gives equal bits on every rank.
constexpr int kGuardThreads = kSumThreads;
constexpr int kGuardWarps = kGuardThreads / GEMMAR_WARP_SIZE;
// The GEMM check per block: listed rows (one per warp), column blocks, k per lane and step
constexpr int kPredRows = kGuardWarps, kPredBlocks = 8, kPredKVec = 8;

// One rank's device buffers of the guard, allocated once per run: what guard_call_kernel writes (per call: the
// results the host reads, the scratch of the cross-block sums, the arrival counters and the call count) and the
// weights' checksum it reads.
struct GuardBuffers {
  float *ppart, *ppart_abs, *opart, *opart_abs;  // [L / len][n]: per chunk and column, scratch
  float *wpart, *wpart_abs;                      // [Ls / len][n]: the wire's, scratch
  float *pcol, *pcol_abs, *ocol, *ocol_abs;      // [W][n]
  float *pblk, *pblk_abs, *oblk, *oblk_abs;      // [L][nb]
  float *orow, *orow_abs;                        // [L]
  float *wcol, *wcol_abs, *wscale;               // [n], [n], [1]
  float *pred, *pred_abs;                        // [L][nb]
  float *bsum, *babs;                            // [nb][k]: the weights' checksum
  int64_t* rows;                                 // [L]: the call's rows, for the host
  unsigned* arrivals;  // [W nb] partial columns, [W nb] output columns, [L / len] output rows, [nb] wire, [1] call
  unsigned long long* call;  // calls so far: the draw's call number
};

struct GuardCallArgs {
  SliceSources partial;     // this rank's bf16 partial of slice p, row 0 of the slice
  const uint16_t* output;   // [m, n]
  const uint8_t* wire;      // [S, n]: its own slice's fp8 codes
  const float* wire_scale;  // [S]
  const uint8_t* a;         // [m, k]
  const float* a_scale;     // GuardRankView's layout
  int64_t a_scale_k;
  int a_scale_k_major, fnuz_half;
  int world, rank, nb, len;  // len: listed rows per chunk (divides Ls)
  int64_t m, n, k, S, L, Ls, stride;
  uint64_t seed;
  int pred_blocks, partial_blocks, output_blocks, wire_blocks;  // in grid order; 0: the pass is off
  int pred_row_groups;                                          // ceil(L / kPredRows)
  GuardBuffers buf;
};

__device__ __forceinline__ float load_fresh(const float* p) { return *reinterpret_cast<const volatile float*>(p); }

// Every thread of the block calls it after writing its share: true in the block that arrives last of `expected`
// (which then sees every other block's writes, when `publish`, and resets the counter for the next call).
__device__ bool arrive_last(unsigned* counter, unsigned expected, bool publish = true) {
  __shared__ int last;
  if (publish) __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1u) == expected - 1;
    if (last) atomicExch(counter, 0u);
  }
  __syncthreads();
  if (last && publish) __threadfence();
  return last != 0;
}

// Per chunk of `len` listed rows (row numbers in `rows`, shared memory) and column block b: the column sums over
// the chunk (col_part[col], sequential over rows) and, when blk is set, per listed row the block's row sum
// (blk[i * nb]: per thread its 8 columns in order, a fixed shuffle tree per warp, the warps in order).
template <typename Loader>
__device__ void sum_chunk(const Loader& ld, const int64_t* rows, int len, int b, int64_t n, int nb, float* col_part,
                          float* col_part_abs, float* blk, float* blk_abs) {
  __shared__ float red[kSumWarps][kRowChunk];
  __shared__ float red_abs[kSumWarps][kRowChunk];
  const int t = threadIdx.x;
  const int64_t col = int64_t(b) * kColBlock + kVec * t;
  const bool live = col < n;  // n is a multiple of kVec: a thread's columns are all live or none
  float c[kVec] = {}, a[kVec] = {};
  for (int i0 = 0; i0 < len; i0 += kRowBatch) {
    typename Loader::Raw raw[kRowBatch] = {};
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j)
      if (live && i0 + j < len) raw[j] = ld.fetch(rows[i0 + j], col);
#pragma unroll
    for (int j = 0; j < kRowBatch; ++j) {
      if (i0 + j >= len) break;
      float x[kVec] = {};
      if (live) ld.widen(rows[i0 + j], raw[j], x);
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
      col_part[col + e] = c[e];
      col_part_abs[col + e] = a[e];
    }
  }
  if (!blk) return;
  __syncthreads();
  for (int i = t; i < len; i += kGuardThreads) {
    float s = 0, sa = 0;
    for (int w = 0; w < kSumWarps; ++w) {
      s = nm::add_rn(s, red[w][i]);
      sa = nm::add_rn(sa, red_abs[w][i]);
    }
    blk[int64_t(i) * nb] = s;
    blk_abs[int64_t(i) * nb] = sa;
  }
}

// Column block b of one slice: its `chunks` chunk sums (part[c * n + col]) added in order.
__device__ void finish_columns(const float* part, const float* part_abs, int64_t chunks, int b, int64_t n, float* col,
                               float* col_abs) {
  const int64_t c0 = int64_t(b) * kColBlock + kVec * threadIdx.x;
  if (c0 >= n) return;
  for (int e = 0; e < kVec; ++e) {
    float v = 0, a = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      v = nm::add_rn(v, load_fresh(part + c * n + c0 + e));
      a = nm::add_rn(a, load_fresh(part_abs + c * n + c0 + e));
    }
    col[c0 + e] = v;
    col_abs[c0 + e] = a;
  }
}

// The GEMM check over listed rows i0 .. i0 + kPredRows - 1 (one warp each) and column blocks b0 .. b0 + 7:
// pred[i * nb + b] = sum_k A_deq[rows[i], k] * bsum[b * K + k] (and |A_deq| . babs). Lane l takes 8 consecutive
// k per step (one 8-byte load of codes, all under one A scale: a_scale_k is 32, 128 or K), the warp 256 contiguous
// bytes of the row; then a fixed shuffle tree. A's scale: one per (row, a_scale_k columns of K), at kb * m + row
// (a_scale_k_major: blockscale's [K/128, M]) or row * (K / a_scale_k) + kb (ptpc: a_scale_k = K; mxfp8: 32). The
// order of the K terms is free under B_gemm's gamma(K + 1). One row per warp keeps the kernel at 64 registers
// (4 rows per thread took it to 152, and the whole fused launch to 4 blocks per SM: the sums' share slowed ~1.5x).
__device__ void gemm_check(const GuardCallArgs& g, const int64_t* rows, int64_t i0, int b0) {
  const int warp = int(threadIdx.x) / GEMMAR_WARP_SIZE, lane = int(threadIdx.x) % GEMMAR_WARP_SIZE;
  const int64_t i = i0 + warp;
  if (i >= g.L) return;  // warp-uniform, and nothing below waits for the block
  const int live_blocks = g.nb - b0 < kPredBlocks ? g.nb - b0 : kPredBlocks;
  const int64_t row = rows[warp];
  float s[kPredBlocks] = {}, sab[kPredBlocks] = {};
  for (int64_t kc = int64_t(lane) * kPredKVec; kc < g.k; kc += int64_t(GEMMAR_WARP_SIZE) * kPredKVec) {
    const uint2 w = *reinterpret_cast<const uint2*>(g.a + row * g.k + kc);
    const int64_t kb = kc / g.a_scale_k;
    const float sc = g.a_scale[g.a_scale_k_major ? kb * g.m + row : row * (g.k / g.a_scale_k) + kb];
    float av[kPredKVec];
#pragma unroll
    for (int e = 0; e < kPredKVec; ++e) {
      // gfx942: the stored fnuz code reads as half the fn value it encodes; times 2 is exact.
      float v = nm::dequantize_operand(uint8_t((e < 4 ? w.x : w.y) >> (8 * (e % 4))), sc, g.fnuz_half != 0);
      if (g.fnuz_half) v = nm::mul_rn(v, 2.0f);
      av[e] = v;
    }
#pragma unroll
    for (int bl = 0; bl < kPredBlocks; ++bl) {
      if (bl >= live_blocks) break;  // uniform
      const float4* bp = reinterpret_cast<const float4*>(g.buf.bsum + int64_t(b0 + bl) * g.k + kc);
      const float4* ap = reinterpret_cast<const float4*>(g.buf.babs + int64_t(b0 + bl) * g.k + kc);
      const float4 b_lo = bp[0], b_hi = bp[1], a_lo = ap[0], a_hi = ap[1];
      const float bv[kPredKVec] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
      const float bav[kPredKVec] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
#pragma unroll
      for (int e = 0; e < kPredKVec; ++e) {
        s[bl] = fmaf(av[e], bv[e], s[bl]);
        sab[bl] = fmaf(nm::abs_f32(av[e]), bav[e], sab[bl]);
      }
    }
  }
#pragma unroll
  for (int bl = 0; bl < kPredBlocks; ++bl) {
    const float v = warp_sum(s[bl]), va = warp_sum(sab[bl]);
    if (lane == 0 && bl < live_blocks) {
      g.buf.pred[i * g.nb + b0 + bl] = v;
      g.buf.pred_abs[i * g.nb + b0 + bl] = va;
    }
  }
}

// The grid: the GEMM check's blocks first (the longest per block), then the partial's, the output's and the
// wire's sums, each (chunk, column block) with the column block fastest.
__global__ void __launch_bounds__(kGuardThreads, 8) guard_call_kernel(GuardCallArgs g) {
  __shared__ int64_t rows[kRowChunk];
  const int t = threadIdx.x;
  const uint64_t call = *reinterpret_cast<const volatile unsigned long long*>(g.buf.call);
  auto list_row = [&](int64_t pos) {
    return g.stride == 1 ? pos : gemmar::guard_sample::row(g.seed, call, pos, g.stride);
  };
  const int64_t chunks = g.L / g.len, chunks_per_slice = g.Ls / g.len;
  unsigned* const col_arrivals_partial = g.buf.arrivals;
  unsigned* const col_arrivals_output = col_arrivals_partial + g.world * g.nb;
  unsigned* const row_arrivals = col_arrivals_output + g.world * g.nb;
  unsigned* const wire_arrivals = row_arrivals + chunks;
  unsigned* const call_arrivals = wire_arrivals + g.nb;
  int blk = int(blockIdx.x);
  if (blk < g.pred_blocks) {
    const int64_t i0 = int64_t(blk % g.pred_row_groups) * kPredRows;
    const int b0 = (blk / g.pred_row_groups) * kPredBlocks;
    if (t < kPredRows && i0 + t < g.L) {
      rows[t] = list_row(i0 + t);
      if (b0 == 0) g.buf.rows[i0 + t] = rows[t];
    }
    __syncthreads();
    gemm_check(g, rows, i0, b0);
  } else if ((blk -= g.pred_blocks) < g.partial_blocks + g.output_blocks) {
    const bool out = blk >= g.partial_blocks;
    if (out) blk -= g.partial_blocks;
    const int64_t chunk = blk / g.nb;
    const int b = blk % g.nb;
    for (int i = t; i < g.len; i += kGuardThreads) {
      rows[i] = list_row(chunk * g.len + i);
      if (b == 0) g.buf.rows[chunk * g.len + i] = rows[i];
    }
    __syncthreads();
    const int64_t slice = chunk / chunks_per_slice;
    const Bf16Loader ld = out ? Bf16Loader{g.output, 0, g.n} : Bf16Loader{g.partial.slice[slice], slice * g.S, g.n};
    float* part = out ? g.buf.opart : g.buf.ppart;
    float* part_abs = out ? g.buf.opart_abs : g.buf.ppart_abs;
    float* blks = out ? g.buf.oblk : g.buf.pblk;
    float* blks_abs = out ? g.buf.oblk_abs : g.buf.pblk_abs;
    const int64_t first = chunk * g.len;  // the chunk's first list position
    sum_chunk(ld, rows, g.len, b, g.n, g.nb, part + chunk * g.n, part_abs + chunk * g.n, blks + first * g.nb + b,
              blks_abs + first * g.nb + b);
    if (arrive_last((out ? col_arrivals_output : col_arrivals_partial) + slice * g.nb + b, unsigned(chunks_per_slice)))
      finish_columns(part + slice * chunks_per_slice * g.n, part_abs + slice * chunks_per_slice * g.n, chunks_per_slice,
                     b, g.n, (out ? g.buf.ocol : g.buf.pcol) + slice * g.n,
                     (out ? g.buf.ocol_abs : g.buf.pcol_abs) + slice * g.n);
    if (out && arrive_last(row_arrivals + chunk, unsigned(g.nb)))  // the listed rows' sums over the column blocks
      for (int i = t; i < g.len; i += kGuardThreads) {
        float v = 0, a = 0;
        for (int c = 0; c < g.nb; ++c) {
          v = nm::add_rn(v, load_fresh(g.buf.oblk + (first + i) * g.nb + c));
          a = nm::add_rn(a, load_fresh(g.buf.oblk_abs + (first + i) * g.nb + c));
        }
        g.buf.orow[first + i] = v;
        g.buf.orow_abs[first + i] = a;
      }
  } else {  // the owner's slice as the wire carries it: its own listed rows
    blk -= g.partial_blocks + g.output_blocks;
    const int64_t chunk = blk / g.nb;
    const int b = blk % g.nb;
    const int64_t own = int64_t(g.rank) * g.Ls;  // the rank's first list position
    for (int i = t; i < g.len; i += kGuardThreads) rows[i] = list_row(own + chunk * g.len + i);
    __syncthreads();
    const WireLoader ld{g.wire, g.wire_scale, g.rank * g.S, g.n};
    sum_chunk(ld, rows, g.len, b, g.n, g.nb, g.buf.wpart + chunk * g.n, g.buf.wpart_abs + chunk * g.n, nullptr,
              nullptr);
    if (arrive_last(wire_arrivals + b, unsigned(chunks_per_slice)))
      finish_columns(g.buf.wpart, g.buf.wpart_abs, chunks_per_slice, b, g.n, g.buf.wcol, g.buf.wcol_abs);
    // The sum of the row scales over the owner's listed rows: one warp, lane l the listed rows l, l + 32, ... in
    // order, then a fixed shuffle tree. It only enters B_wire, never a bitwise comparison; the order is fixed
    // all the same.
    if (blk == 0 && t < GEMMAR_WARP_SIZE) {
      float v = 0;
      for (int64_t i = t; i < g.Ls; i += GEMMAR_WARP_SIZE)
        v = nm::add_rn(v, g.wire_scale[list_row(own + i) - g.rank * g.S]);
      v = warp_sum(v);
      if (t == 0) *g.buf.wscale = v;
    }
  }
  // The call count advances once per launch, after every block has read it (no data to publish: a block's read of
  // the count precedes its arrival): every graph replay reads other rows with no host step between replays. Every
  // rank keeps its own count and draws from the same seed, so the ranks read the same rows in the same call.
  if (arrive_last(call_arrivals, gridDim.x, false) && t == 0) *g.buf.call = call + 1;
}

}  // namespace

struct DeviceGuard::Impl {
  struct Rank {
    int dev = 0;
    GuardBuffers buf{};
    bool has_weights = false;
    std::vector<void*> all() const {
      const GuardBuffers& b = buf;
      return {b.ppart,    b.ppart_abs, b.opart,    b.opart_abs, b.wpart,    b.wpart_abs, b.pcol,
              b.pcol_abs, b.ocol,      b.ocol_abs, b.pblk,      b.pblk_abs, b.oblk,      b.oblk_abs,
              b.orow,     b.orow_abs,  b.wcol,     b.wcol_abs,  b.wscale,   b.pred,      b.pred_abs,
              b.bsum,     b.babs,      b.rows,     b.arrivals,  b.call};
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
  int64_t arrival_count;
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
  // Every row: 128-row chunks, as many blocks as the data wants. A sample: shorter chunks, so its few rows still
  // spread over the device.
  g.len = int(std::gcd(g.Ls, int64_t(stride == 1 ? kRowChunk : kSampledChunk)));
  const int64_t chunks = g.L / g.len, wire_chunks = g.Ls / g.len;
  g.arrival_count = 2 * int64_t(world) * g.nb + chunks + g.nb + 1;
  g.ranks.resize(size_t(world));
  for (int r = 0; r < world; ++r) {
    Impl::Rank& rk = g.ranks[size_t(r)];
    rk.dev = rank_device[size_t(r)];
    GPU_CHECK(gpuSetDevice(rk.dev));
    for (float** p : {&rk.buf.ppart, &rk.buf.ppart_abs, &rk.buf.opart, &rk.buf.opart_abs})
      *p = dalloc<float>(chunks * n);
    for (float** p : {&rk.buf.wpart, &rk.buf.wpart_abs}) *p = dalloc<float>(wire_chunks * n);
    for (float** p : {&rk.buf.pcol, &rk.buf.pcol_abs, &rk.buf.ocol, &rk.buf.ocol_abs})
      *p = dalloc<float>(int64_t(world) * n);
    for (float** p : {&rk.buf.pblk, &rk.buf.pblk_abs, &rk.buf.oblk, &rk.buf.oblk_abs, &rk.buf.pred, &rk.buf.pred_abs})
      *p = dalloc<float>(g.L * g.nb);
    rk.buf.orow = dalloc<float>(g.L);
    rk.buf.orow_abs = dalloc<float>(g.L);
    rk.buf.wcol = dalloc<float>(n);
    rk.buf.wcol_abs = dalloc<float>(n);
    rk.buf.wscale = dalloc<float>(1);
    rk.buf.bsum = dalloc<float>(int64_t(g.nb) * k);
    rk.buf.babs = dalloc<float>(int64_t(g.nb) * k);
    rk.buf.rows = dalloc<int64_t>(g.L);
    rk.buf.arrivals = dalloc<unsigned>(g.arrival_count);
    rk.buf.call = dalloc<unsigned long long>(1);
    GPU_CHECK(gpuMemset(rk.buf.arrivals, 0, size_t(g.arrival_count) * sizeof(unsigned)));
    GPU_CHECK(gpuMemset(rk.buf.call, 0, sizeof(unsigned long long)));
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
  GPU_CHECK(gpuMemcpy(rk.buf.bsum, w.bsum.data(), w.bsum.size() * 4, gpuMemcpyHostToDevice));
  GPU_CHECK(gpuMemcpy(rk.buf.babs, w.babs.data(), w.babs.size() * 4, gpuMemcpyHostToDevice));
  rk.has_weights = true;
}

void DeviceGuard::enqueue(int rank, const GuardRankView& v, void* stream) {
  const Impl& g = *impl_;
  const Impl::Rank& rk = g.ranks.at(size_t(rank));
  GuardCallArgs a{};
  for (int p = 0; p < g.W; ++p) a.partial.slice[p] = v.partial_slice[p];
  a.output = v.output;
  a.wire = v.wire;
  a.wire_scale = v.wire_scale;
  a.a = v.a;
  a.a_scale = v.a_scale;
  a.a_scale_k = v.a_scale_k;
  a.a_scale_k_major = v.a_scale_k_major;
  a.fnuz_half = v.a_fnuz_half;
  a.buf = rk.buf;
  a.world = g.W;
  a.rank = rank;
  a.nb = g.nb;
  a.len = g.len;
  a.m = g.M;
  a.n = g.N;
  a.k = g.K;
  a.S = g.S;
  a.L = g.L;
  a.Ls = g.Ls;
  a.stride = g.stride;
  a.seed = g.seed;
  const int64_t chunks = g.L / g.len, wire_chunks = g.Ls / g.len;
  a.pred_row_groups = int((g.L + kPredRows - 1) / kPredRows);
  const bool gemm = rk.has_weights && v.a && g.passes.gemm;
  a.pred_blocks = gemm ? a.pred_row_groups * ((g.nb + kPredBlocks - 1) / kPredBlocks) : 0;
  a.partial_blocks = g.passes.partial ? int(chunks * g.nb) : 0;
  a.output_blocks = g.passes.output ? int(chunks * g.nb) : 0;
  a.wire_blocks = g.fp8 && v.wire && g.passes.wire ? int(wire_chunks * g.nb) : 0;
  const int64_t blocks = int64_t(a.pred_blocks) + a.partial_blocks + a.output_blocks + a.wire_blocks;
  GEMMAR_CHECK(blocks < (int64_t(1) << 31), "guard: ", blocks, " blocks in one launch");
  if (blocks == 0) return;
  guard_call_kernel<<<unsigned(blocks), kGuardThreads, 0, static_cast<gpuStream_t>(stream)>>>(a);
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
    get(rows, rk.buf.rows, g.L);
    // Every rank drew from the same seed and call count: a rank that read other rows is a broken guard, not a
    // finding about the op.
    if (r == 0)
      call.rows = std::move(rows);
    else
      GEMMAR_CHECK(rows == call.rows, "guard: rank ", r, " read other rows than rank 0 in the same call");
    get(s.partial_col, rk.buf.pcol, g.W * g.N);
    get(s.partial_col_abs, rk.buf.pcol_abs, g.W * g.N);
    get(s.out_col, rk.buf.ocol, g.W * g.N);
    get(s.out_col_abs, rk.buf.ocol_abs, g.W * g.N);
    get(s.partial_blk, rk.buf.pblk, g.L * g.nb);
    get(s.partial_blk_abs, rk.buf.pblk_abs, g.L * g.nb);
    get(s.out_row, rk.buf.orow, g.L);
    get(s.out_row_abs, rk.buf.orow_abs, g.L);
    if (rk.has_weights) {
      get(s.gemm_pred, rk.buf.pred, g.L * g.nb);
      get(s.gemm_pred_abs, rk.buf.pred_abs, g.L * g.nb);
    }
    if (g.fp8) {
      get(s.wire_col, rk.buf.wcol, g.N);
      std::vector<float> one;
      get(one, rk.buf.wscale, 1);
      s.wire_scale_sum = one[0];
    }
  }
  return call;
}

}  // namespace gemmar::kernels
