// Launchers of the op's device kernels (gemm/, collective/, convert/, faults/; check/ has its own headers), called
// by the pipeline's legs (kernels/pipeline/). Every launcher enqueues on the given stream and returns the launch
// status; nothing here synchronizes. Each concern's launcher runs that concern's winner: no variant is chosen here (the
// variants are the lab's, lab/).
#pragma once
#include <cstdint>

#include "common/modes.hpp"
#include "kernels/gpu_compat.hpp"

namespace gemmar::kernels::dev {

constexpr int kMaxWorld = 64;
constexpr int kBlockM = 128, kBlockN = 128, kBlockK = 128;  // blockscale: one scale block per K step

// Where each finished GEMM tile goes: rows of slice p land at dst[p] + (row - p*slice_rows) * ldd.
// dst[p] == nullptr drops slice p (a silent push). counters[p] counts finished tiles of slice p.
// A tile's rows go to the destination of its first row's slice: with slices that are not whole tiles (relaxed
// rows) the destinations must be consecutive slices of one buffer (dst[p] = base + p * slice_rows * ldd), so a
// tile straddling two slices stores each row where its own slice's destination has it.
struct GemmDest {
  uint16_t* dst[kMaxWorld];
  int64_t slice_rows;
  int64_t ldd;
  unsigned int* counters;  // [world], may be null: finished 128-row tiles per destination slice
  // The rows that are real (the run's M), 0: every slice is whole tiles. Otherwise (relaxed rows, mori's
  // --relaxed-rows: slice_rows a multiple of nothing but 1, the GEMM run over M rounded up to whole tiles) a tile
  // counts once for every slice its real rows reach, as mori's relaxed epilogue counts every owner a tile reaches
  // (kernels/pipeline/put_plan.hpp slice_counter_targets); its rows past `rows` are nobody's.
  int64_t rows = 0;
  // A consumer waits on the counters (fused-sdma's puts, gpu::stream_wait_geq): each count is then a release of
  // the tile's stores (a gpu-scope fence before it). Otherwise the counts only tally the tiles for the check after
  // the run (every tile produced) and gemm_wgmma4_kernel takes no fence for them.
  bool counters_release;
  // GEMMs running at once on this device (the one-device backend's ranks; gemmar_gpu_bench gemm-concurrent's W).
  // Several at once, the K = 2048 GEMM from 12288 rows runs in clusters of two CTAs along M sharing B, whose L2
  // traffic they halve; one alone runs without, as each rank of an 8-GPU node does (gemm/heuristics.hpp
  // share_b_along_m, with the measurements).
  int concurrent_gemms = 1;
};

// A GEMM's operands on the device: A [m, k] e4m3 row-major, B [n, k] e4m3 row-major, the fp32 scales in the
// quant's layout (common/modes.hpp's scale_block; blockscale: a_scale [k/128, m] column-major (m contiguous),
// b_scale [n/128, k/128] row-major).
struct GemmOperands {
  const uint8_t* a = nullptr;
  const uint8_t* b = nullptr;
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;
  int64_t m = 0, n = 0, k = 0;
  Quant quant = Quant::Blockscale;
};

// C tiles for rows [m_begin, m_end) of the operands' quant, by the quant's scale layout (gemm/heuristics.hpp:
// the sm_90a kernels on compute capability 9.x, the portable ones elsewhere; gemm/dispatch.cu); bf16 RNE of the
// fp32 result is stored.
gpuError_t launch_gemm(const GemmOperands& op, int64_t m_begin, int64_t m_end, const GemmDest& dest, gpuStream_t s);

struct SlotSet {
  const uint16_t* slot[kMaxWorld];  // slot[q]: peer q's bf16 partial of the owned slice, row 0
};
// out[row * n + c] (rows of the owned slice) = bf16(sum_j slot[(owner+j)%world][row*n + c]) in fp32.
// If q_out != nullptr the fp8 wire's narrowing is fused: also writes q_out/q_scale like launch_quantize.
gpuError_t launch_reduce(const SlotSet& slots, int owner, int world, int64_t rows, int64_t n, uint16_t* out,
                         uint8_t* q_out, float* q_scale, gpuStream_t s);

// Per row: amax over the bf16 row, scale = amax/448 (1 if zero), codes = e4m3fn RNE(x * 448/amax).
gpuError_t launch_quantize(const uint16_t* in, int64_t rows, int64_t n, uint8_t* q_out, float* q_scale, gpuStream_t s);

// mori's fp8 scatter (--scatter-dtype fp8; kernels/collective/scatter_fp8.cu): the sender narrows each row of
// its bf16 partial per 256 columns (numerics::scatter_scale, scatter_inv_scale, quantize_scaled): codes [rows, n],
// one fp32 scale per row and segment, [rows, n / 256]. n must be a multiple of 256.
gpuError_t launch_scatter_quantize(const uint16_t* in, int64_t rows, int64_t n, uint8_t* codes, float* scales,
                                   gpuStream_t s);
struct Fp8ScatterSlots {
  const uint8_t* q[kMaxWorld];    // q[p]: peer p's codes of the owned slice [rows, n] (the owner's own: its codes)
  const float* scale[kMaxWorld];  // [rows, n / 256]
};
// The reduce over fp8 slots: out = bf16(reduce_sum_f32 of scatter_widen(q[p], scale[p]) in peer order (owner + j)
// % world); q_out / q_scale as launch_reduce's (the fp8 gather's narrowing fused).
gpuError_t launch_reduce_fp8_scatter(const Fp8ScatterSlots& slots, int owner, int world, int64_t rows, int64_t n,
                                     uint16_t* out, uint8_t* q_out, float* q_scale, gpuStream_t s);

struct Fp8Sources {
  const uint8_t* q[kMaxWorld];  // [S, n] codes of source i
  const float* scale[kMaxWorld];
  uint16_t* out[kMaxWorld];  // destination rows (bf16) of source i
};
// Widens `count` fp8 slices of `rows` rows into bf16: out = bf16(decode(q) * scale), one warp per row at a time.
// blocks = 0: a grid that fills the device (256-thread blocks, up to 8 per SM); else `blocks` blocks of 1024
// threads (the pull's fixed grid). This is both the fp8/sdma dequantize (local sources) and the fp8/lsa pull
// (sources are peer pointers; blocks = --pull-blocks). A pull on part of the device stores through the TMA on
// compute capability 9.x (gemm/heuristics.hpp widen_stores_by_tma).
gpuError_t launch_widen(const Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks, gpuStream_t s);

struct Bf16Sources {
  const uint16_t* src[kMaxWorld];
  uint16_t* out[kMaxWorld];
};
// CU copy of `count` bf16 slices (split-lsa's second stage; sources are peer pointers).
gpuError_t launch_copy_slices(const Bf16Sources& src, int count, int64_t elems, int blocks, gpuStream_t s);

// The no-release fault (reference/no_release_pattern.hpp) applied to what one receiving rank's sdma gather
// landed: per owner i, the stale 64-byte lines of the hit bands are overwritten with the pre-reduce contents,
// so the landed data equals the CPU emulation's bit for bit. bf16 wire: landed[i] = the receiver's output rows
// of owner i's slice, pre[i] = owner i's local bf16 partial of that slice (the contents its output held before
// the reduce's stores). fp8 wire: landed[i] = the receiver's fp8 landing zone of owner i, stale codes become
// zero (pre unused; the row scales land intact).
struct NoReleaseSet {
  void* landed[kMaxWorld];
  const uint16_t* pre[kMaxWorld];
  int owner[kMaxWorld];
  uint32_t band_mask[kMaxWorld];  // no_release::band_mask(seed, receiver, owner[i])
};
gpuError_t launch_no_release(const NoReleaseSet& set, int count, int receiver, uint64_t seed, uint64_t line_threshold,
                             int64_t slice_rows, int64_t n, bool fp8, gpuStream_t s);

// One thread spinning for delays_us[idx] microseconds, read when it runs (the straggler fault; <= 0: no delay).
gpuError_t launch_straggle_spin(const float* delays_us, int idx, gpuStream_t s);
// *at ^= mask: one element of an output changed (the flip-unsampled fault), one thread.
gpuError_t launch_flip_bits(uint16_t* at, uint16_t mask, gpuStream_t s);
// Counts elements equal to 0xFFFF (the poison) into *counter (atomic add).
gpuError_t launch_count_poison(const uint16_t* p, int64_t elems, unsigned long long* counter, gpuStream_t s);
// x[i] *= factor.
gpuError_t launch_scale_f32(float* x, int64_t elems, float factor, gpuStream_t s);
// Re-encodes e4m3fn codes into e4m3fnuz codes of the same value (the "fnuz read as fn" fault), or, with
// zero_negzero_only, maps fn's -0 (0x80, NaN in fnuz) to +0 for gfx942's fnuz-reading MFMA.
gpuError_t launch_fp8_recode(uint8_t* x, int64_t elems, bool zero_negzero_only, gpuStream_t s);

}  // namespace gemmar::kernels::dev
