// The h200-1gpu profile, built from the hardware (docs/kernels.md): its GEMM term against cuBLASLt measured on the
// lent H200 (2026-12-03), and the runs of our old kernels (2026-12-02, 8 ranks on one device) flagged as slower
// than the hardware allows; the pull phase across grids against the 2026-12-03 runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "model/model.hpp"

using namespace gemmar;
using nlohmann::json;

namespace {

const char* const kRunDir = GEMMAR_TEST_DATA_DIR "/../../docs/results/h200-1gpu-2026-12-02-gemmar-run/";

// The bench writes Python's json (a rank with no samples is NaN); JSON has no NaN: read it as null.
std::string nan_to_null(std::string line) {
  for (std::size_t at = line.find("NaN"); at != std::string::npos; at = line.find("NaN", at + 1)) {
    const char before = at > 0 ? line[at - 1] : ' ';
    const char after = at + 3 < line.size() ? line[at + 3] : ' ';
    if ((before == ' ' || before == '[' || before == ',') && (after == ',' || after == ']' || after == '}'))
      line.replace(at, 3, "null");
  }
  return line;
}

// Every RESULT_JSON document of one log.
std::vector<json> results_of(const std::string& log) {
  std::ifstream in(std::string(kRunDir) + log);
  EXPECT_TRUE(in.good()) << kRunDir << log;
  std::vector<json> out;
  const std::string tag = "RESULT_JSON ";
  for (std::string line; std::getline(in, line);)
    if (line.rfind(tag, 0) == 0) out.push_back(json::parse(nan_to_null(line.substr(tag.size()))));
  return out;
}

// Runs that time a working pipeline: no fault injected (a pull-blocks override is a grid, not a fault).
bool clean(const json& r) {
  const std::string inj = r.value("inject", "none");
  return r.at("verdict") == "pass" && (inj == "none" || inj.rfind("pull-blocks=", 0) == 0);
}

Shape shape_of(const json& r) {
  Shape s;
  s.m = r.at("m").get<int64_t>();
  s.n = r.at("n").get<int64_t>();
  s.k = r.at("k").get<int64_t>();
  s.world = r.at("world_size").get<int>();
  return s;
}

Config config_of(const json& r) {
  Config c;
  c.mode = parse_mode(r.at("mode").get<std::string>());
  c.quant = parse_quant(r.at("quant").get<std::string>());
  c.gather_dtype = parse_wire(r.at("gather_dtype").get<std::string>());
  c.gather_transport = parse_transport(r.at("gather_transport").get<std::string>());
  c.fuse_quantize = r.at("fuse_quantize").get<bool>();
  c.pull_blocks = r.at("pull_blocks").get<int>();
  return c;
}

std::vector<json> all_clean_runs() {
  std::vector<json> v;
  for (const char* log : {"all_configs.log", "pull_sweep.log", "faults.log"})
    for (auto& r : results_of(log))
      if (clean(r)) v.push_back(std::move(r));
  return v;
}

double phase_us(const model::Prediction& p, const std::string& name) {
  for (const auto& ph : p.phases)
    if (ph.name == name) return ph.us;
  return std::nan("");
}

}  // namespace

TEST(ModelH200OneGpu, LogsHoldEveryConfigAtBothShapesAndTheGridSweep) {
  const auto runs = all_clean_runs();
  std::map<int64_t, int> per_m;
  for (const auto& r : runs) ++per_m[r.at("m").get<int64_t>()];
  EXPECT_GE(per_m[4096], 11);
  EXPECT_GE(per_m[16384], 20);  // 11 configs + the 9-point pull sweep (+ the grid overrides of faults.log)
}

// The GEMM term is the vendor ceiling: cuBLASLt's blockscale GEMM measured on the lent H200 (2026-12-03,
// `gemmar_gpu_bench ceilings`), predicted within 3% at every M by wave quantization + the launch.
TEST(ModelH200OneGpu, TheGemmTermIsTheMeasuredVendorCeiling) {
  const auto prof = model::load_profile("h200-1gpu");
  std::ifstream in(GEMMAR_TEST_DATA_DIR "/../../docs/results/h200-1gpu-2026-12-03-kernels/call1/bench.log");
  ASSERT_TRUE(in.good());
  json ceil;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("CEILINGS_JSON ", 0) == 0) ceil = json::parse(line.substr(14));
  ASSERT_TRUE(ceil.contains("vendor_gemm_ceiling"));
  ASSERT_EQ(ceil["vendor_gemm_ceiling"].size(), 3u);
  std::printf("| M | cuBLASLt us | model gemm us | error |\n|---|---|---|---|\n");
  for (const auto& g : ceil["vendor_gemm_ceiling"]) {
    Shape s;
    s.m = g.at("m").get<int64_t>();
    s.world = 1;  // one rank: the device runs one GEMM
    Config c;
    c.mode = Mode::GemmOnly;
    const double mod = phase_us(model::predict(prof, s, c), "gemm");
    const double meas = g.at("us").get<double>();
    std::printf("| %lld | %.1f | %.1f | %+.2f%% |\n", static_cast<long long>(s.m), meas, mod, 100 * (mod / meas - 1));
    EXPECT_NEAR(mod / meas, 1.0, 0.03) << s.m;
  }
  EXPECT_NEAR(prof.params.hbm.peak_gbps * prof.params.hbm.efficiency, ceil.at("memcpy_d2d_gbs").get<double>(), 1.0);
}

// The 2026-12-02 runs (the mma.sync GEMM at ~0.2x cuBLASLt, the two-pass quantize and the software widen):
// against a model built from the hardware every one of them is SLOWER_THAN_MODEL, none is below the physical
// lower bound, and the phases the hardware alone sets (copy-engine legs, the reduce at the copy ceiling) still
// match their terms. The old profile, calibrated on those kernels, passed them all: that was the bug the hardware model
// fixes.
TEST(ModelH200OneGpu, TheOldKernelsAreSlowerThanTheHardwareModel) {
  const auto prof = model::load_profile("h200-1gpu");
  const auto runs = all_clean_runs();
  ASSERT_FALSE(runs.empty());
  // The reduce reads slices that were just written, partly from the 60 MB L2: measured up to ~9% faster than
  // the copy ceiling (docs/results/h200-1gpu-2026-12-03-kernels/, "quantize 122%" there for the same reason).
  const std::map<std::string, double> hw_tol{{"scatter", 0.06}, {"reduce", 0.10}};
  std::printf("| M | config | grid | measured us | model us | gemm efficiency |\n|---|---|---|---|---|---|\n");
  for (const auto& r : runs) {
    const Shape s = shape_of(r);
    const Config c = config_of(r);
    const auto p = model::predict(prof, s, c);
    const double t = r.at("max_rank_time_us").get<double>();
    ASSERT_GT(t, 0);
    double gemm_eff = 0;
    for (const auto& ph : p.phases)
      if (ph.name == "gemm") gemm_eff = ph.ceiling_us / r.at("phases_us").at("gemm").get<double>();
    std::printf("| %lld | %s | %d | %.0f | %.0f | %.3f |\n", static_cast<long long>(s.m), config_label(c).c_str(),
                c.pull_blocks, t, p.total_us, gemm_eff);
    EXPECT_GT(t, p.total_us * (1 + prof.model_band)) << config_label(c) << " M=" << s.m;
    EXPECT_LT(p.lower_bound_us, t) << config_label(c) << " M=" << s.m;
    EXPECT_LT(gemm_eff, 0.25) << config_label(c);
    for (const auto& [name, us] : r.at("phases_us").items()) {
      const auto it = hw_tol.find(name);
      if (it == hw_tol.end()) continue;
      EXPECT_NEAR(phase_us(p, name) / us.get<double>(), 1.0, it->second) << config_label(c) << " " << name;
    }
  }
}

// The pull on one device, against the 2026-12-03 runs of the current kernels (the W ranks' pull kernels run at
// once, so the grid that matters is W x blocks against 132 SMs): the phase at grids 8, 16, 64 (faults.log, the
// grid overrides) and 132 (the validate runs), the curve monotone and flat once every SM holds a block, and the
// optimum band leaving out grid 8 only (measured: the only grid that costs more than 2% of the pull).
TEST(ModelH200OneGpu, PullPhaseAcrossGridsMatchesTheMeasuredRuns) {
  const auto prof = model::load_profile("h200-1gpu");
  const std::string dir = GEMMAR_TEST_DATA_DIR "/../../docs/results/h200-1gpu-2026-12-03-gemm4/call3/";
  std::map<int, double> measured;  // grid -> pull phase us, fused-sdma fp8/lsa M = 16384
  Shape s;
  Config c;
  for (const char* log : {"faults.log", "validate_runs.log"}) {
    std::ifstream in(dir + log);
    ASSERT_TRUE(in.good()) << dir << log;
    const std::string tag = "RESULT_JSON ";
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(tag, 0) != 0) continue;
      const json r = json::parse(nan_to_null(line.substr(tag.size())));
      if (r.at("mode") != "fused-sdma" || r.at("gather_transport") != "lsa" || r.at("m") != 16384) continue;
      s = shape_of(r);
      c = config_of(r);
      measured[r.at("pull_blocks").get<int>()] = r.at("phases_us").at("pull").get<double>();
    }
  }
  ASSERT_EQ(measured.size(), 4u);  // 8, 16, 64 and the validate's 132
  for (const auto& [grid, us] : measured) {
    c.pull_blocks = grid;
    EXPECT_NEAR(phase_us(model::predict(prof, s, c), "pull") / us, 1.0, 0.08) << "grid " << grid;
  }
  const auto sw = model::sweep_pull_blocks(prof, s, c, model::default_pull_grid());
  for (std::size_t i = 1; i < sw.points.size(); ++i) {
    EXPECT_LE(sw.points[i].total_us, sw.points[i - 1].total_us) << "grid " << sw.points[i].value;
    if (double(s.world) * sw.points[i - 1].value >= prof.params.gemm.compute_units) {
      EXPECT_NEAR(sw.points[i].total_us, sw.points[i - 1].total_us, 1e-9 * sw.points[i].total_us);
    }
  }
  EXPECT_GT(sw.band_lo, 8);   // GRID_OFF_OPTIMUM fires on 8 blocks per rank (measured +88 us over 64)
  EXPECT_LE(sw.band_lo, 16);  // and not on 16 (measured +17 us over 64: within the run-to-run spread)
  EXPECT_GE(sw.band_hi, 1024);
}

TEST(ModelH200OneGpu, GemmOnlyCarriesTheOutputCopyOnOneDeviceOnly) {
  const auto one = model::load_profile("h200-1gpu");
  const auto mi = model::load_profile("mi355x");
  Shape s;
  Config c;
  c.mode = Mode::GemmOnly;
  const auto p = model::predict(one, s, c);
  const double c_bytes = double(s.m) * double(s.n) * 2.0 * double(s.world);
  EXPECT_NEAR(phase_us(p, "output"), c_bytes / (one.params.copy_engine.d2d_gbps * 1e3), 1e-6);
  EXPECT_TRUE(std::isnan(phase_us(model::predict(mi, s, c), "output")));
}
