// The GPU backend of `gemmar run` / `gemmar validate`: generates every rank's operands on the host with the
// reference's counter-based generator (the same codes and scales the CPU emulation sees), hands them to the
// kernels library (kernels/gemm_ar.hpp), and returns the sampled output rows, the GPU's own partials for
// those rows (so the driver re-emulates the collective from them bit for bit) and the per-phase timings.
// Without a GPU toolchain in the build this still compiles, and make_gpu_backend() says why it cannot run.
#include <algorithm>
#include <memory>
#include <string>

#include "common/errors.hpp"
#include "validate/harness/run_driver.hpp"

#ifdef GEMMAR_HAVE_GPU
#include <map>
#include <optional>
#include <tuple>

#include "kernels/gemm_ar.hpp"
#include "reference/emulation.hpp"
#include "reference/operands.hpp"
#include "validate/harness/guard_run.hpp"
#endif

namespace gemmar {

#ifdef GEMMAR_HAVE_GPU
namespace {

// The device run of `req`: the padded shape, every iteration on its own inputs (its per-rank input scales),
// every check_every-th read back, stragglers per replay.
kernels::DeviceRun device_plan(const RunRequest& req, const std::vector<int64_t>& rows_to_return) {
  kernels::DeviceRun plan;
  static_cast<RunRequest&>(plan) = req;
  plan.shape.m = padded_m(req.shape, req.config);
  // The device sees the padded M; the logical M keeps the row plan (--schedule wo_b's chunk_bands) that the put
  // loop's chunk_plan(shape, config) reads (-m then is the physical M, as op.py's logical_m=).
  plan.config.logical_m = logical_m(req.shape, req.config);
  plan.iterations = std::max(1, req.iterations);
  plan.check_every = std::max(1, req.check_every);
  plan.rows = rows_to_return;
  for (int it = 0; it < plan.iterations; ++it) {
    std::vector<float> sc, st;
    for (int r = 0; r < req.shape.world; ++r) {
      sc.push_back(reference::iteration_input_scale(req.seed, it, r));
      for (int k = 0; k < 3; ++k)
        st.push_back(float(reference::straggle_delay_us(req.seed, it * 3 + k, r, req.straggle_us)));
    }
    plan.iteration_scales.push_back(sc);
    if (req.straggle_us > 0) plan.straggle_schedule_us.push_back(st);
  }
  return plan;
}

// --guard: every replay's sums judged as they come, over the rows the device drew for that replay (one of every
// --guard-sample rows of the padded M); only the tally kept in `guard`, which must outlive the run.
void attach_guard(const RunRequest& req, kernels::DeviceRun& plan, std::optional<GuardReport>& guard) {
  if (!req.guard || req.selftest_fill) return;
  guard.emplace();
  guard->sample = req.guard_sample;
  plan.guard_sink = [&guard, shape = plan.shape, config = req.config](int it, reference::GuardCall&& call) {
    guard->rows_per_call = int64_t(call.rows.size());
    tally_guard_call(*guard, reference::guard_context(shape, config, call.rows), it, call.sums);
  };
}

// What the driver judges: the sampled rows, the GPU's partials, the per-phase timings and where the ranks ran.
BackendResult backend_result(const std::vector<int64_t>& rows_to_return, const kernels::RunOutput& o,
                             const std::optional<GuardReport>& guard) {
  BackendResult res;
  res.backend = "gpu";
  res.rows = rows_to_return;
  // `outputs` is iteration 0's (what relL2 is judged on: its inputs are the seed's unscaled operands).
  res.iteration_index = o.iteration_index;
  res.iteration_outputs = o.iteration_outputs;
  res.outputs = !o.iteration_index.empty() && o.iteration_index.front() == 0 ? o.iteration_outputs.front() : o.outputs;
  res.partials = o.partials;
  res.full_compares = o.full_compares;
  res.phases_us = o.phases_us;
  res.per_rank_time_us = o.per_rank_time_us;
  res.total_us = o.total_us;
  res.device = o.device + (o.launch == "graph" ? "" : ", " + o.launch);
  res.ranks_per_device = o.ranks_per_device;
  res.poisoned_elements = o.unwritten_outputs;
  res.gemm_impl = to_string(o.gemm_impl);
  res.guard = guard;
  return res;
}

// The unfused baseline of a fused run, same process, same operands: the vendor GEMM (ours where the build has
// none), then the split all-reduce of the same wire. Timed only: no faults, guard, read-back or stragglers.
kernels::DeviceRun unfused_baseline_plan(const RunRequest& req, const kernels::DeviceRun& plan) {
  kernels::DeviceRun base = plan;
  base.config.mode = Mode::SplitSdma;
  // mori's fp8 scatter and its chunks are fused-sdma's only (validate_knobs): the split baseline scatters bf16.
  base.config.scatter_dtype = WireDtype::Bf16;
  base.config.chunk_bands = 0;
  base.inject = Faults{};
  base.guard = false;
  base.guard_sink = nullptr;
  base.rows.clear();
  base.straggle_us = 0;
  base.straggle_schedule_us.clear();
  base.check_every = 1 << 30;  // timed only: no read-back
  // The pipeline's vendor GEMM is blockscale's (ptpc / mxfp8 run ours: kernels/pipeline/engine.cu, issue 25).
  const bool lt = kernels::vendor_gemm_available() && req.config.quant == Quant::Blockscale;
  base.gemm_impl = lt ? GemmImpl::Cublaslt : GemmImpl::Gemmar;
  return base;
}

class GpuBackend final : public Backend {
 public:
  std::string name() const override { return "gpu"; }

  BackendResult execute(const RunRequest& req, const std::vector<int64_t>& rows_to_return) override {
    kernels::DeviceRun plan = device_plan(req, rows_to_return);
    load_operands(req);
    const auto operands = [&](int rank, kernels::RankOperands& dst) { dst = cache_[rank]; };
    std::optional<GuardReport> guard;
    attach_guard(req, plan, guard);
    const kernels::RunOutput o = kernels::run_gemm_ar(plan, operands);
    BackendResult res = backend_result(rows_to_return, o, guard);
    // Relaxed rows have no unfused baseline of the same M: mori's split modes refuse them ("relaxed rows requires
    // fused SDMA", kernels_fused.py @f3bff0ae compile_fused_gemm_scatter).
    if (is_fused(effective_config(req.config).mode) && req.inject.label() == "none" && !req.selftest_fill &&
        !row_plan(req.shape, req.config).relaxed_rows)
      add_unfused_baseline(req, plan, operands, res);
    return res;
  }

  // The kernels follow relaxed rows as mori's fused-sdma epilogue does (kernels/pipeline/put_plan.hpp): S = M / W
  // rows an owner, a tile straddling two owners stored into each one's rows and counted for both, every chunk's
  // put its own rows. The device guard does not: it samples whole 128-row tiles of a W x 128 padded M.
  std::string relaxed_rows_refusal(const RunRequest& req) const override {
    if (req.guard)
      return "runs them, but not with --guard: the GPU guard samples whole 128-row tiles of a W x 128 padded M "
             "(run without --guard, or on the cpu backend)";
    return "";
  }

 private:
  // Every rank's operands: they depend only on shape and seed, so they are reused across configs.
  void load_operands(const RunRequest& req) {
    // The rows of the run's row plan (padded_m(shape, config): relaxed rows and --schedule wo_b's padded M, not
    // always W * BLOCK_M), those past the logical M zero rows, as the emulation generates them
    // (reference/emulation.cpp emulate; mori's pad_rows).
    const int64_t m_pad = padded_m(req.shape, req.config), m_logical = logical_m(req.shape, req.config);
    const auto key = std::make_tuple(m_pad, m_logical, req.shape.n, req.shape.k, req.shape.world, req.seed);
    if (key == cache_key_) return;
    reference::OperandSpec spec;
    spec.shape = req.shape;
    spec.shape.m = m_logical;
    spec.quant = req.config.quant;
    spec.data = reference::DataKind::Normal;
    spec.seed = req.seed;
    spec.fp8_format = Fp8Format::E4M3FN;
    cache_.clear();
    cache_.resize(size_t(req.shape.world));
    std::vector<int64_t> rows(static_cast<size_t>(m_pad));
    for (int64_t i = 0; i < m_pad; ++i) rows[size_t(i)] = i;
    for (int r = 0; r < req.shape.world; ++r) cache_[r] = reference::make_rank_operands(spec, r, rows);
    cache_key_ = key;
  }

  // The fused run's unfused baseline time, measured once per (shape, wire, iterations).
  void add_unfused_baseline(const RunRequest& req, const kernels::DeviceRun& plan, const kernels::OperandFn& operands,
                            BackendResult& res) {
    const kernels::DeviceRun base = unfused_baseline_plan(req, plan);
    const std::string what = std::string(base.gemm_impl == GemmImpl::Cublaslt ? "cuBLASLt GEMM" : "gemmar GEMM") +
                             " + split-sdma " + to_string(base.config.gather_dtype) + "/" +
                             to_string(base.config.gather_transport);
    auto& cached =
        baselines_[std::make_tuple(plan.shape.m, plan.shape.n, plan.shape.k, plan.shape.world, what, plan.iterations)];
    if (!(cached > 0)) {
      const kernels::RunOutput b = kernels::run_gemm_ar(base, operands);
      cached = b.per_rank_time_us.empty() ? b.total_us
                                          : *std::max_element(b.per_rank_time_us.begin(), b.per_rank_time_us.end());
    }
    res.unfused_baseline_us = cached;
    res.unfused_baseline = what;
  }

  std::tuple<int64_t, int64_t, int64_t, int64_t, int, uint64_t> cache_key_{-1, -1, -1, -1, -1, 0};
  std::vector<reference::RankOperands> cache_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int, std::string, int>, double> baselines_;
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend() {
  if (kernels::device_count() <= 0)
    throw EnvironmentError("--backend gpu: this build has GPU kernels but the runtime finds no GPU device");
  return std::make_unique<GpuBackend>();
}
bool gpu_backend_built() { return true; }

#else

std::unique_ptr<Backend> make_gpu_backend() {
  throw EnvironmentError(
      "--backend gpu: gemmar was built without GEMMAR_HIP/GEMMAR_CUDA (no GPU kernels); reconfigure with "
      "cmake --preset cuda or cmake --preset hip, or use --backend cpu");
}
bool gpu_backend_built() { return false; }

#endif

}  // namespace gemmar
