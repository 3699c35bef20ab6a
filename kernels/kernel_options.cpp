#include "kernels/kernel_options.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gemmar::kernels {

namespace {
bool is(const char* env, const char* name) { return std::strcmp(env, name) == 0; }
}  // namespace

KernelOptions kernel_options_from_env() {
  KernelOptions o;
  if (const char* env = std::getenv("GEMMAR_GEMM_KERNEL"); env && *env) {
    // The names, in the order the warning lists them (kernel_options.hpp and docs/environment.md describe each).
    static constexpr struct {
      const char* name;
      GemmKernel kind;
    } kGemmNames[] = {{"wgmma4", GemmKernel::Wgmma4},
                      {"wgmma4l0", GemmKernel::Wgmma4InStep},
                      {"wgmma4mc", GemmKernel::Wgmma4Cluster},
                      {"wgmma4mcm", GemmKernel::Wgmma4ClusterM},
                      {"wgmma4mc4", GemmKernel::Wgmma4Cluster2x2},
                      {"wgmma4n", GemmKernel::Wgmma4BandMajor},
                      {"wgmma", GemmKernel::Wgmma},
                      {"mma", GemmKernel::Mma}};
    bool known = false;
    std::string names;
    for (const auto& g : kGemmNames) {
      if (is(env, g.name)) {
        o.gemm = g.kind;
        known = true;
      }
      names += names.empty() ? g.name : std::string("|") + g.name;
    }
    if (!known)
      std::fprintf(stderr, "gemmar: GEMMAR_GEMM_KERNEL=%s is not one of %s: the default runs\n", env, names.c_str());
  }
  if (const char* env = std::getenv("GEMMAR_WIDEN_KERNEL"); env && *env) {
    if (is(env, "hw16"))
      o.widen = WidenKernel::Hw16;
    else if (is(env, "int16"))
      o.widen = WidenKernel::Int16;
    else if (is(env, "ceiling"))
      o.widen = WidenKernel::Ceiling;
    else if (is(env, "bulk-store"))
      o.widen = WidenKernel::BulkStore;
    else if (is(env, "int8-st"))
      o.widen = WidenKernel::Int8Registers;
    else if (!is(env, "int8"))
      std::fprintf(
          stderr,
          "gemmar: GEMMAR_WIDEN_KERNEL=%s is not one of int8|int8-st|bulk-store|int16|hw16|ceiling: int8 runs\n", env);
  }
  if (const char* env = std::getenv("GEMMAR_FUSED_SDMA_GEMM"); env && *env) {
    if (is(env, "chunks"))
      o.fused_sdma_gemm = FusedSdmaGemm::Chunks;
    else if (!is(env, "persistent"))
      std::fprintf(stderr, "gemmar: GEMMAR_FUSED_SDMA_GEMM=%s is not one of persistent|chunks: persistent runs\n", env);
  }
  if (const char* env = std::getenv("GEMMAR_PUT_PRIORITY"); env && *env) {
    if (is(env, "low"))
      o.put_priority = PutPriority::Low;
    else if (!is(env, "equal"))
      std::fprintf(stderr, "gemmar: GEMMAR_PUT_PRIORITY=%s is not one of equal|low: equal runs\n", env);
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
    case WidenKernel::BulkStore:
      return "bulk-store";
    case WidenKernel::Int8Registers:
      return "int8-st";
    case WidenKernel::Int8:
      break;
  }
  return "int8";
}

const char* put_priority_name(PutPriority p) { return p == PutPriority::Low ? "low" : "equal"; }

}  // namespace gemmar::kernels
