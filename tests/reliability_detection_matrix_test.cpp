// The detection matrix (issue 8): every fault class the CPU emulation can inject, in every mode it applies
// to, over several seeds, shapes and quant modes, must be flagged with the finding code that names its cause;
// and clean runs over many seeds, shapes and configs must raise no finding at all (no false alarms).
// Everything goes through the lead's driver, run_and_check(cpu backend), exactly as `gemmar validate` does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <omp.h>

#include "common/config.hpp"
#include "validate/run_driver.hpp"
#include "validate/run_plan.hpp"

namespace gemmar {
namespace {

struct FaultClass {
  std::string name;      // row of the matrix (docs/reliability.md)
  std::string inject;    // parse_injection spelling
  std::string code;      // the finding that names the cause (must be an error finding)
  std::function<bool(const Config&)> applies;  // on the effective config
};

bool collective(const Config& c) { return has_collective(c.mode); }
bool scatter_by_puts(const Config& c) {
  // split-lsa's first stage loads peers' inputs with CUs: there are no scatter puts to go silent.
  return c.mode == Mode::SplitSdma || c.mode == Mode::FusedSdma || c.mode == Mode::FusedLsa;
}
bool gather_by_copy_engine(const Config& c) {
  return collective(c) && c.mode != Mode::SplitLsa && c.gather_transport == Transport::Sdma;
}
bool pull_wire(const Config& c) {
  return collective(c) && uses_fp8_wire(c) && c.gather_transport == Transport::Lsa;
}
bool fp8_wire(const Config& c) { return collective(c) && uses_fp8_wire(c); }

const std::vector<FaultClass>& fault_classes() {
  static const std::vector<FaultClass> f = {
      {"silent puts, scatter leg", "silent-scatter", "SILENT_TRANSFER", scatter_by_puts},
      {"silent puts, gather leg", "silent-gather", "SILENT_TRANSFER", gather_by_copy_engine},
      {"silent puts, both legs", "silent-puts", "SILENT_TRANSFER",
       [](const Config& c) { return scatter_by_puts(c) || gather_by_copy_engine(c); }},
      {"stale output", "stale-output", "SILENT_TRANSFER", collective},
      {"one rank's partial perturbed", "perturb-rank=1", "NUMERICS_ABOVE_FLOOR",
       [](const Config& c) { return collective(c); }},
      {"pull grid too small", "pull-blocks=2", "GRID_OFF_OPTIMUM", pull_wire},
      {"pull grid too large", "pull-blocks=4096", "GRID_OFF_OPTIMUM", pull_wire},
      {"fp8 wire not engaged", "wire-bypassed", "WIRE_NOT_USED", fp8_wire},
      {"fnuz operands read as fn", "fnuz-as-fn", "NUMERICS_ABOVE_FLOOR", [](const Config&) { return true; }},
      {"missing release", "no-release", "RANK_DIVERGENCE", gather_by_copy_engine},
  };
  return f;
}

std::string codes_of(const Verdict& v) {
  std::string s;
  for (const auto& f : v.findings) s += (s.empty() ? "" : ",") + f.code + (f.severity == Severity::Error ? "" : "(w)");
  return s.empty() ? "-" : s;
}

bool has_error(const Verdict& v, const std::string& code) {
  return std::any_of(v.findings.begin(), v.findings.end(),
                     [&](const Finding& f) { return f.code == code && f.severity == Severity::Error; });
}

std::string mode_label(const Config& c) { return config_label(effective_config(c)); }

// The configs of `gemmar validate` (every mode, wire and transport) at each quant mode.
std::vector<Config> every_config() {
  std::vector<Config> out;
  for (Quant q : {Quant::Blockscale, Quant::Ptpc, Quant::Mxfp8}) {
    Config base;
    base.quant = q;
    for (const Config& c : all_configs(base)) out.push_back(c);
  }
  return out;
}

// Small shapes the emulation runs in milliseconds; W in {2, 4, 8}; N a multiple of 1024 (fp8 wire).
Shape fault_shape(int i) {
  static const Shape shapes[] = {
      {256, 1024, 128, 8}, {512, 1024, 128, 4}, {1024, 1024, 128, 2}, {256, 2048, 256, 4}, {512, 1024, 512, 2},
      {768, 1024, 128, 4},
  };
  return shapes[size_t(i) % (sizeof(shapes) / sizeof(shapes[0]))];
}

// ctest runs two tests at a time on two cores: one thread each avoids OpenMP's spin-waiting under
// oversubscription, which otherwise costs more than the emulation itself.
struct SingleThreaded {
  SingleThreaded() { omp_set_num_threads(1); }
} const single_threaded;

struct Cell {
  int detected = 0;
  int runs = 0;
};

TEST(ReliabilityDetectionMatrix, EveryFaultClassIsDetectedWithItsCodeInEveryModeItAppliesTo) {
  auto backend = make_cpu_backend();
  // (fault, effective config label) -> counts; the table goes to docs/reliability.md.
  std::map<std::pair<std::string, std::string>, Cell> table;
  std::vector<std::string> misses;
  const auto t0 = std::chrono::steady_clock::now();
  int case_no = 0;
  for (const FaultClass& fc : fault_classes()) {
    std::set<std::string> seen_labels;
    for (const Config& cfg : every_config()) {
      if (!fc.applies(effective_config(cfg))) continue;
      seen_labels.insert(mode_label(cfg));
      for (int rep = 0; rep < 1; ++rep, ++case_no) {
        RunRequest req;
        req.shape = fault_shape(case_no);
        req.config = cfg;
        req.inject = parse_injection(fc.inject);
        if (req.inject.perturbed_rank >= req.shape.world) req.inject.perturbed_rank = req.shape.world - 1;
        req.seed = 1000 + uint64_t(case_no) * 7919;
        req.check_rows = 0;  // every row: these shapes are tiny
        const RunOutcome o = run_and_check(*backend, req);
        const std::string key = config_label(cfg);
        Cell& cell = table[{fc.name, key}];
        ++cell.runs;
        if (!o.verdict.pass && has_error(o.verdict, fc.code)) {
          ++cell.detected;
        } else {
          std::ostringstream m;
          m << fc.inject << " on " << key << " m=" << req.shape.m << " n=" << req.shape.n << " k=" << req.shape.k
            << " w=" << req.shape.world << " seed=" << req.seed << ": pass=" << o.verdict.pass
            << " findings=" << codes_of(o.verdict) << " rel_l2=" << o.record.rel_l2.value_or(-1);
          misses.push_back(m.str());
        }
      }
    }
    EXPECT_FALSE(seen_labels.empty()) << fc.name << " applies to no config";
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The table, for docs/reliability.md: fault | config | detected/runs.
  std::printf("detection matrix (%.1f s):\n", secs);
  for (const auto& [k, c] : table) std::printf("| %s | %s | %d/%d |\n", k.first.c_str(), k.second.c_str(), c.detected, c.runs);
  for (const auto& m : misses) ADD_FAILURE() << "not detected with its code: " << m;
}

TEST(ReliabilityDetectionMatrix, AThousandCleanRunsRaiseNoFinding) {
  auto backend = make_cpu_backend();
  const std::vector<Config> configs = every_config();
  // Tiny shapes (M 128/256, N 1024, K 128/256) keep 1000+ emulated runs within seconds; W covers 2, 4, 8
  // and M values that leave slices entirely of padding (M=256 at W=8: only the first slices hold real rows).
  const int64_t ms[] = {128, 256};
  const int64_t ks[] = {128, 128, 256};
  const int ws[] = {2, 4, 8};
  std::mt19937_64 rng(20240611);
  int runs = 0, false_alarms = 0;
  std::vector<std::string> alarms;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1056; ++i) {
    RunRequest req;
    req.config = configs[size_t(i) % configs.size()];
    req.shape = {ms[rng() % 2], 1024, ks[rng() % 3], ws[rng() % 3]};
    req.seed = rng() % 1000000;
    req.check_rows = 0;
    const RunOutcome o = run_and_check(*backend, req);
    ++runs;
    if (!o.verdict.pass || !o.verdict.findings.empty()) {
      ++false_alarms;
      if (alarms.size() < 40) {
        std::ostringstream m;
        m << config_label(req.config) << " m=" << req.shape.m << " k=" << req.shape.k << " w=" << req.shape.world
          << " seed=" << req.seed << ": " << codes_of(o.verdict) << " rel_l2=" << o.record.rel_l2.value_or(-1);
        for (const auto& f : o.verdict.findings) m << "\n    " << f.code << ": " << f.message;
        alarms.push_back(m.str());
      }
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("clean runs: %d, false alarms: %d (%.1f s)\n", runs, false_alarms, secs);
  EXPECT_GE(runs, 1000);
  EXPECT_EQ(false_alarms, 0);
  for (const auto& a : alarms) ADD_FAILURE() << "false alarm: " << a;
}

}  // namespace
}  // namespace gemmar
