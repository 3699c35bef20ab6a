// The caller guard (reference/guard_caller.hpp) on the CPU emulation of mori's recipes, at small shapes (the slow
// tier runs the targets' N and K): what a serving process holds (each rank's A, its weights, its output view), no
// partials. Clean calls pass on both targets' quants (blockscale W = 8, mxfp8 W = 4, the benchmark's data and
// scales) and every scatter x gather wire pair, with bounds derived from the rounding model; every fault class the
// device script injects is caught; the thresholds are the derived formulas; python/gemmar_guard_caller.py judges the
// same records alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "guard_caller_fixture.hpp"

namespace {

using namespace gemmar;
using namespace gemmar::reference;
using namespace gemmar::guard_caller_test;
namespace cg = gemmar::caller_guard;

// mori's two targets scaled down: W = 8 blockscale (V4-Pro) and W = 4 mxfp8 (V4-Flash), the benchmark's data
// (randn / 8; blockscale scales rand * 0.01 + 0.01, mxfp8's e8m0 2^-7 .. 2^-5).
const Target kPro{"blockscale W=8", {512, 2048, 256, 8}, Quant::Blockscale, 4};
const Target kFlash{"mxfp8 W=4", {1024, 2048, 256, 4}, Quant::Mxfp8, 8};

TEST(ReferenceGuardCaller, CleanCallsPassOnMorisRecipesAndEveryWirePair) {
  for (const Target& t : {kPro, kFlash})
    for (bool fp8_scatter : {false, true})
      for (bool fp8_gather : {false, true}) expect_clean_calls_pass(t, fp8_scatter, fp8_gather, 1);
}

TEST(ReferenceGuardCaller, EveryFaultClassIsCaught) {
  for (bool fp8_scatter : {false, true})
    for (bool fp8_gather : {false, true}) expect_every_fault_caught(kFlash, fp8_scatter, fp8_gather);
  expect_every_fault_caught(kPro, false, false);
  expect_every_fault_caught(kPro, true, true);
}

// The fp8 gather that moved bf16 (the wire never engaged): every non-owner holds the owner's exact bits.
TEST(ReferenceGuardCaller, AnFp8GatherThatMovedBf16IsAWireFinding) {
  const Op op = run_op(kPro, true, false, 0);
  Bf16Outputs views = op.result.outputs;
  const int64_t N = op.plan.config.n;
  for (size_t i : slice_positions(op, 0))
    for (int r = 1; r < kPro.shape.world; ++r)
      std::copy_n(views[0].begin() + long(i) * N, N, views[size_t(r)].begin() + long(i) * N);
  const auto f = judge(op, views, 0).findings;
  ASSERT_TRUE(has(f, "GUARD_WIRE")) << ::testing::PrintToString(codes(f));
  EXPECT_NE(f.back().message.find("never engaged"), std::string::npos) << f.back().message;
}

// A single corrupted element is read when its row is listed: with one row in G per call, on 1 call in G (the sample
// moves every call). Over 64 calls a fixed NaN is flagged on exactly the calls that list its row.
TEST(ReferenceGuardCaller, ASingleElementIsCaughtExactlyWhenItsRowIsSampled) {
  const Target small{"blockscale W=4", {512, 1024, 256, 4}, Quant::Blockscale, 8};
  const Op op = run_op(small, false, false, 0, 1234, true);
  Bf16Outputs views = op.result.outputs;
  const int64_t row = 333, N = op.plan.config.n;
  views[1][size_t(row * N + 17)] = 0x7fc0;
  int listed = 0;
  for (uint32_t call = 0; call < 64; ++call) {
    const std::vector<int64_t> rows = caller_rows(op.plan, kSampleSeed, call);
    const bool in = std::find(rows.begin(), rows.end(), row) != rows.end();
    listed += in;
    EXPECT_EQ(in, !judge(op, views, call).findings.empty()) << "call " << call;
  }
  EXPECT_GT(listed, 0);
  EXPECT_LT(listed, 64);
}

// python/gemmar_guard_caller.py judges records in numpy (the torch fallback and the CPU self-test): on the same
// records (a faulty call, so that every field is exercised) it must find the same cells, or a serving process and
// gemmar would judge differently.
// The device library writes cg::Cell as it is and Python reads the bytes with cell_dtype: the same fields at the
// same offsets and the same size, or every cell after the first is read from the wrong place (as on the library's
// first device run: 14-word cells read as 16).
TEST(ReferenceGuardCaller, PythonReadsTheDevicesCellsAtTheirOffsets) {
  const std::string py = std::string(GEMMAR_TEST_DATA_DIR) + "/../../python/gemmar_guard_caller.py";
  FILE* pipe = popen(("/usr/bin/python3 " + py + " --cell-layout").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string text;
  char buf[4096];
  for (size_t got; (got = fread(buf, 1, sizeof(buf), pipe)) > 0;) text.append(buf, got);
  ASSERT_EQ(pclose(pipe), 0) << py;
  const std::vector<std::pair<std::string, size_t>> want = {{"checks", offsetof(cg::Cell, checks)},
                                                            {"pred_fail", offsetof(cg::Cell, pred_fail)},
                                                            {"nonfinite", offsetof(cg::Cell, nonfinite)},
                                                            {"worst_idx", offsetof(cg::Cell, worst_idx)},
                                                            {"worst_ratio", offsetof(cg::Cell, worst_ratio)},
                                                            {"worst_d", offsetof(cg::Cell, worst_d)},
                                                            {"worst_bound", offsetof(cg::Cell, worst_bound)},
                                                            {"zsum", offsetof(cg::Cell, zsum)},
                                                            {"gather", offsetof(cg::Cell, gather)},
                                                            {"gather_first", offsetof(cg::Cell, gather_first)},
                                                            {"wire", offsetof(cg::Cell, wire)},
                                                            {"wire_first", offsetof(cg::Cell, wire_first)},
                                                            {"bypass", offsetof(cg::Cell, bypass)},
                                                            {"other", offsetof(cg::Cell, other)},
                                                            {"pad0", offsetof(cg::Cell, pad0)},
                                                            {"pad1", offsetof(cg::Cell, pad1)},
                                                            {"itemsize", sizeof(cg::Cell)}};
  std::istringstream in(text);
  for (const auto& [name, offset] : want) {
    std::string got_name;
    size_t got_offset = 0;
    in >> got_name >> got_offset;
    ASSERT_TRUE(bool(in)) << "python printed fewer fields than cg::Cell has:\n" << text;
    EXPECT_EQ(got_name, name) << text;
    EXPECT_EQ(got_offset, offset) << name;
  }
}

TEST(ReferenceGuardCaller, PythonJudgesTheSameRecordsAlike) {
  for (int mode = 0; mode < 3; ++mode) {  // bf16 gather; fp8 gather, mori's recipe replayed; fp8 gather, no recipe
    const bool fp8 = mode > 0;
    Op op = run_op(kFlash, fp8, mode == 2, 1);
    if (mode == 2) {
      CallerConfig c = op.plan.config;
      c.recipe.reset();
      op.plan = caller_plan(c);
    }
    Bf16Outputs views = op.result.outputs;
    const int64_t N = op.plan.config.n;
    views[3][slice_positions(op, 1)[0] * size_t(N) + 9] = 0x7fc0;  // a NaN in a non-owner's view
    views[2][slice_positions(op, 0)[4] * size_t(N) + 3] ^= 0x40;   // one changed element in another
    const Judged j = judge(op, views, 1);
    const CallerConfig& c = op.plan.config;
    const std::string path = ::testing::TempDir() + "/caller_records_" + std::to_string(mode) + ".bin";
    {
      std::ofstream f(path, std::ios::binary);
      f << c.world << " " << c.m << " " << c.n << " " << c.k << " " << c.stride << " " << c.fp8_gather << " "
        << c.fp8_scatter << " " << op.plan.consts.recipe_known << " " << c.alpha << " "
        << scale_k_block(kFlash.quant, c.k) << "\n";
      f.write(reinterpret_cast<const char*>(j.records.data()), std::streamsize(j.records.size() * sizeof(float)));
    }
    const std::string py = std::string(GEMMAR_TEST_DATA_DIR) + "/../../python/gemmar_guard_caller.py";
    FILE* pipe = popen(("/usr/bin/python3 " + py + " --judge " + path).c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string text;
    char buf[4096];
    for (size_t got; (got = fread(buf, 1, sizeof(buf), pipe)) > 0;) text.append(buf, got);
    ASSERT_EQ(pclose(pipe), 0) << py;
    std::istringstream in(text);
    double lambda = 0, agg = 0, part2 = 0, reduce = 0, wire_sub = 0;
    in >> lambda >> agg >> part2 >> reduce >> wire_sub;
    EXPECT_DOUBLE_EQ(lambda, op.plan.consts.lambda);
    EXPECT_DOUBLE_EQ(agg, op.plan.consts.agg_threshold);
    EXPECT_DOUBLE_EQ(part2, op.plan.consts.part2);
    EXPECT_DOUBLE_EQ(reduce, op.plan.consts.reduce);
    EXPECT_DOUBLE_EQ(wire_sub, op.plan.consts.wire_sub);
    for (size_t i = 0; i < j.cells.size(); ++i) {
      const cg::Cell& e = j.cells[i];
      uint64_t fail = 0, nonfinite = 0, idx = 0, ratio_bits = 0, gather = 0, gfirst = 0, wire = 0, wfirst = 0,
               bypass = 0;
      double zsum = 0;
      in >> fail >> nonfinite >> idx >> ratio_bits >> zsum >> gather >> gfirst >> wire >> wfirst >> bypass;
      ASSERT_TRUE(bool(in)) << "cell " << i << " of " << j.cells.size() << ":\n" << text;
      const std::string at = "mode " + std::to_string(mode) + " cell " + std::to_string(i);
      EXPECT_EQ(fail, e.pred_fail) << at;
      EXPECT_EQ(nonfinite, e.nonfinite) << at;
      EXPECT_EQ(idx, e.worst_idx) << at;
      EXPECT_EQ(ratio_bits, numerics::f32_bits(e.worst_ratio)) << at;
      if (std::isfinite(e.zsum))
        EXPECT_NEAR(zsum, e.zsum, 1e-5 * std::max(1.0, double(e.zsum))) << at;
      else
        EXPECT_EQ(zsum, -1) << at;
      EXPECT_EQ(gather, e.gather) << at;
      EXPECT_EQ(gfirst, e.gather_first) << at;
      EXPECT_EQ(wire, e.wire) << at;
      EXPECT_EQ(wfirst, e.wire_first) << at;
      EXPECT_EQ(bypass, e.bypass) << at;
    }
    EXPECT_FALSE(j.findings.empty());
  }
}

TEST(ReferenceGuardCaller, ThresholdsAreTheDerivedFormulas) {
  // lambda: 2 exp(-lambda^2 / 2) = p.
  for (double p : {1e-3, 1e-9, 1e-15}) EXPECT_NEAR(2 * std::exp(-0.5 * std::pow(caller_lambda(p), 2)), p, p * 1e-12);
  // The aggregate: (t/n)^(n/2) exp(-(t-n)/2) = p at the threshold.
  for (int64_t n : {16, 448, 3584}) {
    const double p = 1e-11, t = caller_agg_threshold(n, p);
    EXPECT_GT(t, double(n));
    EXPECT_NEAR(0.5 * double(n) * std::log(t / double(n)) - 0.5 * (t - double(n)), std::log(p), 1e-9);
  }
  // The constants at mori's W = 8 target: bf16 wires use u_bf16^2 for the partial and the output; the fp8 scatter
  // adds e4m3's 2^-4 (and three fp32 roundings, and the subnormal term) on each partial.
  CallerConfig c;
  c.world = 8;
  c.m = 16384;
  c.n = 7168;
  c.k = 2048;
  c.gemm_roundings = guard_gemm_roundings(Quant::Blockscale, 2048);
  const CallerPlan bf = caller_plan(c);
  EXPECT_DOUBLE_EQ(bf.consts.part2, 0x1p-16);
  EXPECT_DOUBLE_EQ(bf.consts.out2, 0x1p-16);
  EXPECT_EQ(bf.layout.L, 512);
  EXPECT_EQ(bf.layout.nb, 7);
  EXPECT_EQ(bf.checks, 8 * 512 * 7);
  c.fp8_scatter = true;
  const CallerPlan f8 = caller_plan(c);
  const double c8 = (1 + 0x1p-4) * (1 + cg::gamma32(3)) - 1 + 16 * 0x1p-10 / 448 * (1 + 0x1p-23);
  EXPECT_DOUBLE_EQ(f8.consts.part2, 0x1p-16 + std::pow(c8 * (1 + 0x1p-8), 2));
  // The record is a few tens of KB: what every rank sends per call.
  EXPECT_LT(bf.layout.floats * 4, 80 * 1024);
}

// The spectral bound is a bound: ||B_b a|| <= c_part ||a|| for random a, and c_part is not far above the truth.
TEST(ReferenceGuardCaller, ThePartialsNormBoundHolds) {
  const Target t = kPro;
  OperandSpec spec;
  spec.shape = t.shape;
  spec.quant = t.quant;
  spec.data = DataKind::Bench;
  const RankOperands ro = make_rank_operands(spec, 0);
  const std::vector<float> b = dequantized_b(ro, t.quant, spec.fp8_format);
  const CallerWeights w = caller_weights(b, t.shape.n, t.shape.k, guard_gemm_roundings(t.quant, t.shape.k));
  double worst = 0;
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> a(static_cast<size_t>(t.shape.k));
    double an = 0;
    for (int64_t k = 0; k < t.shape.k; ++k) {
      a[size_t(k)] = normal_sample(trial, 0, Tensor::A, 0, k);
      an += a[size_t(k)] * a[size_t(k)];
    }
    for (int bl = 0; bl < w.nb; ++bl) {
      double pn = 0;
      for (int64_t n = bl * 1024; n < std::min<int64_t>(t.shape.n, (bl + 1) * 1024); ++n) {
        double x = 0;
        for (int64_t k = 0; k < t.shape.k; ++k) x += double(b[size_t(n * t.shape.k + k)]) * a[size_t(k)];
        pn += x * x;
      }
      worst = std::max(worst, std::sqrt(pn / an) / double(w.c_part[size_t(bl)]));
    }
  }
  EXPECT_LT(worst, 1.0);
  EXPECT_GT(worst, 0.2);  // random directions reach sqrt(T / (sqrt(T) + sqrt(K))^2) ~ 0.4 of the spectral norm
}

}  // namespace
