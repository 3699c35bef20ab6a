// The bench's measurements (kernels/gemm_ar.hpp: ceilings, the GEMM alone, the data kernels, the fp8 selftest),
// each on device 0 with its own buffers; gemmar_gpu_bench (bench/bench_main.cpp) and `gemmar run` call them.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.hpp"
#include "kernels/gemm/quant.hpp"
#include "kernels/gemm_ar.hpp"
#include "kernels/host_check.hpp"
#include "kernels/kernels.hpp"
#include "kernels/vendor_gemm.hpp"

namespace gemmar::kernels {
namespace {

// One call of fn bracketed by events on s, waited for (us).
template <typename Fn>
double timed_once_us(gpuStream_t s, gpuEvent_t e0, gpuEvent_t e1, Fn&& fn) {
  GPU_CHECK(gpuEventRecord(e0, s));
  fn();
  GPU_CHECK(gpuEventRecord(e1, s));
  GPU_CHECK(gpuEventSynchronize(e1));
  float ms = 0;
  GPU_CHECK(gpuEventElapsedTime(&ms, e0, e1));
  return double(ms) * 1e3;
}

// Two untimed calls of fn, then the median over `iterations` of fn bracketed by events on s (us).
template <typename Fn>
double timed_median_us(gpuStream_t s, gpuEvent_t e0, gpuEvent_t e1, int iterations, Fn&& fn, int warmups = 2) {
  for (int i = 0; i < warmups; ++i) fn();
  GPU_CHECK(gpuStreamSynchronize(s));
  std::vector<double> v;
  for (int i = 0; i < iterations; ++i) v.push_back(timed_once_us(s, e0, e1, fn));
  return median(v);
}

}  // namespace

Ceilings measure_ceilings(int64_t bytes, int iterations) {
  Ceilings c;
  c.bytes = bytes;
  GPU_CHECK(gpuSetDevice(0));
  gpuStream_t s;
  GPU_CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  uint8_t* src = dalloc<uint8_t>(bytes);
  uint8_t* dst = dalloc<uint8_t>(bytes);
  GPU_CHECK(gpuMemset(src, 0x3c, size_t(bytes)));
  gpuEvent_t e0, e1;
  GPU_CHECK(gpuEventCreate(&e0));
  GPU_CHECK(gpuEventCreate(&e1));
  auto time_it = [&](auto&& fn) { return timed_median_us(s, e0, e1, iterations, fn); };
  const double t_kernel = time_it([&] { GPU_CHECK(dev::launch_copy_kernel(dst, src, bytes, s)); });
  c.hbm_copy_kernel_gbs = 2.0 * double(bytes) / (t_kernel * 1e3);
  const double t_memcpy =
      time_it([&] { GPU_CHECK(gpuMemcpyAsync(dst, src, size_t(bytes), gpuMemcpyDeviceToDevice, s)); });
  c.memcpy_d2d_gbs = 2.0 * double(bytes) / (t_memcpy * 1e3);
  c.launch_floor_us = time_it([&] { GPU_CHECK(dev::launch_empty(s)); });
  {
    gpuDeviceProp prop{};
    GPU_CHECK(gpuGetDeviceProperties(&prop, 0));
    c.l2_bytes = double(prop.l2CacheSize);
  }
  int n = device_count();
  if (n >= 2) {
    GPU_CHECK(gpuSetDevice(1));
    uint8_t* peer = dalloc<uint8_t>(bytes);
    GPU_CHECK(gpuSetDevice(0));
    const double t_peer = time_it([&] { GPU_CHECK(gpuMemcpyPeerAsync(peer, 1, src, 0, size_t(bytes), s)); });
    c.peer_copy_gbs = double(bytes) / (t_peer * 1e3);  // one direction: bytes over the link
    GPU_CHECK(gpuSetDevice(1));
    GPU_CHECK(gpuFree(peer));
    GPU_CHECK(gpuSetDevice(0));
  }
  GPU_CHECK(gpuFree(src));
  GPU_CHECK(gpuFree(dst));
  GPU_CHECK(gpuEventDestroy(e0));
  GPU_CHECK(gpuEventDestroy(e1));
  GPU_CHECK(gpuStreamDestroy(s));
  return c;
}

namespace {
// A device-to-device copy through the batch API with the driver's hint to overlap it with the SMs' work.
gpuError_t copy_batch_prefer_overlap(void* dst, const void* src, size_t bytes, gpuStream_t s) {
#if defined(GEMMAR_GPU_CUDA) && CUDART_VERSION >= 12080
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
  size_t attr_index = 0;
  void* dsts[1] = {dst};
  void* srcs[1] = {const_cast<void*>(src)};  // CUDA 12.8 takes void**, 13.0 const void* const*
  size_t sizes[1] = {bytes};
#if CUDART_VERSION >= 13000
  return cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &attr_index, 1, s);
#else
  size_t fail_index = 0;
  return cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &attr_index, 1, &fail_index, s);
#endif
#else
  (void)dst, (void)src, (void)bytes, (void)s;
  return gpuErrorNotSupported;
#endif
}
}  // namespace

std::vector<CopyOverlap> measure_copy_overlap(int64_t bytes) {
  GPU_CHECK(gpuSetDevice(0));
  gpuStream_t hold_s, copy_s;
  GPU_CHECK(gpuStreamCreateWithFlags(&hold_s, gpuStreamNonBlocking));
  GPU_CHECK(gpuStreamCreateWithFlags(&copy_s, gpuStreamNonBlocking));
  uint8_t* src = dalloc<uint8_t>(bytes);
  uint8_t* dst = dalloc<uint8_t>(bytes);
  uint8_t* host = nullptr;
  GPU_CHECK(gpuHostAlloc(reinterpret_cast<void**>(&host), size_t(bytes), 0));
  GPU_CHECK(gpuMemset(src, 0x3c, size_t(bytes)));
  gpuEvent_t h0, h1, c1, e0, e1;
  for (gpuEvent_t* e : {&h0, &h1, &c1, &e0, &e1}) GPU_CHECK(gpuEventCreate(e));
  auto elapsed_us = [](gpuEvent_t a, gpuEvent_t b) {
    float ms = 0;
    GPU_CHECK(gpuEventElapsedTime(&ms, a, b));
    return double(ms) * 1e3;
  };
  const int64_t probe = std::min<int64_t>(bytes, 4096);
  std::vector<CopyOverlap> out;
  for (const char* path : {"memcpy", "batch-prefer-overlap", "d2h-pinned"}) {
    CopyOverlap r;
    r.path = path;
    const bool to_host = r.path == "d2h-pinned", batch = r.path == "batch-prefer-overlap";
    uint8_t* to = to_host ? host : dst;
    if (batch && copy_batch_prefer_overlap(dst, src, 16, copy_s) != gpuSuccess) {
      (void)gpuGetLastError();  // no batch API in this build or driver
      continue;
    }
    GPU_CHECK(gpuStreamSynchronize(copy_s));
    auto copy = [&] {
      if (batch)
        GPU_CHECK(copy_batch_prefer_overlap(dst, src, size_t(bytes), copy_s));
      else
        GPU_CHECK(
            gpuMemcpyAsync(to, src, size_t(bytes), to_host ? gpuMemcpyDeviceToHost : gpuMemcpyDeviceToDevice, copy_s));
    };
    r.alone_us = timed_median_us(copy_s, e0, e1, 20, copy);
    // Long enough that a copy on the copy engines ends well inside it, short enough to stay a probe.
    const uint64_t hold_ns = uint64_t(std::max(2000.0, 4.0 * r.alone_us) * 1e3);
    std::vector<double> ends, holds;
    r.copied = true;
    for (int i = 0; i < 5; ++i) {
      if (to_host)
        std::memset(host, 0, size_t(bytes));
      else
        GPU_CHECK(gpuMemset(dst, 0, size_t(bytes)));
      GPU_CHECK(gpuDeviceSynchronize());
      GPU_CHECK(gpuEventRecord(h0, hold_s));
      GPU_CHECK(dev::launch_hold_sms(hold_ns, hold_s));
      GPU_CHECK(gpuEventRecord(h1, hold_s));
      GPU_CHECK(gpuStreamWaitEvent(copy_s, h0, 0));  // the copy is issued once the holding kernel is queued
      copy();
      GPU_CHECK(gpuEventRecord(c1, copy_s));
      GPU_CHECK(gpuStreamSynchronize(copy_s));
      GPU_CHECK(gpuStreamSynchronize(hold_s));
      ends.push_back(elapsed_us(h0, c1));
      holds.push_back(elapsed_us(h0, h1));
      std::vector<uint8_t> head(static_cast<size_t>(probe)), tail(static_cast<size_t>(probe));
      GPU_CHECK(gpuMemcpy(head.data(), to, size_t(probe), to_host ? gpuMemcpyHostToHost : gpuMemcpyDeviceToHost));
      GPU_CHECK(gpuMemcpy(tail.data(), to + bytes - probe, size_t(probe),
                          to_host ? gpuMemcpyHostToHost : gpuMemcpyDeviceToHost));
      for (int64_t j = 0; j < probe; ++j) r.copied &= head[size_t(j)] == 0x3c && tail[size_t(j)] == 0x3c;
    }
    r.end_after_hold_start_us = median(ends);
    r.hold_us = median(holds);
    r.beside_sms = r.end_after_hold_start_us < r.hold_us;
    out.push_back(r);
  }
  GPU_CHECK(gpuFreeHost(host));
  GPU_CHECK(gpuFree(src));
  GPU_CHECK(gpuFree(dst));
  for (gpuEvent_t e : {h0, h1, c1, e0, e1}) GPU_CHECK(gpuEventDestroy(e));
  GPU_CHECK(gpuStreamDestroy(hold_s));
  GPU_CHECK(gpuStreamDestroy(copy_s));
  return out;
}

namespace {

// One GEMM's operands and output on device 0. The operands are generated at the padded M (a multiple of
// BLOCK_M, as the op pads: kernels/gemm_ar.cu); `rows` of them are uploaded: the padded M for our kernels (the
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
  void launch(GemmImpl impl, GemmKernel variant, gpuStream_t s, int concurrent = 1) const {
    if (impl == GemmImpl::Cublaslt) {
      vendor_gemm(ops, c, s);
      return;
    }
    dev::GemmDest d{};
    d.dst[0] = c;
    d.slice_rows = ops.m;
    d.ldd = ops.n;
    d.concurrent_gemms = concurrent;
    GPU_CHECK(dev::launch_gemm(variant, ops, 0, ops.m, d, s));
  }
};

void check_gemm_shape(int64_t m, int64_t n, int64_t k, GemmImpl impl, Quant quant) {
  GEMMAR_USAGE_CHECK(impl != GemmImpl::Cublaslt || vendor_gemm_supports(quant), "gemm: no vendor ", to_string(quant),
                     " GEMM on this device: ", vendor_gemm_name(quant));
  GEMMAR_USAGE_CHECK(m > 0 && n % dev::kBlockN == 0 && k % dev::kBlockK == 0,
                     "gemm: m must be positive (ours runs it padded to 128 rows, as the op), n and k multiples of 128");
}

}  // namespace

int64_t gemm_padded_rows(int64_t m) { return (m + dev::kBlockM - 1) / dev::kBlockM * dev::kBlockM; }

namespace {
// `rows` of buf's bf16 result, widened ([i * n + col]).
std::vector<float> read_rows(const GemmBuffers& buf, int64_t m, int64_t n, const std::vector<int64_t>& rows) {
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
}  // namespace

GemmTiming time_gemm_only(int64_t m, int64_t n, int64_t k, int iterations, const OperandFn& gen, GemmImpl impl,
                          const std::vector<int64_t>& rows, Quant quant, GemmKernel variant) {
  check_gemm_shape(m, n, k, impl, quant);
  GPU_CHECK(gpuSetDevice(0));
  RankOperands op;
  gen(0, op);
  const int64_t mp = gemm_padded_rows(m);
  const GemmBuffers buf(op, m, mp, impl == GemmImpl::Cublaslt ? m : mp, n, k, quant);
  const TimingStream t;
  GemmTiming out;
  out.us = timed_median_us(
      t.s, t.e0, t.e1, std::max(1, iterations), [&] { buf.launch(impl, variant, t.s); }, /*warmups=*/3);
  out.partial_rows = read_rows(buf, m, n, rows);
  return out;
}

GemmPairTiming time_gemm_pair(int64_t m, int64_t vendor_m, int64_t n, int64_t k, int iterations, const OperandFn& gen,
                              const std::vector<int64_t>& rows, Quant quant, GemmKernel variant, int burst) {
  check_gemm_shape(m, n, k, GemmImpl::Cublaslt, quant);
  GPU_CHECK(gpuSetDevice(0));
  RankOperands op;
  gen(0, op);
  const int64_t mp = gemm_padded_rows(m);
  const GemmBuffers ours(op, m, mp, mp, n, k, quant), vendor(op, m, mp, vendor_m, n, k, quant);
  const TimingStream t;
  auto run_ours = [&] { ours.launch(GemmImpl::Gemmar, variant, t.s); };
  auto run_vendor = [&] { vendor.launch(GemmImpl::Cublaslt, variant, t.s); };
  for (int i = 0; i < 3; ++i) {
    run_ours();
    run_vendor();
  }
  GPU_CHECK(gpuStreamSynchronize(t.s));
  std::vector<double> us_ours, us_vendor;
  for (int i = 0; i < std::max(1, iterations); ++i) {  // the first of each pair alternates too
    if (i % 2 == 0) us_ours.push_back(t.once_us(run_ours));
    us_vendor.push_back(t.once_us(run_vendor));
    if (i % 2 == 1) us_ours.push_back(t.once_us(run_ours));
  }
  GemmPairTiming out;
  if (burst > 0) {
    auto burst_us = [&](auto&& run) {
      GPU_CHECK(gpuStreamSynchronize(t.s));
      std::this_thread::sleep_for(std::chrono::seconds(1));  // the clock recovers between bursts
      return t.once_us([&] {
        for (int i = 0; i < burst; ++i) run();
      }) / burst;
    };
    const double o1 = burst_us(run_ours), v1 = burst_us(run_vendor);
    const double v2 = burst_us(run_vendor), o2 = burst_us(run_ours);
    out.ours_burst_us = (o1 + o2) / 2;
    out.vendor_burst_us = (v1 + v2) / 2;
  }
  out.ours.us = median(us_ours);
  out.vendor.us = median(us_vendor);
  out.ours.partial_rows = read_rows(ours, m, n, rows);
  out.vendor.partial_rows = read_rows(vendor, m, n, rows);
  return out;
}

double time_gemm_concurrent(int64_t m, int64_t n, int64_t k, int world, int iterations, const OperandFn& gen,
                            GemmImpl impl, Quant quant, GemmKernel variant) {
  check_gemm_shape(m, n, k, impl, quant);
  GEMMAR_USAGE_CHECK(world >= 1 && world <= dev::kMaxWorld, "gemm-concurrent: W must be 1..", dev::kMaxWorld);
  GPU_CHECK(gpuSetDevice(0));
  const int64_t mp = gemm_padded_rows(m);
  std::vector<std::unique_ptr<GemmBuffers>> bufs;
  std::vector<gpuStream_t> rank_streams(static_cast<size_t>(world));
  std::vector<gpuEvent_t> rank_done(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    RankOperands op;
    gen(r, op);
    bufs.push_back(std::make_unique<GemmBuffers>(op, m, mp, impl == GemmImpl::Cublaslt ? m : mp, n, k, quant));
    GPU_CHECK(gpuStreamCreateWithFlags(&rank_streams[size_t(r)], gpuStreamNonBlocking));
    GPU_CHECK(gpuEventCreateWithFlags(&rank_done[size_t(r)], gpuEventDisableTiming));
  }
  gpuStream_t s;  // the clock: it forks to every rank's stream and joins them, as the op's phase barrier
  GPU_CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  gpuEvent_t e0, e1, fork;
  GPU_CHECK(gpuEventCreate(&e0));
  GPU_CHECK(gpuEventCreate(&e1));
  GPU_CHECK(gpuEventCreateWithFlags(&fork, gpuEventDisableTiming));
  auto all_ranks = [&] {
    GPU_CHECK(gpuEventRecord(fork, s));
    for (int r = 0; r < world; ++r) {
      GPU_CHECK(gpuStreamWaitEvent(rank_streams[size_t(r)], fork, 0));
      bufs[size_t(r)]->launch(impl, variant, rank_streams[size_t(r)], world);
      GPU_CHECK(gpuEventRecord(rank_done[size_t(r)], rank_streams[size_t(r)]));
    }
    for (int r = 0; r < world; ++r) GPU_CHECK(gpuStreamWaitEvent(s, rank_done[size_t(r)], 0));
  };
  const double us = timed_median_us(s, e0, e1, std::max(1, iterations), all_ranks, /*warmups=*/3);
  GPU_CHECK(gpuStreamSynchronize(s));
  for (int r = 0; r < world; ++r) {
    GPU_CHECK(gpuStreamDestroy(rank_streams[size_t(r)]));
    GPU_CHECK(gpuEventDestroy(rank_done[size_t(r)]));
  }
  GPU_CHECK(gpuEventDestroy(e0));
  GPU_CHECK(gpuEventDestroy(e1));
  GPU_CHECK(gpuEventDestroy(fork));
  GPU_CHECK(gpuStreamDestroy(s));
  return us;
}
std::string gemm_kernel_name(GemmKernel variant, int64_t k) { return dev::gemm_kernel_name(variant, k); }
std::string gemm_quant_kernel_name(Quant quant, int64_t n, int64_t k, GemmKernel variant) {
  dev::GemmOperands op;
  op.quant = quant;
  op.n = n;
  op.k = k;
  return dev::gemm_quant_kernel_name(op, variant);
}

DataKernelRates measure_data_kernels(int64_t rows, int64_t n, int iterations, int pull_blocks, WidenKernel widen) {
  GEMMAR_USAGE_CHECK(rows > 0 && n % 16 == 0, "data: rows > 0 and n a multiple of 16");
  GPU_CHECK(gpuSetDevice(0));
  gpuStream_t s;
  GPU_CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  uint16_t* x = dalloc<uint16_t>(rows * n);
  uint16_t* y = dalloc<uint16_t>(rows * n);
  uint8_t* q = dalloc<uint8_t>(rows * n);
  float* qs = dalloc<float>(rows);
  // Finite bf16 data with row-varying magnitude (never zeros): 0x3c00 + i%0x700, sign from bit 3.
  GPU_CHECK(gpuMemset(x, 0x3d, size_t(rows * n) * 2));
  gpuEvent_t e0, e1;
  GPU_CHECK(gpuEventCreate(&e0));
  GPU_CHECK(gpuEventCreate(&e1));
  auto time_it = [&](auto&& fn) { return timed_median_us(s, e0, e1, std::max(1, iterations), fn); };
  DataKernelRates r;
  const double copy_b = 2.0 * double(rows * n) * 2;
  r.copy_kernel_gbs = copy_b / (time_it([&] { GPU_CHECK(dev::launch_copy_kernel(y, x, rows * n * 2, s)); }) * 1e3);
  r.memcpy_gbs =
      copy_b /
      (time_it([&] { GPU_CHECK(gpuMemcpyAsync(y, x, size_t(rows * n) * 2, gpuMemcpyDeviceToDevice, s)); }) * 1e3);
  r.bytes_quantize = rows * n * 2 + rows * n + 4 * rows;
  r.quantize_gbs =
      double(r.bytes_quantize) / (time_it([&] { GPU_CHECK(dev::launch_quantize(x, rows, n, q, qs, s)); }) * 1e3);
  r.bytes_widen = rows * n + 4 * rows + rows * n * 2;
  dev::Fp8Sources src{};
  src.q[0] = q;
  src.scale[0] = qs;
  src.out[0] = y;
  r.dequantize_gbs =
      double(r.bytes_widen) / (time_it([&] { GPU_CHECK(dev::launch_widen(src, 1, rows, n, 0, widen, s)); }) * 1e3);
  r.pull_blocks = pull_blocks;
  r.pull_gbs = double(r.bytes_widen) /
               (time_it([&] { GPU_CHECK(dev::launch_widen(src, 1, rows, n, pull_blocks, widen, s)); }) * 1e3);
  r.widen_ceiling_gbs =
      double(r.bytes_widen) /
      (time_it([&] { GPU_CHECK(dev::launch_widen(src, 1, rows, n, 0, WidenKernel::Ceiling, s)); }) * 1e3);
  r.copy_at_pull_grid_gbs =
      copy_b /
      (time_it([&] { GPU_CHECK(dev::launch_copy_kernel(y, x, rows * n * 2, s, std::max(1, pull_blocks))); }) * 1e3);
  {
    uint32_t* sink = dalloc<uint32_t>(1);
    const int grid = std::max(1, pull_blocks);
    r.load_at_pull_grid_gbs =
        double(rows * n * 2) /
        (time_it([&] { GPU_CHECK(dev::launch_load_kernel(x, rows * n * 2, sink, s, grid)); }) * 1e3);
    r.store_at_pull_grid_gbs =
        double(rows * n * 2) / (time_it([&] { GPU_CHECK(dev::launch_store_kernel(y, rows * n * 2, s, grid)); }) * 1e3);
    GPU_CHECK(gpuFree(sink));
  }
  r.pull_ceiling_gbs =
      double(r.bytes_widen) /
      (time_it([&] { GPU_CHECK(dev::launch_widen(src, 1, rows, n, pull_blocks, WidenKernel::Ceiling, s)); }) * 1e3);
  GPU_CHECK(gpuEventDestroy(e0));
  GPU_CHECK(gpuEventDestroy(e1));
  for (void* p : {static_cast<void*>(x), static_cast<void*>(y), static_cast<void*>(q), static_cast<void*>(qs)})
    GPU_CHECK(gpuFree(p));
  GPU_CHECK(gpuStreamDestroy(s));
  return r;
}

uint64_t fp8_conversion_selftest(const std::vector<float>& invs, uint64_t* first) {
  GPU_CHECK(gpuSetDevice(0));
  unsigned long long* d = dalloc<unsigned long long>(2);
  GPU_CHECK(gpuMemset(d, 0, 16));
  for (float inv : invs)
    for (uint64_t b = 0; b < (uint64_t(1) << 32); b += uint64_t(1) << 30)
      GPU_CHECK(dev::launch_fp8_selftest(b, uint64_t(1) << 30, inv, d, d + 1, nullptr));
  GPU_CHECK(gpuDeviceSynchronize());
  unsigned long long h[2] = {0, 0};
  GPU_CHECK(gpuMemcpy(h, d, 16, gpuMemcpyDeviceToHost));
  GPU_CHECK(gpuFree(d));
  if (first) *first = h[1];
  return h[0];
}

}  // namespace gemmar::kernels
