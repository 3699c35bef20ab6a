// One record, one judge: every RESULT_JSON line `gemmar run` prints, fed back through `gemmar check`, gets the
// same verdict and the same finding codes, for a clean run and for every fault class of common/faults.hpp.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/faults.hpp"
#include "support/cli.hpp"
#include "validate/record/python_json.hpp"

namespace {

using gemmar::test::run_gemmar;

std::multiset<std::string> codes_of(const nlohmann::json& findings) {
  std::multiset<std::string> c;
  for (const auto& f : findings) c.insert(f.at("code").get<std::string>() + "/" + f.at("severity").get<std::string>());
  return c;
}

std::string spelled(const std::string& spelling) {
  if (spelling == "perturb-rank=R") return "perturb-rank=2";
  if (spelling == "pull-blocks=N") return "pull-blocks=8";
  return spelling;
}

TEST(CliRunCheck, EveryInjectedRunGetsTheSameCodesFromRunAndFromCheck) {
  std::vector<std::string> faults{"none"};
  for (const auto& f : gemmar::fault_table())
    if (!f.gpu_only) faults.push_back(spelled(f.spelling));
  int compared = 0;
  for (const std::string transport : {"sdma", "lsa"}) {
    for (const auto& fault : faults) {
      const auto run =
          run_gemmar({"run", "--backend", "cpu", "-m", "1024", "-n", "1024", "-k", "256", "--world", "4", "--mode",
                      "fused-sdma", "--gather-dtype", "fp8", "--gather-transport", transport, "--inject", fault});
      // A fault with nothing to act on in this config (the fault table's acts: the sdma gather has no pull kernel
      // to mis-size, the lsa gather is a CU pull, not copy-engine puts) is refused, not run clean.
      gemmar::Config cfg;
      cfg.mode = gemmar::Mode::FusedSdma;
      cfg.gather_dtype = gemmar::WireDtype::Fp8;
      cfg.gather_transport = transport == "sdma" ? gemmar::Transport::Sdma : gemmar::Transport::Lsa;
      const gemmar::Faults parsed = gemmar::parse_faults(fault);
      bool applies = fault != "none";
      for (const auto& f : gemmar::fault_table())
        if (f.present(parsed)) applies = applies && f.acts(parsed, {cfg, {1024, 1024, 256, 4}, 4});
      ++compared;
      if (fault != "none" && !applies) {
        EXPECT_EQ(run.rc, 2) << transport << " " << fault << ": " << run.err;
        EXPECT_NE(run.err.find("--inject " + fault + ": does nothing"), std::string::npos) << run.err;
        continue;
      }
      ASSERT_TRUE(run.rc == 0 || run.rc == 1) << fault << ": " << run.err;
      const auto at = run.out.find("RESULT_JSON ");
      ASSERT_NE(at, std::string::npos) << fault << ": no RESULT_JSON line\n" << run.out;
      const std::string line = run.out.substr(at, run.out.find('\n', at) - at);
      const nlohmann::json printed = gemmar::parse_python_json(line.substr(12));

      const auto check = run_gemmar({"check", "-", "--json"}, line + "\n");
      ASSERT_TRUE(check.rc == 0 || check.rc == 1) << fault << ": " << check.err;
      const auto judged = nlohmann::json::parse(check.out).at("runs").at(0);
      EXPECT_EQ(judged.at("verdict"), printed.at("verdict")) << transport << " " << fault;
      EXPECT_EQ(codes_of(judged.at("findings")), codes_of(printed.at("findings"))) << transport << " " << fault << "\n"
                                                                                   << line;
      EXPECT_EQ(check.rc, run.rc) << transport << " " << fault;
      if (applies) {
        EXPECT_EQ(printed.at("verdict"), "fail") << transport << " " << fault << " went unnoticed";
      }
    }
  }
  EXPECT_EQ(compared, 2 * int(faults.size()));
}

}  // namespace

namespace {

// A GPU-only fault on the CPU emulation would run clean and pass: it is refused as a usage error instead.
TEST(CliRunCheck, GpuOnlyFaultIsRefusedByTheCpuBackendWithItsName) {
  for (const auto& f : gemmar::fault_table()) {
    if (!f.gpu_only) continue;
    const auto run = run_gemmar(
        {"run", "--backend", "cpu", "-m", "1024", "-n", "1024", "-k", "256", "--world", "2", "--inject", f.spelling});
    EXPECT_EQ(run.rc, 2) << f.spelling << "\n" << run.out << run.err;
    EXPECT_NE(run.err.find(f.spelling), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("GPU only"), std::string::npos) << run.err;
    EXPECT_EQ(run.out.find("RESULT_JSON"), std::string::npos) << run.out;
  }
}

}  // namespace

namespace {

// M = 1000 of mxfp8 at W = 8: 256-row tiles pad M to 2048, so slices 4-7 hold padding only and have no relL2 (NaN,
// which the --json results spell null). `gemmar check` reads gemmar run's own results back with the same verdict:
// the clean run passes (it was refused as INVALID_RECORD until 2026-12-07), silent puts still fail.
TEST(CliRunCheck, ASliceOfPaddingOnlyReadsBackFromTheJsonResultsWithTheRunsVerdict) {
  for (const std::string fault : {"none", "silent-puts"}) {
    const auto run = run_gemmar({"run", "--backend", "cpu", "-m", "1000", "-n", "1024", "-k", "256", "--world", "8",
                                 "--quant", "mxfp8", "--mode", "fused-sdma", "--inject", fault, "--json"});
    ASSERT_TRUE(run.rc == 0 || run.rc == 1) << fault << ": " << run.err;
    const nlohmann::json results = nlohmann::json::parse(run.out);
    const auto& slices = results.at("runs").at(0).at("record").at("per_slice_rel_l2");
    ASSERT_EQ(slices.size(), 8u);
    for (int i = 4; i < 8; ++i) EXPECT_TRUE(slices[size_t(i)].is_null()) << fault << ": slice " << i << " " << slices;
    const auto check = run_gemmar({"check", "-", "--json"}, run.out);
    EXPECT_EQ(check.rc, run.rc) << fault << ": " << check.out << check.err;
    const auto judged = nlohmann::json::parse(check.out).at("runs").at(0);
    const auto& printed = results.at("runs").at(0);
    EXPECT_EQ(judged.at("verdict"), printed.at("verdict")) << fault;
    EXPECT_EQ(codes_of(judged.at("findings")), codes_of(printed.at("findings"))) << fault;
    EXPECT_EQ(printed.at("verdict"), fault == "none" ? "pass" : "fail") << fault;
  }
}

}  // namespace
