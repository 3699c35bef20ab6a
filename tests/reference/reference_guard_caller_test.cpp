// The caller guard (reference/guard_caller.hpp) on the CPU emulation of mori's recipes: what a serving process holds
// (each rank's A, its weights, its output view), no partials. Clean calls pass on both quants of mori's targets
// (blockscale W = 8, mxfp8 W = 4, the benchmark's data and scales) and every scatter x gather wire pair, with the
// bounds derived from the rounding model; every fault class the device script injects is caught; the bound formulas
// and the judge are the ones python/gemmar_guard.py computes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "reference/emulation.hpp"
#include "reference/formats.hpp"
#include "reference/guard_caller.hpp"
#include "reference/guard_sample.hpp"
#include "reference/numerics_inline.hpp"
#include "reference/operands.hpp"

namespace {

using namespace gemmar;
using namespace gemmar::reference;
namespace cg = gemmar::caller_guard;

struct Target {
  const char* name;
  Shape shape;
  Quant quant;
  int64_t stride;
};
// mori's two targets, scaled down for the CPU: W = 8 blockscale (V4-Pro) and W = 4 mxfp8 (V4-Flash), the benchmark's
// data (randn / 8; blockscale scales rand * 0.01 + 0.01, mxfp8's e8m0 2^-7 .. 2^-5). The slow tier runs them at the
// targets' N and K (reference_guard_caller_slow_test.cpp).
const Target kPro{"blockscale W=8", {1024, 2048, 256, 8}, Quant::Blockscale, 8};
const Target kFlash{"mxfp8 W=4", {1024, 2048, 256, 4}, Quant::Mxfp8, 8};
constexpr uint64_t kSampleSeed = 77;

Config config_of(const Target& t, bool fp8_gather, bool fp8_scatter) {
  Config c;
  c.mode = Mode::FusedSdma;
  c.quant = t.quant;
  c.gather_dtype = fp8_gather ? WireDtype::Fp8 : WireDtype::Bf16;
  c.scatter_dtype = fp8_scatter ? WireDtype::Fp8 : WireDtype::Bf16;
  return c;
}

CallerPlan plan_of(const Target& t, bool fp8_gather, bool fp8_scatter) {
  CallerConfig c;
  c.world = t.shape.world;
  c.m = padded_m(t.shape, config_of(t, fp8_gather, fp8_scatter));
  c.n = t.shape.n;
  c.k = t.shape.k;
  c.stride = t.stride;
  c.fp8_gather = fp8_gather;
  c.fp8_scatter = fp8_scatter;
  c.gemm_roundings = guard_gemm_roundings(t.quant, t.shape.k);
  return caller_plan(c);
}

// One emulated call of the op on the rows it lists (all rows when `every_row`), with what each rank holds there.
struct Op {
  Target target;
  Config config;
  CallerPlan plan;
  EmulationResult result;                 // outputs and partials per rank, [result.rows, N]
  std::vector<std::vector<float>> a_deq;  // per rank [result.rows, K]
  std::vector<CallerWeights> weights;
};

Op run_op(const Target& t, bool fp8_gather, bool fp8_scatter, uint32_t call, uint64_t seed = 1234,
          bool every_row = false) {
  Op op;
  op.target = t;
  op.config = config_of(t, fp8_gather, fp8_scatter);
  op.plan = plan_of(t, fp8_gather, fp8_scatter);
  EmulationRequest e;
  e.shape = t.shape;
  e.config = op.config;
  e.data = DataKind::Bench;
  e.seed = seed;
  if (!every_row) e.rows = caller_rows(op.plan, kSampleSeed, call);
  op.result = emulate(e);
  OperandSpec spec;
  spec.shape = t.shape;
  spec.quant = t.quant;
  spec.data = DataKind::Bench;
  spec.seed = seed;
  for (int r = 0; r < t.shape.world; ++r) {
    const RankOperands ro = make_rank_operands(spec, r, op.result.rows);
    op.a_deq.push_back(dequantized_a(ro, t.quant, spec.fp8_format));
    op.weights.push_back(caller_weights(dequantized_b(ro, t.quant, spec.fp8_format), t.shape.n, t.shape.k,
                                        op.plan.config.gemm_roundings));
  }
  return op;
}

struct Judged {
  std::vector<int64_t> rows;
  std::vector<float> records;
  std::vector<cg::Cell> cells;
  std::vector<GuardFinding> findings;
};

// The call's records from the views (every rank's output over op.result.rows), judged.
Judged judge(const Op& op, const Bf16Outputs& views, uint32_t call) {
  const CallerPlan& p = op.plan;
  Judged j;
  j.rows = caller_rows(p, kSampleSeed, call);
  const int64_t N = p.config.n, K = p.config.k;
  std::vector<size_t> at;  // each listed row's position in op.result.rows
  for (int64_t row : j.rows) {
    const auto it = std::lower_bound(op.result.rows.begin(), op.result.rows.end(), row);
    EXPECT_TRUE(it != op.result.rows.end() && *it == row) << "row " << row << " was not emulated";
    at.push_back(size_t(it - op.result.rows.begin()));
  }
  for (int r = 0; r < p.layout.world; ++r) {
    std::vector<float> a(static_cast<size_t>(p.layout.L * K));
    std::vector<uint16_t> o(static_cast<size_t>(p.layout.L * N));
    for (size_t i = 0; i < at.size(); ++i) {
      std::copy_n(op.a_deq[size_t(r)].begin() + long(at[i]) * K, K, a.begin() + long(i) * K);
      std::copy_n(views[size_t(r)].begin() + long(at[i]) * N, N, o.begin() + long(i) * N);
    }
    const std::vector<float> rec = caller_rank_record(p, r, call, a, o, op.weights[size_t(r)]);
    j.records.insert(j.records.end(), rec.begin(), rec.end());
  }
  j.cells = caller_judge(p, j.records);
  j.findings = caller_findings(p, j.cells, j.rows);
  return j;
}

std::vector<std::string> codes(const std::vector<GuardFinding>& f) {
  std::vector<std::string> v;
  for (const auto& x : f) v.push_back(x.code);
  return v;
}
bool has(const std::vector<GuardFinding>& f, const std::string& code) {
  return std::any_of(f.begin(), f.end(), [&](const GuardFinding& x) { return x.code == code; });
}
std::string label(const Op& op) {
  return std::string(op.target.name) + " scatter " + to_string(op.config.scatter_dtype) + " gather " +
         to_string(op.config.gather_dtype);
}

int64_t slice_rows_of(const Op& op) { return op.plan.config.m / op.plan.config.world; }

// Positions in op.result.rows of slice s's rows.
std::vector<size_t> slice_positions(const Op& op, int s) {
  std::vector<size_t> v;
  for (size_t i = 0; i < op.result.rows.size(); ++i)
    if (op.result.rows[i] / slice_rows_of(op) == s) v.push_back(i);
  return v;
}

// Every scatter x gather pair of both targets: a clean call raises nothing, and its worst check and worst cell's
// aggregate stay inside their bounds (printed: how much of each bound a clean call uses).
TEST(ReferenceGuardCaller, CleanCallsPassOnMorisRecipesAndEveryWirePair) {
  for (const Target& t : {kPro, kFlash})
    for (bool fp8_scatter : {false, true})
      for (bool fp8_gather : {false, true}) {
        const Op op = run_op(t, fp8_gather, fp8_scatter, 0);
        const Judged j = judge(op, op.result.outputs, 0);
        EXPECT_TRUE(j.findings.empty()) << label(op) << ": " << j.findings.front().code << " "
                                        << j.findings.front().message;
        double worst = 0, worst_agg = 0;
        for (const auto& c : j.cells) {
          worst = std::max(worst, double(c.worst_ratio));
          worst_agg = std::max(worst_agg, double(c.zsum) / op.plan.consts.agg_threshold);
        }
        std::printf("%-16s scatter %-4s gather %-4s: worst check %.3f of its bound, worst cell %.4f of the "
                    "aggregate threshold (lambda %.2f)\n",
                    t.name, fp8_scatter ? "fp8" : "bf16", fp8_gather ? "fp8" : "bf16", worst, worst_agg,
                    op.plan.consts.lambda);
        EXPECT_LT(worst, 1.0) << label(op);
        EXPECT_GT(worst, 0.0) << label(op);  // the bound is a bound on something: a clean call uses part of it
        EXPECT_LT(worst_agg, 1.0) << label(op);
      }
}

// The fault classes of scripts/device_guard_python.sh, injected into the emulated views.
Bf16Outputs dropped_peer(const Op& op, int peer) {
  Partials parts = op.result.partials;
  const int64_t N = op.plan.config.n;
  for (size_t i = 0; i < op.result.rows.size(); ++i)
    if (op.result.rows[i] / slice_rows_of(op) != peer)
      std::fill_n(parts[size_t(peer)].begin() + long(i) * N, N, 0.0f);  // its puts never landed
  CollectiveRequest c;
  c.shape = op.target.shape;
  c.config = op.config;
  c.rows = op.result.rows;
  return emulate_collective(c, parts);
}

void copy_slice(Bf16Outputs& to, const Bf16Outputs& from, const Op& op, int s, int only_view = -1) {
  const int64_t N = op.plan.config.n;
  for (size_t i : slice_positions(op, s))
    for (size_t v = 0; v < to.size(); ++v)
      if (only_view < 0 || int(v) == only_view) std::copy_n(from[v].begin() + long(i) * N, N, to[v].begin() + long(i) * N);
}

// The owner's bf16 row as an fp8 gather delivers it (mori's recipe), its scale times `scale_factor`.
std::vector<uint16_t> gathered(const Op& op, const uint16_t* row, float scale_factor) {
  const int64_t N = op.plan.config.n;
  std::vector<uint16_t> out(row, row + N);
  std::vector<uint8_t> q(static_cast<size_t>(N));
  const float scale = wire_quantize_row(row, N, q.data(), Fp8Format::E4M3FN, WireRecipe::Mori);
  wire_dequantize_row(q.data(), scale * scale_factor, N, out.data(), Fp8Format::E4M3FN);
  return out;
}

TEST(ReferenceGuardCaller, EveryFaultClassIsCaughtOnEveryWirePair) {
  for (const Target& t : {kPro, kFlash})
    for (bool fp8_scatter : {false, true})
      for (bool fp8_gather : {false, true}) {
        const uint32_t call = 3;
        const Op op = run_op(t, fp8_gather, fp8_scatter, call);
        const Op previous = run_op(t, fp8_gather, fp8_scatter, call, 4321);  // another call's output
        const int W = t.shape.world, s = 1, v = W - 1;
        const int64_t S = slice_rows_of(op), N = op.plan.config.n;
        const std::string what = label(op);

        EXPECT_TRUE(has(judge(op, dropped_peer(op, 2), call).findings, "GUARD_REDUCE")) << what << " dropped peer";

        Bf16Outputs stale = op.result.outputs;
        copy_slice(stale, previous.result.outputs, op, s);
        EXPECT_TRUE(has(judge(op, stale, call).findings, "GUARD_REDUCE")) << what << " stale slice";

        Bf16Outputs zeroed = op.result.outputs;
        for (size_t i : slice_positions(op, s))
          if (op.result.rows[i] < s * S + S / 2)
            for (auto& view : zeroed) std::fill_n(view.begin() + long(i) * N, N, uint16_t(0));
        EXPECT_TRUE(has(judge(op, zeroed, call).findings, "GUARD_REDUCE")) << what << " zeroed half slice";

        Bf16Outputs differs = op.result.outputs;
        copy_slice(differs, previous.result.outputs, op, s, v);  // one rank's gather of slice s did not land
        const auto fd = judge(op, differs, call).findings;
        EXPECT_TRUE(has(fd, "GUARD_GATHER")) << what << " one view differing: " << ::testing::PrintToString(codes(fd));

        Bf16Outputs nan = op.result.outputs;  // one NaN in a listed row, in a non-owner's view
        nan[size_t(v)][slice_positions(op, s)[2] * size_t(N) + 5] = 0x7fc0;
        const auto fn = judge(op, nan, call).findings;
        EXPECT_TRUE(has(fn, "GUARD_REDUCE") && has(fn, "GUARD_GATHER")) << what << " one NaN";
        EXPECT_NE(fn.front().message.find("not finite"), std::string::npos) << fn.front().message;

        // A wrong wire scale, twice the right one: on the fp8 gather every non-owner widens slice s's codes with
        // it (all alike); on the fp8 scatter one peer's contribution to slice s is widened with it.
        Bf16Outputs wrong = op.result.outputs;
        const int peer = (s + 1) % W;
        for (size_t i : slice_positions(op, s)) {
          if (fp8_scatter) {
            const int64_t seg = scatter_scales_per_row(N);
            std::vector<std::vector<float>> widened(static_cast<size_t>(W), std::vector<float>(static_cast<size_t>(N)));
            for (int r = 0; r < W; ++r) {
              std::vector<uint16_t> bf(static_cast<size_t>(N));
              for (int64_t c = 0; c < N; ++c) bf[size_t(c)] = to_bf16(op.result.partials[size_t(r)][i * size_t(N) + size_t(c)]);
              std::vector<uint8_t> q(static_cast<size_t>(N));
              std::vector<float> scales(static_cast<size_t>(seg));
              scatter_quantize_row(bf.data(), N, q.data(), scales.data(), Fp8Format::E4M3FN);
              if (r == peer)
                for (float& x : scales) x *= 2.0f;
              scatter_widen_row(q.data(), scales.data(), N, widened[size_t(r)].data(), Fp8Format::E4M3FN);
            }
            std::vector<uint16_t> red(static_cast<size_t>(N));
            for (int64_t c = 0; c < N; ++c)
              red[size_t(c)] = to_bf16(numerics::reduce_sum_f32(s, W, [&](int r) { return widened[size_t(r)][size_t(c)]; }));
            const std::vector<uint16_t> view = fp8_gather ? gathered(op, red.data(), 1.0f) : red;
            for (int r = 0; r < W; ++r)
              std::copy(r == s ? red.begin() : view.begin(), r == s ? red.end() : view.end(),
                        wrong[size_t(r)].begin() + long(i) * N);
          } else if (fp8_gather) {
            const std::vector<uint16_t> view = gathered(op, op.result.outputs[size_t(s)].data() + i * size_t(N), 2.0f);
            for (int r = 0; r < W; ++r)
              if (r != s) std::copy(view.begin(), view.end(), wrong[size_t(r)].begin() + long(i) * N);
          }
        }
        if (fp8_scatter || fp8_gather) {
          const auto fw = judge(op, wrong, call).findings;
          EXPECT_TRUE(has(fw, fp8_scatter ? "GUARD_REDUCE" : "GUARD_WIRE"))
              << what << " wrong wire scale: " << ::testing::PrintToString(codes(fw));
        }
      }
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
