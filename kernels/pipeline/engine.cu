// The pipeline's engine (kernels/pipeline/engine.hpp): placement, buffers and streams, the per-replay inputs, the
// barrier that times the phases, the capture and its replays, and the read-back and checks after the run.
#include "kernels/pipeline/engine.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "common/errors.hpp"
#include "kernels/check/output_compare.hpp"
#include "kernels/gemm/heuristics.hpp"
#include "kernels/host_check.hpp"
#include "kernels/pipeline/legs.hpp"
#include "kernels/pipeline/put_plan.hpp"
#include "reference/quant.hpp"

namespace gemmar::kernels {

// The timed replays: each one's phases, its total and each rank's time (the faults' set-up phases taken out).
struct Engine::Samples {
  std::vector<std::map<std::string, double>> phases;
  std::vector<double> totals;
  std::vector<std::vector<double>> per_rank;
};

Engine::Engine(const DeviceRun& plan, const OperandFn& gen, const PipelineHooks& hooks) : plan_(plan), hooks_(hooks) {
  const Shape& sh = plan.shape;
  W_ = sh.world;
  M_ = sh.m;
  N_ = sh.n;
  K_ = sh.k;
  GEMMAR_USAGE_CHECK(W_ >= 1 && W_ <= dev::kMaxWorld, "--world: the GPU backend supports 1..", dev::kMaxWorld);
  // The scales' sizes follow the quant's scale block (common/modes.hpp).
  quant_ = plan.config.quant;
  // Relaxed rows (mori's --relaxed-rows, kernels_fused.py @f3bff0ae compile_fused_gemm_scatter): M a multiple of W
  // only, S = M / W rows a rank; the GEMM runs over whole tiles (Mg_), a tile straddling two owners stores each row
  // into the one contiguous partial and counts for both owners (put_plan.hpp).
  relaxed_ = row_plan(sh, plan.config).relaxed_rows;
  if (relaxed_) {
    GEMMAR_USAGE_CHECK(M_ % W_ == 0 && M_ / W_ >= dev::kBlockM, "-m: relaxed rows need a multiple of world (", W_,
                       ") with a full 128-row tile per rank, got ", M_);
    GEMMAR_USAGE_CHECK(traits(plan.config.mode).fused && traits(plan.config.mode).scatter_by_copy_engine,
                       "--relaxed-rows with --mode ", to_string(plan.config.mode),
                       ": relaxed rows requires fused SDMA, a full tile per peer, and chunk_bands");
    GEMMAR_USAGE_CHECK(!plan.guard,
                       "--guard with --relaxed-rows: the GPU guard samples whole 128-row tiles of a "
                       "W x 128 padded M; run relaxed rows without --guard");
  } else {
    GEMMAR_USAGE_CHECK(M_ % (int64_t(W_) * dev::kBlockM) == 0, "-m: must be padded to a multiple of world*128");
  }
  GEMMAR_USAGE_CHECK(N_ % dev::kBlockN == 0, "-n: the GPU GEMM needs a multiple of 128");
  GEMMAR_USAGE_CHECK(K_ % dev::kBlockK == 0, "-k: must be a multiple of 128");
  S_ = M_ / W_;
  Mg_ = (M_ + dev::kBlockM - 1) / dev::kBlockM * dev::kBlockM;
  counter_targets_ = slice_counter_targets(W_, S_, dev::kBlockM, N_ / dev::kBlockN);
  sa_count_ = scale_count(scale_block(quant_, false), Mg_, K_);
  sb_count_ = scale_count(scale_block(quant_, true), N_, K_);
  eff_ = effective_config(plan.config);
  {  // The legs' shapes, from the mode's traits (common/modes.hpp), as reference/emulation.cpp reads them.
    const ModeTraits& mt = traits(eff_.mode);
    epilogue_stores_ = mt.fused && !mt.scatter_by_copy_engine;
    epilogue_puts_ = mt.fused && mt.scatter_by_copy_engine;
    owner_loads_ = mt.collective && !mt.fused && !mt.scatter_by_copy_engine;
  }
  // mori's words (bench_gemm_ar.py @d5443336 :287-288; layout.py scatter_tiles_per_row): only fused-sdma's epilogue
  // narrows its puts, one scale per 256 columns.
  GEMMAR_USAGE_CHECK(!fp8_scatter() || epilogue_puts_, "--scatter-dtype fp8 with --mode ", to_string(eff_.mode),
                     ": FP8 scatter experiment is wired only through fused-sdma");
  GEMMAR_USAGE_CHECK(!fp8_scatter() || N_ % numerics::kScatterScaleCols == 0, "-n: n=", N_,
                     " must be a multiple of scatter_scale_n=256 (--scatter-dtype fp8)");
  // The vendor GEMM has no fused epilogue: the fused modes keep ours (their epilogue pushes the tiles). The
  // pipeline's vendor GEMM is the blockscale layout's (the guard reads A's scales by the quant's scale block).
  vendor_ = plan.gemm_impl == GemmImpl::Cublaslt && !is_fused(eff_.mode) &&
            dev::gemm_scales(quant_) == dev::GemmScales::Blockscale;
  place_ranks();
  allocate();
  if (plan.guard && !plan.selftest_fill) {
    std::vector<int> devs;
    for (const auto& rb : ranks_) devs.push_back(rb.dev);
    guard_ = std::make_unique<DeviceGuard>(W_, M_, N_, K_, uses_fp8_wire(eff_), devs, plan.guard_sample,
                                           reference::guard_sample_seed(plan.seed), hooks.guard_passes);
  }
  upload(gen);
  legs_ = plan_legs(*this);
}

Engine::~Engine() {
  if (cmp_ptrs_) {
    (void)gpuSetDevice(ranks_.front().dev);
    (void)gpuFree(cmp_ptrs_);
    (void)gpuFree(cmp_counts_);
    for (auto e : cmp_ev_) (void)gpuEventDestroy(e);
  }
  for (auto& rb : ranks_) {
    (void)gpuSetDevice(rb.dev);
    for (void* p : {static_cast<void*>(rb.a),        static_cast<void*>(rb.b),       static_cast<void*>(rb.sa),
                    static_cast<void*>(rb.sb),       static_cast<void*>(rb.c),       static_cast<void*>(rb.recv),
                    static_cast<void*>(rb.out),      static_cast<void*>(rb.out_alt), static_cast<void*>(rb.q),
                    static_cast<void*>(rb.qs),       static_cast<void*>(rb.land),    static_cast<void*>(rb.land_s),
                    static_cast<void*>(rb.counters), static_cast<void*>(rb.poison),  static_cast<void*>(rb.straggle),
                    static_cast<void*>(rb.stale),    static_cast<void*>(rb.sq),      static_cast<void*>(rb.ss),
                    static_cast<void*>(rb.recv_q),   static_cast<void*>(rb.recv_qs)})
      if (p) (void)gpuFree(p);
    for (auto e : rb.chunk_ev) (void)gpuEventDestroy(e);
    if (rb.comp) (void)gpuStreamDestroy(rb.comp);
    if (rb.copy) (void)gpuStreamDestroy(rb.copy);
  }
  for (auto& pe : events_) {
    (void)gpuSetDevice(pe.dev);
    (void)gpuEventDestroy(pe.ev);
  }
  if (ctl_) {
    (void)gpuSetDevice(0);
    if (graph_exec_) (void)GEMMAR_GRAPH_EXEC_DESTROY(graph_exec_);
    if (graph_) (void)GEMMAR_GRAPH_DESTROY(graph_);
    (void)gpuStreamDestroy(ctl_);
  }
}

// ---- set-up -----------------------------------------------------------------------------------------------

// One rank per device when W devices exist (or ranks_per_device says so), otherwise all on one; the control stream
// on device 0.
void Engine::place_ranks() {
  const int ndev = device_count();
  if (ndev <= 0) throw EnvironmentError("no GPU device found by the runtime");
  int rpd = plan_.ranks_per_device;
  if (rpd <= 0) rpd = ndev >= W_ ? 1 : W_;
  GEMMAR_USAGE_CHECK(rpd <= W_ && (W_ + rpd - 1) / rpd <= ndev, "--ranks-per-device: ", rpd, " ranks per device x ",
                     ndev, " devices cannot hold ", W_, " ranks");
  ndev_used_ = (W_ + rpd - 1) / rpd;
  rpd_ = rpd;
  ranks_.resize(size_t(W_));
  for (int r = 0; r < W_; ++r) ranks_[size_t(r)].dev = r / rpd;
  enable_peer_access();
  GPU_CHECK(gpuSetDevice(0));
  GPU_CHECK(gpuStreamCreateWithFlags(&ctl_, gpuStreamNonBlocking));
  gpuDeviceProp prop{};
  GPU_CHECK(gpuGetDeviceProperties(&prop, 0));
  device_ = std::string(prop.name) + " (" + std::to_string(W_) + " ranks on " + std::to_string(ndev_used_) +
            (ndev_used_ == 1 ? " device)" : " devices)");
#if defined(GEMMAR_GPU_HIP)
  // gfx942's MFMA reads fp8 as e4m3fnuz: fn codes read as fnuz are exactly half their value, so the A x B product
  // is 1/4 of the intended one; folded into B's scales (exact, a power of two).
  fnuz_hw_ = std::string(prop.gcnArchName).rfind("gfx942", 0) == 0;
#endif
}

void Engine::enable_peer_access() {
  for (int i = 0; i < ndev_used_; ++i)
    for (int j = 0; j < ndev_used_; ++j) {
      if (i == j) continue;
      int can = 0;
      GPU_CHECK(gpuDeviceCanAccessPeer(&can, i, j));
      if (!can)
        throw EnvironmentError("device " + std::to_string(i) + " cannot access device " + std::to_string(j) +
                               "'s memory (peer access); use --ranks-per-device");
      set(i);
      const gpuError_t e = gpuDeviceEnablePeerAccess(j, 0);
      if (e != gpuSuccess && e != gpuErrorPeerAccessAlreadyEnabled) GPU_CHECK(e);
      (void)gpuGetLastError();
    }
}

void Engine::allocate() {
  const bool fp8 = uses_fp8_wire(eff_);
  for (auto& rb : ranks_) {
    set(rb.dev);
    if (hooks_.make_streams) {
      hooks_.make_streams(&rb.comp, &rb.copy);
    } else {  // the default priority, as every other stream of the run
      GPU_CHECK(gpuStreamCreateWithFlags(&rb.comp, gpuStreamNonBlocking));
      GPU_CHECK(gpuStreamCreateWithFlags(&rb.copy, gpuStreamNonBlocking));
    }
    rb.a = dalloc<uint8_t>(Mg_ * K_);
    rb.b = dalloc<uint8_t>(N_ * K_);
    rb.sa = dalloc<float>(sa_count_);
    rb.sb = dalloc<float>(sb_count_);
    rb.c = dalloc<uint16_t>(Mg_ * N_);  // relaxed rows: the last tile's rows past M too, which nothing reads
    rb.recv = dalloc<uint16_t>(int64_t(W_) * S_ * N_);
    rb.out = dalloc<uint16_t>(M_ * N_);
    if (plan_.inject.stale_output) rb.out_alt = dalloc<uint16_t>(M_ * N_);
    if (fp8) {
      rb.q = dalloc<uint8_t>(S_ * N_);
      rb.qs = dalloc<float>(S_);
      rb.land = dalloc<uint8_t>(int64_t(W_) * S_ * N_);
      rb.land_s = dalloc<float>(int64_t(W_) * S_);
    }
    if (fp8_scatter()) {
      rb.sq = dalloc<uint8_t>(M_ * N_);
      rb.ss = dalloc<float>(M_ * scatter_segments());
      rb.recv_q = dalloc<uint8_t>(int64_t(W_) * S_ * N_);
      rb.recv_qs = dalloc<float>(int64_t(W_) * S_ * scatter_segments());
    }
    rb.counters = dalloc<unsigned>(W_);
    rb.poison = dalloc<unsigned long long>(1);
    rb.straggle = dalloc<float>(3);
    GPU_CHECK(gpuMemset(rb.straggle, 0, 3 * sizeof(float)));
    if (plan_.inject.stale_replay) rb.stale = dalloc<uint16_t>(S_ * N_);
    rb.chunk_ev.resize(size_t(W_));
    for (auto& e : rb.chunk_ev) GPU_CHECK(gpuEventCreateWithFlags(&e, gpuEventDisableTiming));
  }
  // fused-sdma's one GEMM launch needs the copy streams to wait on its counters; where the driver cannot, one launch
  // per destination slice.
  persistent_puts_ = epilogue_puts_ && !hooks_.fused_sdma_per_slice && stream_waits_work();
}

// Whether every rank's copy stream can wait on a counter (a satisfied wait, outside any capture).
bool Engine::stream_waits_work() {
  for (auto& rb : ranks_) {
    set(rb.dev);
    GPU_CHECK(gpuMemset(rb.counters, 0, size_t(W_) * 4));
    if (gpu::stream_wait_geq(rb.copy, rb.counters, 0) != gpuSuccess) return false;
    GPU_CHECK(gpuStreamSynchronize(rb.copy));
  }
  return true;
}

void Engine::upload(const OperandFn& gen) {
  for (int r = 0; r < W_; ++r) {
    RankOperands op;
    if (plan_.selftest_fill) {
      // The transport self-test: A and B hold 1.0 (e4m3fn 0x38) in column 0 only, A's scales rank+1, B's 1, so
      // every element of the partial is exactly rank+1.
      op.a.codes.assign(size_t(M_ * K_), 0);
      op.b.codes.assign(size_t(N_ * K_), 0);
      for (int64_t i = 0; i < M_; ++i) op.a.codes[size_t(i * K_)] = 0x38;
      for (int64_t i = 0; i < N_; ++i) op.b.codes[size_t(i * K_)] = 0x38;
      op.a.scales.assign(size_t(scale_count(scale_block(quant_, false), M_, K_)), float(r + 1));
      op.b.scales.assign(size_t(sb_count_), 1.0f);
    } else {
      gen(r, op);
    }
    GEMMAR_CHECK(int64_t(op.a.codes.size()) == M_ * K_ && int64_t(op.b.codes.size()) == N_ * K_ &&
                     int64_t(op.a.scales.size()) == scale_count(scale_block(quant_, false), M_, K_) &&
                     int64_t(op.b.scales.size()) == sb_count_,
                 "operand sizes of rank ", r);
    pad_gemm_rows(op);
    auto& rb = ranks_[size_t(r)];
    set(rb.dev);
    GPU_CHECK(gpuMemcpy(rb.a, op.a.codes.data(), op.a.codes.size(), gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemcpy(rb.b, op.b.codes.data(), op.b.codes.size(), gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemcpy(rb.sa, op.a.scales.data(), op.a.scales.size() * 4, gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemcpy(rb.sb, op.b.scales.data(), op.b.scales.size() * 4, gpuMemcpyHostToDevice));
    if (plan_.inject.fnuz_read_as_fn) {
      GPU_CHECK(dev::launch_fp8_recode(rb.a, Mg_ * K_, false, rb.comp));
      GPU_CHECK(dev::launch_fp8_recode(rb.b, N_ * K_, false, rb.comp));
    }
    if (fnuz_hw_) {
      GPU_CHECK(dev::launch_fp8_recode(rb.a, Mg_ * K_, true, rb.comp));
      GPU_CHECK(dev::launch_fp8_recode(rb.b, N_ * K_, true, rb.comp));
      // Only the MFMA (Blockscale) kernel reads fnuz; gemm/quant.cu decodes the codes as fn itself.
      if (dev::gemm_scales(quant_) == dev::GemmScales::Blockscale)
        GPU_CHECK(dev::launch_scale_f32(rb.sb, sb_count_, 4.0f, rb.comp));
    }
    // The weights' checksum, from B as loaded (before any fault touches the device copy).
    if (guard_)
      guard_->set_weights(r, reference::guard_weights(reference::dequantized_b(op, quant_, Fp8Format::E4M3FN), N_, K_));
    if (plan_.inject.perturbed_rank == r) GPU_CHECK(dev::launch_scale_f32(rb.sb, sb_count_, 1.25f, rb.comp));
    GPU_CHECK(gpuStreamSynchronize(rb.comp));
  }
}

// Relaxed rows: A over the GEMM's whole tiles (Mg_ rows), put_plan.hpp pad_a_rows.
void Engine::pad_gemm_rows(RankOperands& op) const {
  if (Mg_ == M_) return;
  op.a.rows = M_;
  op.a.cols = K_;
  pad_a_rows(op.a, quant_, Mg_);
}

// Before the first launch only (untimed): poison everything the run writes; fresh (zero) slots / landing zones for
// the faults whose signature is what an unwritten buffer holds (reference/emulation.hpp's Faults).
void Engine::poison_all() {
  const Faults& f = plan_.inject;
  const size_t slice_bytes = size_t(S_ * N_) * 2;
  for (auto& rb : ranks_) {
    set(rb.dev);
    GPU_CHECK(gpuMemsetAsync(rb.c, 0xff, size_t(Mg_ * N_) * 2, rb.comp));
    GPU_CHECK(gpuMemsetAsync(rb.recv, f.silent_scatter ? 0x00 : 0xff, size_t(W_) * slice_bytes, rb.comp));
    GPU_CHECK(gpuMemsetAsync(rb.out, 0xff, size_t(M_ * N_) * 2, rb.comp));
    if (rb.out_alt) GPU_CHECK(gpuMemsetAsync(rb.out_alt, 0xff, size_t(M_ * N_) * 2, rb.comp));
    if (rb.stale) GPU_CHECK(gpuMemsetAsync(rb.stale, 0xff, slice_bytes, rb.comp));
    if (rb.sq) {
      // A slot no put reached (silent scatter) holds zero codes and zero scales, as mori's zeroed window
      // (reference/emulation.cpp widen_slots).
      const int64_t segs = scatter_segments();
      GPU_CHECK(gpuMemsetAsync(rb.sq, 0xff, size_t(M_ * N_), rb.comp));
      GPU_CHECK(gpuMemsetAsync(rb.ss, 0xff, size_t(M_ * segs) * 4, rb.comp));
      GPU_CHECK(gpuMemsetAsync(rb.recv_q, f.silent_scatter ? 0x00 : 0xff, size_t(W_ * S_ * N_), rb.comp));
      GPU_CHECK(gpuMemsetAsync(rb.recv_qs, f.silent_scatter ? 0x00 : 0xff, size_t(W_ * S_ * segs) * 4, rb.comp));
    }
    if (rb.q) {
      GPU_CHECK(gpuMemsetAsync(rb.q, 0xff, size_t(S_ * N_), rb.comp));
      GPU_CHECK(gpuMemsetAsync(rb.qs, 0xff, size_t(S_) * 4, rb.comp));
      GPU_CHECK(gpuMemsetAsync(rb.land, f.silent_gather ? 0x00 : 0xff, size_t(W_ * S_ * N_), rb.comp));
      GPU_CHECK(gpuMemsetAsync(rb.land_s, f.silent_gather ? 0x00 : 0xff, size_t(W_ * S_) * 4, rb.comp));
    }
  }
  sync_all();
}

// Between replays (outside the graph): iteration it's inputs (A scales times iteration_scales[it][r], exact powers
// of two, applied as the ratio to the current factor) and its straggle delays.
void Engine::prepare_iteration(int it) {
  for (int r = 0; r < W_; ++r) {
    auto& rb = ranks_[size_t(r)];
    set(rb.dev);
    const float want = size_t(it) < plan_.iteration_scales.size() && size_t(r) < plan_.iteration_scales[it].size()
                           ? plan_.iteration_scales[it][r]
                           : 1.0f;
    if (want != cur_scale_[size_t(r)]) {
      GPU_CHECK(dev::launch_scale_f32(rb.sa, sa_count_, want / cur_scale_[size_t(r)], rb.comp));
      cur_scale_[size_t(r)] = want;
    }
    if (size_t(it) < plan_.straggle_schedule_us.size()) {
      float d[3] = {0, 0, 0};
      for (int k = 0; k < 3; ++k)
        if (size_t(r * 3 + k) < plan_.straggle_schedule_us[it].size()) d[k] = plan_.straggle_schedule_us[it][r * 3 + k];
      GPU_CHECK(gpuMemcpyAsync(rb.straggle, d, sizeof(d), gpuMemcpyHostToDevice, rb.comp));
    }
    GPU_CHECK(gpuStreamSynchronize(rb.comp));
  }
}

// ---- the run ------------------------------------------------------------------------------------------------

RunOutput Engine::run() {
  RunOutput ro;
  ro.device = device_;
  cur_scale_.assign(size_t(W_), 1.0f);
  poison_all();
  if (plan_.inject.stale_output) run_previous_launch();
  // Launch 0 (a warm-up) runs eagerly on iteration 0's inputs: lazy initialisation (kernel attributes, vendor
  // workspaces) happens outside the capture. Then the whole run is captured once and replayed: the rest of the
  // warm-up, then the timed iterations, each on its own inputs (prepare_iteration, outside the graph).
  prepare_iteration(0);
  execute_once(nullptr);
  sync_all();
  Timing graph_tm;
  ro.launch = plan_.eager ? "eager (--eager)" : capture_graph(graph_tm);
  Samples samples;
  replay_and_time(graph_tm, ro, samples);
  summarise(samples, ro);
  if (plan_.inject.stale_output)
    for (auto& rb : ranks_) std::swap(rb.out, rb.out_alt);
  verify_counters();
  read_back(ro);
  ro.pull_blocks = has_pull(eff_) ? pull_blocks() : 0;
  ro.gemm_impl = vendor_ ? GemmImpl::Cublaslt : GemmImpl::Gemmar;
  ro.ranks_per_device = rpd_;
  return ro;
}

// The stale-output fault's previous run: the same launch with doubled A scales, its result left in `out`; later
// launches write into out_alt, so `out` is what a stale reader sees.
void Engine::run_previous_launch() {
  for (auto& rb : ranks_) {
    set(rb.dev);
    GPU_CHECK(dev::launch_scale_f32(rb.sa, sa_count_, 2.0f, rb.comp));
  }
  execute_once(nullptr);
  sync_all();
  for (auto& rb : ranks_) {
    set(rb.dev);
    GPU_CHECK(dev::launch_scale_f32(rb.sa, sa_count_, 0.5f, rb.comp));
    std::swap(rb.out, rb.out_alt);
  }
}

// One launch captured into a graph on the control stream and instantiated: "graph", or why the replays run eagerly
// (the capture or the instantiation failed: the fallback keeps the run going).
std::string Engine::capture_graph(Timing& tm) {
  set(0);
  gpuError_t e = GEMMAR_BEGIN_CAPTURE(ctl_);
  if (e != gpuSuccess) {
    (void)gpuGetLastError();
    return std::string("eager (graph capture failed: ") + gpuGetErrorString(e) + ")";
  }
  capturing_ = true;
  try {
    execute_once(&tm);
  } catch (const EnvironmentError& err) {
    capturing_ = false;
    gpuGraph_t g = nullptr;
    (void)GEMMAR_END_CAPTURE(ctl_, &g);
    if (g) (void)GEMMAR_GRAPH_DESTROY(g);
    (void)gpuGetLastError();
    return std::string("eager (graph capture failed: ") + err.what() + ")";
  }
  capturing_ = false;
  e = GEMMAR_END_CAPTURE(ctl_, &graph_);
  if (e == gpuSuccess) e = GEMMAR_INSTANTIATE(&graph_exec_, graph_);
  if (e != gpuSuccess) {
    (void)gpuGetLastError();
    graph_exec_ = nullptr;
    return std::string("eager (graph capture failed: ") + gpuGetErrorString(e) + ")";
  }
  return "graph";
}

// The rest of the warm-up, then the timed iterations: each replay (or eager launch) on its own inputs, its phases
// timed, the guard's sums handed over, the legs' after-replay faults, and every check_every-th read back.
void Engine::replay_and_time(Timing& graph_tm, RunOutput& ro, Samples& samples) {
  samples.per_rank.assign(size_t(W_), {});
  const int iters = std::max(1, plan_.iterations);
  const int step = std::max(1, plan_.check_every);
  for (int launch = 1; launch < plan_.warmup + iters; ++launch) {
    const int it = launch - plan_.warmup;  // < 0: warm-up (iteration 0's inputs)
    prepare_iteration(std::max(0, it));
    Timing eager_tm;
    Timing& tm = graph_exec_ ? graph_tm : eager_tm;
    if (graph_exec_) {
      set(0);
      GPU_CHECK(GEMMAR_GRAPH_LAUNCH(graph_exec_, ctl_));
    } else {
      execute_once(&eager_tm);
    }
    sync_all();
    if (it < 0) continue;
    if (guard_ && plan_.guard_sink) plan_.guard_sink(it, guard_->read());
    time_replay(tm, samples);
    for (auto& leg : legs_) leg->after_replay(*this);
    if (it % step == 0) {
      ro.iteration_index.push_back(it);
      ro.iteration_outputs.push_back(read_outputs());
      if (auto fc = full_compare(it)) ro.full_compares.push_back(std::move(*fc));
    }
  }
}

// One replay's phases (the control stream's events), its total and each rank's time, the faults' set-up phases
// (not part of the pipeline being measured) taken out of the totals.
void Engine::time_replay(const Timing& tm, Samples& samples) const {
  std::map<std::string, double> ph;
  float ms = 0;
  double untimed = 0;
  for (size_t i = 0; i + 1 < tm.ctl_events.size(); ++i) {
    GPU_CHECK(gpuEventElapsedTime(&ms, tm.ctl_events[i].ev, tm.ctl_events[i + 1].ev));
    const std::string& name = tm.ctl_events[i + 1].name;
    ph[name] += double(ms) * 1e3;
    if (name == kPrefillPhase || name == kNoReleasePhase || name == kStaleReplayPhase) untimed += double(ms) * 1e3;
  }
  GPU_CHECK(gpuEventElapsedTime(&ms, tm.ctl_events.front().ev, tm.ctl_events.back().ev));
  samples.totals.push_back(std::max(0.0, double(ms) * 1e3 - untimed));
  for (int r = 0; r < W_; ++r) {
    GPU_CHECK(gpuEventElapsedTime(&ms, tm.rank_start[size_t(r)], tm.rank_end[size_t(r)]));
    samples.per_rank[size_t(r)].push_back(std::max(0.0, double(ms) * 1e3 - untimed));
  }
  samples.phases.push_back(std::move(ph));
}

// Medians over the timed replays: each phase, the total, each rank's time.
void Engine::summarise(const Samples& samples, RunOutput& ro) const {
  for (const auto& [name, _] : samples.phases.front()) {
    std::vector<double> v;
    for (const auto& pr : samples.phases) v.push_back(pr.at(name));
    ro.phases_us[name] = median(v);
  }
  ro.total_us = median(samples.totals);
  for (int r = 0; r < W_; ++r) ro.per_rank_time_us.push_back(median(samples.per_rank[size_t(r)]));
}

// One launch of the whole op: the start, every leg in order, the end.
void Engine::execute_once(Timing* tm) {
  if (capturing_) fork();
  begin_launch(tm);
  for (auto& leg : legs_) leg->enqueue(*this, tm);
  end_launch(tm);
}

// Untimed per-launch set-up, then the start barrier and each rank's start event.
void Engine::begin_launch(Timing* tm) {
  // The GEMM's tile counters. Everything else was poisoned once (poison_all): a launch that reads a buffer before
  // this launch wrote it sees the previous launch's data, as a replay does.
  for (auto& rb : ranks_) {
    set(rb.dev);
    GPU_CHECK(gpuMemsetAsync(rb.counters, 0, size_t(W_) * 4, rb.comp));
  }
  for (auto& leg : legs_) leg->before_start(*this);
  barrier(nullptr, "");
  if (tm) {
    tm->rank_start.resize(size_t(W_));
    tm->rank_end.resize(size_t(W_));
    for (int r = 0; r < W_; ++r) {
      tm->rank_start[size_t(r)] = new_event(ranks_[size_t(r)].dev, true);
      tm->rank_end[size_t(r)] = new_event(ranks_[size_t(r)].dev, true);
    }
  }
  barrier(tm, "start");
  if (tm)
    for (int r = 0; r < W_; ++r) {
      set(ranks_[size_t(r)].dev);
      GPU_CHECK(record(tm->rank_start[size_t(r)], ranks_[size_t(r)].comp, true));
    }
}

void Engine::end_launch(Timing* tm) {
  if (tm)
    for (int r = 0; r < W_; ++r) {
      set(ranks_[size_t(r)].dev);
      GPU_CHECK(record(tm->rank_end[size_t(r)], ranks_[size_t(r)].comp, true));
    }
  if (capturing_) join();
}

// ---- streams, events and the barrier ------------------------------------------------------------------------

void Engine::set(int d) { GPU_CHECK(gpuSetDevice(d)); }

// A timed event inside a capture must be an external record node to be recorded (and timed) on replay.
gpuError_t Engine::record(gpuEvent_t e, gpuStream_t s, bool timed) {
  return capturing_ && timed ? GEMMAR_RECORD_EXTERNAL(e, s) : gpuEventRecord(e, s);
}

gpuEvent_t Engine::new_event(int dev, bool timing) {
  set(dev);
  gpuEvent_t e;
  GPU_CHECK(timing ? gpuEventCreate(&e) : gpuEventCreateWithFlags(&e, gpuEventDisableTiming));
  events_.push_back({e, dev});
  return e;
}

// Capture: every rank's streams join the capture by waiting on the origin stream (fork), and rejoin it before the
// capture ends (join).
void Engine::fork() {
  gpuEvent_t e = new_event(0, false);
  set(0);
  GPU_CHECK(gpuEventRecord(e, ctl_));
  for (auto& rb : ranks_) {
    set(rb.dev);
    GPU_CHECK(gpuStreamWaitEvent(rb.comp, e, 0));
    GPU_CHECK(gpuStreamWaitEvent(rb.copy, e, 0));
  }
}
void Engine::join() {
  for (auto& rb : ranks_)
    for (gpuStream_t st : {rb.comp, rb.copy}) {
      gpuEvent_t e = new_event(rb.dev, false);
      GPU_CHECK(gpuEventRecord(e, st));
      set(0);
      GPU_CHECK(gpuStreamWaitEvent(ctl_, e, 0));
    }
}

void Engine::barrier(Timing* tm, const std::string& name, bool comp_only) {
  for (auto& rb : ranks_) {
    for (gpuStream_t s : {rb.comp, rb.copy}) {
      if (comp_only && s == rb.copy) continue;
      gpuEvent_t e = new_event(rb.dev, false);
      GPU_CHECK(gpuEventRecord(e, s));
      set(0);
      GPU_CHECK(gpuStreamWaitEvent(ctl_, e, 0));
    }
  }
  gpuEvent_t done = new_event(0, tm != nullptr);
  set(0);
  GPU_CHECK(record(done, ctl_, tm != nullptr));
  if (tm) tm->ctl_events.push_back({name, done});
  if (capturing_ && tm) {
    // An external record node (the timed event) orders nothing inside the graph: the streams must wait on an
    // ordinary event recorded after it. (Waiting on the external one let the copies race the kernels: the first
    // H200 run of this code, caught by the per-iteration check as NONDETERMINISTIC/STALE_ITERATION.)
    done = new_event(0, false);
    GPU_CHECK(gpuEventRecord(done, ctl_));
  }
  for (auto& rb : ranks_) {
    set(rb.dev);
    GPU_CHECK(gpuStreamWaitEvent(rb.comp, done, 0));
    if (!comp_only) GPU_CHECK(gpuStreamWaitEvent(rb.copy, done, 0));
  }
}

void Engine::sync_all() {
  for (auto& rb : ranks_) {
    set(rb.dev);
    GPU_CHECK(gpuStreamSynchronize(rb.comp));
    GPU_CHECK(gpuStreamSynchronize(rb.copy));
  }
  set(0);
  GPU_CHECK(gpuStreamSynchronize(ctl_));
  GPU_CHECK(gpuGetLastError());
}

void Engine::straggle(int r, int k, gpuStream_t st) {
  if (plan_.straggle_schedule_us.empty()) return;
  set(ranks_[size_t(r)].dev);
  GPU_CHECK(dev::launch_straggle_spin(ranks_[size_t(r)].straggle, k, st));
}

void Engine::put(int r, void* dst, int dst_dev, const void* src, size_t bytes) {
  auto& rb = ranks_[size_t(r)];
  set(rb.dev);
  if (dst_dev == rb.dev)
    GPU_CHECK(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, rb.copy));
  else
    GPU_CHECK(gpuMemcpyPeerAsync(dst, dst_dev, src, rb.dev, bytes, rb.copy));
}

gpuError_t Engine::launch_gemm(const dev::GemmOperands& op, int64_t m_begin, int64_t m_end, const dev::GemmDest& d,
                               gpuStream_t s) const {
  return hooks_.gemm ? hooks_.gemm(op, m_begin, m_end, d, s) : dev::launch_gemm(op, m_begin, m_end, d, s);
}

gpuError_t Engine::launch_widen(const dev::Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks,
                                gpuStream_t s) const {
  return hooks_.widen ? hooks_.widen(src, count, rows, n, blocks, s)
                      : dev::launch_widen(src, count, rows, n, blocks, s);
}

// ---- where the data lives -------------------------------------------------------------------------------------

uint16_t* Engine::partial_of(int q, int p) const {
  return epilogue_stores_ ? ranks_[size_t(p)].recv + int64_t(q) * S_ * N_ : ranks_[size_t(q)].c + int64_t(p) * S_ * N_;
}

const uint16_t* Engine::slot_ptr(int p, int q) const {
  if (!epilogue_stores_ && q == p) return ranks_[size_t(q)].c + int64_t(p) * S_ * N_;
  return ranks_[size_t(p)].recv + int64_t(q) * S_ * N_;
}

uint16_t* Engine::raw_slot(int o, int q) const {
  if (owner_loads_) return ranks_[size_t(q)].c + int64_t(o) * S_ * N_;
  return const_cast<uint16_t*>(slot_ptr(o, q));
}

const uint16_t* Engine::reduce_slot(int o, int q) const {
  if (plan_.inject.stale_replay && q == late_peer(o) && q != o) return ranks_[size_t(o)].stale;
  return owner_loads_ ? ranks_[size_t(q)].c + int64_t(o) * S_ * N_ : slot_ptr(o, q);
}

uint16_t* Engine::reader_output(int r) const {
  return plan_.inject.stale_output ? ranks_[size_t(r)].out_alt : ranks_[size_t(r)].out;
}

int Engine::pull_blocks() const {
  return plan_.inject.pull_blocks.value_or(0) > 0 ? *plan_.inject.pull_blocks : std::max(1, eff_.pull_blocks);
}

int Engine::ranks_on_device(int dev) const {
  int n = 0;
  for (const auto& rb : ranks_) n += rb.dev == dev;
  return n;
}

// ---- after the run: the read-back and its checks --------------------------------------------------------------

void Engine::verify_counters() {
  // Every GEMM tile of every destination was produced (the epilogue's per-destination counters). The vendor GEMM
  // has no such epilogue: its partials are checked by the read-back alone.
  if (vendor_) return;
  for (int r = 0; r < W_; ++r) {
    std::vector<unsigned> c(static_cast<size_t>(W_));
    set(ranks_[size_t(r)].dev);
    GPU_CHECK(gpuMemcpy(c.data(), ranks_[size_t(r)].counters, size_t(W_) * 4, gpuMemcpyDeviceToHost));
    for (int p = 0; p < W_; ++p)
      if (c[size_t(p)] != tiles_per_slice(p))
        throw EnvironmentError("rank " + std::to_string(r) + " produced " + std::to_string(c[size_t(p)]) + " of " +
                               std::to_string(tiles_per_slice(p)) + " GEMM tiles for slice " + std::to_string(p));
  }
}

// The requested rows of every rank's output as a reader sees it now, after a launch.
std::vector<std::vector<uint16_t>> Engine::read_outputs() {
  const auto& rows = plan_.rows;
  std::vector<std::vector<uint16_t>> outs(static_cast<size_t>(W_));
  for (int r = 0; r < W_; ++r) {
    auto& rb = ranks_[size_t(r)];
    set(rb.dev);
    const uint16_t* out = reader_output(r);
    outs[size_t(r)].resize(rows.size() * size_t(N_));
    for (size_t i = 0; i < rows.size(); ++i)
      GPU_CHECK(gpuMemcpyAsync(outs[size_t(r)].data() + i * N_, out + rows[i] * N_, size_t(N_) * 2,
                               gpuMemcpyDeviceToHost, rb.comp));
    GPU_CHECK(gpuStreamSynchronize(rb.comp));
  }
  return outs;
}

// Every element of every rank's output against the collective recomputed on the device from the partials this
// replay reduced (kernels/check/output_compare.hpp), on rank 0's device (peers' buffers through peer access, as the
// pipeline reads them). Gemm-only and one rank have no collective to check here: the read-back does it.
std::optional<FullCompare> Engine::full_compare(int it) {
  if (!has_collective(eff_.mode) || W_ < 2) return std::nullopt;
  RankBufs& r0 = ranks_.front();
  set(r0.dev);
  const size_t W = size_t(W_);
  if (!cmp_ptrs_) {
    cmp_ptrs_ = dalloc<const uint16_t*>(int64_t(W + W * W));
    cmp_counts_ = dalloc<unsigned long long>(int64_t(3 * W));
    GPU_CHECK(gpuEventCreate(&cmp_ev_[0]));
    GPU_CHECK(gpuEventCreate(&cmp_ev_[1]));
  }
  // Where read_back finds rank q's partial of slice p (fused-lsa: only in the owner's slots).
  std::vector<const uint16_t*> ptrs(W + W * W);
  for (int q = 0; q < W_; ++q) {
    ptrs[size_t(q)] = reader_output(q);
    for (int p = 0; p < W_; ++p) ptrs[W + size_t(q) * W + size_t(p)] = partial_of(q, p);
  }
  std::vector<unsigned long long> counts(3 * W, 0);
  for (size_t r = 0; r < W; ++r) counts[2 * W + r] = ~0ull;
  GPU_CHECK(gpuMemcpyAsync(cmp_ptrs_, ptrs.data(), ptrs.size() * sizeof(void*), gpuMemcpyHostToDevice, r0.comp));
  GPU_CHECK(gpuMemcpyAsync(cmp_counts_, counts.data(), counts.size() * 8, gpuMemcpyHostToDevice, r0.comp));
  dev::OutputCompareArgs a;
  a.outputs = cmp_ptrs_;
  a.slices = cmp_ptrs_ + W;
  a.world = W_;
  a.m = M_;
  a.n = N_;
  a.slice_rows = S_;
  a.fp8_wire = uses_fp8_wire(eff_);
  a.fuse_quantize = eff_.fuse_quantize;
  a.fp8_scatter = fp8_scatter();
  a.counts = cmp_counts_;
  GPU_CHECK(gpuEventRecord(cmp_ev_[0], r0.comp));
  GPU_CHECK(dev::launch_output_compare(a, r0.comp));
  GPU_CHECK(gpuEventRecord(cmp_ev_[1], r0.comp));
  GPU_CHECK(gpuMemcpyAsync(counts.data(), cmp_counts_, counts.size() * 8, gpuMemcpyDeviceToHost, r0.comp));
  GPU_CHECK(gpuStreamSynchronize(r0.comp));
  float ms = 0;
  GPU_CHECK(gpuEventElapsedTime(&ms, cmp_ev_[0], cmp_ev_[1]));
  FullCompare fc;
  fc.iteration = it;
  fc.elements = M_ * N_ * W_;
  fc.us = double(ms) * 1e3;
  fc.bytes = (uses_fp8_wire(eff_) ? 2 : 1) * M_ * N_ * 2 * W_ + M_ * N_ * 2 * W_;
  for (size_t r = 0; r < W; ++r) {
    fc.wrong.push_back(int64_t(counts[r]));
    fc.nonfinite.push_back(int64_t(counts[W + r]));
    fc.first.push_back(counts[r] ? int64_t(counts[2 * W + r]) : -1);
  }
  return fc;
}

// After the last launch: the requested rows of every rank's output and of its partial (iteration 0's inputs), and
// the poison left anywhere in each output.
void Engine::read_back(RunOutput& ro) {
  const auto& rows = plan_.rows;
  ro.outputs.assign(size_t(W_), {});
  ro.partials.assign(size_t(W_), {});
  std::vector<uint16_t> tmp(static_cast<size_t>(N_));
  for (int r = 0; r < W_; ++r) {
    auto& rb = ranks_[size_t(r)];
    set(rb.dev);
    ro.outputs[size_t(r)].resize(rows.size() * size_t(N_));
    ro.partials[size_t(r)].resize(rows.size() * size_t(N_));
    for (size_t i = 0; i < rows.size(); ++i) {
      const int64_t row = rows[i];
      GEMMAR_CHECK(row >= 0 && row < M_, "row ", row, " out of range");
      GPU_CHECK(
          gpuMemcpy(ro.outputs[size_t(r)].data() + i * N_, rb.out + row * N_, size_t(N_) * 2, gpuMemcpyDeviceToHost));
      const int p = int(row / S_);
      const uint16_t* part = partial_of(r, p) + (row - p * S_) * N_;
      if (epilogue_stores_) set(ranks_[size_t(p)].dev);
      GPU_CHECK(gpuMemcpy(tmp.data(), part, size_t(N_) * 2, gpuMemcpyDeviceToHost));
      set(rb.dev);
      for (int64_t c = 0; c < N_; ++c) {
        const uint32_t u = uint32_t(tmp[size_t(c)]) << 16;
        float v;
        std::memcpy(&v, &u, 4);
        ro.partials[size_t(r)][i * N_ + c] = v / cur_scale_[size_t(r)];  // iteration 0's inputs (a power of two)
      }
    }
    GPU_CHECK(gpuMemsetAsync(rb.poison, 0, sizeof(unsigned long long), rb.comp));
    GPU_CHECK(dev::launch_count_poison(rb.out, M_ * N_, rb.poison, rb.comp));
    unsigned long long cnt = 0;
    GPU_CHECK(gpuMemcpyAsync(&cnt, rb.poison, sizeof(cnt), gpuMemcpyDeviceToHost, rb.comp));
    GPU_CHECK(gpuStreamSynchronize(rb.comp));
    ro.unwritten_outputs += int64_t(cnt);
  }
}

}  // namespace gemmar::kernels
