// The bench's measurements (lab/bench_api.hpp: ceilings, where a copy runs, a GEMM subject alone, the data kernels,
// the fp8 selftest), each on device 0 with its own buffers.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lab/bench_api.hpp"

#include "common/errors.hpp"
#include "kernels/host_check.hpp"
#include "kernels/kernels.hpp"
#include "kernels/vendor_gemm.hpp"
#include "lab/gemm_rig.hpp"
#include "lab/lab_kernels.hpp"

namespace gemmar::lab {

using kernels::dalloc;
using kernels::device_count;
using kernels::device_name;
using kernels::median;
using kernels::vendor_gemm_name;
using kernels::vendor_gemm_supports;
using namespace rig;

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
  const double t_kernel = time_it([&] { GPU_CHECK(launch_copy_kernel(dst, src, bytes, s)); });
  c.hbm_copy_kernel_gbs = 2.0 * double(bytes) / (t_kernel * 1e3);
  const double t_memcpy =
      time_it([&] { GPU_CHECK(gpuMemcpyAsync(dst, src, size_t(bytes), gpuMemcpyDeviceToDevice, s)); });
  c.memcpy_d2d_gbs = 2.0 * double(bytes) / (t_memcpy * 1e3);
  c.launch_floor_us = time_it([&] { GPU_CHECK(launch_empty(s)); });
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
    if (batch && gpu::copy_prefer_overlap(dst, src, 16, copy_s) != gpuSuccess) {
      (void)gpuGetLastError();  // no batch API in this build or driver
      continue;
    }
    GPU_CHECK(gpuStreamSynchronize(copy_s));
    auto copy = [&] {
      if (batch)
        GPU_CHECK(gpu::copy_prefer_overlap(dst, src, size_t(bytes), copy_s));
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
      GPU_CHECK(launch_hold_sms(hold_ns, hold_s));
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

int64_t gemm_padded_rows(int64_t m) { return padded_rows(m); }

GemmTiming time_gemm_only(int64_t m, int64_t n, int64_t k, int iterations, const OperandFn& gen, GemmImpl impl,
                          const std::vector<int64_t>& rows, Quant quant, Subject gemm) {
  check_gemm_shape(m, n, k, impl, quant);
  GPU_CHECK(gpuSetDevice(0));
  RankOperands op;
  gen(0, op);
  const int64_t mp = gemm_padded_rows(m);
  const GemmBuffers buf(op, m, mp, impl == GemmImpl::Cublaslt ? m : mp, n, k, quant);
  const TimingStream t;
  GemmTiming out;
  out.us = timed_median_us(
      t.s, t.e0, t.e1, std::max(1, iterations), [&] { buf.launch(impl, gemm, t.s); }, /*warmups=*/3);
  out.partial_rows = read_rows(buf, m, n, rows);
  return out;
}

GemmPairTiming time_gemm_pair(int64_t m, int64_t vendor_m, int64_t n, int64_t k, int iterations, const OperandFn& gen,
                              const std::vector<int64_t>& rows, Quant quant, Subject gemm, int burst) {
  check_gemm_shape(m, n, k, GemmImpl::Cublaslt, quant);
  GPU_CHECK(gpuSetDevice(0));
  RankOperands op;
  gen(0, op);
  const int64_t mp = gemm_padded_rows(m);
  const GemmBuffers ours(op, m, mp, mp, n, k, quant), vendor(op, m, mp, vendor_m, n, k, quant);
  const TimingStream t;
  auto run_ours = [&] { ours.launch(GemmImpl::Gemmar, gemm, t.s); };
  auto run_vendor = [&] { vendor.launch(GemmImpl::Cublaslt, gemm, t.s); };
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
                            GemmImpl impl, Quant quant, Subject gemm) {
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
      bufs[size_t(r)]->launch(impl, gemm, rank_streams[size_t(r)], world);
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
std::string gemm_kernel_name(Subject gemm, Quant quant, int64_t m, int64_t n, int64_t k, int concurrent) {
  dev::GemmOperands op;
  op.quant = quant;
  op.m = gemm_padded_rows(m);
  op.n = n;
  op.k = k;
  dev::GemmDest d{};
  d.slice_rows = op.m;
  d.ldd = n;
  d.concurrent_gemms = concurrent;
  return gemm_subject_kernel(gemm, op, d);
}

DataKernelRates measure_data_kernels(int64_t rows, int64_t n, int iterations, int pull_blocks, Subject widen) {
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
  r.copy_kernel_gbs = copy_b / (time_it([&] { GPU_CHECK(launch_copy_kernel(y, x, rows * n * 2, s)); }) * 1e3);
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
      double(r.bytes_widen) / (time_it([&] { GPU_CHECK(launch_widen_subject(widen, src, 1, rows, n, 0, s)); }) * 1e3);
  r.pull_blocks = pull_blocks;
  r.pull_gbs = double(r.bytes_widen) /
               (time_it([&] { GPU_CHECK(launch_widen_subject(widen, src, 1, rows, n, pull_blocks, s)); }) * 1e3);
  r.widen_ceiling_gbs =
      double(r.bytes_widen) /
      (time_it([&] { GPU_CHECK(launch_widen_subject(Subject::WidenCeiling, src, 1, rows, n, 0, s)); }) * 1e3);
  r.copy_at_pull_grid_gbs =
      copy_b / (time_it([&] { GPU_CHECK(launch_copy_kernel(y, x, rows * n * 2, s, std::max(1, pull_blocks))); }) * 1e3);
  {
    uint32_t* sink = dalloc<uint32_t>(1);
    const int grid = std::max(1, pull_blocks);
    r.load_at_pull_grid_gbs =
        double(rows * n * 2) / (time_it([&] { GPU_CHECK(launch_load_kernel(x, rows * n * 2, sink, s, grid)); }) * 1e3);
    r.store_at_pull_grid_gbs =
        double(rows * n * 2) / (time_it([&] { GPU_CHECK(launch_store_kernel(y, rows * n * 2, s, grid)); }) * 1e3);
    GPU_CHECK(gpuFree(sink));
  }
  r.pull_ceiling_gbs =
      double(r.bytes_widen) /
      (time_it([&] { GPU_CHECK(launch_widen_subject(Subject::WidenCeiling, src, 1, rows, n, pull_blocks, s)); }) * 1e3);
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
      GPU_CHECK(launch_fp8_selftest(b, uint64_t(1) << 30, inv, d, d + 1, nullptr));
  GPU_CHECK(gpuDeviceSynchronize());
  unsigned long long h[2] = {0, 0};
  GPU_CHECK(gpuMemcpy(h, d, 16, gpuMemcpyDeviceToHost));
  GPU_CHECK(gpuFree(d));
  if (first) *first = h[1];
  return h[0];
}

}  // namespace gemmar::lab
