// Bytes per phase as docs/spec.md 1.1's worked figures, monotonicity, the pull-grid optimum, and the one-device
// profile's "link is HBM" behaviour.
#include <gtest/gtest.h>

#include <cmath>

#include "common/errors.hpp"
#include "model/model.hpp"

using namespace gemmar;

namespace {
constexpr double MiB = 1024.0 * 1024.0;
const model::Phase& find(const model::Prediction& p, const std::string& name) {
  for (const auto& ph : p.phases)
    if (ph.name == name) return ph;
  throw std::runtime_error("no phase " + name);
}
Config fp8(Transport t) {
  Config c;
  c.gather_dtype = WireDtype::Fp8;
  c.gather_transport = t;
  return c;
}
}  // namespace

TEST(ModelPhysics, BytesPerPhaseMatchSpecWorkedFigures) {
  const auto prof = model::load_profile("mi355x");
  const Shape s;  // M=16384, N=7168, K=2048, W=8
  Config split;
  split.mode = Mode::SplitSdma;
  const auto p = model::predict(prof, s, split);
  EXPECT_EQ(find(p, "scatter").bytes, 196 * MiB);
  EXPECT_EQ(find(p, "gather").bytes, 196 * MiB);
  EXPECT_EQ(find(p, "reduce").bytes, 8 * 28 * MiB + 28 * MiB);
  EXPECT_EQ(find(p, "gemm").flops, 2.0 * 16384 * 7168 * 2048);
  EXPECT_EQ(find(p, "gemm").bytes, 16384.0 * 7168 * 2);
  const auto f = model::predict(prof, s, fp8(Transport::Sdma));
  const double S = 2048, N = 7168;
  EXPECT_EQ(find(f, "gather").bytes, 7 * (98 * MiB / 7 + 8 * 1024));  // 98 MiB + 8 KiB of scales per slice
  EXPECT_EQ(find(f, "gather").bytes, 7 * (S * N + 4 * S));
  EXPECT_EQ(find(f, "quantize").bytes, 2 * 28 * MiB + 14 * MiB + 8 * 1024);
  EXPECT_EQ(find(f, "dequantize").bytes, 7 * S * N + 7 * S * N * 2);
  const auto l = model::predict(prof, s, fp8(Transport::Lsa));
  EXPECT_EQ(find(l, "pull").bytes, 98 * MiB);
  EXPECT_EQ(find(l, "pull").hbm_bytes, 196 * MiB);
  EXPECT_EQ(find(l, "gather").bytes, 0.0);
}

TEST(ModelPhysics, MIsPaddedToWorldTimesBlockM) {
  const auto prof = model::load_profile("mi355x");
  Shape a, b;
  a.m = 16384 - 1000;  // pads up to 16384 (8 * 128 divides it)
  Config split;
  split.mode = Mode::SplitSdma;
  EXPECT_EQ(find(model::predict(prof, a, split), "scatter").bytes,
            find(model::predict(prof, b, split), "scatter").bytes);
}

TEST(ModelPhysics, TotalIsMonotonicInM) {
  const auto prof = model::load_profile("mi355x");
  for (Mode mode : all_modes()) {
    for (auto [wire, tr] : {std::pair{WireDtype::Bf16, Transport::Sdma}, std::pair{WireDtype::Fp8, Transport::Sdma},
                            std::pair{WireDtype::Fp8, Transport::Lsa}}) {
      Config c;
      c.mode = mode;
      if (mode == Mode::SplitLsa && wire == WireDtype::Fp8) continue;
      c.gather_dtype = wire;
      c.gather_transport = tr;
      // fused-sdma at mori's default chunks is not monotonic in M, as mori is not: at M = 5120 (blockscale) a
      // destination has 5 M-tiles, so 8 chunks halve to 1 and nothing overlaps, while M = 6144 gets 2. Held at
      // one chunk, every M resolves alike.
      c.chunks = 1;
      double prev = 0;
      for (int64_t m = 1024; m <= 32768; m += 1024) {
        Shape s;
        s.m = m;
        const auto p = model::predict(prof, s, c);
        EXPECT_GE(p.total_us, prev) << config_label(c) << " M=" << m;
        EXPECT_LT(p.lower_bound_us, p.total_us);
        prev = p.total_us;
      }
    }
  }
}

TEST(ModelPhysics, SmallMGemmHasWaveQuantization) {
  const auto prof = model::load_profile("mi355x");
  Config c;
  c.mode = Mode::GemmOnly;
  Shape a, b;
  a.m = 1024;  // 8 x 28 = 224 tiles: one wave on 256 CUs
  b.m = 2048;  // 448 tiles: two waves
  Shape h;
  h.m = 1000;  // padded to 1024: the same single wave
  const double ta = model::predict(prof, a, c).total_us, tb = model::predict(prof, b, c).total_us;
  // One more wave, same tile time; the fixed cost is the launch and the K-proportional fill.
  const auto& g = prof.params.gemm;
  const double fixed = g.launch_us + std::ceil(double(a.k) / g.block_k) * g.k_iter_latency_us;
  EXPECT_GT(fixed, g.launch_us);
  EXPECT_NEAR(tb - ta, ta - fixed, 1e-9);
  EXPECT_EQ(model::predict(prof, h, c).total_us, ta);
}

TEST(ModelPhysics, FusedPathEngagesOnlyFromM4096) {
  const auto prof = model::load_profile("mi355x");
  Shape s;
  s.m = 2048;
  const auto p = model::predict(prof, s, Config{});
  EXPECT_FALSE(p.fused_engaged);
  EXPECT_NO_THROW(find(p, "scatter"));
  s.m = 4096;
  EXPECT_TRUE(model::predict(prof, s, Config{}).fused_engaged);
}

TEST(ModelPhysics, PullGridHasInteriorOptimumNear64OnMi355x) {
  const auto prof = model::load_profile("mi355x");
  const auto sw = model::sweep_pull_blocks(prof, Shape{}, fp8(Transport::Lsa), model::default_pull_grid());
  EXPECT_GT(sw.optimum, 16);
  EXPECT_LT(sw.optimum, 512);
  EXPECT_GE(sw.optimum, 32);
  EXPECT_LE(sw.optimum, 96);
  EXPECT_LE(sw.band_lo, 64);
  EXPECT_GE(sw.band_hi, 64);
  double best = 1e30, at16 = 0, at512 = 0;
  for (const auto& pt : sw.points) {
    best = std::min(best, pt.total_us);
    if (pt.value == 16) at16 = pt.total_us;
    if (pt.value == 512) at512 = pt.total_us;
  }
  EXPECT_GT(at16, 1.15 * best);   // starved links
  EXPECT_GT(at512, 1.15 * best);  // thrashed links
  // Measured: the 512-block grid made fp8/lsa lose to fp8/sdma (known_failure_signatures, by 17%).
  const double sdma = model::predict(prof, Shape{}, fp8(Transport::Sdma)).total_us;
  EXPECT_GT(at512, sdma);
}

TEST(ModelPhysics, SweepOfNonPullConfigIsFlatAndRejectsBadValues) {
  const auto prof = model::load_profile("mi355x");
  const auto sw = model::sweep_pull_blocks(prof, Shape{}, Config{}, {16, 64, 512});
  EXPECT_EQ(sw.points.front().total_us, sw.points.back().total_us);
  EXPECT_EQ(sw.band_lo, 16);
  EXPECT_EQ(sw.band_hi, 512);
  EXPECT_THROW(model::sweep_pull_blocks(prof, Shape{}, Config{}, {}), UsageError);
  EXPECT_THROW(model::sweep_pull_blocks(prof, Shape{}, Config{}, {0, 64}), UsageError);
}

TEST(ModelPhysics, Fp8WireBeatsBf16AtLargeMAndLosesItsEdgeAtSmallM) {
  const auto prof = model::load_profile("mi355x");
  auto gain = [&](int64_t m) {
    Shape s;
    s.m = m;
    return model::predict(prof, s, Config{}).total_us - model::predict(prof, s, fp8(Transport::Sdma)).total_us;
  };
  EXPECT_GT(gain(16384), 0);
  EXPECT_LT(gain(4096), gain(16384) / 4);  // fixed conversion costs against a transfer that shrinks with M
}

TEST(ModelPhysics, OneDeviceProfileCarriesAllRanksOnOneHbm) {
  const auto one = model::load_profile("h200-1gpu");
  Config c;
  c.mode = Mode::SplitSdma;
  Shape s;
  const auto p = model::predict(one, s, c);
  const double d2d = one.params.copy_engine.d2d_gbps;
  // The W ranks' scatters all go through one device's copy engines: W * 196 MiB at d2d_gbps.
  EXPECT_NEAR(find(p, "scatter").us - one.params.copy_engine.per_put_us - one.params.sync.barrier_us,
              8 * 196 * MiB / (d2d * 1e3), 1e-6);
  // A faster copy rate (the GPU engineer's measurement; +10% stays below the HBM peak's 2.4 TB/s copied, which
  // the lower bound uses) shortens that term.
  auto faster = one;
  faster.params.copy_engine.d2d_gbps = 1.1 * d2d;
  EXPECT_LT(model::predict(faster, s, c).total_us, p.total_us);
  EXPECT_LT(p.lower_bound_us, p.total_us);
  for (const char* name : {"mi300x", "h200"}) {
    const auto q = model::load_profile(name);
    EXPECT_GT(model::predict(q, s, Config{}).total_us, model::predict(q, s, Config{}).lower_bound_us) << name;
  }
}

// fused-lsa's epilogue stores each tile into the peers' slots with CU stores and waits for them before the next
// tile (mori kernels: vmcnt(0), a barrier, a system fence per tile), so on a link the push is paid on the GEMM,
// once per wave of tiles, not overlapped: blockscale's 128-row tiles are twice ptpc's 256-row ones.
TEST(ModelPhysics, FusedLsaPaysItsRemoteStoreWaitOncePerWaveOfTiles) {
  auto prof = model::load_profile("mi355x");
  const double per_tile = prof.params.gemm.remote_store_tile_us;
  ASSERT_TRUE(std::isfinite(per_tile));
  ASSERT_GT(per_tile, 0);
  Shape s;  // M = 16384, N = 7168, K = 2048, W = 8
  Config c;
  c.mode = Mode::FusedLsa;
  const double with_wait = find(model::predict(prof, s, c), "gemm").us;
  c.quant = Quant::Ptpc;
  const double ptpc_with_wait = find(model::predict(prof, s, c), "gemm").us;
  prof.params.gemm.remote_store_tile_us = 0;
  const double ptpc_no_wait = find(model::predict(prof, s, c), "gemm").us;
  c.quant = Quant::Blockscale;
  const double no_wait = find(model::predict(prof, s, c), "gemm").us;
  EXPECT_NEAR(with_wait - no_wait, 14 * per_tile, 1e-9);           // 128 x 28 tiles on 256 CUs
  EXPECT_NEAR(ptpc_with_wait - ptpc_no_wait, 7 * per_tile, 1e-9);  // 64 x 28 tiles
  // The per-tile remote wait replaces fused-sdma's epilogue tail (counter atomic, elected put): fused-lsa does
  // not pay epilogue_slowdown on top of it.
  auto no_slowdown = prof;
  no_slowdown.params.gemm.epilogue_slowdown = 0;
  EXPECT_NEAR(find(model::predict(no_slowdown, s, c), "gemm").us, no_wait, 1e-9);
  // Without the field the push overlaps the GEMM, as fused-sdma's copy-engine puts do.
  prof.params.gemm.remote_store_tile_us = std::nan("");
  const auto overlapped = model::predict(prof, s, c);
  EXPECT_LT(overlapped.total_us, model::predict(model::load_profile("mi355x"), s, c).total_us);
}

// mori's fused-sdma overlaps the scatter with the GEMM only through its chunks (bench_gemm_ar.py @fc892894: "with
// one chunk the fused path overlaps nothing at all -- measured, the drain then costs the same as the split scatter
// (493.8 vs 499.0us)"), and resolves them as 8 halved until they divide a destination's M-tiles.
TEST(ModelPhysics, FusedSdmaChunksResolveAsMorisAndOneChunkOverlapsNothing) {
  Shape s;  // M = 16384, N = 7168, K = 2048, W = 8
  Config c;
  c.quant = Quant::Ptpc;  // BLOCK_M 256: 8 M-tiles per destination
  EXPECT_EQ(effective_chunks(s, c), 8);
  c.chunks = 16;
  EXPECT_EQ(effective_chunks(s, c), 8);
  c.chunks = 3;
  EXPECT_EQ(effective_chunks(s, c), 1);
  s.m = 4096;
  c.chunks = 0;
  EXPECT_EQ(effective_chunks(s, c), 2);
  c.quant = Quant::Blockscale;  // BLOCK_M 128: 4 M-tiles per destination
  EXPECT_EQ(effective_chunks(s, c), 4);

  const auto prof = model::load_profile("mi355x");
  s.m = 16384;
  c.quant = Quant::Ptpc;
  // The per-kernel medians of the same table: drain 493.8 / 379.4 / 303.7 us at chunks 1 / 2 / 8. The model's
  // drains come within 15% (its in-server phase tolerance) and fall as mori's do.
  const std::pair<int, double> measured[] = {{1, 493.8}, {2, 379.4}, {8, 303.7}};
  double previous = INFINITY;
  for (const auto& [chunks, drain_us] : measured) {
    c.chunks = chunks;
    const auto pr = model::predict(prof, s, c);
    const double drain = find(pr, "drain").us;
    EXPECT_NEAR(drain / drain_us, 1.0, 0.15) << chunks << " chunks: " << drain;
    EXPECT_LT(drain, previous) << chunks;
    previous = drain;
    if (chunks == 1) {
      // Nothing overlaps: the drain is every scattered byte at the fused scatter's rate, one put per peer queue.
      const auto& p = prof.params;
      const double rate =
          std::min(p.copy_engine.aggregate_gbps, 7 * p.link.gbps_per_direction * p.link.protocol_efficiency) *
          p.link.scatter_efficiency;
      const double scatter_bytes = 7.0 * 2048 * 7168 * 2;
      EXPECT_NEAR(drain, p.copy_engine.per_put_us + scatter_bytes / (rate * 1e3) + p.sync.barrier_us, 1e-6);
      EXPECT_NEAR(find(pr, "drain").bytes, scatter_bytes, 1.0);
    }
  }
}

namespace {
// Every embedded profile predicts every mode and wire above its own lower bound, over shapes beyond the measured
// ones: small K (a GEMM bound by its C stores), W < 8 (a pull on fewer links than the mesh), large M. predict()
// checks lb <= total itself and throws, so a miss here is `gemmar model` exiting 3 on a legal input (it did at
// K = 128 on h200 gemm-only, W = 2 on mi355x's fp8/lsa pull, K <= 256 on h200-1gpu fused-lsa).
TEST(ModelPhysics, EveryProfilePredictsAboveItsLowerBoundOverOddShapes) {
  struct Wire {
    Mode mode;
    WireDtype dtype;
    Transport transport;
  };
  const Wire wires[] = {
      {Mode::GemmOnly, WireDtype::Bf16, Transport::Sdma}, {Mode::SplitSdma, WireDtype::Bf16, Transport::Sdma},
      {Mode::SplitSdma, WireDtype::Fp8, Transport::Lsa},  {Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma},
      {Mode::FusedSdma, WireDtype::Fp8, Transport::Sdma}, {Mode::FusedSdma, WireDtype::Fp8, Transport::Lsa},
      {Mode::SplitLsa, WireDtype::Bf16, Transport::Lsa},  {Mode::FusedLsa, WireDtype::Bf16, Transport::Sdma},
      {Mode::FusedLsa, WireDtype::Fp8, Transport::Lsa}};
  int cases = 0;
  for (const char* name : {"mi355x", "mi300x", "h200", "h200-1gpu"}) {
    const auto prof = model::load_profile(name);
    for (const Wire& w : wires)
      for (const int64_t k : {128, 512, 2048, 8192})
        for (const int64_t m : {1000, 16384, 65536})
          for (const int world : {2, 4, 8}) {
            Config c;
            c.mode = w.mode;
            c.gather_dtype = w.dtype;
            c.gather_transport = w.transport;
            model::Prediction p;
            ASSERT_NO_THROW(p = model::predict(prof, Shape{m, 7168, k, world}, c))
                << name << " " << to_string(w.mode) << " k " << k << " m " << m << " W " << world;
            EXPECT_LE(p.lower_bound_us, p.total_us);
            ++cases;
          }
  }
  EXPECT_EQ(cases, 4 * 9 * 4 * 3 * 3);
}
}  // namespace
