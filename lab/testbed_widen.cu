// The testbed's widen concern (lab/testbed.hpp): every widen subject over widen_cases(), checked bit for bit against
// numerics::wire_dequantize, then timed beside the op's widen and cudaMemcpy.
#include <cmath>
#include <thread>

#include "kernels/device_common.cuh"
#include "lab/gemm_rig.hpp"
#include "lab/json_line.hpp"
#include "lab/testbed.hpp"
#include "lab/testbed_plan.hpp"
#include "reference/numerics_inline.hpp"

namespace gemmar::lab {
namespace {

using namespace rig;
namespace nm = gemmar::numerics;

constexpr int kSources = 2;  // the rows split over two sources, as a pull walks its peers' slices
constexpr int kTimed = 20;

uint64_t mix(uint64_t x) {  // splitmix64: the codes and scales, reproducible
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Every code value (NaN codes too), and row scales over 2^-20..2^10 with a zero, an infinite and a NaN scale among
// them (what a quantize of a zero, an overflowing or a NaN row writes): both decode paths of dequant8.
void make_wire(int64_t rows, int64_t n, std::vector<uint8_t>& codes, std::vector<float>& scales) {
  codes.resize(size_t(rows * n));
  for (size_t i = 0; i < codes.size(); i += 8) {
    const uint64_t r = mix(i);
    for (size_t b = 0; b < 8 && i + b < codes.size(); ++b) codes[i + b] = uint8_t(r >> (8 * b));
  }
  scales.resize(size_t(rows));
  for (int64_t r = 0; r < rows; ++r)
    scales[size_t(r)] = std::ldexp(1.0f + float(mix(~uint64_t(r)) % 1000) / 1000.0f, int(mix(uint64_t(r)) % 31) - 20);
  scales[0] = 0.0f;
  scales[1] = INFINITY;
  scales[2] = NAN;
}

// The CPU's widen of every element (ceiling: the codes zero-extended), on the host's threads.
std::vector<uint16_t> expected(const std::vector<uint8_t>& codes, const std::vector<float>& scales, int64_t n,
                               bool ceiling) {
  std::vector<uint16_t> out(codes.size());
  const int64_t rows = int64_t(scales.size());
  const int workers = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (int64_t r = w; r < rows; r += workers)
        for (int64_t c = 0; c < n; ++c) {
          const size_t i = size_t(r * n + c);
          out[i] = ceiling ? uint16_t(codes[i]) : nm::wire_dequantize(codes[i], scales[size_t(r)], false);
        }
    });
  for (auto& t : pool) t.join();
  return out;
}

void run_case(const WidenCase& c, TestbedTally& tally) {
  GPU_CHECK(gpuSetDevice(0));
  const int blocks = c.blocks < 0 ? dev::sm_count_cached() : c.blocks;
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  make_wire(c.rows, c.n, codes, scales);
  const std::vector<uint16_t> want = expected(codes, scales, c.n, false);
  const std::vector<uint16_t> want_ceiling = expected(codes, scales, c.n, true);
  uint8_t* q = dalloc<uint8_t>(c.rows * c.n);
  float* qs = dalloc<float>(c.rows);
  uint16_t* out = dalloc<uint16_t>(c.rows * c.n);
  uint16_t* copy_dst = dalloc<uint16_t>(c.rows * c.n);
  GPU_CHECK(gpuMemcpy(q, codes.data(), codes.size(), gpuMemcpyHostToDevice));
  GPU_CHECK(gpuMemcpy(qs, scales.data(), scales.size() * 4, gpuMemcpyHostToDevice));
  dev::Fp8Sources src{};
  const int64_t per = c.rows / kSources;
  for (int i = 0; i < kSources; ++i) {
    src.q[i] = q + i * per * c.n;
    src.scale[i] = qs + i * per;
    src.out[i] = out + i * per * c.n;
  }
  const TimingStream t;
  const double bytes = double(c.rows * c.n) * 3 + 4.0 * double(c.rows);  // codes and scales read, bf16 written
  auto widen = [&](Subject s) { GPU_CHECK(launch_widen_subject(s, src, kSources, per, c.n, blocks, t.s)); };
  const double memcpy_us = timed_median_us(t.s, t.e0, t.e1, kTimed, [&] {
    GPU_CHECK(gpuMemcpyAsync(copy_dst, out, size_t(c.rows * c.n) * 2, gpuMemcpyDeviceToDevice, t.s));
  });
  for (const Subject s : subjects_of(Concern::Widen)) {
    const SubjectInfo& info = subject_info(s);
    JsonLine j;
    j.add("concern", "widen").add("subject", info.name).add("product", info.product);
    j.add("rows", c.rows).add("n", c.n).add("blocks", blocks).add("grid", c.blocks == 0 ? "dequantize" : "pull");
    j.add("applies", true);
    ++tally.lines;
    GPU_CHECK(gpuMemset(out, 0xff, size_t(c.rows * c.n) * 2));
    widen(s);
    GPU_CHECK(gpuStreamSynchronize(t.s));
    std::vector<uint16_t> got(size_t(c.rows * c.n));
    GPU_CHECK(gpuMemcpy(got.data(), out, got.size() * 2, gpuMemcpyDeviceToHost));
    const std::vector<uint16_t>& ref = s == Subject::WidenCeiling ? want_ceiling : want;
    int64_t wrong = 0, first = -1;
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != ref[i]) {
        if (first < 0) first = int64_t(i);
        ++wrong;
      }
    const bool checked = wrong == 0;
    ++tally.ran;
    tally.failed += !checked;
    j.add("ran", true).add("wrong", wrong).add("first_wrong", first).add("checked", checked);
    j.add("reference", s == Subject::WidenCeiling ? "the codes zero-extended" : "numerics::wire_dequantize");
    if (checked) {  // the subject and the op's widen alternating, beside cudaMemcpy of the bf16 bytes
      std::vector<double> mine, product;
      for (int i = 0; i < 2 + kTimed; ++i) {
        const double a = t.once_us([&] { widen(s); });
        const double b = t.once_us([&] { widen(Subject::WidenProduct); });
        if (i >= 2) {
          mine.push_back(a);
          product.push_back(b);
        }
      }
      const double us = median(mine), product_us = median(product);
      j.add("us", us).add("gbs", bytes / (us * 1e3)).add("product_us", product_us);
      j.add("vs_product", product_us / us).add("memcpy_gbs", 2.0 * double(c.rows * c.n) * 2 / (memcpy_us * 1e3));
      j.add("vs_memcpy", (bytes / (us * 1e3)) / (2.0 * double(c.rows * c.n) * 2 / (memcpy_us * 1e3)));
    }
    j.print("TESTBED_JSON");
  }
  for (void* p : {static_cast<void*>(q), static_cast<void*>(qs), static_cast<void*>(out), static_cast<void*>(copy_dst)})
    GPU_CHECK(gpuFree(p));
}

}  // namespace

void testbed_widen(TestbedTally& tally) {
  for (const WidenCase& c : widen_cases()) run_case(c, tally);
}

}  // namespace gemmar::lab
