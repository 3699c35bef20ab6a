#include "validate/harness/guard_run.hpp"

#include <memory>
#include <mutex>

#include "common/errors.hpp"
#include "reference/formats.hpp"

namespace gemmar {
namespace {

// The GEMM check's inputs per rank: its A rows dequantized (iteration 0's scales) and the weights' checksum.
struct GuardOperands {
  std::vector<std::vector<float>> a_deq;
  std::vector<reference::GuardWeights> weights;
};

// The weights' checksum is what a serving process computes once at load time; here once per (shape, quant,
// seed, format, rows) and kept for the run's calls.
std::shared_ptr<const GuardOperands> guard_operands(const RunRequest& req, const std::vector<int64_t>& rows) {
  static std::mutex mutex;
  static std::vector<int64_t> key_rows;
  static std::vector<int64_t> key;
  static std::shared_ptr<const GuardOperands> cached;
  const Config cfg = effective_config(req.config);
  reference::OperandSpec spec;
  spec.shape = req.shape;
  spec.quant = cfg.quant;
  spec.seed = req.seed;
  // fnuz-as-fn: the operands are e4m3fnuz; the guard reads them as what they are.
  spec.fp8_format = req.inject.fnuz_read_as_fn ? Fp8Format::E4M3FNUZ : Fp8Format::E4M3FN;
  const std::vector<int64_t> k{req.shape.m,
                               req.shape.n,
                               req.shape.k,
                               req.shape.world,
                               int64_t(cfg.quant),
                               int64_t(req.seed),
                               int64_t(spec.fp8_format)};
  std::lock_guard<std::mutex> lock(mutex);
  if (cached && key == k && key_rows == rows) return cached;
  auto ops = std::make_shared<GuardOperands>();
  for (int r = 0; r < req.shape.world; ++r) {
    const reference::RankOperands op = reference::make_rank_operands(spec, r, rows);
    ops->a_deq.push_back(reference::dequantized_a(op, cfg.quant, spec.fp8_format));
    ops->weights.push_back(
        reference::guard_weights(reference::dequantized_b(op, cfg.quant, spec.fp8_format), req.shape.n, req.shape.k));
  }
  key = k;
  key_rows = rows;
  cached = ops;
  return cached;
}

}  // namespace

std::vector<reference::GuardSums> cpu_guard_sums(const RunRequest& req, const std::vector<int64_t>& rows,
                                                 const GuardCallRows& sampled, int iteration,
                                                 const reference::Partials& partials,
                                                 const reference::Bf16Outputs& outputs) {
  const int W = req.shape.world;
  const size_t N = size_t(req.shape.n), K = size_t(req.shape.k);
  GEMMAR_CHECK(int(partials.size()) == W && int(outputs.size()) == W, "guard: ranks of the CPU call");
  const reference::GuardContext ctx = reference::guard_context(req.shape, req.config, sampled.rows);
  const auto ops = guard_operands(req, rows);
  std::vector<reference::GuardSums> out;
  for (int r = 0; r < W; ++r) {
    const float mult = r == req.inject.perturbed_rank ? reference::kPerturbFactor : 1.0f;
    // The call's inputs: A's scales times a power of two, so its dequantized rows scale exactly.
    const float f = reference::iteration_input_scale(req.seed, iteration, r);
    std::vector<uint16_t> local, output;
    std::vector<float> a;
    for (size_t i : sampled.positions) {
      const float* p = partials[size_t(r)].data() + i * N;
      for (size_t c = 0; c < N; ++c) local.push_back(reference::to_bf16(p[c] * mult));
      output.insert(output.end(), outputs[size_t(r)].begin() + ptrdiff_t(i * N),
                    outputs[size_t(r)].begin() + ptrdiff_t((i + 1) * N));
      const float* ar = ops->a_deq[size_t(r)].data() + i * K;
      for (size_t c = 0; c < K; ++c) a.push_back(f != 1.0f ? ar[c] * f : ar[c]);
    }
    out.push_back(reference::guard_rank_sums(ctx, r, local, output, a, &ops->weights[size_t(r)]));
  }
  return out;
}

GuardCallRows guard_call_sample(const RunRequest& req, const std::vector<int64_t>& candidates, uint64_t call) {
  GuardCallRows s;
  s.positions =
      reference::guard_sample_positions(candidates, req.guard_sample, reference::guard_sample_seed(req.seed), call);
  for (size_t i : s.positions) s.rows.push_back(candidates.at(i));
  return s;
}

void tally_guard_call(GuardReport& rep, const reference::GuardContext& ctx, int iteration,
                      const std::vector<reference::GuardSums>& sums) {
  ++rep.calls;
  const std::vector<reference::GuardFinding> f = reference::guard_check(ctx, sums);
  if (!f.empty()) ++rep.flagged_calls;
  for (const auto& g : f) {
    GuardCode& c = rep.codes[g.code];
    if (c.calls++ == 0) {
      c.first_iteration = iteration;
      c.message = g.message;
    }
  }
}

}  // namespace gemmar
