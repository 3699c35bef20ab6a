// --baseline for check, run and validate (docs/check.md): a previous output (results.json or a RESULT_JSON log)
// is a baseline, and a run slower than its baseline beyond the run-to-run spread fails with REGRESSION whatever
// the profile; a bad --baseline is exit 2 naming the option.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace gemmar::test {
namespace {

const std::string kLog = std::string(GEMMAR_TEST_DATA_DIR) + "/check/mi355x_m16384.log";

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// `check --json` of the log, every run's times scaled by `factor`: the results.json of an earlier run.
std::string scaled_results_json(double factor) {
  const CliResult r = run_gemmar({"check", kLog, "--json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  for (auto& run : j["runs"]) {
    auto& rec = run["record"];
    rec["max_rank_time_us"] = rec["max_rank_time_us"].get<double>() * factor;
    if (rec.contains("per_rank_time_us"))
      for (auto& t : rec["per_rank_time_us"]) t = t.get<double>() * factor;
  }
  return j.dump(2);
}

TEST(CliBaseline, ResultsJsonOfAFasterRunMakesEveryRunARegression) {
  const auto dir = scratch_dir("cli_baseline");
  write_text(dir / "results.json", scaled_results_json(0.8));
  const CliResult r = run_gemmar({"check", kLog, "--baseline", (dir / "results.json").string()});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "REGRESSION")) << r.out;
  EXPECT_TRUE(has(r.out, "results.json:runs[")) << r.out;
  // The same runs as their own baseline: no regression.
  write_text(dir / "same.json", scaled_results_json(1.0));
  const CliResult same = run_gemmar({"check", kLog, "--baseline", (dir / "same.json").string()});
  EXPECT_EQ(same.rc, 0) << same.out << same.err;
  EXPECT_FALSE(has(same.out, "REGRESSION")) << same.out;
}

TEST(CliBaseline, BadBaselineIsExit2NamingTheOption) {
  const auto dir = scratch_dir("cli_baseline_bad");
  for (const std::string cmd : {"check", "run", "validate"}) {
    std::vector<std::string> args = {cmd};
    if (cmd == "check") args.push_back(kLog);
    if (cmd != "check") args.insert(args.end(), {"--backend", "cpu"});
    if (cmd == "validate") args.insert(args.end(), {"--out", (dir / "out").string()});
    args.insert(args.end(), {"--baseline", (dir / "missing.json").string()});
    const CliResult r = run_gemmar(args);
    EXPECT_EQ(r.rc, 2) << cmd << r.out << r.err;
    EXPECT_TRUE(has(r.err, "--baseline")) << cmd << r.err;
  }
  write_text(dir / "empty.log", "no runs here\n");
  const CliResult r = run_gemmar({"check", kLog, "--baseline", (dir / "empty.log").string()});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--baseline: no valid runs")) << r.err;
}

}  // namespace
}  // namespace gemmar::test
