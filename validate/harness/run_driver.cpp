#include "validate/harness/run_driver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

#include "common/errors.hpp"
#include "reference/emulation.hpp"
#include "reference/formats.hpp"
#include "reference/gemm.hpp"
#include "validate/harness/dump_write.hpp"
#include "validate/harness/guard_run.hpp"
#include "validate/harness/output_check.hpp"

namespace gemmar {

namespace {

// A 64-bit hash of every partial's bits (FNV-1a over 64-bit words in four interleaved lanes, so the multiplies
// do not wait on each other; per rank, then combined): what tells the shared partials from partials read back
// from a GPU in emulate_collective_once's key.
uint64_t partials_hash(const reference::Partials& p) {
  constexpr uint64_t kPrime = 1099511628211ull;
  std::vector<uint64_t> per_rank(p.size());
#pragma omp parallel for schedule(static)
  for (size_t r = 0; r < p.size(); ++r) {
    uint64_t lane[4] = {1469598103934665603ull ^ p[r].size(), 1, 2, 3};
    const size_t bytes = p[r].size() * sizeof(float), words = bytes / 8;
    const unsigned char* b = reinterpret_cast<const unsigned char*>(p[r].data());
    for (size_t i = 0; i < words; ++i) {
      uint64_t w;
      std::memcpy(&w, b + 8 * i, sizeof w);
      lane[i % 4] = (lane[i % 4] ^ w) * kPrime;
    }
    for (size_t i = words * 8; i < bytes; ++i) lane[0] = (lane[0] ^ b[i]) * kPrime;
    per_rank[r] = ((lane[0] * kPrime ^ lane[1]) * kPrime ^ lane[2]) * kPrime ^ lane[3];
  }
  uint64_t h = 0;
  for (uint64_t x : per_rank) h = (h ^ x) * kPrime + 0x9e3779b97f4a7c15ull;
  return h;
}

// Every config of a sweep runs on the same operands: their partials and fp32 reference are computed once
// per (shape, quant, seed, rows) and shared, with the partials of the odd iterations' inputs (every rank's scaled
// by reference::iteration_input_scale, a power of two: exact). The most recent few are kept (a sweep over M
// holds one per M).
struct SharedPartials {
  reference::PartialsResult even;
  reference::Partials odd;
  // partials_hash of each, taken once: every config's emulation is keyed by it (emulate_collective_once).
  uint64_t even_hash = 0, odd_hash = 0;
};

// Partials of iteration `it`: every rank's scaled by reference::iteration_input_scale (a power of two: exact).
reference::Partials scaled_partials(const reference::Partials& p, uint64_t seed, int it) {
  reference::Partials out = p;
  for (size_t r = 0; r < out.size(); ++r) {
    const float f = reference::iteration_input_scale(seed, it, int(r));
    if (f != 1.0f)
      for (float& x : out[r]) x *= f;
  }
  return out;
}

// `rank_references`: each rank's fp32 reference partial kept too (gemm-only's views are judged against them; its
// run computes the shared partials first in a sweep, so no other config pays for them).
const SharedPartials& shared_partials(const Shape& shape, Quant quant, uint64_t seed, const std::vector<int64_t>& rows,
                                      bool rank_references = false) {
  struct Entry {
    Shape shape;
    Quant quant;
    uint64_t seed;
    std::vector<int64_t> rows;
    std::shared_ptr<const SharedPartials> result;
  };
  static std::mutex mutex;
  static std::vector<Entry> cache;
  std::lock_guard<std::mutex> lock(mutex);
  for (auto e = cache.begin(); e != cache.end(); ++e) {
    if (!(e->shape.m == shape.m && e->shape.n == shape.n && e->shape.k == shape.k && e->shape.world == shape.world &&
          e->quant == quant && e->seed == seed && e->rows == rows))
      continue;
    if (!rank_references || !e->result->even.rank_references.empty()) return *e->result;
    cache.erase(e);  // computed again, with them
    break;
  }
  reference::PartialsRequest pr;
  pr.keep_rank_references = rank_references;
  pr.operands.shape = shape;
  pr.operands.quant = quant;
  pr.operands.seed = seed;
  pr.rows = rows;
  auto result = std::make_shared<SharedPartials>();
  result->even = reference::compute_partials(pr);
  result->odd = scaled_partials(result->even.partials, seed, 1);
  result->even_hash = partials_hash(result->even.partials);
  result->odd_hash = partials_hash(result->odd);
  if (cache.size() >= 3) cache.erase(cache.begin());
  cache.push_back(Entry{shape, quant, seed, rows, result});
  return *cache.back().result;
}

// The collective over one set of partials, emulated once per process: without replay state or a previous
// output, emulate_collective is a pure function of its request and the partials, and the CPU backend's replays
// and run_and_check's re-emulation over the backend's partials ask it the same question (with no fault
// injected). The key holds the request and the partials' hash, so a GPU's read-back partials or another fault
// get their own emulation. The last two are kept: one config's even and odd inputs, which the check then asks
// for again (more would hold whole outputs of earlier configs).
// `hash`: the partials' partials_hash when already taken (the shared partials'), else taken here.
std::shared_ptr<const reference::Bf16Outputs> emulate_collective_once(const reference::CollectiveRequest& cr,
                                                                      const reference::Partials& partials,
                                                                      std::optional<uint64_t> hash = std::nullopt) {
  GEMMAR_CHECK(!cr.replay && !cr.previous_outputs && !cr.faults.stale_output,
               "emulate_collective_once: a replay or a stale output is not a pure function of its inputs");
  std::ostringstream key;
  key << cr.shape.m << ',' << cr.shape.n << ',' << cr.shape.k << ',' << cr.shape.world << '|' << config_label(cr.config)
      << '|' << cr.config.fuse_quantize << '|' << int(cr.config.scatter_dtype) << '|' << int(cr.wire_format) << '|'
      << cr.faults.label() << '|' << cr.seed << '|' << cr.rows.size() << '|' << (cr.rows.empty() ? -1 : cr.rows.front())
      << '|' << (cr.rows.empty() ? -1 : cr.rows.back()) << '|' << (hash ? *hash : partials_hash(partials));
  struct Entry {
    std::string key;
    std::vector<int64_t> rows;
    std::shared_ptr<const reference::Bf16Outputs> outputs;
  };
  static std::mutex mutex;
  static std::vector<Entry> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const Entry& e : cache)
      if (e.key == key.str() && e.rows == cr.rows) return e.outputs;
  }
  auto outputs = std::make_shared<const reference::Bf16Outputs>(reference::emulate_collective(cr, partials));
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= 2) cache.erase(cache.begin());
  cache.push_back(Entry{key.str(), cr.rows, outputs});
  return outputs;
}

// The checked iterations: 0, N, 2N, ... below `iterations`.
std::vector<int> checked_iterations(int iterations, int check_every) {
  std::vector<int> v;
  const int step = std::max(1, check_every);
  for (int i = 0; i < std::max(1, iterations); i += step) v.push_back(i);
  return v;
}

// Faults that read the previous replay's buffers (reference::ReplayState): only with one of them does an
// iteration's output depend on the iterations before it and on the straggle (which put lands last).
bool replay_fault(const Faults& f) { return f.stale_replay || f.frozen_flag; }

// The CPU backend: the pipeline emulation of reference/, with its fault hooks. It has no timings. It runs the
// iterations as a graph would be replayed: one warm-up replay on iteration 0's inputs, then `iterations`
// replays, each on its own inputs (iteration_input_scale), carrying the buffers from one replay to the next
// (reference::ReplayState), with the straggle delays of each replay ordering the peer loops.
class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu-emulation"; }
  // The emulation owns rows by the run's row plan (reference/emulation.hpp), relaxed rows included.
  std::string relaxed_rows_refusal(const RunRequest&) const override { return ""; }
  BackendResult execute(const RunRequest& req, const std::vector<int64_t>& rows) override {
    GEMMAR_USAGE_CHECK(!req.inject.flip_unsampled, "--inject flip-unsampled: GPU only (the CPU emulation holds only ",
                       "the sampled rows, so the fault has no element to act on); use --backend gpu");
    BackendResult out;
    out.backend = name();
    out.device = "CPU emulation (" + std::to_string(req.shape.world) + " ranks as separate buffers)";
    out.rows = rows;
    Inputs in = inputs(req, rows);
    reference::CollectiveRequest cr;
    cr.shape = req.shape;
    cr.config = req.config;
    cr.rows = rows;
    cr.seed = req.seed;
    cr.faults = req.inject;
    cr.faults.stale_output = false;
    if (req.inject.stale_output) {
      replay_stale(req, in.stale, out);
    } else if (replay_fault(req.inject)) {
      replay_each(req, cr, in, out);
    } else {
      replay_pure(req, cr, in, out);
    }
    if (req.guard && !req.selftest_fill) tally_guard(req, rows, in, out);
    out.partials = in.even ? *in.even : std::move(in.own);
    return out;
  }

 private:
  // The partials of even and odd iterations (shared with every config of the sweep where possible), and what a
  // stale output keeps.
  struct Inputs {
    const reference::Partials* even = nullptr;
    const reference::Partials* odd = nullptr;
    std::optional<uint64_t> even_hash, odd_hash;  // the shared partials' hashes
    reference::Partials own, own_odd;  // partials this run computed itself (faults on the operands, selftest)
    reference::Bf16Outputs stale;      // stale_output: what every iteration's output keeps
  };

  static Inputs inputs(const RunRequest& req, const std::vector<int64_t>& rows) {
    Inputs in;
    const int W = req.shape.world;
    // Faults that change the partials themselves (operands read in the wrong format) or need a previous run
    // go through the whole emulation; the others act on the collective over the shared partials.
    if (req.selftest_fill) {
      for (int r = 0; r < W; ++r) in.own.emplace_back(rows.size() * size_t(req.shape.n), float(r + 1));
      if (req.inject.stale_output) {  // a previous run's data: the same fill, doubled
        reference::CollectiveRequest prev;
        prev.shape = req.shape;
        prev.config = req.config;
        prev.rows = rows;
        in.stale = reference::emulate_collective(prev, scaled_partials(in.own, 0, -1));
      }
    } else if (!req.inject.fnuz_read_as_fn && !req.inject.stale_output) {
      const SharedPartials& sp =
          shared_partials(req.shape, req.config.quant, req.seed, rows, !has_collective(req.config.mode));
      in.even = &sp.even.partials;
      in.odd = &sp.odd;
      in.even_hash = sp.even_hash;
      in.odd_hash = sp.odd_hash;
      return in;
    } else {
      reference::EmulationRequest e;
      e.shape = req.shape;
      e.config = req.config;
      e.seed = req.seed;
      e.rows = rows;
      e.faults = req.inject;
      // fnuz operands: the emulation encodes them as e4m3fnuz and the fault reads them as fn.
      if (req.inject.fnuz_read_as_fn) e.fp8_format = Fp8Format::E4M3FNUZ;
      reference::EmulationResult r = reference::emulate(e);
      in.own = std::move(r.partials);
      if (req.inject.stale_output) in.stale = std::move(r.outputs);
    }
    in.own_odd = scaled_partials(in.own, req.seed, 1);
    return in;
  }

  static const reference::Partials& partials_of(const Inputs& in, int it) {
    if (it % 2 == 0) return in.even ? *in.even : in.own;  // scale 1 on even iterations
    return in.odd ? *in.odd : in.own_odd;
  }

  static void keep(int it, const std::vector<int>& checked, size_t& next_check, reference::Bf16Outputs o,
                   BackendResult& out) {
    if (next_check >= checked.size() || checked[next_check] != it) return;
    ++next_check;
    if (it == 0) out.outputs = o;
    out.iteration_index.push_back(it);
    out.iteration_outputs.push_back(std::move(o));
  }

  // The guard's per-call check of every kept iteration, over the partials that iteration was computed from.
  static void tally_guard(const RunRequest& req, const std::vector<int64_t>& rows, const Inputs& in,
                          BackendResult& out) {
    out.guard.emplace();
    out.guard->sample = req.guard_sample;
    for (size_t k = 0; k < out.iteration_index.size(); ++k) {
      const int it = out.iteration_index[k];
      const GuardCallRows sampled = guard_call_sample(req, rows, uint64_t(it));
      out.guard->rows_per_call = int64_t(sampled.rows.size());
      tally_guard_call(*out.guard, reference::guard_context(req.shape, req.config, sampled.rows), it,
                       cpu_guard_sums(req, rows, sampled, it, partials_of(in, it), out.iteration_outputs[k]));
    }
  }

  // stale_output: every iteration's output is the previous run's.
  static void replay_stale(const RunRequest& req, const reference::Bf16Outputs& stale, BackendResult& out) {
    const std::vector<int> checked = checked_iterations(std::max(1, req.iterations), req.check_every);
    size_t next_check = 0;
    for (int it = 0; it < std::max(1, req.iterations); ++it) keep(it, checked, next_check, stale, out);
  }

  // A replay fault: every replay emulated in order, carrying its buffers to the next, with each replay's
  // straggle delays deciding which put lands last.
  static void replay_each(const RunRequest& req, reference::CollectiveRequest& cr, const Inputs& in,
                          BackendResult& out) {
    const int W = req.shape.world;
    reference::ReplayState state;
    reference::ReplayTiming timing;
    timing.world = W;
    timing.delay_us.assign(size_t(W), 0.0);
    cr.replay = &state;
    cr.timing = &timing;
    const int iterations = std::max(1, req.iterations);
    const std::vector<int> checked = checked_iterations(iterations, req.check_every);
    size_t next_check = 0;
    // Warm-up replay (the capture's first launch: its flags are fresh, so no replay fault shows).
    if (has_collective(effective_config(req.config).mode)) (void)reference::emulate_collective(cr, partials_of(in, 0));
    for (int it = 0; it < iterations; ++it) {
      for (int r = 0; r < W; ++r)
        timing.delay_us[size_t(r)] = reference::straggle_delay_us(req.seed, it, r, req.straggle_us);
      keep(it, checked, next_check, reference::emulate_collective(cr, partials_of(in, it)), out);
    }
  }

  // No replay fault: emulate_collective is then a pure function of (partials, config, faults) (the straggle
  // only orders the puts' copies, the sum is in peer order), so each distinct input, even and odd, is emulated
  // once and its output is every iteration's on that input. Every checked iteration is still returned and checked.
  static void replay_pure(const RunRequest& req, const reference::CollectiveRequest& cr, const Inputs& in,
                          BackendResult& out) {
    const int iterations = std::max(1, req.iterations);
    const std::vector<int> checked = checked_iterations(iterations, req.check_every);
    std::shared_ptr<const reference::Bf16Outputs> by_parity[2];
    size_t next_check = 0;
    for (const int it : checked) {
      auto& o = by_parity[it % 2];
      if (!o) o = emulate_collective_once(cr, partials_of(in, it), it % 2 ? in.odd_hash : in.even_hash);
      keep(it, checked, next_check, *o, out);
    }
  }
};

}  // namespace

// The emulation allocates and frees buffers of 8-16 MiB per rank for every config; glibc's defaults return
// them to the kernel (mmap above its threshold, trim at the heap's top), so every config page-faults them back
// in: half of `gemmar validate`'s CPU time went to the kernel (measured with perf). Keeping freed memory in the
// heap costs no more than the peak the run already reaches.
void keep_freed_buffers() {
#ifdef __GLIBC__
  static std::once_flag once;
  std::call_once(once, [] {
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum: buffers up to 32 MiB come from the heap
    (void)mallopt(M_TRIM_THRESHOLD, 1 << 30);   // and stay there once freed
  });
#endif
}

std::unique_ptr<Backend> make_cpu_backend() {
  keep_freed_buffers();
  return std::make_unique<CpuBackend>();
}

namespace {

// The backend's run of `req` on `rows`, checked for the sizes asked for; --dump writes it exactly as returned,
// in `gemmar verify`'s format.
BackendResult execute_rows(Backend& backend, const RunRequest& req, const std::vector<int64_t>& rows) {
  BackendResult res = backend.execute(req, rows);
  GEMMAR_CHECK(res.rows == rows, "backend ", backend.name(), " returned other rows than asked for");
  GEMMAR_CHECK(int(res.outputs.size()) == req.shape.world, "backend returned ", res.outputs.size(), " rank outputs");
  for (const auto& o : res.outputs) GEMMAR_CHECK(int64_t(o.size()) == int64_t(rows.size()) * req.shape.n);
  if (!req.dump_dir.empty()) dump_backend_result(req.dump_dir, req, res);
  return res;
}

// relL2 of every rank's view against the reference for the same rows, computed here from the same operands
// (never taken from the backend).
output_check::ViewRelL2 views_against_reference(const RunRequest& req, const Config& cfg,
                                                const std::vector<int64_t>& rows, const BackendResult& res) {
  static const std::vector<float> kNoSum;
  static const reference::Partials kNoRanks;
  // The sum over ranks; gemm-only: each rank's own fp32 partial.
  const bool collective = has_collective(cfg.mode);
  const reference::PartialsResult& p = shared_partials(req.shape, cfg.quant, req.seed, rows, !collective).even;
  return output_check::rel_l2_of_views(req.shape, cfg, rows, res.outputs, collective ? p.reference : kNoSum,
                                       collective ? kNoRanks : p.rank_references);
}

// NaN/inf and the agreement of the views the collective makes equal, over every element read back.
output_check::ElementChecks element_checks(const Shape& shape, const Config& cfg, const std::vector<int64_t>& rows,
                                           const BackendResult& res) {
  output_check::ElementChecks elements(shape, cfg, Fp8Format::E4M3FN, 10, /*wire_leg=*/false);
  output_check::Chunk chunk;
  chunk.rows = &rows;
  for (const auto& o : res.outputs) chunk.views.push_back(o.data());
  elements.add(chunk);
  return elements;
}

// Bit-exactness: the collective re-emulated over the backend's own partials must reproduce its output, in
// every checked iteration (each on its own inputs: iteration_input_scale), on the sampled rows; the GPU
// backend's device-side compare covers every element of every rank (output_check::check_iterations). A
// backend that returned one iteration only has iteration 0's outputs made its one checked iteration.
output_check::IterationChecks check_bit_exact(const RunRequest& req, const Config& cfg,
                                              const std::vector<int64_t>& rows, BackendResult& res) {
  if (res.iteration_index.empty()) {
    res.iteration_index.push_back(0);
    res.iteration_outputs.push_back(res.outputs);
  }
  for (const auto& it : res.iteration_outputs) {
    GEMMAR_CHECK(int(it.size()) == req.shape.world, "backend returned ", it.size(), " rank outputs in an iteration");
    for (const auto& o : it) GEMMAR_CHECK(int64_t(o.size()) == int64_t(rows.size()) * req.shape.n);
  }
  output_check::IterationInputs iin;
  iin.rows = &rows;
  iin.n = req.shape.n;
  iin.world = req.shape.world;
  iin.iteration_index = &res.iteration_index;
  iin.iteration_outputs = &res.iteration_outputs;
  iin.full = &res.full_compares;
  std::shared_ptr<const reference::Bf16Outputs> expected[2];  // what iterations of each parity must give
  if (!res.partials.empty()) {
    reference::CollectiveRequest cr;
    cr.shape = req.shape;
    cr.config = cfg;
    cr.rows = rows;
    cr.seed = req.seed;
    expected[0] = emulate_collective_once(cr, res.partials);
    if (res.iteration_index.size() > 1 || res.iteration_index[0] % 2)
      expected[1] = emulate_collective_once(cr, scaled_partials(res.partials, req.seed, 1));
    iin.expected[0] = expected[0].get();
    iin.expected[1] = expected[1].get();
  }
  return output_check::check_iterations(iin);
}

// The run's record: what the backend measured and what the checks found, as `gemmar check` reads it.
RunRecord run_record(const RunRequest& req, const Config& cfg, const std::vector<int64_t>& rows,
                     const BackendResult& res, const output_check::ViewRelL2& views,
                     const output_check::ElementChecks& elements, const output_check::IterationChecks& iterations) {
  RunRecord rec;
  rec.shape = req.shape;
  rec.config = req.config;
  rec.backend = res.backend;
  rec.pull_blocks = req.inject.pull_blocks.value_or(req.config.pull_blocks);
  output_check::record_numerics(rec, views, cfg, std::max(elements.nonfinite, iterations.full_nonfinite));
  rec.checked_elements = elements.checked;
  rec.nonfinite_elements = elements.nonfinite;
  if (has_collective(cfg.mode) && req.shape.world > 1) rec.disagreeing_elements = elements.disagreeing;
  rec.phases_us = res.phases_us;
  rec.per_rank_time_us = res.per_rank_time_us;
  if (res.total_us) rec.max_rank_time_us = res.total_us;
  if (!res.per_rank_time_us.empty())
    rec.max_rank_time_us = *std::max_element(res.per_rank_time_us.begin(), res.per_rank_time_us.end());
  rec.timing = !res.total_us                                     ? "none (CPU emulation: no kernel times)"
               : res.device.find("eager (") != std::string::npos ? "eager"
                                                                 : "graph";
  rec.profile = req.profile.empty() ? default_profile(res.backend, res.device, res.ranks_per_device) : req.profile;
  rec.iterations_checked = int(res.iteration_index.size());
  rec.check_every = std::max(1, req.check_every);
  output_check::record_iterations(rec, iterations);
  if (req.straggle_us > 0) rec.straggle_us = req.straggle_us;
  rec.checked_rows = int64_t(rows.size());
  rec.poisoned_elements = res.poisoned_elements;
  rec.seed = req.seed;
  rec.inject = req.inject.label();
  rec.device = res.device;
  if (!res.gemm_impl.empty()) rec.gemm_impl = res.gemm_impl;
  if (res.unfused_baseline_us && rec.max_rank_time_us && *rec.max_rank_time_us > 0) {
    rec.unfused_baseline = res.unfused_baseline;
    rec.unfused_baseline_us = *res.unfused_baseline_us;
  }
  if (req.guard) rec.guard = res.guard.value_or(GuardReport{});
  rec.raw = run_record_to_json(rec);
  return rec;
}

}  // namespace

RunOutcome run_and_check(Backend& backend, const RunRequest& req) {
  validate_shape_config(req.shape, req.config);
  // A backend that does not follow relaxed rows (or not this request's) is refused them here, not run as something
  // else. The CPU emulation and the GPU kernels both follow them (kernels/pipeline/put_plan.hpp: a tile straddling
  // two owners stores into each one's rows and counts for both, as mori's relaxed epilogue); the GPU refuses --guard.
  if (row_plan(req.shape, req.config).relaxed_rows) {
    const std::string refusal = backend.relaxed_rows_refusal(req);
    GEMMAR_USAGE_CHECK(refusal.empty(), "--relaxed-rows: the ", backend.name(), " backend ", refusal, " (issue 45)");
  }
  const Config cfg = effective_config(req.config);
  const std::vector<int64_t> rows = output_check::rows_to_check(req.shape, cfg, req.check_rows, req.seed);
  BackendResult res = execute_rows(backend, req, rows);
  const output_check::ViewRelL2 views = views_against_reference(req, cfg, rows, res);
  const output_check::ElementChecks elements = element_checks(req.shape, cfg, rows, res);
  const output_check::IterationChecks iterations = check_bit_exact(req, cfg, rows, res);
  RunRecord rec = run_record(req, cfg, rows, res, views, elements, iterations);

  return judge_outcome(std::move(rec), JudgeOptions{});
}

RunOutcome judge_outcome(RunRecord rec, JudgeOptions opts) {
  // The same path as `gemmar check`: the record's own fields decide the expectations.
  opts.judge_timing = rec.max_rank_time_us.has_value();
  RunOutcome out;
  out.expectations = expectations_for(rec, opts);
  out.verdict = judge(rec, out.expectations);
  out.record = std::move(rec);
  return out;
}

}  // namespace gemmar

namespace gemmar {

namespace {

// The self-test's wrong elements by leg: a wrong sum in the owner's own rows is the scatter's (it travels on to
// every receiver); a receiver's wrong copy of a right sum is the gather's.
struct SelftestLegs {
  struct Leg {
    int64_t wrong = 0;
    double first_value = 0;
  };
  std::map<int, Leg> scatter;                 // owner -> its own reduced rows wrong
  std::map<std::pair<int, int>, Leg> gather;  // (owner, receiver) -> the receiver's copy wrong, owner's right
  int64_t wrong_elements = 0;
};

// Every element must hold `expect`.
SelftestLegs selftest_legs(const Shape& shape, const Config& cfg, const std::vector<int64_t>& rows,
                           const reference::Bf16Outputs& outputs, uint16_t expect) {
  SelftestLegs legs;
  const int W = shape.world;
  const int64_t n = shape.n;
  const int64_t S = slice_rows(shape, cfg);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int owner = int(rows[i] / S);
    const uint16_t* own = outputs[size_t(owner)].data() + i * size_t(n);
    bool owner_right = true;
    for (int64_t c = 0; c < n; ++c)
      if (own[c] != expect) {
        SelftestLegs::Leg& l = legs.scatter[owner];
        if (l.wrong++ == 0) l.first_value = reference::from_bf16(own[c]);
        owner_right = false;
        ++legs.wrong_elements;
      }
    for (int r = 0; r < W; ++r) {
      if (r == owner) continue;
      const uint16_t* v = outputs[size_t(r)].data() + i * size_t(n);
      for (int64_t c = 0; c < n; ++c)
        if (v[c] != expect) {
          ++legs.wrong_elements;
          if (!owner_right) continue;  // a wrong sum travels on: its leg is the scatter's
          SelftestLegs::Leg& l = legs.gather[{owner, r}];
          if (l.wrong++ == 0) l.first_value = reference::from_bf16(v[c]);
        }
    }
  }
  return legs;
}

// What failed, leg by leg (the first six owners or legs of each).
std::string selftest_message(const Config& config, const SelftestResult& st, const SelftestLegs& legs, int W) {
  const Config cfg = effective_config(config);
  const double total = double(int64_t(W) * (W + 1) / 2);
  std::ostringstream m;
  m << config_label(config) << ": " << st.wrong_elements << " of " << st.checked_elements
    << " elements are not W(W+1)/2 = " << total << " (every rank's window holds rank+1)";
  if (!legs.scatter.empty()) {
    m << "; scatter leg (reduce-scatter into the owner): owner rank";
    m << (legs.scatter.size() == 1 ? " " : "s ");
    int k = 0;
    for (const auto& [o, l] : legs.scatter) {
      if (k++ == 6) {
        m << ", ...";
        break;
      }
      m << (k > 1 ? ", " : "") << o << " holds " << l.first_value << " (" << total - l.first_value << " never arrived)";
    }
  }
  if (!legs.gather.empty()) {
    m << "; gather leg (" << to_string(cfg.gather_dtype) << "/" << to_string(effective_config(cfg).gather_transport)
      << ", owner -> receiver): ";
    int k = 0;
    for (const auto& [key, l] : legs.gather) {
      if (k++ == 6) {
        m << ", ... (" << legs.gather.size() << " legs)";
        break;
      }
      m << (k > 1 ? ", " : "") << key.first << " -> " << key.second << " holds " << l.first_value;
    }
  }
  return m.str();
}

}  // namespace

SelftestResult run_selftest(Backend& backend, const Shape& shape, const Config& config, const Faults& faults) {
  const auto t0 = std::chrono::steady_clock::now();
  SelftestResult st;
  st.config = config;
  const Config cfg = effective_config(config);
  validate_shape_config(shape, cfg);
  const int W = shape.world;
  RunRequest req;
  req.shape = shape;
  req.config = config;
  req.inject = faults;
  req.iterations = 1;
  req.check_every = 1;
  req.selftest_fill = true;
  // Every real row (the shape is small).
  const std::vector<int64_t> rows = reference::sample_rows(shape, cfg, std::numeric_limits<int64_t>::max() / 4, 1);
  BackendResult res = backend.execute(req, rows);
  GEMMAR_CHECK(res.rows == rows && int(res.outputs.size()) == W, "selftest: backend returned other rows or ranks");
  // The sum every element must hold: W(W+1)/2, as bf16 (exact for W <= 32: an integer with <= 8 significant bits).
  const uint16_t expect = reference::to_bf16(float(int64_t(W) * (W + 1) / 2));
  const SelftestLegs legs =
      has_collective(cfg.mode) ? selftest_legs(shape, cfg, rows, res.outputs, expect) : SelftestLegs{};
  st.wrong_elements = legs.wrong_elements;
  st.checked_elements = int64_t(rows.size()) * shape.n * W;
  if (st.wrong_elements > 0) {
    st.pass = false;
    st.message = selftest_message(config, st, legs, W);
  }
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace gemmar
