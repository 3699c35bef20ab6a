// A memory estimate before `run`, `validate` and `verify` start (issue 47): over the memory available it is refused
// up front (exit 2) with the estimate and an option that fits, instead of running silently for minutes and being
// killed by the OOM killer (`run -m 16384 --check-rows 0` on the 24 GB machine: 9 minutes, then killed at 24 GB).
// The estimate lies above every peak measured with /usr/bin/time -v, by less than 30% (the table below).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "support/cli.hpp"
#include "validate/cli/memory.hpp"
#include "validate/harness/run_plan.hpp"

namespace {

namespace fs = std::filesystem;
using gemmar::test::run_gemmar;
using gemmar::test::scratch_dir;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(CliMemory, TheReferenceShapeWithEveryRowIsRefusedInSecondsOnA24GBMachine) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_gemmar({"run", "--backend", "cpu", "-m", "16384", "--check-rows", "0"}, std::nullopt,
                            {"GEMMAR_MEMORY_LIMIT=24G"});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_NE(r.err.find("gemmar run: needs about 27."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("more than the 24.0 GiB available (GEMMAR_MEMORY_LIMIT); --check-rows 8192 fits"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(CliMemory, TheOptionNamedFitsAndRuns) {
  const std::vector<std::string> base{"validate", "--backend", "cpu", "-m",      "1024", "-n",
                                      "1024",     "-k",        "128", "--world", "4",    "--no-report"};
  auto args = base;
  args.insert(args.end(), {"--out", (scratch_dir("memory_fit") / "a").string()});
  auto r = run_gemmar(args, std::nullopt, {"GEMMAR_MEMORY_LIMIT=150M"});
  ASSERT_EQ(r.rc, 2) << r.err;
  const size_t at = r.err.find("--check-rows ", r.err.find("; "));
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string rows = r.err.substr(at + 13, r.err.find(' ', at + 13) - at - 13);
  args = base;
  args.insert(args.end(), {"--out", (scratch_dir("memory_fit") / "b").string(), "--check-rows", rows});
  r = run_gemmar(args, std::nullopt, {"GEMMAR_MEMORY_LIMIT=150M"});
  EXPECT_EQ(r.rc, 0) << rows << ": " << r.err;
}

TEST(CliMemory, VerifyIsRefusedUpFrontToo) {
  const fs::path d = scratch_dir("memory_verify") / "dump";
  ASSERT_EQ(run_gemmar("run --backend cpu -m 512 -n 1024 -k 256 --world 4 --check-rows 32 --dump " + d.string()).rc, 0);
  const auto r = run_gemmar({"verify", d.string()}, std::nullopt, {"GEMMAR_MEMORY_LIMIT=16M"});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("verifying it needs about"), std::string::npos) << r.err;
  EXPECT_EQ(run_gemmar({"verify", d.string()}, std::nullopt, {"GEMMAR_MEMORY_LIMIT=1G"}).rc, 0);
}

TEST(CliMemory, ABadLimitNamesTheVariable) {
  for (const char* bad : {"lots", "-5G", "16Q", "0"}) {
    const auto r = run_gemmar({"run", "--backend", "cpu", "-m", "256", "-n", "1024", "-k", "128", "--world", "4"},
                              std::nullopt, {std::string("GEMMAR_MEMORY_LIMIT=") + bad});
    EXPECT_EQ(r.rc, 2) << bad << r.err;
    EXPECT_NE(r.err.find("GEMMAR_MEMORY_LIMIT"), std::string::npos) << r.err;
  }
  EXPECT_EQ(run_gemmar({"run", "--backend", "cpu", "-m", "256", "-n", "1024", "-k", "128", "--world", "4"},
                       std::nullopt, {"GEMMAR_MEMORY_LIMIT=2GiB"})
                .rc,
            0);
}

// Peak resident sets measured with /usr/bin/time -v on the 2-core machine (2026-12-07, docs/reliability.md
// "Memory"): the estimate must lie above each, by less than 30%.
TEST(CliMemory, TheEstimateLiesJustAboveTheMeasuredPeaks) {
  struct Measured {
    std::vector<int64_t> m;
    int64_t n, k, check_rows;
    int iterations, configs;
    int64_t peak_kib;
  };
  const Measured table[] = {
      {{1024}, 2048, 512, 0, 1, 1, 378056},     {{1024}, 2048, 512, 0, 4, 1, 509104},
      {{2048}, 2048, 512, 0, 4, 1, 1012544},    {{1024}, 4096, 512, 0, 4, 1, 1011112},
      {{1024}, 2048, 2048, 0, 4, 1, 508784},    {{2048}, 4096, 512, 0, 8, 1, 2546016},
      {{16384}, 7168, 2048, 256, 4, 1, 547536}, {{16384}, 7168, 2048, 1024, 4, 1, 1766236},
      {{2048}, 2048, 512, 0, 4, 11, 1028596},  // gemmar validate's embedded default
  };
  for (const Measured& t : table) {
    gemmar::RunPlan plan;
    plan.backend = "cpu";
    plan.m_values = t.m;
    plan.request.shape = {t.m.front(), t.n, t.k, 8};
    plan.request.check_rows = t.check_rows;
    plan.request.iterations = t.iterations;
    plan.configs = t.configs == 1 ? std::vector<gemmar::Config>{gemmar::Config{}} : gemmar::all_configs({});
    const double est = double(gemmar::plan_memory_bytes(plan)), peak = double(t.peak_kib) * 1024;
    EXPECT_GT(est, peak) << "M=" << t.m.front() << " N=" << t.n << " rows=" << t.check_rows;
    EXPECT_LT(est, 1.3 * peak) << "M=" << t.m.front() << " N=" << t.n << " rows=" << t.check_rows;
  }
}

}  // namespace
