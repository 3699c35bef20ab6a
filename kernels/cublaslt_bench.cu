// The vendor ceiling for our GEMM: cuBLASLt's fp8 e4m3 GEMM at the same shape (D = A * B^T, bf16 out), timed
// with events. Tries the 128-block scaling of A (1x128) and B (128x128) first, as our blockscale GEMM does;
// falls back to per-tensor scales where this cuBLASLt has no block-scaled kernel. AMD builds report no number
// (hipBLASLt is not wired in).
#include <cstdint>
#include <string>
#include <vector>
#include <algorithm>

#include "kernels/gpu_compat.hpp"

#if defined(GEMMAR_GPU_CUDA)
#include <cublasLt.h>
#endif

namespace gemmar::kernels {

// Returns the median time in us (< 0 when unavailable); `mode_out` names the scaling used.
double cublaslt_fp8_gemm_us(int64_t m, int64_t n, int64_t k, int iters, std::string& mode_out) {
#if defined(GEMMAR_GPU_CUDA)
  mode_out = "unavailable";
  void *a = nullptr, *b = nullptr, *d = nullptr, *ws = nullptr;
  float *sa = nullptr, *sb = nullptr;
  const size_t ws_bytes = size_t(64) << 20;
  if (cudaMalloc(&a, size_t(m * k)) || cudaMalloc(&b, size_t(n * k)) || cudaMalloc(&d, size_t(m * n) * 2) ||
      cudaMalloc(&ws, ws_bytes) || cudaMalloc(&sa, size_t(m * (k / 128)) * 8 + 4096) ||
      cudaMalloc(&sb, size_t(m * (k / 128)) * 8 + 4096))
    return -1;
  // Random-looking non-zero fp8 codes (never zeros: they run faster than data), scales near 1/64.
  {
    std::vector<uint8_t> h(size_t(std::max(m, n) * k));
    uint32_t x = 12345;
    for (auto& v : h) {
      x = x * 1664525u + 1013904223u;
      uint8_t c = uint8_t(x >> 24);
      if ((c & 0x7f) == 0x7f) c ^= 0x08;  // avoid NaN codes
      v = uint8_t((c & 0x80) | ((c & 0x7f) % 0x50));  // |value| < 2^3
    }
    cudaMemcpy(a, h.data(), size_t(m * k), cudaMemcpyHostToDevice);
    cudaMemcpy(b, h.data(), size_t(n * k), cudaMemcpyHostToDevice);
    std::vector<float> s(size_t(m * (k / 128)), 1.0f / 64);
    cudaMemcpy(sa, s.data(), s.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(sb, s.data(), size_t((n / 128) * (k / 128)) * 4, cudaMemcpyHostToDevice);
  }
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
  double best = -1;
  for (int attempt = 0; attempt < 2 && best < 0; ++attempt) {
    const bool block = attempt == 0;
    cublasLtMatmulDesc_t op;
    cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
    // Column-major view: D^T [n, m] = (B [n, k])^T-as-stored * A^T: matrix "A" of cuBLASLt is our B.
    const void* scale_first = sb;
    const void* scale_second = sa;
#if CUBLAS_VER_MAJOR > 12 || (CUBLAS_VER_MAJOR == 12 && CUBLAS_VER_MINOR >= 9)
    if (block) {
      const cublasLtMatmulMatrixScale_t s_a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
      const cublasLtMatmulMatrixScale_t s_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &s_a, sizeof(s_a));
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &s_b, sizeof(s_b));
    }
#else
    if (block) continue;
#endif
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_first, sizeof(void*));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_second, sizeof(void*));
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(n), int64_t(k));
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(m), int64_t(k));
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, uint64_t(n), uint64_t(m), int64_t(n));
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof(ws_bytes));
    cublasLtMatmulHeuristicResult_t heur[8];
    int found = 0;
    const float alpha = 1.0f, beta = 0.0f;
    if (cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 8, heur, &found) == CUBLAS_STATUS_SUCCESS &&
        found > 0) {
      cudaStream_t s;
      cudaStreamCreate(&s);
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
      for (int h = 0; h < found; ++h) {
        bool ok = true;
        for (int i = 0; i < 3 && ok; ++i)
          ok = cublasLtMatmul(lt, op, &alpha, b, la, a, lb, &beta, d, lc, d, lc, &heur[h].algo, ws, ws_bytes, s) ==
               CUBLAS_STATUS_SUCCESS;
        if (!ok || cudaStreamSynchronize(s) != cudaSuccess) {
          cudaGetLastError();
          continue;
        }
        std::vector<double> t;
        for (int i = 0; i < iters; ++i) {
          cudaEventRecord(e0, s);
          cublasLtMatmul(lt, op, &alpha, b, la, a, lb, &beta, d, lc, d, lc, &heur[h].algo, ws, ws_bytes, s);
          cudaEventRecord(e1, s);
          cudaEventSynchronize(e1);
          float ms = 0;
          cudaEventElapsedTime(&ms, e0, e1);
          t.push_back(double(ms) * 1e3);
        }
        std::sort(t.begin(), t.end());
        const double med = t[t.size() / 2];
        if (best < 0 || med < best) best = med;
      }
      cudaEventDestroy(e0);
      cudaEventDestroy(e1);
      cudaStreamDestroy(s);
      if (best >= 0) mode_out = block ? "blockscale-128 (A 1x128, B 128x128)" : "per-tensor scales";
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
  }
  cublasLtDestroy(lt);
  cudaFree(a); cudaFree(b); cudaFree(d); cudaFree(ws); cudaFree(sa); cudaFree(sb);
  return best;
#else
  (void)m; (void)n; (void)k; (void)iters;
  mode_out = "not wired on AMD (hipBLASLt)";
  return -1;
#endif
}

}  // namespace gemmar::kernels
