// The h200-1gpu profile, built from the hardware (docs/kernels.md): its GEMM term against cuBLASLt measured on the
// lent H200 (2026-12-03), and the runs of our old kernels (2026-12-02, 8 ranks on one device) flagged as slower
// than the hardware allows; the pull phase across grids against the 2026-12-03 runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
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

// fused-lsa on one device stores C straight into the owners' slots: its bound is C's bytes written once, not a
// copy of the scatter's bytes, so a store-bound GEMM (small K) still has a prediction above its bound (gemmar
// model exited 3, "lower bound 1810.54 above the prediction 1798.01", at K = 128 and 256, M = 16384).
TEST(ModelH200OneGpu, FusedLsaHasAPredictionAboveItsBoundAtEveryK) {
  const auto prof = model::load_profile("h200-1gpu");
  for (const int64_t k : {128, 256, 512, 1024, 2048})
    for (const int64_t m : {1024, 4096, 16384})
      for (const WireDtype dt : {WireDtype::Bf16, WireDtype::Fp8}) {
        Config c;
        c.mode = Mode::FusedLsa;
        c.gather_dtype = dt;
        const Shape s{m, 7168, k, 8};
        model::Prediction p;
        ASSERT_NO_THROW(p = model::predict(prof, s, c)) << "k " << k << " m " << m;
        EXPECT_GT(p.lower_bound_us, 0.0);
        EXPECT_LE(p.lower_bound_us, p.total_us) << "k " << k << " m " << m;
      }
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

// ---- One device: the W ranks' GEMMs run at once (docs/model.md "One device: W concurrent GEMMs") ----

namespace {

const char* const kResults = GEMMAR_TEST_DATA_DIR "/../../docs/results/";

// Every run record of one results file, with the line it is on: RESULT_JSON lines, or the lines of an A/B
// summary (`runs[].record`).
std::vector<std::pair<int, json>> records_in(const std::string& rel) {
  std::ifstream in(std::string(kResults) + rel);
  EXPECT_TRUE(in.good()) << kResults << rel;
  std::vector<std::pair<int, json>> out;
  const std::string tag = "RESULT_JSON ";
  int at = 0;
  for (std::string line; std::getline(in, line);) {
    ++at;
    if (line.rfind(tag, 0) == 0) {
      out.emplace_back(at, json::parse(nan_to_null(line.substr(tag.size()))));
    } else if (line.rfind("{", 0) == 0) {
      const json doc = json::parse(nan_to_null(line));
      if (doc.contains("runs"))
        for (const auto& r : doc.at("runs"))
          if (r.contains("record")) out.emplace_back(at, r.at("record"));
    }
  }
  return out;
}

const model::Phase& gemm_phase(const model::Prediction& p) {
  for (const auto& ph : p.phases)
    if (ph.name == "gemm") return ph;
  throw std::runtime_error("no gemm phase");
}

double gemm_only_gemm_us(const model::Profile& prof, const Shape& s) {
  Config c;
  c.mode = Mode::GemmOnly;
  return gemm_phase(model::predict(prof, s, c)).us;
}

// A measured GEMM phase of one record (`where` = file:line under docs/results/) beside the model's gemm-only GEMM.
struct GemmPoint {
  std::string where;
  json record;
  double measured = 0, model = 0;
};

// Every record of `files` that `keep` selects and that times a GEMM phase.
std::vector<GemmPoint> gemm_points(const model::Profile& prof, std::initializer_list<const char*> files,
                                   const std::function<bool(const json&)>& keep) {
  std::vector<GemmPoint> out;
  for (const char* f : files)
    for (const auto& [line, r] : records_in(f)) {
      if (!keep(r) || !r.contains("phases_us") || !r.at("phases_us").contains("gemm")) continue;
      out.push_back({std::string(f) + ":" + std::to_string(line), r, r.at("phases_us").at("gemm").get<double>(),
                     gemm_only_gemm_us(prof, shape_of(r))});
    }
  return out;
}

// One 128 x 128 tile's K loop at the vendor rate on one of the 132 SMs.
double tile_us(const model::Profile& prof, int64_t k) {
  const auto& g = prof.params.gemm;
  return 2.0 * 128 * g.tile_n * double(k) / (g.fp8_tflops_dense * 1e6 / g.compute_units);
}

}  // namespace

// M = 4096, N = 7168: 32 x 56 = 1792 tiles, 13.6 waves of 132 SMs. One at a time the 8 ranks' GEMMs take
// 8 x 14 = 112 waves; at once their 14336 tiles pack into ceil(108.6) = 109, with one launch.
TEST(ModelH200OneGpu, ConcurrentGemmPhaseIsBelowWSoloGemmsWhenTheRanksTilesPackIntoFewerWaves) {
  const auto prof = model::load_profile("h200-1gpu");
  const double solo = gemm_only_gemm_us(prof, Shape{4096, 7168, 2048, 1});
  const double concurrent = gemm_only_gemm_us(prof, Shape{4096, 7168, 2048, 8});
  EXPECT_LT(concurrent, 8 * solo - 7 * prof.params.gemm.launch_us - 2 * tile_us(prof, 2048));  // 3 waves fewer
  EXPECT_GT(concurrent, 8 * solo - 7 * prof.params.gemm.launch_us - 4 * tile_us(prof, 2048));
}

// M = 3072, N = 1408: 24 x 11 = 264 tiles, exactly 2 waves: packing gains no wave, so the phase is the W solo
// GEMMs but for the W - 1 launches that overlap (the fill is 0 here: none measured apart from the launch).
TEST(ModelH200OneGpu, ConcurrentGemmPhaseIsWSoloGemmsLessTheOverlappedLaunchesWhenTilesFillWholeWaves) {
  const auto prof = model::load_profile("h200-1gpu");
  ASSERT_EQ(prof.params.gemm.k_iter_latency_us, 0.0);
  for (int world : {2, 4, 8}) {
    const double solo = gemm_only_gemm_us(prof, Shape{3072, 1408, 2048, 1});
    const double concurrent = gemm_only_gemm_us(prof, Shape{3072, 1408, 2048, world});
    EXPECT_NEAR(concurrent, world * solo - (world - 1) * prof.params.gemm.launch_us, 1e-9 * concurrent) << world;
  }
}

// By hand: 2 x 128 x 128 x 2048 FLOPs per tile at 1217.3 TFLOP/s / 132 SMs = 7.27706 us; 109 waves + one 6.18 us
// launch = 799.38 us (8 x 108.06 = 864.47 us one GEMM after another).
TEST(ModelH200OneGpu, ConcurrentGemmPhaseMatchesTheHandComputedValueAtM4096) {
  const auto prof = model::load_profile("h200-1gpu");
  ASSERT_NEAR(tile_us(prof, 2048), 7.27706, 1e-5);
  EXPECT_NEAR(gemm_only_gemm_us(prof, Shape{4096, 7168, 2048, 8}), 799.380, 1e-3);
  EXPECT_NEAR(gemm_only_gemm_us(prof, Shape{16384, 7168, 2048, 8}), 6.18 + 435 * 7.277064, 1e-3);  // 57344 tiles
}

// What the hardware allows stays ordered in every mode and shape: the phase at or above its ceiling (the W GEMMs'
// FLOPs at the vendor rate, or their C stores at the copy ceiling where K is small), the ceiling at or above the
// phase's lower bound, and nothing below the W GEMMs' FLOPs at that rate.
TEST(ModelH200OneGpu, ConcurrentGemmPhaseIsNeverBelowTheFlopsLowerBoundAtThePeak) {
  const auto prof = model::load_profile("h200-1gpu");
  int checked = 0;
  for (int world : {1, 2, 4, 8})
    for (int64_t m : {1000, 2048, 4096, 6144, 16384})
      for (int64_t n : {1408, 5120, 7168})
        for (int64_t k : {128, 512, 2048, 8192})
          for (const char* mode : {"gemm-only", "split-sdma", "fused-sdma", "fused-lsa"}) {
            Config c;
            c.mode = parse_mode(mode);
            const Shape s{m, n, k, world};
            model::Prediction p;
            try {
              p = model::predict(prof, s, c);
            } catch (const std::exception&) {
              continue;  // fused-lsa at K = 128: its drain's bound, not the GEMM's (docs/model.md)
            }
            const auto& g = gemm_phase(p);
            const double flops_us = world * g.flops / (prof.params.gemm.fp8_tflops_dense * 1e6);
            const std::string at = std::string(mode) + " W=" + std::to_string(world) + " M=" + std::to_string(m) +
                                   " N=" + std::to_string(n) + " K=" + std::to_string(k);
            EXPECT_GE(g.us, g.ceiling_us * (1 - 1e-12)) << at;
            EXPECT_GE(g.ceiling_us, g.lower_bound_us * (1 - 1e-12)) << at;
            EXPECT_GE(g.us, flops_us * (1 - 1e-12)) << at;
            EXPECT_LE(p.lower_bound_us, p.total_us) << at;
            ++checked;
          }
  EXPECT_GT(checked, 900);
}

// The vendor GEMM in the pipeline (`--gemm-impl cublaslt`, 8 ranks on the lent H200: each rank's cuBLASLt GEMM on
// its own stream, the phase from the previous barrier to the last GEMM's end) against the concurrent model, which
// is built from cuBLASLt's SOLO rate and launch (no in-pipeline point is fitted). One GEMM after another was +8% at
// M = 4096.
TEST(ModelH200OneGpu, ConcurrentGemmPhaseMatchesTheVendorGemmRunInThePipeline) {
  const auto prof = model::load_profile("h200-1gpu");
  const auto points = gemm_points(
      prof,
      {"h200-1gpu-2026-12-03-kernels/bench.log", "h200-1gpu-2026-12-03-gemm4/call3/validate_cublaslt_runs.log",
       "h200-1gpu-2026-12-03-gemm4/call4/validate_cublaslt_runs.log"},
      [](const json& r) { return r.value("gemm_impl", "") == "cublaslt"; });
  EXPECT_EQ(points.size(), 16u);  // 6 eager at M = 4096 and 16384, 5 graph-timed at 16384 in each of two calls
  std::printf("| docs/results/ file:line | M | timing | cuBLASLt GEMM phase us | model us | error |\n");
  for (const auto& pt : points) {
    EXPECT_EQ(pt.record.at("world_size"), 8) << pt.where;
    std::printf("| %s | %lld | %s | %.1f | %.1f | %+.2f%% |\n", pt.where.c_str(),
                static_cast<long long>(pt.record.at("m").get<int64_t>()), pt.record.value("timing", "?").c_str(),
                pt.measured, pt.model, 100 * (pt.model / pt.measured - 1));
    EXPECT_NEAR(pt.model / pt.measured, 1.0, 0.025) << pt.where;
  }
}

// gemmar's own GEMM (0.91-0.96x cuBLASLt alone) in the gemm-only runs of the current kernels: never faster than the
// vendor ceiling of the concurrent phase, at every shape measured.
TEST(ModelH200OneGpu, OurKernelsGemmOnlyPhaseIsAtOrAboveTheConcurrentVendorModel) {
  const auto prof = model::load_profile("h200-1gpu");
  const auto points = gemm_points(
      prof,
      {"h200-1gpu-2026-12-03-gemm4/call3/validate_runs.log", "h200-1gpu-2026-12-03-gemm4/call4/validate_runs.log",
       "h200-1gpu-2026-12-04-session6/fsdma/ab.jsonl", "h200-1gpu-2026-12-04-session7/k1024/call2/e2e_otherk.log",
       "h200-1gpu-2026-12-04-session7/k1024/call2/e2e_k1024_blockscale.log"},
      [](const json& r) { return r.at("mode") == "gemm-only" && r.value("gemm_impl", "") == "gemmar"; });
  EXPECT_GE(points.size(), 10u);
  std::printf("| docs/results/ file:line | M x N x K quant | our GEMM phase us | model us | measured / model |\n");
  for (const auto& pt : points) {
    const json& r = pt.record;
    std::printf("| %s | %lld x %lld x %lld %s | %.1f | %.1f | %.3f |\n", pt.where.c_str(),
                static_cast<long long>(r.at("m").get<int64_t>()), static_cast<long long>(r.at("n").get<int64_t>()),
                static_cast<long long>(r.at("k").get<int64_t>()), r.at("quant").get<std::string>().c_str(), pt.measured,
                pt.model, pt.measured / pt.model);
    EXPECT_GE(pt.measured, pt.model) << pt.where;
  }
}

// On one device split-lsa's "peer" loads are local reads whose writes are the stage's own writes: its lower bound
// is the two stages' HBM bytes at the peak (below the ceiling's same bytes at the copy rate), not the link bytes as
// copies on top (that bound, 1370 us at M = 16384, sat above the 1301 us measured in 2026-12-02/all_configs.log).
TEST(ModelH200OneGpu, SplitLsaAllReduceLowerBoundIsItsHbmBytesOnOneDevice) {
  const auto prof = model::load_profile("h200-1gpu");
  Config c;
  c.mode = Mode::SplitLsa;
  const auto p = model::predict(prof, Shape{}, c);
  for (const auto& ph : p.phases) {
    if (ph.name != "allreduce") continue;
    const double slice = 2048.0 * 7168 * 2;  // bf16 rows of one rank's slice
    EXPECT_NEAR(ph.lower_bound_us, 8 * (9 + 14) * slice / (prof.params.hbm.peak_gbps * 1e3), 1e-6);
    EXPECT_LE(ph.lower_bound_us, ph.ceiling_us);
    EXPECT_LT(ph.lower_bound_us, 1301.0);
  }
  EXPECT_LE(p.lower_bound_us, p.total_us);
}

// fused-sdma on one device: a put within one device is a copy kernel that waits for free SMs (`gemmar_gpu_bench
// copy-overlap`, docs/kernels.md "Thirteenth pass"), and the W persistent GEMMs hold every SM until their last
// wave, so the drain is the split scatter's leg after the GEMM, not a push overlapped with it (the model predicted
// 12.9 us at M = 4096 before 2026-12-06). Checked against every fused-sdma record of the one-launch kernels at the
// shapes where the fused path engages (M >= 4096): the 2026-12-04 A/B's persistent rows (fsdma/summary.txt names
// each line of ab.jsonl) and the 6144 x 5120 x 1024 runs of both quants.
TEST(ModelH200OneGpu, OneDeviceFusedSdmaDrainIsTheSplitScatterLegAfterTheGemm) {
  const auto prof = model::load_profile("h200-1gpu");
  std::vector<std::pair<std::string, json>> drains;
  {
    const std::string dir = "h200-1gpu-2026-12-04-session6/fsdma/";
    std::ifstream summary(std::string(kResults) + dir + "summary.txt");
    ASSERT_TRUE(summary.good());
    const auto records = records_in(dir + "ab.jsonl");
    int at = 0;
    for (std::string line; std::getline(summary, line) && at < int(records.size());) {
      if (line.rfind("M=", 0) != 0) continue;
      const auto& [ab_line, rec] = records[size_t(at++)];
      if (line.find("persistent") != std::string::npos)
        drains.emplace_back(dir + "ab.jsonl:" + std::to_string(ab_line), rec);
    }
  }
  for (const char* f : {"h200-1gpu-2026-12-04-session7/k1024/call1/e2e_blockscale.log",
                        "h200-1gpu-2026-12-04-session7/k1024/call1/e2e_ptpc.log",
                        "h200-1gpu-2026-12-04-session7/k1024/call2/e2e_k1024_blockscale.log",
                        "h200-1gpu-2026-12-04-session7/k1024/call2/e2e_k1024_ptpc.log"})
    for (const auto& [line, r] : records_in(f))
      if (r.at("mode") == "fused-sdma") drains.emplace_back(std::string(f) + ":" + std::to_string(line), r);
  ASSERT_GE(drains.size(), 20u);
  std::vector<double> ratios;
  std::printf("| docs/results/ file:line | M x N x K | measured drain us | model drain us | measured / model |\n");
  for (const auto& [where, r] : drains) {
    const Shape s = shape_of(r);
    ASSERT_GE(s.m, 4096) << where;
    const auto p = model::predict(prof, s, config_of(r));
    Config split = config_of(r);
    split.mode = Mode::SplitSdma;
    const double model_drain = phase_us(p, "drain");
    EXPECT_NEAR(model_drain, phase_us(model::predict(prof, s, split), "scatter"), 1e-9) << where;
    const double measured = r.at("phases_us").at("drain").get<double>();
    std::printf("| %s | %lld x %lld x %lld | %.1f | %.1f | %.3f |\n", where.c_str(), static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k), measured, model_drain,
                measured / model_drain);
    EXPECT_NEAR(measured / model_drain, 1.0, 0.20) << where;
    ratios.push_back(measured / model_drain);
  }
  std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
  EXPECT_NEAR(ratios[ratios.size() / 2], 1.0, 0.10);
}
