#include "validate/harness/run_driver.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>

#include "common/errors.hpp"
#include "reference/emulation.hpp"
#include "reference/gemm.hpp"

namespace gemmar {

namespace {

// Every config of a sweep runs on the same operands: their partials and fp32 reference are computed once
// per (shape, quant, seed, rows) and shared. The most recent few are kept (a sweep over M holds one per M).
const reference::PartialsResult& cached_partials(const Shape& shape, Quant quant, uint64_t seed,
                                                 const std::vector<int64_t>& rows) {
  struct Entry {
    Shape shape;
    Quant quant;
    uint64_t seed;
    std::vector<int64_t> rows;
    std::shared_ptr<const reference::PartialsResult> result;
  };
  static std::mutex mutex;
  static std::vector<Entry> cache;
  std::lock_guard<std::mutex> lock(mutex);
  for (const Entry& e : cache)
    if (e.shape.m == shape.m && e.shape.n == shape.n && e.shape.k == shape.k && e.shape.world == shape.world &&
        e.quant == quant && e.seed == seed && e.rows == rows)
      return *e.result;
  reference::PartialsRequest pr;
  pr.operands.shape = shape;
  pr.operands.quant = quant;
  pr.operands.seed = seed;
  pr.rows = rows;
  auto result = std::make_shared<const reference::PartialsResult>(reference::compute_partials(pr));
  if (cache.size() >= 3) cache.erase(cache.begin());
  cache.push_back(Entry{shape, quant, seed, rows, result});
  return *cache.back().result;
}

// The CPU backend: the pipeline emulation of reference/, with its fault hooks. It has no timings.
class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu-emulation"; }
  BackendResult execute(const RunRequest& req, const std::vector<int64_t>& rows) override {
    BackendResult out;
    out.backend = name();
    out.device = "CPU emulation (" + std::to_string(req.shape.world) + " ranks as separate buffers)";
    // Faults that change the partials themselves (operands read in the wrong format) or need a previous run
    // go through the whole emulation; the others act on the collective over the shared partials.
    if (!req.inject.fnuz_read_as_fn && !req.inject.stale_output) {
      const reference::PartialsResult& p = cached_partials(req.shape, req.config.quant, req.seed, rows);
      reference::CollectiveRequest cr;
      cr.shape = req.shape;
      cr.config = req.config;
      cr.rows = rows;
      cr.seed = req.seed;
      cr.faults = req.inject;
      out.rows = rows;
      out.outputs = reference::emulate_collective(cr, p.partials);
      out.partials = p.partials;
      return out;
    }
    reference::EmulationRequest e;
    e.shape = req.shape;
    e.config = req.config;
    e.seed = req.seed;
    e.rows = rows;
    e.faults = req.inject;
    // fnuz operands: the emulation encodes them as e4m3fnuz and the fault reads them as fn.
    if (req.inject.fnuz_read_as_fn) e.fp8_format = Fp8Format::E4M3FNUZ;
    reference::EmulationResult r = reference::emulate(e);
    out.rows = r.rows;
    out.outputs = std::move(r.outputs);
    out.partials = std::move(r.partials);
    return out;
  }
};

bool finite(double x) { return std::isfinite(x); }

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

RunOutcome run_and_check(Backend& backend, const RunRequest& req) {
  validate_shape_config(req.shape, req.config);
  const Config cfg = effective_config(req.config);
  const Shape& shape = req.shape;
  const int W = shape.world;
  const int64_t n = shape.n;
  const int64_t count = req.check_rows == 0 ? std::numeric_limits<int64_t>::max() / 4 : req.check_rows;
  const std::vector<int64_t> rows = reference::sample_rows(shape, cfg.quant, std::max<int64_t>(count, W), req.seed);

  BackendResult res = backend.execute(req, rows);
  GEMMAR_CHECK(res.rows == rows, "backend ", backend.name(), " returned other rows than asked for");
  GEMMAR_CHECK(int(res.outputs.size()) == W, "backend returned ", res.outputs.size(), " rank outputs");
  for (const auto& o : res.outputs) GEMMAR_CHECK(int64_t(o.size()) == int64_t(rows.size()) * n);

  // The reference for the same rows, computed here from the same operands (never taken from the backend).
  reference::OperandSpec spec;
  spec.shape = shape;
  spec.quant = cfg.quant;
  spec.seed = req.seed;
  std::vector<double> per_rank;
  std::vector<double> per_slice;
  double all_views = 0;
  double all_views_stderr = 0;
  if (has_collective(cfg.mode)) {
    const reference::PartialsResult& ref = cached_partials(shape, cfg.quant, req.seed, rows);
    for (const auto& r : reference::per_rank_rel_l2(shape, cfg.quant, rows, res.outputs, ref.reference))
      per_rank.push_back(r.value);
    per_slice = reference::per_slice_rel_l2(shape, cfg.quant, rows, res.outputs, ref.reference);
    const reference::RelL2 av = reference::all_views_rel_l2(shape, cfg.quant, rows, res.outputs, ref.reference);
    all_views = av.value;
    all_views_stderr = av.stderr_;
  } else {
    // gemm-only: every rank's output is its own partial in bf16, judged against its own fp32 partial.
    for (int r = 0; r < W; ++r) {
      const reference::RankOperands ops = reference::make_rank_operands(spec, r, rows);
      per_rank.push_back(reference::rel_l2(res.outputs[r], reference::reference_partial(ops, cfg.quant, spec.fp8_format)));
    }
    all_views = *std::max_element(per_rank.begin(), per_rank.end());
  }

  // Bit-exactness: the collective re-emulated over the backend's own partials must reproduce its output.
  int64_t wrong = -1;
  if (!res.partials.empty()) {
    reference::CollectiveRequest cr;
    cr.shape = shape;
    cr.config = cfg;
    cr.rows = rows;
    cr.seed = req.seed;
    const reference::Bf16Outputs expected = reference::emulate_collective(cr, res.partials);
    wrong = 0;
    for (int r = 0; r < W; ++r)
      for (size_t i = 0; i < expected[r].size(); ++i) wrong += expected[r][i] != res.outputs[r][i];
  }

  RunRecord rec;
  rec.shape = shape;
  rec.config = req.config;
  rec.backend = res.backend;
  rec.pull_blocks = req.inject.pull_blocks.value_or(req.config.pull_blocks);
  rec.per_rank_rel_l2 = per_rank;
  rec.per_slice_rel_l2 = per_slice;
  double worst = 0;
  bool any_nan = false;
  for (double x : per_rank) {
    if (!finite(x)) any_nan = true;
    worst = std::max(worst, x);
  }
  rec.rel_l2 = any_nan ? std::numeric_limits<double>::quiet_NaN() : worst;
  // `validated` holds as the benchmark's would: every rank inside its acceptance window.
  bool ok = !per_rank.empty();
  for (double x : per_rank) ok = ok && verdict_rules::benchmark_accepts(x, uses_fp8_wire(cfg));
  rec.validated = ok;
  rec.phases_us = res.phases_us;
  rec.per_rank_time_us = res.per_rank_time_us;
  if (res.total_us) rec.max_rank_time_us = res.total_us;
  if (!res.per_rank_time_us.empty())
    rec.max_rank_time_us = *std::max_element(res.per_rank_time_us.begin(), res.per_rank_time_us.end());
  rec.timing = res.total_us ? "graph" : "none (CPU emulation: no kernel times)";
  rec.profile = req.profile.empty() ? default_profile(res.backend, res.device, res.ranks_per_device) : req.profile;
  if (wrong >= 0) rec.wrong_elements = wrong;
  rec.checked_rows = int64_t(rows.size());
  rec.poisoned_elements = res.poisoned_elements;
  rec.rel_l2_all_views = all_views;
  rec.rel_l2_all_views_stderr = all_views_stderr;
  rec.seed = req.seed;
  rec.inject = req.inject.label();
  rec.device = res.device;
  if (!res.gemm_impl.empty()) rec.gemm_impl = res.gemm_impl;
  if (res.unfused_baseline_us && rec.max_rank_time_us && *rec.max_rank_time_us > 0) {
    rec.unfused_baseline = res.unfused_baseline;
    rec.unfused_baseline_us = *res.unfused_baseline_us;
  }
  rec.raw = run_record_to_json(rec);

  // The same path as `gemmar check`: the record's own fields decide the expectations.
  JudgeOptions opts;
  opts.judge_timing = rec.max_rank_time_us.has_value();
  RunOutcome out;
  out.expectations = expectations_for(rec, opts);
  out.verdict = judge(rec, out.expectations);
  out.record = std::move(rec);
  return out;
}

}  // namespace gemmar
