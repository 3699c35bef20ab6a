#include "reference/gemm.hpp"

#include <Eigen/Dense>
#include <chrono>
#include <ctime>
#include <limits>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/errors.hpp"
#include "reference/formats.hpp"

namespace gemmar::reference {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <typename T>
void gemm_t(const T* a, const T* b, int64_t m, int64_t n, int64_t k, T* c) {
  Eigen::Map<const RowMat<T>> A(a, m, k);
  Eigen::Map<const RowMat<T>> B(b, n, k);
  Eigen::Map<RowMat<T>> C(c, m, n);
  C.noalias() = A * B.transpose();
}

// Decoded codes (no scale) of columns [k0, k0 + bk) of a matrix, packed [rows, bk].
void decode_block(const QuantizedMatrix& q, int64_t k0, int64_t bk, const std::array<float, 256>& table, float* out) {
  for (int64_t r = 0; r < q.rows; ++r) {
    const uint8_t* src = q.codes.data() + r * q.cols + k0;
    float* dst = out + r * bk;
    for (int64_t k = 0; k < bk; ++k) dst[k] = table[src[k]];
  }
}

}  // namespace

void gemm_f32(const float* a, const float* b, int64_t m, int64_t n, int64_t k, float* c) { gemm_t(a, b, m, n, k, c); }
void gemm_f64(const double* a, const double* b, int64_t m, int64_t n, int64_t k, double* c) {
  gemm_t(a, b, m, n, k, c);
}

std::vector<float> reference_partial(const RankOperands& o, Quant q, Fp8Format f) {
  const std::vector<float> a = dequantized_a(o, q, f);
  const std::vector<float> b = dequantized_b(o, q, f);
  std::vector<float> c(size_t(o.a.rows * o.b.rows));
  gemm_f32(a.data(), b.data(), o.a.rows, o.b.rows, o.a.cols, c.data());
  return c;
}

std::vector<double> truth_partial(const RankOperands& o, Quant q, Fp8Format f) {
  const std::vector<float> af = dequantized_a(o, q, f);
  const std::vector<float> bf = dequantized_b(o, q, f);
  const std::vector<double> a(af.begin(), af.end()), b(bf.begin(), bf.end());
  std::vector<double> c(size_t(o.a.rows * o.b.rows));
  gemm_f64(a.data(), b.data(), o.a.rows, o.b.rows, o.a.cols, c.data());
  return c;
}

std::vector<float> emulated_partial(const RankOperands& o, Quant q, Fp8Format decode_as) {
  const int64_t m = o.a.rows, n = o.b.rows, k = o.a.cols;
  GEMMAR_CHECK(o.b.cols == k);
  const auto& table = decode_table(decode_as);
  const int64_t bk = scale_k_block(q, k);
  // One scale per row over the whole K (ptpc): the scales multiply the finished dot once, no block accumulation.
  const bool whole_k = quant_traits(q).a.k == 0;
  std::vector<float> acc(size_t(m * n), 0.0f);
  std::vector<float> ablk(size_t(m * bk)), bblk(size_t(n * bk)), dot(size_t(m * n)), sb(static_cast<size_t>(n));
  for (int64_t k0 = 0; k0 < k; k0 += bk) {
    decode_block(o.a, k0, bk, table, ablk.data());
    decode_block(o.b, k0, bk, table, bblk.data());
    gemm_f32(ablk.data(), bblk.data(), m, n, bk, dot.data());
    // B's scales of this K block, looked up once per column rather than once per element: the per-element
    // lookup was a quarter of the detection matrix's time. The arithmetic below is unchanged.
    for (int64_t j = 0; j < n; ++j) sb[size_t(j)] = o.b.scales[size_t(scale_index(q, Operand::B, n, k, j, k0))];
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      const float sa = o.a.scales[size_t(scale_index(q, Operand::A, m, k, i, k0))];
      float* c = acc.data() + i * n;
      const float* d = dot.data() + i * n;
      if (whole_k) {
        for (int64_t j = 0; j < n; ++j) c[j] = numerics::ptpc_epilogue(d[j], sa, sb[size_t(j)]);
      } else {
        for (int64_t j = 0; j < n; ++j) c[j] = numerics::block_accumulate(c[j], d[j], sa, sb[size_t(j)]);
      }
    }
  }
  return acc;
}

GemmBenchResult bench_gemm_f32(int64_t m, int64_t n, int64_t k, int repetitions) {
  GEMMAR_CHECK(m > 0 && n > 0 && k > 0 && repetitions > 0);
  std::vector<float> a(size_t(m * k)), b(size_t(n * k)), c(size_t(m * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(normal_sample(7, 0, Tensor::A, 0, int64_t(i)));
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(normal_sample(7, 0, Tensor::B, 0, int64_t(i)));
  GemmBenchResult r;
  r.m = m;
  r.n = n;
  r.k = k;
  r.repetitions = repetitions;
#ifdef _OPENMP
  r.threads = omp_get_max_threads();
#else
  r.threads = 1;
#endif
  gemm_f32(a.data(), b.data(), m, n, k, c.data());  // warm-up: page faults, Eigen's blocking buffers
  r.seconds_best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repetitions; ++i) {
    const std::clock_t c0 = std::clock();
    const auto t0 = std::chrono::steady_clock::now();
    gemm_f32(a.data(), b.data(), m, n, k, c.data());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    if (s < r.seconds_best) {
      r.seconds_best = s;
      r.cpu_seconds_best = cpu;
    }
  }
  const double flop = 2.0 * double(m) * double(n) * double(k);
  r.gflops = flop / r.seconds_best * 1e-9;
  r.gflops_per_cpu_second = r.cpu_seconds_best > 0 ? flop / r.cpu_seconds_best * 1e-9 : 0.0;
  return r;
}

}  // namespace gemmar::reference
