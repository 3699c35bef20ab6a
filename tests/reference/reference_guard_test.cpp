// The per-call guard (reference/guard.hpp) on the CPU emulation: its invariants hold with their derived bounds on
// every mode, wire and transport (no false alarm), its bounds are the formulas docs/guard.md derives, and a
// corruption of one element of one view is caught by the check that owns it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>

#include "reference/emulation.hpp"
#include "reference/formats.hpp"
#include "reference/guard.hpp"

namespace {

using namespace gemmar;
using namespace gemmar::reference;

struct Call {
  GuardContext ctx;
  Bf16Outputs outputs;
  Bf16Outputs partials;  // bf16 local partials
  std::vector<std::vector<float>> a_deq;
  std::vector<GuardWeights> weights;
};

Call emulate_call(const Shape& shape, const Config& cfg, uint64_t seed = 77) {
  EmulationRequest e;
  e.shape = shape;
  e.config = cfg;
  e.seed = seed;
  EmulationResult r = emulate(e);
  Call c;
  c.ctx = guard_context(shape, cfg, r.rows);
  c.outputs = r.outputs;
  OperandSpec spec;
  spec.shape = shape;
  spec.quant = effective_config(cfg).quant;
  spec.seed = seed;
  for (int rank = 0; rank < shape.world; ++rank) {
    std::vector<uint16_t> p(r.partials[size_t(rank)].size());
    for (size_t i = 0; i < p.size(); ++i) p[i] = to_bf16(r.partials[size_t(rank)][i]);
    c.partials.push_back(p);
    const RankOperands op = make_rank_operands(spec, rank, r.rows);
    c.a_deq.push_back(dequantized_a(op, spec.quant, spec.fp8_format));
    c.weights.push_back(guard_weights(dequantized_b(op, spec.quant, spec.fp8_format), shape.n, shape.k));
  }
  return c;
}

std::vector<GuardSums> sums_of(const Call& c) {
  std::vector<GuardSums> s;
  for (int r = 0; r < c.ctx.shape.world; ++r)
    s.push_back(guard_rank_sums(c.ctx, r, c.partials[size_t(r)], c.outputs[size_t(r)], c.a_deq[size_t(r)],
                                &c.weights[size_t(r)]));
  return s;
}

std::vector<std::string> codes(const std::vector<GuardFinding>& f) {
  std::vector<std::string> v;
  for (const auto& x : f) v.push_back(x.code);
  return v;
}

Config config_of(Mode m, WireDtype w, Transport t, Quant q = Quant::Blockscale) {
  Config c;
  c.mode = m;
  c.gather_dtype = w;
  c.gather_transport = t;
  c.quant = q;
  return c;
}

TEST(ReferenceGuard, EveryModeWireAndTransportPassesCleanOnTheEmulation) {
  const Shape shape{1024, 1024, 128, 8};
  for (Mode m : {Mode::GemmOnly, Mode::SplitSdma, Mode::FusedSdma, Mode::SplitLsa, Mode::FusedLsa})
    for (WireDtype w : {WireDtype::Bf16, WireDtype::Fp8})
      for (Transport t : {Transport::Sdma, Transport::Lsa}) {
        if (m == Mode::SplitLsa && w == WireDtype::Fp8) continue;  // refused as mori refuses it (validate_knobs)
        const Call c = emulate_call(shape, config_of(m, w, t));
        const auto f = guard_check(c.ctx, sums_of(c));
        EXPECT_TRUE(f.empty()) << config_label(config_of(m, w, t)) << ": " << f.front().code << " "
                               << f.front().message;
      }
}

TEST(ReferenceGuard, OtherQuantsWorldsAndPaddedShapesPassClean) {
  for (Quant q : {Quant::Ptpc, Quant::Mxfp8, Quant::Blockscale})
    for (int w : {2, 4})
      for (WireDtype d : {WireDtype::Bf16, WireDtype::Fp8}) {
        const Shape shape{1000, 1024, 256, w};  // M padded: the last slice holds zero padding rows
        const Call c = emulate_call(shape, config_of(Mode::FusedSdma, d, Transport::Sdma, q), 5);
        const auto f = guard_check(c.ctx, sums_of(c));
        EXPECT_TRUE(f.empty()) << to_string(q) << " W=" << w << ": " << f.front().message;
      }
}

// The bounds are the derivation's formulas (docs/guard.md), evaluated: one element, one term.
TEST(ReferenceGuard, BoundsAreTheDerivedFormulas) {
  const double g1 = 0x1p-24 / (1 - 0x1p-24);
  // One output element summed once, one rank: u_bf16 |out| plus the checksum's own terms.
  const double r1 = guard_reduce_bound(1.0, 0.0, 1, 1);
  EXPECT_NEAR(r1, ((0x1p-8 + g1) * 1.0) * (1 + g1) / (1 - g1) + 0x1p-134, 1e-18);
  // W = 8: gamma(7) on the partials' abs sum.
  const double g7 = 7 * 0x1p-24 / (1 - 7 * 0x1p-24);
  EXPECT_NEAR(guard_reduce_bound(0.0, 2.0, 1, 8), (g7 + g1) * 2.0 * (1 + g1) / (1 - g1) + 0x1p-134, 1e-18);
  // The fp8 wire: e4m3's 2^-4 relative dominates, plus half a subnormal step times the row scale.
  const double w = guard_wire_bound(1.0, 0.0, 1, Fp8Format::E4M3FN);
  EXPECT_GT(w, 0x1p-4);
  EXPECT_LT(w, 0x1p-4 * 1.1);
  EXPECT_NEAR(guard_wire_bound(0.0, 1.0, 1, Fp8Format::E4M3FN) * (1 - g1) / (1 + g1) / (1 + g1),
              0x1p-10 * (1 + 0x1p-8) + 2 * 0x1p-134 * (1 - g1) / (1 + g1) / (1 + g1), 1e-15);
  EXPECT_LT(guard_wire_bound(0.0, 1.0, 1, Fp8Format::E4M3FNUZ), guard_wire_bound(0.0, 1.0, 1, Fp8Format::E4M3FN));
  // The GEMM: K = 2048 blockscale -> 2048 + 3 * 16 + 3 roundings.
  EXPECT_EQ(guard_gemm_roundings(Quant::Blockscale, 2048), 2048 + 48 + 3);
  EXPECT_EQ(guard_gemm_roundings(Quant::Ptpc, 2048), 2048 + 3 + 3);
  EXPECT_GT(guard_gemm_bound(0.0, 1.0, 1, 2048, 2099), 4000 * 0x1p-24);
}

// The bound is tight enough to mean something: on a clean call the reduce's worst column uses a visible part of
// it (the output's bf16 rounding is the error), and never all of it.
TEST(ReferenceGuard, CleanReduceErrorUsesPartOfTheBound) {
  const Shape shape{1024, 1024, 128, 8};
  const Call c = emulate_call(shape, config_of(Mode::SplitSdma, WireDtype::Bf16, Transport::Sdma));
  const auto s = sums_of(c);
  const int64_t N = shape.n;
  double worst = 0;
  for (int sl = 0; sl < 8; ++sl)
    for (int64_t col = 0; col < N; ++col) {
      double p = 0, pa = 0;
      for (int r = 0; r < 8; ++r) {
        p += s[size_t(r)].partial_col[size_t(sl * N + col)];
        pa += s[size_t(r)].partial_col_abs[size_t(sl * N + col)];
      }
      const double d = std::fabs(s[size_t(sl)].out_col[size_t(sl * N + col)] - p);
      worst = std::max(worst, d / guard_reduce_bound(s[size_t(sl)].out_col_abs[size_t(sl * N + col)], pa, 128, 8));
    }
  EXPECT_LT(worst, 1.0);
  EXPECT_GT(worst, 0.01);
}

TEST(ReferenceGuard, OneUlpInOneNonOwnerViewIsAGatherFinding) {
  const Shape shape{1024, 1024, 128, 8};
  Call c = emulate_call(shape, config_of(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma));
  c.outputs[5][10 * size_t(shape.n) + 7] ^= 1;  // row 10 is slice 0's: rank 5's copy is off by one ulp
  const auto f = guard_check(c.ctx, sums_of(c));
  ASSERT_EQ(codes(f), std::vector<std::string>{"GUARD_GATHER"});
  EXPECT_NE(f[0].message.find("rank 5's view of slice 0"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("rows: 10"), std::string::npos) << f[0].message;
}

TEST(ReferenceGuard, AMissingPartialInTheOwnersSliceIsAReduceFinding) {
  const Shape shape{1024, 1024, 128, 8};
  Call c = emulate_call(shape, config_of(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma));
  // Rank 3's output of its own row 400: the sum without rank 6's partial; every view alike (a consistent lie).
  const size_t i = 400, N = size_t(shape.n);
  std::vector<uint16_t> lie(N);
  for (size_t col = 0; col < N; ++col)
    lie[col] = to_bf16(from_bf16(c.outputs[3][i * N + col]) - from_bf16(c.partials[6][i * N + col]));
  for (int r = 0; r < 8; ++r) std::copy(lie.begin(), lie.end(), c.outputs[size_t(r)].begin() + long(i * N));
  const auto f = guard_check(c.ctx, sums_of(c));
  ASSERT_EQ(codes(f), std::vector<std::string>{"GUARD_REDUCE"});
  EXPECT_NE(f[0].message.find("slice 3"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("rows off: 400"), std::string::npos) << f[0].message;
}

TEST(ReferenceGuard, AScaledPartialIsAGemmFinding) {
  const Shape shape{1024, 1024, 128, 8};
  Call c = emulate_call(shape, config_of(Mode::GemmOnly, WireDtype::Bf16, Transport::Sdma));
  for (auto& x : c.partials[2]) x = to_bf16(from_bf16(x) * kPerturbFactor);
  const auto f = guard_check(c.ctx, sums_of(c));
  ASSERT_EQ(codes(f), std::vector<std::string>{"GUARD_GEMM"});
  EXPECT_NE(f[0].message.find("rank 2's partial"), std::string::npos) << f[0].message;
}

TEST(ReferenceGuard, Fp8NonOwnerHoldingExactBf16IsAWireFinding) {
  const Shape shape{512, 1024, 128, 4};
  Call c = emulate_call(shape, config_of(Mode::SplitSdma, WireDtype::Fp8, Transport::Sdma));
  const int64_t S = slice_rows(shape, Quant::Blockscale), N = shape.n;
  for (int64_t i = 0; i < S; ++i)  // rank 2 received slice 0 unquantized
    for (int64_t col = 0; col < N; ++col) c.outputs[2][size_t(i * N + col)] = c.outputs[0][size_t(i * N + col)];
  const auto f = guard_check(c.ctx, sums_of(c));
  ASSERT_EQ(codes(f), std::vector<std::string>{"GUARD_WIRE"});
  EXPECT_NE(f[0].message.find("rank 2's view of slice 0"), std::string::npos) << f[0].message;
}

TEST(ReferenceGuard, NaNInAViewFailsItsCheck) {
  const Shape shape{1024, 1024, 128, 8};
  Call c = emulate_call(shape, config_of(Mode::SplitSdma, WireDtype::Bf16, Transport::Sdma));
  c.outputs[1][300 * size_t(shape.n)] = 0x7fc0;  // row 300: rank 2's slice; rank 1's copy
  EXPECT_EQ(codes(guard_check(c.ctx, sums_of(c))), std::vector<std::string>{"GUARD_GATHER"});
  c.outputs[2][300 * size_t(shape.n)] = 0x7fc0;  // the owner's own value too: the reduce check fails
  const auto f = codes(guard_check(c.ctx, sums_of(c)));
  EXPECT_NE(std::find(f.begin(), f.end(), "GUARD_REDUCE"), f.end());
}

// python/gemmar_guard.py carries the same bound formulas in plain Python (no torch needed to import them): both
// must give the same numbers, or the serving guard and gemmar's would judge differently.
TEST(ReferenceGuard, PythonGuardBoundsEqualTheseBounds) {
  const std::string py = std::string(GEMMAR_TEST_DATA_DIR) + "/../../python";
  const std::string cmd = "/usr/bin/python3 -c \"import sys; sys.path.insert(0, '" + py +
                          "'); import gemmar_guard as g; print(repr(g.reduce_bound(3.5, 7.25, 2048, 8)), "
                          "repr(g.wire_bound(3.5, 0.125, 2048)), repr(g.wire_bound(3.5, 0.125, 2048, True)), "
                          "repr(g.gemm_bound(2.5, 100.0, 1024, 2048, g.gemm_roundings(2048))))\"";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char buf[512] = {};
  const size_t got = fread(buf, 1, sizeof(buf) - 1, f);
  ASSERT_EQ(pclose(f), 0) << cmd;
  std::istringstream in(std::string(buf, got));
  double r = 0, w = 0, wz = 0, g = 0;
  in >> r >> w >> wz >> g;
  EXPECT_DOUBLE_EQ(r, guard_reduce_bound(3.5, 7.25, 2048, 8));
  EXPECT_DOUBLE_EQ(w, guard_wire_bound(3.5, 0.125, 2048, Fp8Format::E4M3FN));
  EXPECT_DOUBLE_EQ(wz, guard_wire_bound(3.5, 0.125, 2048, Fp8Format::E4M3FNUZ));
  EXPECT_DOUBLE_EQ(g, guard_gemm_bound(2.5, 100.0, 1024, 2048, guard_gemm_roundings(Quant::Blockscale, 2048)));
}

// The sampled guard (reference/guard_sample.hpp): one row per aligned stratum of G rows, drawn anew per call.
TEST(ReferenceGuardSample, OneRowPerStratumEveryCallAndStrideOneIsEveryRow) {
  std::vector<int64_t> all(1024);
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  for (int64_t g : {1, 2, 8, 32, 128}) {
    std::set<std::vector<size_t>> distinct;
    for (uint64_t call = 0; call < 16; ++call) {
      const std::vector<size_t> p = guard_sample_positions(all, g, 99, call);
      ASSERT_EQ(int64_t(p.size()), 1024 / g) << "stride " << g;
      for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(all[p[i]] / g, int64_t(i)) << "stride " << g;
      distinct.insert(p);
    }
    // The rows move from call to call (stride 1: nothing to move).
    EXPECT_EQ(distinct.size() > 8, g > 1) << "stride " << g;
  }
}

TEST(ReferenceGuardSample, CandidatesTheEmulationHoldsAreSampledPerStratum) {
  const std::vector<int64_t> held{3, 5, 40, 41, 42, 100, 127, 128};  // strata of 32: 0 0 1 1 1 3 3 4
  const std::vector<size_t> p = guard_sample_positions(held, 32, 7, 3);
  ASSERT_EQ(p.size(), 4u);
  const std::vector<int64_t> stratum{0, 1, 3, 4};
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(held[p[i]] / 32, stratum[i]);
  EXPECT_THROW(guard_sample_positions(held, 3, 7, 3), std::exception);  // 3 does not divide 128
}

// python/gemmar_guard.py draws its rows with the same function, so a serving process and gemmar read the same
// rows for the same (seed, call).
TEST(ReferenceGuardSample, PythonGuardDrawsTheSameRows) {
  const std::string py = std::string(GEMMAR_TEST_DATA_DIR) + "/../../python";
  const std::string cmd = "/usr/bin/python3 -c \"import sys; sys.path.insert(0, '" + py +
                          "'); import gemmar_guard as g; print(*g.sample_rows(2048, 32, 0x123456789abcdef0, 41))\"";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string got;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), f)) > 0;) got.append(buf, n);
  ASSERT_EQ(pclose(f), 0) << cmd;
  std::vector<int64_t> all(2048);
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  std::ostringstream want;
  const std::vector<size_t> p = guard_sample_positions(all, 32, 0x123456789abcdef0ull, 41);
  for (size_t i = 0; i < p.size(); ++i) want << (i ? " " : "") << all[p[i]];
  want << "\n";
  EXPECT_EQ(got, want.str());
}

TEST(ReferenceGuard, WrongNumberOfRanksIsAnInternalError) {
  const Call c = emulate_call({512, 1024, 128, 4}, config_of(Mode::SplitSdma, WireDtype::Bf16, Transport::Sdma));
  auto s = sums_of(c);
  s.pop_back();
  EXPECT_ANY_THROW(guard_check(c.ctx, s));
}

}  // namespace
