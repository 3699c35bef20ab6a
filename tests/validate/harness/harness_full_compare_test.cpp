// The GPU backend's device-side full compare (kernels/check/output_compare.hpp) as the driver judges it: one wrong
// element in a row the sampled check never reads fails the run, named by rank, row, column and iteration. The
// device kernel itself runs on the GPU only (scripts/device_verify_run.sh); here a backend wraps the CPU
// emulation and reports what the device compare would.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "validate/harness/output_check.hpp"
#include "validate/harness/run_driver.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar {
namespace {

// The CPU emulation's result plus a full compare per checked iteration: clean, or with `wrong_at` (flat index of
// the last rank's output) counted wrong in iteration `wrong_iteration`.
class FullCompareBackend final : public Backend {
 public:
  FullCompareBackend(int64_t wrong_at, int wrong_iteration) : wrong_at_(wrong_at), wrong_iteration_(wrong_iteration) {}
  std::string name() const override { return "gpu"; }
  BackendResult execute(const RunRequest& req, const std::vector<int64_t>& rows) override {
    BackendResult res = cpu_->execute(req, rows);
    const int W = req.shape.world;
    std::vector<int> index = res.iteration_index;
    if (index.empty()) index.push_back(0);
    for (int it : index) {
      FullCompare fc;
      fc.iteration = it;
      fc.elements = req.shape.m * req.shape.n * W;
      fc.bytes = 3 * fc.elements * 2;
      fc.us = 1;
      fc.wrong.assign(size_t(W), 0);
      fc.nonfinite.assign(size_t(W), 0);
      fc.first.assign(size_t(W), -1);
      if (wrong_at_ >= 0 && it == wrong_iteration_) {
        fc.wrong[size_t(W - 1)] = 1;
        fc.first[size_t(W - 1)] = wrong_at_;
      }
      res.full_compares.push_back(fc);
    }
    return res;
  }

 private:
  std::unique_ptr<Backend> cpu_ = make_cpu_backend();
  int64_t wrong_at_;
  int wrong_iteration_;
};

RunRequest request() {
  RunRequest req;
  req.shape = Shape{4 * 128 * 4, 1024, 256, 4};
  req.config.mode = Mode::FusedSdma;
  req.config.gather_dtype = WireDtype::Fp8;
  req.check_rows = 64;
  req.iterations = 3;
  req.seed = 11;
  return req;
}

// A row the sampled check does not read.
int64_t unsampled_row(const RunRequest& req) {
  const auto rows = output_check::rows_to_check(req.shape, req.config.quant, req.check_rows, req.seed);
  for (int64_t r = req.shape.m - 1; r >= 0; --r)
    if (std::find(rows.begin(), rows.end(), r) == rows.end()) return r;
  return -1;
}

TEST(HarnessFullCompare, CleanFullCompareCoversEveryElementAndPasses) {
  const RunRequest req = request();
  FullCompareBackend backend(-1, 0);
  const RunOutcome o = run_and_check(backend, req);
  EXPECT_TRUE(o.verdict.pass);
  EXPECT_EQ(o.record.checked_elements, req.shape.m * req.shape.n * req.shape.world);
  EXPECT_EQ(o.record.wrong_elements, 0);
  EXPECT_TRUE(o.record.full_compare_us.has_value());
}

TEST(HarnessFullCompare, OneWrongElementInAnUnsampledRowFailsNamed) {
  const RunRequest req = request();
  const int64_t row = unsampled_row(req);
  ASSERT_GE(row, 0);
  FullCompareBackend backend(row * req.shape.n + 5, 2);
  const RunOutcome o = run_and_check(backend, req);
  EXPECT_FALSE(o.verdict.pass);
  EXPECT_EQ(o.record.wrong_elements, 1);
  EXPECT_EQ(o.record.wrong_elements_per_iteration, (std::vector<int64_t>{0, 0, 1}));
  const std::string named = "rank 3, row " + std::to_string(row) + ", col 5, iteration 2";
  bool found = false;
  for (const auto& f : o.verdict.findings)
    if (f.code == "COLLECTIVE_MISMATCH") found = f.message.find(named) != std::string::npos;
  EXPECT_TRUE(found) << "expected '" << named << "' in COLLECTIVE_MISMATCH";
}

}  // namespace
}  // namespace gemmar
