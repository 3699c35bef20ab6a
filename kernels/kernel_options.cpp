#include "kernels/kernel_options.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gemmar::kernels {

namespace {
bool is(const char* env, const char* name) { return std::strcmp(env, name) == 0; }
}  // namespace

KernelOptions kernel_options_from_env() {
  KernelOptions o;
  if (const char* env = std::getenv("GEMMAR_GEMM_KERNEL"); env && *env) {
    if (is(env, "mma"))
      o.gemm = GemmKernel::Mma;
    else if (is(env, "wgmma"))
      o.gemm = GemmKernel::Wgmma;
    else if (is(env, "wgmma4l0"))
      o.gemm = GemmKernel::Wgmma4InStep;
    else if (is(env, "wgmma4mc"))
      o.gemm = GemmKernel::Wgmma4Cluster;
    else if (is(env, "wgmma4mc4"))
      o.gemm = GemmKernel::Wgmma4Cluster2x2;
    else if (is(env, "wgmma4mcm"))
      o.gemm = GemmKernel::Wgmma4ClusterM;
    else if (is(env, "wgmma4n"))
      o.gemm = GemmKernel::Wgmma4BandMajor;
    else if (!is(env, "wgmma4"))
      std::fprintf(stderr,
                   "gemmar: GEMMAR_GEMM_KERNEL=%s is not one of "
                   "wgmma4|wgmma4l0|wgmma4mc|wgmma4mcm|wgmma4mc4|wgmma4n|wgmma|mma: the default runs\n",
                   env);
  }
  if (const char* env = std::getenv("GEMMAR_WIDEN_KERNEL"); env && *env) {
    if (is(env, "hw16"))
      o.widen = WidenKernel::Hw16;
    else if (is(env, "int16"))
      o.widen = WidenKernel::Int16;
    else if (is(env, "ceiling"))
      o.widen = WidenKernel::Ceiling;
    else if (!is(env, "int8"))
      std::fprintf(stderr, "gemmar: GEMMAR_WIDEN_KERNEL=%s is not one of int8|int16|hw16|ceiling: int8 runs\n", env);
  }
  if (const char* env = std::getenv("GEMMAR_FUSED_SDMA_GEMM"); env && *env) {
    if (is(env, "chunks"))
      o.fused_sdma_gemm = FusedSdmaGemm::Chunks;
    else if (!is(env, "persistent"))
      std::fprintf(stderr, "gemmar: GEMMAR_FUSED_SDMA_GEMM=%s is not one of persistent|chunks: persistent runs\n", env);
  }
  const char* graph = std::getenv("GEMMAR_GPU_GRAPH");
  o.graph = !(graph && is(graph, "0"));
  if (const char* parts = std::getenv("GEMMAR_GUARD_PARTS")) {
    o.guard_passes.partial = std::strstr(parts, "partial") != nullptr;
    o.guard_passes.output = std::strstr(parts, "output") != nullptr;
    o.guard_passes.wire = std::strstr(parts, "wire") != nullptr;
    o.guard_passes.gemm = std::strstr(parts, "gemm") != nullptr;
  }
  return o;
}

const char* widen_kernel_name(WidenKernel k) {
  switch (k) {
    case WidenKernel::Int16:
      return "int16";
    case WidenKernel::Hw16:
      return "hw16";
    case WidenKernel::Ceiling:
      return "ceiling";
    case WidenKernel::Int8:
      break;
  }
  return "int8";
}

}  // namespace gemmar::kernels
