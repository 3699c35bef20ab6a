// Standalone device check of reference/numerics_inline.hpp: the GPU compile of the shared conversions must
// agree bit for bit with the host compile of the same header (the fp8 wire's and the fp8 scatter's recipes included).
// Not part of the CMake build (CPU-only CI); run on a GPU machine:
//   nvcc -std=c++17 -O2 -arch=sm_90 -I. reference/device/numerics_device_check.cu -o /tmp/ndc && /tmp/ndc
//   (HIP: hipcc -std=c++17 -O2 -I. -x hip reference/device/numerics_device_check.cu -o /tmp/ndc)
#include <cstdio>
#include <cstring>
#include <vector>

#include "reference/numerics_inline.hpp"

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define gpuMalloc hipMalloc
#define gpuMemcpy hipMemcpy
#define gpuH2D hipMemcpyHostToDevice
#define gpuD2H hipMemcpyDeviceToHost
#define gpuSync hipDeviceSynchronize
#else
#define gpuMalloc cudaMalloc
#define gpuMemcpy cudaMemcpy
#define gpuH2D cudaMemcpyHostToDevice
#define gpuD2H cudaMemcpyDeviceToHost
#define gpuSync cudaDeviceSynchronize
#endif

using namespace gemmar::numerics;

struct Out {
  uint8_t fn, fnuz, wq, sq;
  uint16_t bf, wdq;
  uint32_t dec_fn, dec_fnuz, acc, sscale, swide;
};

GEMMAR_HD inline Out compute(float x, uint32_t i) {
  Out o;
  o.fn = f32_to_e4m3(x, false);
  o.fnuz = f32_to_e4m3(x, true);
  o.bf = f32_to_bf16(x);
  o.dec_fn = f32_bits(e4m3_to_f32(uint8_t(i & 0xff), false));
  o.dec_fnuz = f32_bits(e4m3_to_f32(uint8_t(i & 0xff), true));
  const float amax = add_rn(mul_rn(abs_f32(x), 1.37f), 1e-3f);  // no FMA contraction here either
  o.wq = quantize_scaled(x, wire_inv_scale(amax, false), false);
  o.wdq = wire_dequantize(o.wq, wire_scale(amax, false), false);
  o.acc = f32_bits(block_accumulate(x, mul_rn(x, 0.75f), 0.013f, amax));
  // the fp8 scatter: amax / 448 (a division), its reciprocal, the code, and the reduce's widening in fp32
  const float sscale = scatter_scale(amax, false);
  o.sscale = f32_bits(sscale);
  o.sq = quantize_scaled(x, scatter_inv_scale(sscale), false);
  o.swide = f32_bits(scatter_widen(uint8_t(i & 0xff), sscale, false));
  return o;
}

__global__ void kernel(const float* x, Out* out, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = compute(x[i], i);
}

int main() {
  const uint32_t n = 1u << 22;
  std::vector<float> x(n);
  uint64_t s = 12345;
  for (uint32_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t bits = uint32_t(s >> 32);
    if (i < 65536) bits = i << 16;  // every bf16 pattern, including NaNs and infinities
    float f;
    std::memcpy(&f, &bits, 4);
    x[i] = f;
  }
  float* dx;
  Out* dout;
  gpuMalloc((void**)&dx, n * sizeof(float));
  gpuMalloc((void**)&dout, n * sizeof(Out));
  gpuMemcpy(dx, x.data(), n * sizeof(float), gpuH2D);
  kernel<<<(n + 255) / 256, 256>>>(dx, dout, n);
  gpuSync();
  std::vector<Out> dev(n);
  gpuMemcpy(dev.data(), dout, n * sizeof(Out), gpuD2H);
  uint64_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const Out h = compute(x[i], i);
    const Out& d = dev[i];
    // fp32 NaN payloads may differ between host and device
    auto same32 = [](uint32_t a, uint32_t b) { return a == b || (is_nan_f32(bits_f32(a)) && is_nan_f32(bits_f32(b))); };
    const bool same = h.fn == d.fn && h.fnuz == d.fnuz && h.wq == d.wq && h.bf == d.bf && h.wdq == d.wdq &&
                      h.dec_fn == d.dec_fn && h.dec_fnuz == d.dec_fnuz && same32(h.acc, d.acc) && h.sq == d.sq &&
                      same32(h.sscale, d.sscale) && same32(h.swide, d.swide);
    if (!same) {
      if (bad < 8)
        std::printf(
            "mismatch at %u (x bits %08x): fn %02x/%02x fnuz %02x/%02x bf %04x/%04x wq %02x/%02x wdq %04x/%04x "
            "dec %08x/%08x %08x/%08x acc %08x/%08x scatter %02x/%02x %08x/%08x %08x/%08x\n",
            i, f32_bits(x[i]), h.fn, d.fn, h.fnuz, d.fnuz, h.bf, d.bf, h.wq, d.wq, h.wdq, d.wdq, h.dec_fn, d.dec_fn,
            h.dec_fnuz, d.dec_fnuz, h.acc, d.acc, h.sq, d.sq, h.sscale, d.sscale, h.swide, d.swide);
      ++bad;
    }
  }
  std::printf("numerics device check: %u inputs, %llu mismatches\n", n, (unsigned long long)bad);
  return bad ? 1 : 0;
}
