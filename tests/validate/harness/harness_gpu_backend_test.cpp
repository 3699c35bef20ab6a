// The GPU backend plug-in as a CPU-only build sees it: it must exist, say it was not built, and make
// `gemmar run --backend gpu` fail with the environment exit code (3) and a message naming the build options.
#include <gtest/gtest.h>

#include "support/cli.hpp"

#include <cstdio>
#include <string>

#include "common/errors.hpp"
#include "validate/harness/run_driver.hpp"

namespace {

#ifndef GEMMAR_HAVE_GPU
TEST(KernelsGpuBackend, CpuOnlyBuildReportsNotBuilt) { EXPECT_FALSE(gemmar::gpu_backend_built()); }

TEST(KernelsGpuBackend, CpuOnlyBuildThrowsEnvironmentErrorNamingTheOptions) {
  try {
    (void)gemmar::make_gpu_backend();
    FAIL() << "make_gpu_backend() returned in a build without kernels";
  } catch (const gemmar::EnvironmentError& e) {
    EXPECT_EQ(e.exit_code(), gemmar::kExitEnvironment);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("GEMMAR_HIP"), std::string::npos) << msg;
    EXPECT_NE(msg.find("GEMMAR_CUDA"), std::string::npos) << msg;
  }
}

TEST(KernelsGpuBackend, CliRunBackendGpuExitsThreeWithMessage) {
  const auto r = gemmar::test::run_gemmar("run --backend gpu -m 1024 -n 1024 -k 256");
  const std::string out = r.out + r.err;
  EXPECT_EQ(r.rc, 3) << out;
  EXPECT_NE(out.find("GEMMAR_HIP/GEMMAR_CUDA"), std::string::npos) << out;
}
#else
TEST(KernelsGpuBackend, GpuBuildReportsBuilt) { EXPECT_TRUE(gemmar::gpu_backend_built()); }
#endif

}  // namespace
