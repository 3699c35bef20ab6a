// The detection matrix (docs/reliability.md): every fault class the CPU emulation can inject, in every mode it applies
// to, over several seeds, shapes and quant modes, must be flagged with the finding code that names its cause;
// and clean runs over many seeds, shapes and configs must raise no finding at all (no false alarms).
// Everything goes through the lead's driver, run_and_check(cpu backend), exactly as `gemmar validate` does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
#include "common/faults.hpp"
#include "validate/harness/run_driver.hpp"
#include "validate/harness/run_plan.hpp"

namespace gemmar {
namespace {

// What the matrix needs beyond common/faults.cpp's fault_table(): the value its spelling takes, extra codes that also
// name its cause, a phrase the finding must hold, and where the table's code is not the one to expect although the
// fault acts. Where a fault acts comes from the table (FaultClass::acts, the same predicate `--inject` refuses a
// fault by), so a fault the table gains runs here on every config it acts on, with the table's code, at once.
struct MatrixTraits {
  std::vector<std::string> injects;  // parse_faults spellings, one matrix row each
  std::string also = "";             // alternatives to the table's code, '|'-separated
  // A stale output and a silent put share the code; the message tells them apart, and a silent put must never
  // be called another run's data.
  std::string says = "";
  // Configs the fault acts on but where another code names it (nullptr: every config it acts on).
  std::function<bool(const Config&)> expect_code_on = nullptr;
};

struct MatrixRow {
  std::string name;    // row of the matrix (docs/reliability.md)
  std::string inject;  // parse_faults spelling
  std::string code;    // the finding that names the cause (must be an error finding); alternatives by '|'
  std::function<bool(const Config&)> applies;
  std::string says;
};

const std::string kStaleWording = "another run's data";

bool collective(const Config& c) { return has_collective(c.mode); }

const std::map<std::string, MatrixTraits>& matrix_traits() {
  static const std::map<std::string, MatrixTraits> t = {
      // gemm-only moves no slice: a stale output there is caught as STALE_ITERATION (tests/reliability/
      // reliability_fault_scope_slow_test.cpp sees it act), not as a silent transfer.
      {"stale-output", {{"stale-output"}, "", kStaleWording, collective}},
      {"perturb-rank=R", {{"perturb-rank=1"}}},
      {"pull-blocks=N", {{"pull-blocks=2", "pull-blocks=4096"}}},
      // At W=2 the emulation's stale-band pattern can land no stale line at all (ref's open finding,
      // docs/reliability.md), so the matrix covers W=4 and W=8 for this class.
      {"no-release", {{"no-release"}, "RANK_DISAGREEMENT|NUMERICS_ABOVE_FLOOR"}},
  };
  return t;
}

// One row per fault_table() class and value, in the table's order; it applies where the table says the fault acts
// (four iterations, as every case runs).
std::vector<MatrixRow> matrix_rows() {
  std::vector<MatrixRow> rows;
  for (const FaultClass& f : fault_table()) {
    if (f.gpu_only) continue;  // the CPU backend refuses it; scripts/device_verify_run.sh runs it on the GPU
    const auto it = matrix_traits().find(f.spelling);
    const MatrixTraits traits = it != matrix_traits().end() ? it->second : MatrixTraits{{f.spelling}};
    std::string code = f.expected_code;
    if (!traits.also.empty()) code += "|" + traits.also;
    for (const std::string& inject : traits.injects) {
      const Faults faults = parse_faults(inject);
      auto applies = [f, faults, narrow = traits.expect_code_on](const Config& c) {
        return f.acts(faults, FaultScope{c, Shape{}, 4}) && (!narrow || narrow(c));
      };
      rows.push_back({inject, inject, code, applies, traits.says});
    }
  }
  return rows;
}

std::string codes_of(const Verdict& v) {
  std::string s;
  for (const auto& f : v.findings) s += (s.empty() ? "" : ",") + f.code + (f.severity == Severity::Error ? "" : "(w)");
  return s.empty() ? "-" : s;
}

// `codes`: one code or alternatives separated by '|'.
bool has_error(const Verdict& v, const std::string& codes) {
  std::stringstream ss(codes);
  for (std::string code; std::getline(ss, code, '|');)
    if (std::any_of(v.findings.begin(), v.findings.end(),
                    [&](const Finding& f) { return f.code == code && f.severity == Severity::Error; }))
      return true;
  return false;
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

// Shapes whose every slice holds the same number of real rows (M a multiple of W * BLOCK_M, as the benchmark
// pads): the verdict engine's fp8 floor and per-rank rules assume it (docs/reliability.md, "not covered").
// W in {2, 4, 8}; N a multiple of 1024 (fp8 wire). check_rows samples rows, so M costs nothing.
Shape even_shape(uint64_t i, Quant q) {
  static const int ws[] = {2, 4, 8};
  static const int64_t ns[] = {1024, 2048};
  static const int64_t ks[] = {128, 256, 512};
  const int w = ws[i % 3];
  const int64_t unit = int64_t(w) * block_m(q);
  const int64_t m = unit * int64_t(1 + (i / 3) % 4);
  return {m, ns[(i / 2) % 2], ks[(i / 5) % 3], w};
}
// Any M: slices entirely of padding (M=256 at W=8) and partial slices. bf16 wires only (see above).
Shape any_shape(uint64_t i) {
  static const Shape shapes[] = {{256, 1024, 128, 8}, {384, 1024, 256, 4},  {1000, 1024, 128, 2},
                                 {128, 2048, 128, 8}, {1536, 1024, 128, 8}, {700, 1024, 256, 4}};
  return shapes[i % (sizeof(shapes) / sizeof(shapes[0]))];
}

struct Cell {
  int detected = 0;
  int runs = 0;
};

// GEMMAR_MATRIX_STRIDE=S runs every S-th case of each fault class and every S-th clean run (default 1: all);
// GEMMAR_FAULT_MATRIX_STRIDE, where set, replaces S for the fault classes alone. Only scripts/asan.sh sets them
// (16 and 8): the sanitizer needs every code path, not every seed, and under ASan a fault case (every row
// checked) costs ~30x its Release time, a clean run (sampled rows) far less; the full matrix runs in the
// Release slow tier.
int matrix_stride(const char* override_var = nullptr) {
  const char* s = override_var ? std::getenv(override_var) : nullptr;
  if (!s) s = std::getenv("GEMMAR_MATRIX_STRIDE");
  const int v = s ? std::atoi(s) : 1;
  return v >= 1 ? v : 1;
}

TEST(ReliabilityDetectionMatrix, EveryFaultClassIsDetectedWithItsCodeInEveryModeItAppliesTo) {
  auto backend = make_cpu_backend();
  // (fault, effective config label) -> counts; the table goes to docs/reliability.md.
  std::map<std::pair<std::string, std::string>, Cell> table;
  std::vector<std::string> misses;
  const auto t0 = std::chrono::steady_clock::now();
  int case_no = 0;
  const int stride = matrix_stride("GEMMAR_FAULT_MATRIX_STRIDE");
  for (const MatrixRow& fc : matrix_rows()) {
    std::set<std::string> seen_labels;
    int class_case = 0;
    for (const Config& cfg : every_config()) {
      if (!fc.applies(effective_config(cfg))) continue;
      seen_labels.insert(mode_label(cfg));
      for (int rep = 0; rep < 1; ++rep, ++case_no) {
        if (class_case++ % stride != 0) continue;
        RunRequest req;
        req.shape = even_shape(uint64_t(case_no), cfg.quant);
        req.shape.m = std::min<int64_t>(req.shape.m, 2 * int64_t(req.shape.world) * block_m(cfg.quant));
        req.shape.k = std::min<int64_t>(req.shape.k, 256);
        if (fc.inject == "no-release" && req.shape.world == 2) {
          req.shape.world = 4 + 4 * (case_no % 2);
          req.shape.m = int64_t(req.shape.world) * block_m(cfg.quant);
        }
        req.config = cfg;
        req.inject = parse_faults(fc.inject);
        if (req.inject.perturbed_rank >= req.shape.world) req.inject.perturbed_rank = req.shape.world - 1;
        req.seed = 1000 + uint64_t(case_no) * 7919;
        // Four iterations, every one checked (iteration 3 repeats iteration 1's inputs); stragglers on odd cases.
        req.iterations = 4;
        req.straggle_us = case_no % 2 ? 30.0 : 0.0;
        // Every row: a missing release makes 1-2 of 32 bands per slice stale, which a 128-row sample can miss.
        req.check_rows = 0;
        const RunOutcome o = run_and_check(*backend, req);
        const std::string key = config_label(cfg);
        Cell& cell = table[{fc.name, key}];
        ++cell.runs;
        bool misnamed = fc.code != "SILENT_TRANSFER" && has_error(o.verdict, "SILENT_TRANSFER");
        bool said = fc.says.empty();
        for (const auto& f : o.verdict.findings) {
          const bool stale_wording = f.message.find(kStaleWording) != std::string::npos;
          if (!fc.says.empty() && f.message.find(fc.says) != std::string::npos) said = true;
          if (fc.says != kStaleWording && stale_wording) misnamed = true;
        }
        if (!o.verdict.pass && has_error(o.verdict, fc.code) && !misnamed && said) {
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
  for (const auto& [k, c] : table)
    std::printf("| %s | %s | %d/%d |\n", k.first.c_str(), k.second.c_str(), c.detected, c.runs);
  for (const auto& m : misses) ADD_FAILURE() << "not detected with its code: " << m;
}

TEST(ReliabilityDetectionMatrix, AThousandCleanRunsRaiseNoFinding) {
  auto backend = make_cpu_backend();
  const std::vector<Config> configs = every_config();
  std::mt19937_64 rng(20240611);
  int runs = 0, false_alarms = 0;
  std::vector<std::string> alarms;
  const auto t0 = std::chrono::steady_clock::now();
  const int stride = matrix_stride();
  for (int i = 0; i < 1023; ++i) {
    RunRequest req;
    req.config = configs[size_t(i) % configs.size()];
    const bool fp8 = has_collective(req.config.mode) && uses_fp8_wire(effective_config(req.config));
    req.shape = !fp8 && rng() % 2 ? any_shape(rng()) : even_shape(rng(), req.config.quant);
    req.seed = rng() % 1000000;
    req.check_rows = int64_t(32 + 32 * (rng() % 3));  // 32..96 sampled rows: the sampling noise too
    // Four iterations on changing inputs, every one checked (1 and 3 must agree bit for bit), with
    // random per-rank stragglers.
    req.iterations = 4;
    req.straggle_us = double(1 + rng() % 100);
    if (i % stride != 0) continue;  // after the draws: a strided run is the same run as in the full set
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
  std::printf("clean runs (4 iterations each, stragglers 1-100 us): %d, false alarms: %d (%.1f s)\n", runs,
              false_alarms, secs);
  EXPECT_GE(runs, 1000 / stride);
  EXPECT_EQ(false_alarms, 0);
  for (const auto& a : alarms) ADD_FAILURE() << "false alarm: " << a;
}

}  // namespace
}  // namespace gemmar
