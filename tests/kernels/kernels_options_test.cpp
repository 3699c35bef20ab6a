// kernel_options_from_env: every documented GEMMAR_GEMM_KERNEL name selects its variant, an unknown one keeps the
// default (the launchers never read the environment, so this is the one place the names are parsed). Plain C++:
// kernels/kernel_options.cpp is compiled into this test on the CPU build, which has no GPU toolchain.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel_options.hpp"

namespace {

using gemmar::kernels::GemmKernel;
using gemmar::kernels::kernel_options_from_env;

// Sets one variable for the scope and restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = std::pair<bool, std::string>{true, old};
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.first)
      ::setenv(name_, old_.second.c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::pair<bool, std::string> old_{false, ""};
};

TEST(KernelOptionsFromEnv, EveryDocumentedGemmKernelNameSelectsItsVariant) {
  const std::vector<std::pair<const char*, GemmKernel>> names = {
      {"wgmma4", GemmKernel::Wgmma4},
      {"wgmma4l0", GemmKernel::Wgmma4InStep},
      {"wgmma4mc", GemmKernel::Wgmma4Cluster},
      {"wgmma4mcm", GemmKernel::Wgmma4ClusterM},
      {"wgmma4mc4", GemmKernel::Wgmma4Cluster2x2},
      {"wgmma4n", GemmKernel::Wgmma4BandMajor},
      {"wgmma", GemmKernel::Wgmma},
      {"mma", GemmKernel::Mma},
  };
  for (const auto& [name, kind] : names) {
    const ScopedEnv env("GEMMAR_GEMM_KERNEL", name);
    EXPECT_EQ(kernel_options_from_env().gemm, kind) << name;
  }
}

TEST(KernelOptionsFromEnv, UnsetOrUnknownGemmKernelKeepsTheDefault) {
  {
    const ScopedEnv env("GEMMAR_GEMM_KERNEL", "");
    EXPECT_EQ(kernel_options_from_env().gemm, GemmKernel::Wgmma4);
  }
  {
    const ScopedEnv env("GEMMAR_GEMM_KERNEL", "wgmma4mcm ");  // names match exactly
    EXPECT_EQ(kernel_options_from_env().gemm, GemmKernel::Wgmma4);
  }
}

TEST(KernelOptionsFromEnv, GraphAndFusedSdmaChoicesFollowTheirVariables) {
  {
    const ScopedEnv graph("GEMMAR_GPU_GRAPH", "0");
    const ScopedEnv fused("GEMMAR_FUSED_SDMA_GEMM", "chunks");
    const auto o = kernel_options_from_env();
    EXPECT_FALSE(o.graph);
    EXPECT_EQ(o.fused_sdma_gemm, gemmar::kernels::FusedSdmaGemm::Chunks);
  }
  const ScopedEnv graph("GEMMAR_GPU_GRAPH", "1");
  EXPECT_TRUE(kernel_options_from_env().graph);
}

TEST(KernelOptionsFromEnv, PutPriorityIsEqualUnlessLowIsNamed) {
  using gemmar::kernels::PutPriority;
  {
    const ScopedEnv empty("GEMMAR_PUT_PRIORITY", "");  // empty is unset
    EXPECT_EQ(kernel_options_from_env().put_priority, PutPriority::Equal);
  }
  {
    const ScopedEnv prio("GEMMAR_PUT_PRIORITY", "low");
    EXPECT_EQ(kernel_options_from_env().put_priority, PutPriority::Low);
  }
  {
    const ScopedEnv prio("GEMMAR_PUT_PRIORITY", "high");  // unknown: warns, keeps the default
    EXPECT_EQ(kernel_options_from_env().put_priority, PutPriority::Equal);
  }
  EXPECT_STREQ(gemmar::kernels::put_priority_name(PutPriority::Low), "low");
}

}  // namespace
