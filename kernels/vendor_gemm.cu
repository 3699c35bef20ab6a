// cuBLASLt's blockscale fp8 GEMM behind kernels/vendor_gemm.hpp. cuBLASLt is column-major: our row-major
// D [m, n] is its D^T [n, m] = B^T-as-stored x A, so cuBLASLt's matrix "A" is our B (k x n, transposed op,
// 128x128 block scales = our [n/128, k/128] row-major) and its "B" is our A (k x m, 1x128 vector scales = our
// [k/128, m] with m contiguous). torch._scaled_mm's blockwise path hands cuBLASLt the same layouts
// (/work/shared/notes/h200-blockscale-gemm-peers.md); the GPU checks (partials vs the fp32 CPU GEMM) confirm it.
#include "kernels/vendor_gemm.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "common/errors.hpp"
#include "kernels/gemm/heuristics.hpp"
#include "kernels/host_check.hpp"

#if defined(GEMMAR_GPU_CUDA)
#include <cublasLt.h>
#endif

namespace gemmar::kernels {

#if defined(GEMMAR_GPU_CUDA) && (CUBLAS_VER_MAJOR > 12 || (CUBLAS_VER_MAJOR == 12 && CUBLAS_VER_MINOR >= 9))
namespace {

#define LT_CHECK(expr)                                                                                               \
  do {                                                                                                               \
    const cublasStatus_t lt_st_ = (expr);                                                                            \
    if (lt_st_ != CUBLAS_STATUS_SUCCESS)                                                                             \
      throw ::gemmar::EnvironmentError(                                                                              \
          std::string("cuBLASLt call failed: ") + #expr + " (status " + std::to_string(int(lt_st_)) + ")", __FILE__, \
          __LINE__);                                                                                                 \
  } while (0)
constexpr size_t kWorkspace = size_t(64) << 20;

struct Plan {
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool chosen = false;
  // One workspace per stream: the W ranks of one device issue their GEMMs on W streams that run concurrently,
  // and cuBLASLt's split-K / stream-K kernels keep partial sums and flags in the workspace (a shared one
  // corrupted the partials on the H200: docs/results/h200-1gpu-2026-12-03-kernels).
  std::map<gpuStream_t, void*> ws;
  ~Plan() {
    for (auto& [st, w] : ws) gpuFree(w);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (op) cublasLtMatmulDescDestroy(op);
    if (lt) cublasLtDestroy(lt);
  }
  void* workspace(gpuStream_t s) {
    void*& w = ws[s];
    if (!w) GPU_CHECK(gpuMalloc(&w, kWorkspace));
    return w;
  }
};

// ptpc (issue 25): cuBLASLt's outer-vector scaling, one fp32 scale per row of its A (our B: [n]) and per column
// of its B (our A: [m]), applied to the fp32 product: the same layouts as our ptpc operands.
Plan& plan_for(int dev, int64_t m, int64_t n, int64_t k, bool ptpc = false) {
  static std::map<std::tuple<int, int64_t, int64_t, int64_t, bool>, std::unique_ptr<Plan>> plans;
  auto& p = plans[{dev, m, n, k, ptpc}];
  if (p) return *p;
  p = std::make_unique<Plan>();
  LT_CHECK(cublasLtCreate(&p->lt));
  LT_CHECK(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  const cublasLtMatmulMatrixScale_t s_a =
      ptpc ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F : CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  const cublasLtMatmulMatrixScale_t s_b =
      ptpc ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &s_a, sizeof(s_a)));
  LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &s_b, sizeof(s_b)));
  LT_CHECK(cublasLtMatrixLayoutCreate(&p->la, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(n), int64_t(k)));
  LT_CHECK(cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(m), int64_t(k)));
  LT_CHECK(cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_16BF, uint64_t(n), uint64_t(m), int64_t(n)));
  return *p;
}

void set_scales(Plan& p, const float* a_scale, const float* b_scale) {
  const void* first = b_scale;  // cuBLASLt's A = our B
  const void* second = a_scale;
  LT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &first, sizeof(void*)));
  LT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &second, sizeof(void*)));
}

cublasStatus_t matmul(Plan& p, const cublasLtMatmulAlgo_t& algo, const uint8_t* a, const uint8_t* b, uint16_t* d,
                      gpuStream_t s) {
  const float alpha = 1.0f, beta = 0.0f;
  return cublasLtMatmul(p.lt, p.op, &alpha, b, p.la, a, p.lb, &beta, d, p.lc, d, p.lc, &algo, p.workspace(s),
                        kWorkspace, s);
}

// Times every heuristic candidate (3 warm-ups, median of 5) and keeps the fastest: cuBLASLt's first choice is
// 3-11% below its best at M <= 8192 on the H200 (shared/notes/h200-blockscale-gemm-peers.md).
void choose(Plan& p, const uint8_t* a, const uint8_t* b, uint16_t* d, gpuStream_t s) {
  cublasLtMatmulPreference_t pref;
  LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspace,
                                                sizeof(kWorkspace)));
  cublasLtMatmulHeuristicResult_t heur[16];
  int found = 0;
  const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(p.lt, p.op, p.la, p.lb, p.lc, p.lc, pref, 16, heur, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (hs != CUBLAS_STATUS_SUCCESS || found <= 0)
    throw EnvironmentError("cuBLASLt has no scaled fp8 algorithm (blockscale or ptpc) for this shape (status " +
                               std::to_string(int(hs)) + ")",
                           __FILE__, __LINE__);
  gpuEvent_t e0, e1;
  GPU_CHECK(gpuEventCreate(&e0));
  GPU_CHECK(gpuEventCreate(&e1));
  double best = -1;
  for (int h = 0; h < found; ++h) {
    bool ok = true;
    for (int i = 0; i < 3 && ok; ++i) ok = matmul(p, heur[h].algo, a, b, d, s) == CUBLAS_STATUS_SUCCESS;
    if (!ok || gpuStreamSynchronize(s) != gpuSuccess) {
      (void)gpuGetLastError();
      continue;
    }
    std::vector<double> t;
    for (int i = 0; i < 5; ++i) {
      GPU_CHECK(gpuEventRecord(e0, s));
      LT_CHECK(matmul(p, heur[h].algo, a, b, d, s));
      GPU_CHECK(gpuEventRecord(e1, s));
      GPU_CHECK(gpuEventSynchronize(e1));
      float ms = 0;
      GPU_CHECK(gpuEventElapsedTime(&ms, e0, e1));
      t.push_back(double(ms));
    }
    std::sort(t.begin(), t.end());
    if (best < 0 || t[2] < best) {
      best = t[2];
      p.algo = heur[h].algo;
      p.chosen = true;
    }
  }
  gpuEventDestroy(e0);
  gpuEventDestroy(e1);
  if (!p.chosen) throw EnvironmentError("no cuBLASLt scaled fp8 algorithm ran on this device", __FILE__, __LINE__);
}

// The plan of this device and shape (made and its algorithm chosen on the first call), then one matmul.
void scaled_gemm(const dev::GemmOperands& op, uint16_t* d, gpuStream_t s, bool ptpc) {
  int dev = 0;
  GPU_CHECK(gpuGetDevice(&dev));
  Plan& p = plan_for(dev, op.m, op.n, op.k, ptpc);
  set_scales(p, op.a_scale, op.b_scale);
  if (!p.chosen) choose(p, op.a, op.b, d, s);
  LT_CHECK(matmul(p, p.algo, op.a, op.b, d, s));
}

}  // namespace

bool vendor_gemm_available() { return true; }
// cuBLASLt's scaled fp8 GEMM takes two of the scale layouts (gemm/heuristics.hpp): 128 x 128 block scaling and
// outer-vector (per-row) scaling; Hopper has no MX GEMM for the 32-wide steps.
bool vendor_gemm_supports(Quant q) {
  const dev::GemmScales s = dev::gemm_scales(q);
  return s == dev::GemmScales::Blockscale || s == dev::GemmScales::PerRow;
}
std::string vendor_gemm_name(Quant q) {
  if (dev::gemm_scales(q) == dev::GemmScales::PerRow) return "cuBLASLt outer-vector fp32 scales (ptpc)";
  if (dev::gemm_scales(q) != dev::GemmScales::Blockscale) return "none (no MX on Hopper)";
  return "cuBLASLt " + std::to_string(int(cublasLtGetVersion())) + " blockscale-128 (A 1x128, B 128x128)";
}

void vendor_gemm(const dev::GemmOperands& op, uint16_t* d, gpuStream_t s) {
  GEMMAR_USAGE_CHECK(vendor_gemm_supports(op.quant), "--gemm-impl cublaslt: ", vendor_gemm_name(op.quant));
  const bool per_row = dev::gemm_scales(op.quant) == dev::GemmScales::PerRow;
  if (per_row) {
    GEMMAR_USAGE_CHECK(op.m > 0 && op.n % 16 == 0 && op.k % 16 == 0, "cuBLASLt ptpc: n and k must be multiples of 16");
  } else {  // the scale blocks tile n and k; m is free (A's scales are per row): cuBLASLt says if it runs it
    GEMMAR_USAGE_CHECK(op.m > 0 && op.n % 128 == 0 && op.k % 128 == 0,
                       "--gemm-impl cublaslt: n and k must be multiples of 128");
  }
  scaled_gemm(op, d, s, per_row);
}

#else  // AMD (hipBLASLt not wired), or a cuBLASLt without block scaling

bool vendor_gemm_available() { return false; }
bool vendor_gemm_supports(Quant) { return false; }
std::string vendor_gemm_name(Quant) { return "unavailable (needs cuBLASLt >= 12.9 on NVIDIA; hipBLASLt is not wired)"; }
void vendor_gemm(const dev::GemmOperands&, uint16_t*, gpuStream_t) {
  throw UsageError("--gemm-impl cublaslt: " + vendor_gemm_name());
}

#endif

}  // namespace gemmar::kernels
