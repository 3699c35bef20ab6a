// The caller guard's CPU tests on the emulation (reference_guard_caller_test.cpp at small shapes,
// reference_guard_caller_slow_test.cpp at mori's targets' N and K): one emulated call of the op on the rows it lists,
// what each rank holds there, the records and the judge; the fault classes of scripts/device_guard_python.py
// injected into the emulated views.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "reference/emulation.hpp"
#include "reference/formats.hpp"
#include "reference/guard_caller.hpp"
#include "reference/numerics_inline.hpp"
#include "reference/operands.hpp"

namespace gemmar::guard_caller_test {

using namespace gemmar::reference;
namespace cg = gemmar::caller_guard;

struct Target {
  const char* name;
  Shape shape;
  Quant quant;
  int64_t stride;
};
inline constexpr uint64_t kSampleSeed = 77;
// The operands' seeds: a call's own, and the other call's whose output a stale slice copies. The clean calls use
// these two first, so that a test running both checks computes each seed's weights (caller_weights: a K x K
// eigendecomposition per rank, most of the slow tier's guard time) once.
inline constexpr uint64_t kCallSeed = 1234;
inline constexpr uint64_t kPreviousSeed = 4321;

inline Config config_of(const Target& t, bool fp8_gather, bool fp8_scatter) {
  Config c;
  c.mode = Mode::FusedSdma;
  c.quant = t.quant;
  c.gather_dtype = fp8_gather ? WireDtype::Fp8 : WireDtype::Bf16;
  c.scatter_dtype = fp8_scatter ? WireDtype::Fp8 : WireDtype::Bf16;
  return c;
}

inline CallerPlan plan_of(const Target& t, bool fp8_gather, bool fp8_scatter) {
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

inline Op run_op(const Target& t, bool fp8_gather, bool fp8_scatter, uint32_t call, uint64_t seed = kCallSeed,
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
  // The weights' checksum and norms are the weights', whatever the wires or the call: computed once per seed.
  static std::map<std::string, std::vector<CallerWeights>> cache;
  const std::string key = std::string(t.name) + " " + std::to_string(seed);
  const bool have = cache.count(key) > 0;
  for (int r = 0; r < t.shape.world; ++r) {
    const RankOperands ro = make_rank_operands(spec, r, op.result.rows);
    op.a_deq.push_back(dequantized_a(ro, t.quant, spec.fp8_format));
    if (!have)
      cache[key].push_back(caller_weights(dequantized_b(ro, t.quant, spec.fp8_format), t.shape.n, t.shape.k,
                                          op.plan.config.gemm_roundings));
  }
  op.weights = cache[key];
  return op;
}

struct Judged {
  std::vector<int64_t> rows;
  std::vector<float> records;
  std::vector<cg::Cell> cells;
  std::vector<GuardFinding> findings;
};

// The call's records from the views (every rank's output over op.result.rows), judged.
inline Judged judge(const Op& op, const Bf16Outputs& views, uint32_t call) {
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

inline std::vector<std::string> codes(const std::vector<GuardFinding>& f) {
  std::vector<std::string> v;
  for (const auto& x : f) v.push_back(x.code);
  return v;
}
inline bool has(const std::vector<GuardFinding>& f, const std::string& code) {
  return std::any_of(f.begin(), f.end(), [&](const GuardFinding& x) { return x.code == code; });
}
inline std::string label(const Op& op) {
  return std::string(op.target.name) + " scatter " + to_string(op.config.scatter_dtype) + " gather " +
         to_string(op.config.gather_dtype);
}

inline int64_t slice_rows_of(const Op& op) { return op.plan.config.m / op.plan.config.world; }

// Positions in op.result.rows of slice s's rows.
inline std::vector<size_t> slice_positions(const Op& op, int s) {
  std::vector<size_t> v;
  for (size_t i = 0; i < op.result.rows.size(); ++i)
    if (op.result.rows[i] / slice_rows_of(op) == s) v.push_back(i);
  return v;
}

// The fault classes of scripts/device_guard_python.sh, injected into the emulated views.
inline Bf16Outputs dropped_peer(const Op& op, int peer) {
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

inline void copy_slice(Bf16Outputs& to, const Bf16Outputs& from, const Op& op, int s, int only_view = -1) {
  const int64_t N = op.plan.config.n;
  for (size_t i : slice_positions(op, s))
    for (size_t v = 0; v < to.size(); ++v)
      if (only_view < 0 || int(v) == only_view)
        std::copy_n(from[v].begin() + long(i) * N, N, to[v].begin() + long(i) * N);
}

// The owner's bf16 row as an fp8 gather delivers it (mori's recipe), its scale times `scale_factor`.
inline std::vector<uint16_t> gathered(const Op& op, const uint16_t* row, float scale_factor) {
  const int64_t N = op.plan.config.n;
  std::vector<uint16_t> out(row, row + N);
  std::vector<uint8_t> q(static_cast<size_t>(N));
  const float scale = wire_quantize_row(row, N, q.data(), Fp8Format::E4M3FN, WireRecipe::Mori);
  wire_dequantize_row(q.data(), scale * scale_factor, N, out.data(), Fp8Format::E4M3FN);
  return out;
}

// Clean calls (new inputs every call) raise nothing, and their worst check and worst cell's aggregate stay inside
// their bounds (printed: how much of each bound a clean call uses).
inline void expect_clean_calls_pass(const Target& t, bool fp8_scatter, bool fp8_gather, uint32_t calls) {
  double worst = 0, worst_agg = 0;
  for (uint32_t call = 0; call < calls; ++call) {
    const Op op = run_op(t, fp8_gather, fp8_scatter, call, call == 1 ? kPreviousSeed : kCallSeed + call);
    const Judged j = judge(op, op.result.outputs, call);
    EXPECT_TRUE(j.findings.empty()) << label(op) << " call " << call << ": " << j.findings.front().code << " "
                                    << j.findings.front().message;
    for (const auto& c : j.cells) {
      worst = std::max(worst, double(c.worst_ratio));
      worst_agg = std::max(worst_agg, double(c.zsum) / op.plan.consts.agg_threshold);
    }
  }
  const CallerPlan plan = plan_of(t, fp8_gather, fp8_scatter);
  std::printf(
      "%-16s scatter %-4s gather %-4s: worst check %.3f of its bound, worst cell %.4f of the "
      "aggregate threshold (lambda %.2f)\n",
      t.name, fp8_scatter ? "fp8" : "bf16", fp8_gather ? "fp8" : "bf16", worst, worst_agg, plan.consts.lambda);
  EXPECT_LT(worst, 1.0) << t.name;
  EXPECT_GT(worst, 0.0) << t.name;  // the bound is a bound on something: a clean call uses part of it
  EXPECT_LT(worst_agg, 1.0) << t.name;
}

// Every fault class scripts/device_guard_python.py injects, on one target and wire pair.
inline void expect_every_fault_caught(const Target& t, bool fp8_scatter, bool fp8_gather) {
  {
    const uint32_t call = 3;
    const Op op = run_op(t, fp8_gather, fp8_scatter, call);
    const Op previous = run_op(t, fp8_gather, fp8_scatter, call, kPreviousSeed);  // another call's output
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
          for (int64_t c = 0; c < N; ++c)
            bf[size_t(c)] = to_bf16(op.result.partials[size_t(r)][i * size_t(N) + size_t(c)]);
          std::vector<uint8_t> q(static_cast<size_t>(N));
          std::vector<float> scales(static_cast<size_t>(seg));
          scatter_quantize_row(bf.data(), N, q.data(), scales.data(), Fp8Format::E4M3FN);
          if (r == peer)
            for (float& x : scales) x *= 2.0f;
          scatter_widen_row(q.data(), scales.data(), N, widened[size_t(r)].data(), Fp8Format::E4M3FN);
        }
        std::vector<uint16_t> red(static_cast<size_t>(N));
        for (int64_t c = 0; c < N; ++c)
          red[size_t(c)] =
              to_bf16(numerics::reduce_sum_f32(s, W, [&](int r) { return widened[size_t(r)][size_t(c)]; }));
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

}  // namespace gemmar::guard_caller_test
