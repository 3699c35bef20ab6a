// The lab's GEMM and timing rig (GPU-typed, lab-internal): one problem's operands uploaded as ours and the
// vendor's take them, the timed loops, and the read-back. lab/bench_api.cu and the testbed (lab/testbed_*.cu) share it.
#pragma once
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "kernels/gemm_ar.hpp"
#include "kernels/host_check.hpp"
#include "kernels/kernels.hpp"
#include "kernels/vendor_gemm.hpp"
#include "lab/lab_kernels.hpp"

namespace gemmar::lab::rig {

using kernels::dalloc;
using kernels::median;
using kernels::RankOperands;

// One call of fn bracketed by events on s, waited for (us).
template <typename Fn>
inline double timed_once_us(gpuStream_t s, gpuEvent_t e0, gpuEvent_t e1, Fn&& fn) {
  GPU_CHECK(gpuEventRecord(e0, s));
  fn();
  GPU_CHECK(gpuEventRecord(e1, s));
  GPU_CHECK(gpuEventSynchronize(e1));
  float ms = 0;
  GPU_CHECK(gpuEventElapsedTime(&ms, e0, e1));
  return double(ms) * 1e3;
}

// `warmups` untimed calls of fn, then the median over `iterations` of fn bracketed by events on s (us), `before`
// enqueued on s ahead of each, outside the events (an L2 flush, say).
template <typename Before, typename Fn>
inline double timed_median_after_us(gpuStream_t s, gpuEvent_t e0, gpuEvent_t e1, int iterations, Before&& before,
                                    Fn&& fn, int warmups = 2) {
  for (int i = 0; i < warmups; ++i) fn();
  GPU_CHECK(gpuStreamSynchronize(s));
  std::vector<double> v;
  for (int i = 0; i < iterations; ++i) {
    before();
    v.push_back(timed_once_us(s, e0, e1, fn));
  }
  return median(v);
}

// Two untimed calls of fn, then the median over `iterations` of fn bracketed by events on s (us).
template <typename Fn>
inline double timed_median_us(gpuStream_t s, gpuEvent_t e0, gpuEvent_t e1, int iterations, Fn&& fn, int warmups = 2) {
  return timed_median_after_us(
      s, e0, e1, iterations, [] {}, fn, warmups);
}

// One GEMM's operands and output on device 0. The operands are generated at the padded M (a multiple of
// BLOCK_M, as the op pads: common/config.hpp padded_m); `rows` of them are uploaded: the padded M for our kernels (the
// rows from m on zeroed, the op's zero padding rows), the real M for the vendor's, which takes any M (A's codes
// and scales cropped, each scale moved to its index at `rows` rows by common/modes.hpp's scale_index).
struct GemmBuffers {
  uint8_t *a = nullptr, *b = nullptr;
  float *sa = nullptr, *sb = nullptr;
  uint16_t* c = nullptr;
  dev::GemmOperands ops{};
  GemmBuffers(const RankOperands& op, int64_t m, int64_t m_padded, int64_t rows, int64_t n, int64_t k, Quant quant) {
    const ScaleBlock& sblk_a = scale_block(quant, false);
    GEMMAR_CHECK(int64_t(op.a.codes.size()) == m_padded * k && int64_t(op.b.codes.size()) == n * k, "operand sizes");
    GEMMAR_CHECK(int64_t(op.a.scales.size()) == scale_count(sblk_a, m_padded, k) &&
                     int64_t(op.b.scales.size()) == scale_count(scale_block(quant, true), n, k),
                 "scale sizes");
    std::vector<uint8_t> codes(op.a.codes.begin(), op.a.codes.begin() + rows * k);
    std::fill(codes.begin() + std::min(rows, m) * k, codes.end(), uint8_t(0));
    std::vector<float> scales(size_t(scale_count(sblk_a, rows, k)), 1.0f);
    const int64_t kext = scale_k_extent(sblk_a, k);
    for (int64_t r = 0; r < rows; r += sblk_a.rows)
      for (int64_t col = 0; col < k; col += kext)
        scales[size_t(scale_index(sblk_a, rows, k, r, col))] =
            op.a.scales[size_t(scale_index(sblk_a, m_padded, k, r, col))];
    a = dalloc<uint8_t>(rows * k);
    b = dalloc<uint8_t>(n * k);
    sa = dalloc<float>(int64_t(scales.size()));
    sb = dalloc<float>(int64_t(op.b.scales.size()));
    c = dalloc<uint16_t>(rows * n);
    GPU_CHECK(gpuMemcpy(a, codes.data(), codes.size(), gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemcpy(b, op.b.codes.data(), op.b.codes.size(), gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemcpy(sa, scales.data(), scales.size() * 4, gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemcpy(sb, op.b.scales.data(), op.b.scales.size() * 4, gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemset(c, 0xff, size_t(rows * n) * 2));
    ops = dev::GemmOperands{a, b, sa, sb, rows, n, k, quant};
  }
  GemmBuffers(const GemmBuffers&) = delete;
  GemmBuffers& operator=(const GemmBuffers&) = delete;
  ~GemmBuffers() {
    for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(sa), static_cast<void*>(sb),
                    static_cast<void*>(c)})
      (void)gpuFree(p);
  }
  // concurrent: GEMMs running at once on the device (GemmDest::concurrent_gemms), as gemm-concurrent's W.
  dev::GemmDest dest(int concurrent = 1) const {
    dev::GemmDest d{};
    d.dst[0] = c;
    d.slice_rows = ops.m;
    d.ldd = ops.n;
    d.concurrent_gemms = concurrent;
    return d;
  }
  void launch(GemmImpl impl, Subject gemm, gpuStream_t s, int concurrent = 1) const {
    if (impl == GemmImpl::Cublaslt) {
      kernels::vendor_gemm(ops, c, s);
      return;
    }
    const gpuError_t e = launch_gemm_subject(gemm, ops, 0, ops.m, dest(concurrent), s);
    if (e == gpuErrorInvalidValue)
      throw UsageError(std::string(subject_info(gemm).name) + ": does not run " + to_string(ops.quant) + " at " +
                       std::to_string(ops.m) + " x " + std::to_string(ops.n) + " x " + std::to_string(ops.k) +
                       " on this device (lab/variants.cpp gemm_applies)");
    GPU_CHECK(e);
  }
};

inline void check_gemm_shape(int64_t m, int64_t n, int64_t k, GemmImpl impl, Quant quant) {
  GEMMAR_USAGE_CHECK(impl != GemmImpl::Cublaslt || kernels::vendor_gemm_supports(quant), "gemm: no vendor ",
                     to_string(quant), " GEMM on this device: ", kernels::vendor_gemm_name(quant));
  GEMMAR_USAGE_CHECK(m > 0 && n % dev::kBlockN == 0 && k % dev::kBlockK == 0,
                     "gemm: m must be positive (ours runs it padded to 128 rows, as the op), n and k multiples of 128");
}

// M rounded up to the GEMM kernels' 128-row tile.
inline int64_t padded_rows(int64_t m) { return (m + dev::kBlockM - 1) / dev::kBlockM * dev::kBlockM; }

// `rows` of buf's bf16 result, widened ([i * n + col]).
inline std::vector<float> read_rows(const GemmBuffers& buf, int64_t m, int64_t n, const std::vector<int64_t>& rows) {
  std::vector<float> out;
  std::vector<uint16_t> row(static_cast<size_t>(n));
  for (int64_t r : rows) {
    GEMMAR_CHECK(r >= 0 && r < m, "row ", r, " out of range");
    GPU_CHECK(gpuMemcpy(row.data(), buf.c + r * n, size_t(n) * 2, gpuMemcpyDeviceToHost));
    for (uint16_t h : row) {
      const uint32_t u = uint32_t(h) << 16;
      float v;
      std::memcpy(&v, &u, 4);
      out.push_back(v);
    }
  }
  return out;
}

// A stream and two events for the timed loops, released on every path.
struct TimingStream {
  gpuStream_t s = nullptr;
  gpuEvent_t e0 = nullptr, e1 = nullptr;
  TimingStream() {
    GPU_CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
    GPU_CHECK(gpuEventCreate(&e0));
    GPU_CHECK(gpuEventCreate(&e1));
  }
  TimingStream(const TimingStream&) = delete;
  TimingStream& operator=(const TimingStream&) = delete;
  ~TimingStream() {
    (void)gpuEventDestroy(e0);
    (void)gpuEventDestroy(e1);
    (void)gpuStreamDestroy(s);
  }
  template <typename Fn>
  double once_us(Fn&& fn) const {
    return timed_once_us(s, e0, e1, fn);
  }
};

// Every element of buf's bf16 result ([row * n + col], its `ops.m` rows).
inline std::vector<uint16_t> read_all(const GemmBuffers& buf) {
  std::vector<uint16_t> out(size_t(buf.ops.m * buf.ops.n));
  GPU_CHECK(gpuMemcpy(out.data(), buf.c, out.size() * 2, gpuMemcpyDeviceToHost));
  return out;
}

// The operands' codes with unit scales in `as`'s layout (m_padded x k and n x k): the vendor's blockscale GEMM timed
// on codes whose quant it has no GEMM for (the timing does not depend on the scales' values).
inline RankOperands with_unit_scales(const RankOperands& op, Quant as, int64_t m_padded, int64_t n, int64_t k) {
  RankOperands u;
  u.a_rows = op.a_rows;
  u.a = op.a;
  u.b = op.b;
  u.a.scales.assign(size_t(scale_count(scale_block(as, false), m_padded, k)), 1.0f);
  u.b.scales.assign(size_t(scale_count(scale_block(as, true), n, k)), 1.0f);
  return u;
}

}  // namespace gemmar::lab::rig
