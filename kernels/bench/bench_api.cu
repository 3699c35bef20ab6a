// The bench's measurements (kernels/gemm_ar.hpp: ceilings, the GEMM alone, the data kernels, the fp8 selftest),
// each on device 0 with its own buffers; gemmar_gpu_bench (bench/bench_main.cpp) and `gemmar run` call them.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "kernels/gemm/quant.hpp"
#include "kernels/gemm_ar.hpp"
#include "kernels/host_check.hpp"
#include "kernels/kernels.hpp"
#include "kernels/vendor_gemm.hpp"

namespace gemmar::kernels {
namespace {

// Two untimed calls of fn, then the median over `iterations` of fn bracketed by events on s (us).
template <typename Fn>
double timed_median_us(gpuStream_t s, gpuEvent_t e0, gpuEvent_t e1, int iterations, Fn&& fn, int warmups = 2) {
  for (int i = 0; i < warmups; ++i) fn();
  GPU_CHECK(gpuStreamSynchronize(s));
  std::vector<double> v;
  for (int i = 0; i < iterations; ++i) {
    GPU_CHECK(gpuEventRecord(e0, s));
    fn();
    GPU_CHECK(gpuEventRecord(e1, s));
    GPU_CHECK(gpuEventSynchronize(e1));
    float ms = 0;
    GPU_CHECK(gpuEventElapsedTime(&ms, e0, e1));
    v.push_back(double(ms) * 1e3);
  }
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

GemmTiming time_gemm_only(int64_t m, int64_t n, int64_t k, int iterations, const OperandFn& gen, GemmImpl impl,
                          const std::vector<int64_t>& rows, Quant quant, GemmKernel variant) {
  GEMMAR_USAGE_CHECK(impl != GemmImpl::Cublaslt || vendor_gemm_supports(quant), "gemm: no vendor ", to_string(quant),
                     " GEMM on this device: ", vendor_gemm_name(quant));
  GEMMAR_USAGE_CHECK(m % dev::kBlockM == 0 && n % dev::kBlockN == 0 && k % dev::kBlockK == 0,
                     "gemm: m, n, k must be multiples of 128");
  GPU_CHECK(gpuSetDevice(0));
  RankOperands op;
  gen(0, op);
  GEMMAR_CHECK(int64_t(op.a.codes.size()) == m * k && int64_t(op.b.codes.size()) == n * k, "operand sizes");
  gpuStream_t s;
  GPU_CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  uint8_t* a = dalloc<uint8_t>(m * k);
  uint8_t* b = dalloc<uint8_t>(n * k);
  const int64_t sa_count = scale_count(scale_block(quant, false), m, k);
  const int64_t sb_count = scale_count(scale_block(quant, true), n, k);
  GEMMAR_CHECK(int64_t(op.a.scales.size()) == sa_count && int64_t(op.b.scales.size()) == sb_count, "scale sizes");
  float* sa = dalloc<float>(sa_count);
  float* sb = dalloc<float>(sb_count);
  uint16_t* c = dalloc<uint16_t>(m * n);
  GPU_CHECK(gpuMemcpy(a, op.a.codes.data(), op.a.codes.size(), gpuMemcpyHostToDevice));
  GPU_CHECK(gpuMemcpy(b, op.b.codes.data(), op.b.codes.size(), gpuMemcpyHostToDevice));
  GPU_CHECK(gpuMemcpy(sa, op.a.scales.data(), op.a.scales.size() * 4, gpuMemcpyHostToDevice));
  GPU_CHECK(gpuMemcpy(sb, op.b.scales.data(), op.b.scales.size() * 4, gpuMemcpyHostToDevice));
  GPU_CHECK(gpuMemset(c, 0xff, size_t(m * n) * 2));
  dev::GemmDest d{};
  d.dst[0] = c;
  d.slice_rows = m;
  d.ldd = n;
  const dev::GemmOperands ops{a, b, sa, sb, m, n, k, quant};
  auto launch = [&] {
    if (impl == GemmImpl::Cublaslt)
      vendor_gemm(ops, c, s);
    else
      GPU_CHECK(dev::launch_gemm(variant, ops, 0, m, d, s));
  };
  gpuEvent_t e0, e1;
  GPU_CHECK(gpuEventCreate(&e0));
  GPU_CHECK(gpuEventCreate(&e1));
  GemmTiming out;
  out.us = timed_median_us(s, e0, e1, std::max(1, iterations), launch, /*warmups=*/3);
  std::vector<uint16_t> row(static_cast<size_t>(n));
  for (int64_t r : rows) {
    GEMMAR_CHECK(r >= 0 && r < m, "row ", r, " out of range");
    GPU_CHECK(gpuMemcpy(row.data(), c + r * n, size_t(n) * 2, gpuMemcpyDeviceToHost));
    for (uint16_t h : row) {
      const uint32_t u = uint32_t(h) << 16;
      float v;
      std::memcpy(&v, &u, 4);
      out.partial_rows.push_back(v);
    }
  }
  GPU_CHECK(gpuEventDestroy(e0));
  GPU_CHECK(gpuEventDestroy(e1));
  for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(sa), static_cast<void*>(sb),
                  static_cast<void*>(c)})
    GPU_CHECK(gpuFree(p));
  GPU_CHECK(gpuStreamDestroy(s));
  return out;
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
