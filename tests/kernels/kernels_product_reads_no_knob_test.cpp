// The product keeps one winner per concern, chosen without the environment: no source of kernels/ reads the
// environment at all, no product source (common, reference, model, kernels, validate) names a retired measurement
// variable or the lab bench's, and none includes the lab or links it (lab/README.md). A grep over the source tree.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = GEMMAR_TEST_SOURCE_DIR;

struct Source {
  std::string path;  // relative to the source tree
  std::string text;
};

std::vector<Source> sources_under(const std::string& dir) {
  std::vector<Source> out;
  for (const auto& e : fs::recursive_directory_iterator(kRoot / dir)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".cu" && ext != ".cuh" && ext != ".hpp" && ext != ".cpp" && ext != ".h" && ext != ".txt") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    out.push_back({fs::relative(e.path(), kRoot).string(), ss.str()});
  }
  return out;
}

const char* const kProductDirs[] = {"common", "reference", "model", "kernels", "validate"};

// The variables that chose measurement variants inside the product before the lab, and the lab bench's own.
const char* const kMeasurementVariables[] = {"GEMMAR_GEMM_KERNEL", "GEMMAR_WIDEN_KERNEL",    "GEMMAR_PUT_PRIORITY",
                                             "GEMMAR_GUARD_PARTS", "GEMMAR_FUSED_SDMA_GEMM", "GEMMAR_GPU_GRAPH",
                                             "GEMMAR_BENCH_ITERS", "GEMMAR_BENCH_BURST"};

TEST(KernelsProductReadsNoKnob, NoKernelsSourceReadsTheEnvironment) {
  const std::vector<Source> src = sources_under("kernels");
  ASSERT_GT(src.size(), 10u) << "kernels/ not found under " << kRoot;
  for (const Source& s : src) {
    EXPECT_EQ(s.text.find("getenv"), std::string::npos) << s.path << " reads the environment";
    EXPECT_EQ(s.text.find("secure_getenv"), std::string::npos) << s.path;
  }
}

TEST(KernelsProductReadsNoKnob, NoProductSourceNamesAMeasurementVariable) {
  for (const char* dir : kProductDirs)
    for (const Source& s : sources_under(dir))
      for (const char* var : kMeasurementVariables)
        EXPECT_EQ(s.text.find(var), std::string::npos) << s.path << " names " << var;
}

TEST(KernelsProductReadsNoKnob, TheProductNeitherIncludesNorLinksTheLab) {
  for (const char* dir : kProductDirs)
    for (const Source& s : sources_under(dir)) {
      EXPECT_EQ(s.text.find("#include \"lab/"), std::string::npos) << s.path << " includes the lab";
      if (s.path.size() > 14 && s.path.compare(s.path.size() - 14, 14, "CMakeLists.txt") == 0) {
        EXPECT_EQ(s.text.find("gemmar_lab"), std::string::npos) << s.path << " links the lab";
      }
    }
}

}  // namespace
