// Relaxed rows (mori's --relaxed-rows: M padded to a multiple of W only, a BLOCK_M tile straddling two owners)
// through the same driver `gemmar run` uses: the CPU backend runs them, every row checked, clean on every wire pair and
// with the fault that a moved owner would hide; a backend that pads M is refused such a run (exit 2) rather than
// handed a padded run in its place, and one that runs relaxed rows but not a given request of them (the GPU with
// --guard) is refused that request with its reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "common/faults.hpp"
#include "validate/harness/run_driver.hpp"

namespace gemmar {
namespace {

// W = 4, blockscale (BLOCK_M 128): M = 1040 is not a multiple of W * BLOCK_M = 512; each rank owns 260 rows (3 bands,
// the last of 4 rows), where the padded plan would give 384.
RunRequest relaxed_request(WireDtype scatter, WireDtype gather, const std::string& inject) {
  RunRequest req;
  req.shape = Shape{1040, 1024, 128, 4};
  req.config.mode = Mode::FusedSdma;
  req.config.scatter_dtype = scatter;
  req.config.gather_dtype = gather;
  req.config.gather_transport = Transport::Sdma;
  req.config.chunk_bands = 1;
  req.config.relaxed_rows = true;
  req.inject = parse_faults(inject);
  req.seed = 91;
  req.check_rows = 0;  // every row: the rows that move to another owner are the point
  req.iterations = 2;
  return req;
}

std::string codes(const Verdict& v) {
  std::string s;
  for (const auto& f : v.findings) s += f.code + ": " + f.message + "\n";
  return s;
}

bool has_error(const Verdict& v, const std::string& code) {
  return std::any_of(v.findings.begin(), v.findings.end(),
                     [&](const Finding& f) { return f.code == code && f.severity == Severity::Error; });
}

TEST(HarnessRelaxedRows, TheCpuBackendRunsThemCleanOnEveryWirePairWithEveryRowChecked) {
  auto backend = make_cpu_backend();
  for (WireDtype scatter : {WireDtype::Bf16, WireDtype::Fp8})
    for (WireDtype gather : {WireDtype::Bf16, WireDtype::Fp8}) {
      const RunOutcome o = run_and_check(*backend, relaxed_request(scatter, gather, "none"));
      const std::string what = std::string("scatter ") + to_string(scatter) + " gather " + to_string(gather);
      EXPECT_TRUE(o.verdict.pass) << what << "\n" << codes(o.verdict);
      EXPECT_TRUE(o.verdict.findings.empty()) << what << "\n" << codes(o.verdict);
      EXPECT_TRUE(o.record.config.relaxed_rows) << what;
      ASSERT_EQ(o.record.wrong_elements_per_iteration.size(), 2u) << what;
      for (int64_t w : o.record.wrong_elements_per_iteration) EXPECT_EQ(w, 0) << what;
    }
  // Sampled rows, as `gemmar run` checks by default: drawn from the relaxed slices (260 rows each), never from the
  // padded plan's (384), whose last slice would hold rows past M.
  RunRequest sampled = relaxed_request(WireDtype::Fp8, WireDtype::Fp8, "none");
  sampled.check_rows = 64;
  const RunOutcome o = run_and_check(*backend, sampled);
  EXPECT_TRUE(o.verdict.pass && o.verdict.findings.empty()) << codes(o.verdict);
  ASSERT_EQ(o.record.per_slice_rel_l2.size(), 4u);
  for (double x : o.record.per_slice_rel_l2) EXPECT_TRUE(std::isfinite(x) && x < 0.05) << x;
}

TEST(HarnessRelaxedRows, ASilentScatterIsCaughtOnTheRelaxedSlices) {
  auto backend = make_cpu_backend();
  const RunOutcome o = run_and_check(*backend, relaxed_request(WireDtype::Bf16, WireDtype::Bf16, "silent-scatter"));
  EXPECT_FALSE(o.verdict.pass);
  EXPECT_TRUE(has_error(o.verdict, "SILENT_TRANSFER")) << codes(o.verdict);
}

// A backend whose kernels put whole BLOCK_M bands per owner (as the GPU's did before issue 45): the default refusal.
class PaddingOnlyBackend final : public Backend {
 public:
  std::string name() const override { return "padding-only"; }
  BackendResult execute(const RunRequest&, const std::vector<int64_t>&) override {
    ADD_FAILURE() << "a relaxed run reached a backend that pads M";
    return {};
  }
};

TEST(HarnessRelaxedRows, ABackendThatPadsMIsRefusedTheRunWithExitTwo) {
  PaddingOnlyBackend backend;
  try {
    run_and_check(backend, relaxed_request(WireDtype::Bf16, WireDtype::Bf16, "none"));
    FAIL() << "no refusal";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("--relaxed-rows"), std::string::npos) << msg;
    EXPECT_NE(msg.find("padding-only"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cpu backend"), std::string::npos) << msg;
  }
}

// A backend like the GPU's: it runs relaxed rows but refuses them with --guard, in its own words.
class NoGuardBackend final : public Backend {
 public:
  std::string name() const override { return "no-guard"; }
  BackendResult execute(const RunRequest&, const std::vector<int64_t>&) override {
    ADD_FAILURE() << "a refused relaxed run reached the backend";
    return {};
  }
  std::string relaxed_rows_refusal(const RunRequest& req) const override {
    return req.guard ? "runs them, but not with --guard" : "";
  }
};

TEST(HarnessRelaxedRows, ABackendRefusesTheRequestsItDoesNotRunWithItsReason) {
  NoGuardBackend backend;
  RunRequest req = relaxed_request(WireDtype::Bf16, WireDtype::Bf16, "none");
  req.guard = true;
  try {
    run_and_check(backend, req);
    FAIL() << "no refusal";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("--relaxed-rows: the no-guard backend runs them, but not with --guard"), std::string::npos)
        << msg;
  }
}

}  // namespace
}  // namespace gemmar
