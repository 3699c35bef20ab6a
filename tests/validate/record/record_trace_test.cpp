// Phase timings from kernel traces: rocprofv3 CSV and torch's Chrome trace, the default name patterns and
// their overrides.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/errors.hpp"
#include "validate/record/trace_reader.hpp"

namespace gemmar {
namespace {

const std::string kData = GEMMAR_TEST_DATA_DIR;

TEST(CheckTrace, RocprofCsvPhasesPerIterationMaxOverAgents) {
  const auto t = read_trace(kData + "/check/rocprof_fused_sdma_bf16.csv", default_phase_patterns());
  EXPECT_EQ(t.format, "rocprofv3-csv");
  EXPECT_EQ(t.devices, 8);
  EXPECT_EQ(t.iterations, 3);
  EXPECT_EQ(t.kernels_unmatched, 24);  // the elementwise kernel, once per iteration per agent
  // The fixture's durations are the in-server bf16 column jittered by at most 1%.
  EXPECT_NEAR(t.phases_us.at("gemm"), 441.9, 441.9 * 0.011);
  EXPECT_NEAR(t.phases_us.at("drain"), 180.2, 180.2 * 0.011);
  EXPECT_NEAR(t.phases_us.at("reduce"), 41.7, 41.7 * 0.011);
  EXPECT_NEAR(t.phases_us.at("gather"), 437.8, 437.8 * 0.011);
  EXPECT_EQ(t.phases_us.count("pull"), 0u);
}

TEST(CheckTrace, ChromeTraceKernelEventsOnly) {
  const auto t = read_trace(kData + "/check/torch_fused_sdma_fp8_lsa.json", default_phase_patterns());
  EXPECT_EQ(t.format, "chrome-trace");
  EXPECT_EQ(t.iterations, 2);
  EXPECT_EQ(t.devices, 1);  // the runtime events on pid 1 are host-side and skipped
  EXPECT_NEAR(t.phases_us.at("pull"), 230.5, 1e-9);
  EXPECT_NEAR(t.phases_us.at("quantize"), 11.9, 1e-9);
  EXPECT_NEAR(t.phases_us.at("gemm"), 441.3, 1e-9);
  EXPECT_EQ(t.kernels_unmatched, 0);
}

TEST(CheckTrace, OverridesReplaceOnePhaseAndMapFilesReplaceAll) {
  auto p = default_phase_patterns();
  apply_phase_override(p, "gather=never_matches_anything");
  auto t = read_trace(kData + "/check/rocprof_fused_sdma_bf16.csv", p);
  EXPECT_EQ(t.phases_us.count("gather"), 0u);
  apply_phase_override(p, "elementwise=vectorized_elementwise");
  t = read_trace(kData + "/check/rocprof_fused_sdma_bf16.csv", p);
  EXPECT_GT(t.phases_us.at("elementwise"), 4.0);
  EXPECT_THROW(apply_phase_override(p, "gemm=(unclosed"), UsageError);
  EXPECT_THROW(apply_phase_override(p, "no-equals-sign"), UsageError);

  const auto path = std::filesystem::temp_directory_path() / ("gemmar_phase_map_" + std::to_string(::getpid()));
  { std::ofstream(path) << "# only two phases\ngemm=_gemm\nall=gemm_ar\n"; }
  const auto m = load_phase_map(path.string());
  ASSERT_EQ(m.size(), 2u);
  t = read_trace(kData + "/check/rocprof_fused_sdma_bf16.csv", m);
  EXPECT_EQ(t.phases_us.size(), 2u);
  { std::ofstream(path) << "{\"gemm\": 3}"; }
  EXPECT_THROW(load_phase_map(path.string()), UsageError);
  std::filesystem::remove(path);
}

TEST(CheckTrace, UnreadableTracesAreUsageErrorsNamingTheFile) {
  EXPECT_THROW(read_trace("/nonexistent.csv", default_phase_patterns()), UsageError);
  const auto path = std::filesystem::temp_directory_path() / ("gemmar_bad_trace_" + std::to_string(::getpid()));
  { std::ofstream(path) << "a,b,c\n1,2,3\n"; }
  try {
    read_trace(path.string(), default_phase_patterns());
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("Kernel_Name"), std::string::npos) << e.what();
  }
  { std::ofstream(path) << "\"Kernel_Name\",\"Start_Timestamp\",\"End_Timestamp\"\n\"gemm_k\",\"10\",\"5\"\n"; }
  EXPECT_THROW(read_trace(path.string(), default_phase_patterns()), UsageError);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace gemmar
