// Orchestration of one gemm_ar run on W ranks: buffers, streams, the phase sequence of every mode, copy-engine
// legs, timing with events, fault injection and read-back. The kernels are under kernels/ by concern
// (docs/architecture.md); the bench's measurements are in bench/bench_api.cu.
//
// Ranks: one per device with peer access when W devices exist (or ranks_per_device says so), otherwise all on
// one device with separate allocations per rank, so "peer" traffic is local HBM but every byte still moves.
// Each rank has a compute stream and a copy stream; phases are separated by a cross-rank barrier made of
// events (each rank's streams -> the control stream on the first device -> every rank's streams), which is also
// what times each phase: the control stream's events bracket "all ranks finished phase X".
#include "kernels/gemm_ar.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "common/errors.hpp"
#include "kernels/check/guard.hpp"
#include "kernels/check/output_compare.hpp"
#include "kernels/gemm/heuristics.hpp"
#include "kernels/gpu_compat.hpp"
#include "kernels/host_check.hpp"
#include "kernels/kernels.hpp"
#include "kernels/pipeline/hooks.hpp"
#include "kernels/vendor_gemm.hpp"
#include "reference/no_release_pattern.hpp"
#include "reference/quant.hpp"

namespace gemmar::kernels {
namespace {

struct RankBufs {
  int dev = 0;
  gpuStream_t comp = nullptr, copy = nullptr;
  uint8_t *a = nullptr, *b = nullptr;
  float *sa = nullptr, *sb = nullptr;
  uint16_t* c = nullptr;         // [m, n]: the GEMM partial (split / fused-sdma)
  uint16_t* recv = nullptr;      // [W][S][n]: slot q = peer q's partial of this rank's slice
  uint16_t* out = nullptr;       // [m, n]: the all-reduced output
  uint16_t* out_alt = nullptr;   // stale-output fault: the runs write here, `out` keeps the previous result
  uint8_t* q = nullptr;          // [S, n]: this rank's slice on the fp8 wire
  float* qs = nullptr;           // [S]
  uint8_t* land = nullptr;       // [W][S][n]: peers' fp8 slices landed here (fp8/sdma)
  float* land_s = nullptr;       // [W][S]
  unsigned* counters = nullptr;  // [W]: finished GEMM tiles per destination slice
  unsigned long long* poison = nullptr;
  float* straggle = nullptr;         // [3]: this replay's delays before the GEMM, the reduce, the gather
  uint16_t* stale = nullptr;         // stale-replay: [S][n], what the reduce reads for the late peer's slot
  std::vector<gpuEvent_t> chunk_ev;  // fused-sdma: one per destination chunk
};

// Phases that only set up a fault's signature; bracketed by the barrier events like the others, so their
// time is known exactly and subtracted from the run's totals.
const char* const kPrefillPhase = "prefill";
const char* const kNoReleasePhase = "no-release";
const char* const kStaleReplayPhase = "stale-replay";

class Pipeline {
 public:
  Pipeline(const DeviceRun& plan, const OperandFn& gen, const PipelineHooks& hooks) : plan_(plan), hooks_(hooks) {
    const Shape& sh = plan.shape;
    W_ = sh.world;
    M_ = sh.m;
    N_ = sh.n;
    K_ = sh.k;
    GEMMAR_USAGE_CHECK(W_ >= 1 && W_ <= dev::kMaxWorld, "--world: the GPU backend supports 1..", dev::kMaxWorld);
    // issue 25: ptpc and mxfp8 run gemm/quant.cu's kernels; the scales' sizes follow the quant's scale block
    // (common/modes.hpp).
    quant_ = plan.config.quant;
    GEMMAR_USAGE_CHECK(M_ % (int64_t(W_) * dev::kBlockM) == 0, "-m: must be padded to a multiple of world*128");
    GEMMAR_USAGE_CHECK(N_ % dev::kBlockN == 0, "-n: the GPU GEMM needs a multiple of 128");
    GEMMAR_USAGE_CHECK(K_ % dev::kBlockK == 0, "-k: must be a multiple of 128");
    S_ = M_ / W_;
    sa_count_ = scale_count(scale_block(quant_, false), M_, K_);
    sb_count_ = scale_count(scale_block(quant_, true), N_, K_);
    eff_ = effective_config(plan.config);
    {  // The legs' shapes, from the mode's traits (common/modes.hpp), as reference/emulation.cpp reads them.
      const ModeTraits& mt = traits(eff_.mode);
      epilogue_stores_ = mt.fused && !mt.scatter_by_copy_engine;
      epilogue_puts_ = mt.fused && mt.scatter_by_copy_engine;
      owner_loads_ = mt.collective && !mt.fused && !mt.scatter_by_copy_engine;
    }
    // The vendor GEMM has no fused epilogue: the fused modes keep ours (their epilogue pushes the tiles).
    vendor_ = plan.gemm_impl == GemmImpl::Cublaslt && !is_fused(eff_.mode) &&
              dev::gemm_scales(quant_) == dev::GemmScales::Blockscale;
    int ndev = device_count();
    if (ndev <= 0) throw EnvironmentError("no GPU device found by the runtime");
    int rpd = plan.ranks_per_device;
    if (rpd <= 0) rpd = ndev >= W_ ? 1 : W_;
    GEMMAR_USAGE_CHECK(rpd <= W_ && (W_ + rpd - 1) / rpd <= ndev, "--ranks-per-device: ", rpd, " ranks per device x ",
                       ndev, " devices cannot hold ", W_, " ranks");
    ndev_used_ = (W_ + rpd - 1) / rpd;
    rpd_ = rpd;
    ranks_.resize(size_t(W_));
    for (int r = 0; r < W_; ++r) ranks_[r].dev = r / rpd;
    enable_peer_access();
    GPU_CHECK(gpuSetDevice(0));
    GPU_CHECK(gpuStreamCreateWithFlags(&ctl_, gpuStreamNonBlocking));
    gpuDeviceProp prop{};
    GPU_CHECK(gpuGetDeviceProperties(&prop, 0));
    device_ = std::string(prop.name) + " (" + std::to_string(W_) + " ranks on " + std::to_string(ndev_used_) +
              (ndev_used_ == 1 ? " device)" : " devices)");
#if defined(GEMMAR_GPU_HIP)
    // gfx942's MFMA reads fp8 as e4m3fnuz: fn codes read as fnuz are exactly half their value, so the
    // A x B product is 1/4 of the intended one; folded into B's scales (exact, a power of two).
    fnuz_hw_ = std::string(prop.gcnArchName).rfind("gfx942", 0) == 0;
#endif
    allocate();
    if (plan.guard && !plan.selftest_fill) {
      std::vector<int> devs;
      for (const auto& rb : ranks_) devs.push_back(rb.dev);
      guard_ = std::make_unique<DeviceGuard>(W_, M_, N_, K_, uses_fp8_wire(eff_), devs, plan.guard_sample,
                                             reference::guard_sample_seed(plan.seed), hooks.guard_passes);
    }
    upload(gen);
  }

  ~Pipeline() {
    if (cmp_ptrs_) {
      (void)gpuSetDevice(ranks_.front().dev);
      (void)gpuFree(cmp_ptrs_);
      (void)gpuFree(cmp_counts_);
      for (auto e : cmp_ev_) (void)gpuEventDestroy(e);
    }
    for (auto& rb : ranks_) {
      (void)gpuSetDevice(rb.dev);
      for (void* p :
           {static_cast<void*>(rb.a), static_cast<void*>(rb.b), static_cast<void*>(rb.sa), static_cast<void*>(rb.sb),
            static_cast<void*>(rb.c), static_cast<void*>(rb.recv), static_cast<void*>(rb.out),
            static_cast<void*>(rb.out_alt), static_cast<void*>(rb.q), static_cast<void*>(rb.qs),
            static_cast<void*>(rb.land), static_cast<void*>(rb.land_s), static_cast<void*>(rb.counters),
            static_cast<void*>(rb.poison), static_cast<void*>(rb.straggle), static_cast<void*>(rb.stale)})
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

  RunOutput run() {
    RunOutput ro;
    ro.device = device_;
    const Faults& f = plan_.inject;
    cur_scale_.assign(size_t(W_), 1.0f);
    poison_all();
    if (f.stale_output) {
      // The previous run: same pipeline with doubled A scales, its result left in `out`; later runs write
      // into out_alt, so `out` is what a stale reader would see.
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
    // Launch 0 (a warm-up) runs eagerly on iteration 0's inputs: lazy initialisation (kernel attributes, vendor
    // workspaces) happens outside the capture. Then the whole run is captured once and replayed: the rest of the
    // warm-up, then the timed iterations, each on its own inputs (prepare_iteration, outside the graph).
    prepare_iteration(0);
    execute_once(nullptr);
    sync_all();
    const bool want_graph = !plan_.eager;
    Timing graph_tm;
    if (want_graph) {
      ro.launch = "graph";
      set(0);
      gpuError_t e = GEMMAR_BEGIN_CAPTURE(ctl_);
      if (e == gpuSuccess) {
        capturing_ = true;
        try {
          execute_once(&graph_tm);
        } catch (const EnvironmentError& err) {
          capturing_ = false;
          gpuGraph_t g = nullptr;
          (void)GEMMAR_END_CAPTURE(ctl_, &g);
          if (g) (void)GEMMAR_GRAPH_DESTROY(g);
          (void)gpuGetLastError();
          ro.launch = std::string("eager (graph capture failed: ") + err.what() + ")";
        }
        if (capturing_) {
          capturing_ = false;
          e = GEMMAR_END_CAPTURE(ctl_, &graph_);
          if (e == gpuSuccess) e = GEMMAR_INSTANTIATE(&graph_exec_, graph_);
          if (e != gpuSuccess) {
            ro.launch = std::string("eager (graph capture failed: ") + gpuGetErrorString(e) + ")";
            (void)gpuGetLastError();
            graph_exec_ = nullptr;
          }
        }
      } else {
        ro.launch = std::string("eager (graph capture failed: ") + gpuGetErrorString(e) + ")";
        (void)gpuGetLastError();
      }
    } else {
      ro.launch = "eager (--eager)";
    }
    std::vector<std::map<std::string, double>> phase_runs;
    std::vector<double> totals;
    std::vector<std::vector<double>> per_rank(static_cast<size_t>(W_));
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
      std::map<std::string, double> ph;
      float ms = 0;
      double untimed = 0;  // the faults' setup phases: not part of the pipeline being measured
      for (size_t i = 0; i + 1 < tm.ctl_events.size(); ++i) {
        GPU_CHECK(gpuEventElapsedTime(&ms, tm.ctl_events[i].ev, tm.ctl_events[i + 1].ev));
        const std::string& name = tm.ctl_events[i + 1].name;
        ph[name] += double(ms) * 1e3;
        if (name == kPrefillPhase || name == kNoReleasePhase || name == kStaleReplayPhase) untimed += double(ms) * 1e3;
      }
      GPU_CHECK(gpuEventElapsedTime(&ms, tm.ctl_events.front().ev, tm.ctl_events.back().ev));
      totals.push_back(std::max(0.0, double(ms) * 1e3 - untimed));
      for (int r = 0; r < W_; ++r) {
        GPU_CHECK(gpuEventElapsedTime(&ms, tm.rank_start[r], tm.rank_end[r]));
        per_rank[r].push_back(std::max(0.0, double(ms) * 1e3 - untimed));
      }
      phase_runs.push_back(std::move(ph));
      if (plan_.inject.flip_unsampled) flip_unsampled();
      if (it % step == 0) {
        ro.iteration_index.push_back(it);
        ro.iteration_outputs.push_back(read_outputs());
        if (auto fc = full_compare(it)) ro.full_compares.push_back(std::move(*fc));
      }
    }
    for (const auto& [name, _] : phase_runs.front()) {
      std::vector<double> v;
      for (const auto& pr : phase_runs) v.push_back(pr.at(name));
      ro.phases_us[name] = median(v);
    }
    ro.total_us = median(totals);
    for (int r = 0; r < W_; ++r) ro.per_rank_time_us.push_back(median(per_rank[r]));
    if (f.stale_output)
      for (auto& rb : ranks_) std::swap(rb.out, rb.out_alt);
    verify_counters();
    read_back(ro);
    ro.pull_blocks = has_pull(eff_) ? pull_blocks() : 0;
    ro.ranks_per_device = rpd_;
    ro.gemm_impl = vendor_ ? GemmImpl::Cublaslt : GemmImpl::Gemmar;
    return ro;
  }

  // The requested rows of every rank's output as a reader sees it now (stale-output: the buffer the runs never
  // write), after a launch.
  std::vector<std::vector<uint16_t>> read_outputs() {
    const auto& rows = plan_.rows;
    std::vector<std::vector<uint16_t>> outs(static_cast<size_t>(W_));
    for (int r = 0; r < W_; ++r) {
      auto& rb = ranks_[r];
      set(rb.dev);
      const uint16_t* out = plan_.inject.stale_output ? rb.out_alt : rb.out;
      outs[r].resize(rows.size() * size_t(N_));
      for (size_t i = 0; i < rows.size(); ++i)
        GPU_CHECK(gpuMemcpyAsync(outs[r].data() + i * N_, out + rows[i] * N_, size_t(N_) * 2, gpuMemcpyDeviceToHost,
                                 rb.comp));
      GPU_CHECK(gpuStreamSynchronize(rb.comp));
    }
    return outs;
  }

 private:
  struct NamedEvent {
    std::string name;
    gpuEvent_t ev;
    int dev;
  };
  struct Timing {
    std::vector<NamedEvent> ctl_events;
    std::vector<gpuEvent_t> rank_start, rank_end;
  };

  void set(int d) { GPU_CHECK(gpuSetDevice(d)); }

  // A timed event inside a capture must be an external record node to be recorded (and timed) on replay.
  gpuError_t record(gpuEvent_t e, gpuStream_t s, bool timed) {
    return capturing_ && timed ? GEMMAR_RECORD_EXTERNAL(e, s) : gpuEventRecord(e, s);
  }

  // Capture: every rank's streams join the capture by waiting on the origin stream (fork), and rejoin it before
  // the capture ends (join).
  void fork() {
    gpuEvent_t e = new_event(0, false);
    set(0);
    GPU_CHECK(gpuEventRecord(e, ctl_));
    for (auto& rb : ranks_) {
      set(rb.dev);
      GPU_CHECK(gpuStreamWaitEvent(rb.comp, e, 0));
      GPU_CHECK(gpuStreamWaitEvent(rb.copy, e, 0));
    }
  }
  void join() {
    for (auto& rb : ranks_)
      for (gpuStream_t st : {rb.comp, rb.copy}) {
        gpuEvent_t e = new_event(rb.dev, false);
        GPU_CHECK(gpuEventRecord(e, st));
        set(0);
        GPU_CHECK(gpuStreamWaitEvent(ctl_, e, 0));
      }
  }

  // Straggler injection: rank r's stream spins for this replay's delay k (0 GEMM, 1 reduce, 2 gather).
  void straggle(int r, int k, gpuStream_t st) {
    if (plan_.straggle_schedule_us.empty()) return;
    set(ranks_[r].dev);
    GPU_CHECK(dev::launch_straggle_spin(ranks_[r].straggle, k, st));
  }

  // Between replays (outside the graph): iteration it's inputs (A scales times iteration_scales[it][r], exact
  // powers of two, applied as the ratio to the current factor) and its straggle delays.
  void prepare_iteration(int it) {
    for (int r = 0; r < W_; ++r) {
      auto& rb = ranks_[r];
      set(rb.dev);
      const float want = size_t(it) < plan_.iteration_scales.size() && size_t(r) < plan_.iteration_scales[it].size()
                             ? plan_.iteration_scales[it][r]
                             : 1.0f;
      if (want != cur_scale_[r]) {
        GPU_CHECK(dev::launch_scale_f32(rb.sa, sa_count_, want / cur_scale_[r], rb.comp));
        cur_scale_[r] = want;
      }
      if (size_t(it) < plan_.straggle_schedule_us.size()) {
        float d[3] = {0, 0, 0};
        for (int k = 0; k < 3; ++k)
          if (size_t(r * 3 + k) < plan_.straggle_schedule_us[it].size())
            d[k] = plan_.straggle_schedule_us[it][r * 3 + k];
        GPU_CHECK(gpuMemcpyAsync(rb.straggle, d, sizeof(d), gpuMemcpyHostToDevice, rb.comp));
      }
      GPU_CHECK(gpuStreamSynchronize(rb.comp));
    }
  }

  // Before the first launch only (untimed): poison everything the run writes; fresh (zero) slots / landing
  // zones for the faults whose signature is what an unwritten buffer holds (reference/emulation.hpp's Faults).
  void poison_all() {
    const Faults& f = plan_.inject;
    const size_t slice_bytes = size_t(S_ * N_) * 2;
    for (auto& rb : ranks_) {
      set(rb.dev);
      GPU_CHECK(gpuMemsetAsync(rb.c, 0xff, size_t(M_ * N_) * 2, rb.comp));
      GPU_CHECK(gpuMemsetAsync(rb.recv, f.silent_scatter ? 0x00 : 0xff, size_t(W_) * slice_bytes, rb.comp));
      GPU_CHECK(gpuMemsetAsync(rb.out, 0xff, size_t(M_ * N_) * 2, rb.comp));
      if (rb.out_alt) GPU_CHECK(gpuMemsetAsync(rb.out_alt, 0xff, size_t(M_ * N_) * 2, rb.comp));
      if (rb.stale) GPU_CHECK(gpuMemsetAsync(rb.stale, 0xff, slice_bytes, rb.comp));
      if (rb.q) {
        GPU_CHECK(gpuMemsetAsync(rb.q, 0xff, size_t(S_ * N_), rb.comp));
        GPU_CHECK(gpuMemsetAsync(rb.qs, 0xff, size_t(S_) * 4, rb.comp));
        GPU_CHECK(gpuMemsetAsync(rb.land, f.silent_gather ? 0x00 : 0xff, size_t(W_ * S_ * N_), rb.comp));
        GPU_CHECK(gpuMemsetAsync(rb.land_s, f.silent_gather ? 0x00 : 0xff, size_t(W_ * S_) * 4, rb.comp));
      }
    }
    sync_all();
  }

  // Ranks placed on device `dev`, whose GEMMs run at once there (GemmDest::concurrent_gemms).
  int ranks_on_device(int dev) const {
    int n = 0;
    for (const auto& rb : ranks_) n += rb.dev == dev;
    return n;
  }
  // stale-replay: owner o's late peer (its put leaves last: (o+1)%W) and the rows of that put that have landed
  // when the reduce reads them (half the slice; reference::ReplayTiming without stragglers).
  int late_peer(int o) const { return (o + 1) % W_; }
  int64_t landed_rows() const { return S_ / 2; }
  // Where owner o's reduce finds peer q's partial of slice o (split-lsa: in q's GEMM output).
  uint16_t* raw_slot(int o, int q) const {
    if (owner_loads_) return ranks_[q].c + int64_t(o) * S_ * N_;
    return const_cast<uint16_t*>(slot_ptr(o, q));
  }
  void stale_copy(bool landed_part) {
    const int64_t cut = landed_rows();
    for (int o = 0; o < W_; ++o) {
      auto& rb = ranks_[o];
      set(rb.dev);
      const int64_t r0 = landed_part ? 0 : cut, r1 = landed_part ? cut : S_;
      if (r1 > r0)
        GPU_CHECK(gpuMemcpyAsync(rb.stale + r0 * N_, raw_slot(o, late_peer(o)) + r0 * N_, size_t((r1 - r0) * N_) * 2,
                                 gpuMemcpyDeviceToDevice, rb.comp));
    }
  }
  const uint16_t* reduce_slot(int o, int q) const {
    if (plan_.inject.stale_replay && q == late_peer(o) && q != o) return ranks_[o].stale;
    return owner_loads_ ? ranks_[q].c + int64_t(o) * S_ * N_ : slot_ptr(o, q);
  }

  void enable_peer_access() {
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

  void allocate() {
    const bool fp8 = uses_fp8_wire(eff_);
    for (auto& rb : ranks_) {
      set(rb.dev);
      if (hooks_.make_streams) {
        hooks_.make_streams(&rb.comp, &rb.copy);
      } else {  // the default priority, as every other stream of the run
        GPU_CHECK(gpuStreamCreateWithFlags(&rb.comp, gpuStreamNonBlocking));
        GPU_CHECK(gpuStreamCreateWithFlags(&rb.copy, gpuStreamNonBlocking));
      }
      rb.a = dalloc<uint8_t>(M_ * K_);
      rb.b = dalloc<uint8_t>(N_ * K_);
      rb.sa = dalloc<float>(sa_count_);
      rb.sb = dalloc<float>(sb_count_);
      rb.c = dalloc<uint16_t>(M_ * N_);
      rb.recv = dalloc<uint16_t>(int64_t(W_) * S_ * N_);
      rb.out = dalloc<uint16_t>(M_ * N_);
      if (plan_.inject.stale_output) rb.out_alt = dalloc<uint16_t>(M_ * N_);
      if (fp8) {
        rb.q = dalloc<uint8_t>(S_ * N_);
        rb.qs = dalloc<float>(S_);
        rb.land = dalloc<uint8_t>(int64_t(W_) * S_ * N_);
        rb.land_s = dalloc<float>(int64_t(W_) * S_);
      }
      rb.counters = dalloc<unsigned>(W_);
      rb.poison = dalloc<unsigned long long>(1);
      rb.straggle = dalloc<float>(3);
      GPU_CHECK(gpuMemset(rb.straggle, 0, 3 * sizeof(float)));
      if (plan_.inject.stale_replay) rb.stale = dalloc<uint16_t>(S_ * N_);
      rb.chunk_ev.resize(size_t(W_));
      for (auto& e : rb.chunk_ev) GPU_CHECK(gpuEventCreateWithFlags(&e, gpuEventDisableTiming));
    }
    persistent_puts_ = epilogue_puts_ && !hooks_.fused_sdma_per_slice && stream_waits_work();
  }

  // Whether every rank's copy stream can wait on a counter (a satisfied wait, outside any capture).
  bool stream_waits_work() {
    for (auto& rb : ranks_) {
      set(rb.dev);
      GPU_CHECK(gpuMemset(rb.counters, 0, size_t(W_) * 4));
      if (gpu::stream_wait_geq(rb.copy, rb.counters, 0) != gpuSuccess) return false;
      GPU_CHECK(gpuStreamSynchronize(rb.copy));
    }
    return true;
  }

  void upload(const OperandFn& gen) {
    for (int r = 0; r < W_; ++r) {
      RankOperands op;
      if (plan_.selftest_fill) {
        // The transport self-test: A and B hold 1.0 (e4m3fn 0x38) in column 0 only, A's scales rank+1, B's 1, so
        // every element of the partial is exactly rank+1.
        op.a.codes.assign(size_t(M_ * K_), 0);
        op.b.codes.assign(size_t(N_ * K_), 0);
        for (int64_t i = 0; i < M_; ++i) op.a.codes[size_t(i * K_)] = 0x38;
        for (int64_t i = 0; i < N_; ++i) op.b.codes[size_t(i * K_)] = 0x38;
        op.a.scales.assign(size_t(sa_count_), float(r + 1));
        op.b.scales.assign(size_t(sb_count_), 1.0f);
      } else {
        gen(r, op);
      }
      GEMMAR_CHECK(int64_t(op.a.codes.size()) == M_ * K_ && int64_t(op.b.codes.size()) == N_ * K_ &&
                       int64_t(op.a.scales.size()) == sa_count_ && int64_t(op.b.scales.size()) == sb_count_,
                   "operand sizes of rank ", r);
      auto& rb = ranks_[r];
      set(rb.dev);
      GPU_CHECK(gpuMemcpy(rb.a, op.a.codes.data(), op.a.codes.size(), gpuMemcpyHostToDevice));
      GPU_CHECK(gpuMemcpy(rb.b, op.b.codes.data(), op.b.codes.size(), gpuMemcpyHostToDevice));
      GPU_CHECK(gpuMemcpy(rb.sa, op.a.scales.data(), op.a.scales.size() * 4, gpuMemcpyHostToDevice));
      GPU_CHECK(gpuMemcpy(rb.sb, op.b.scales.data(), op.b.scales.size() * 4, gpuMemcpyHostToDevice));
      if (plan_.inject.fnuz_read_as_fn) {
        GPU_CHECK(dev::launch_fp8_recode(rb.a, M_ * K_, false, rb.comp));
        GPU_CHECK(dev::launch_fp8_recode(rb.b, N_ * K_, false, rb.comp));
      }
      if (fnuz_hw_) {
        GPU_CHECK(dev::launch_fp8_recode(rb.a, M_ * K_, true, rb.comp));
        GPU_CHECK(dev::launch_fp8_recode(rb.b, N_ * K_, true, rb.comp));
        // issue 25: only the MFMA (Blockscale) kernel reads fnuz; gemm/quant.cu decodes the codes as fn itself.
        if (dev::gemm_scales(quant_) == dev::GemmScales::Blockscale)
          GPU_CHECK(dev::launch_scale_f32(rb.sb, sb_count_, 4.0f, rb.comp));
      }
      // The weights' checksum, from B as loaded (before any fault touches the device copy).
      if (guard_)
        guard_->set_weights(r,
                            reference::guard_weights(reference::dequantized_b(op, quant_, Fp8Format::E4M3FN), N_, K_));
      if (plan_.inject.perturbed_rank == r) GPU_CHECK(dev::launch_scale_f32(rb.sb, sb_count_, 1.25f, rb.comp));
      GPU_CHECK(gpuStreamSynchronize(rb.comp));
    }
  }

  int pull_blocks() const {
    return plan_.inject.pull_blocks.value_or(0) > 0 ? *plan_.inject.pull_blocks : std::max(1, eff_.pull_blocks);
  }

  gpuEvent_t new_event(int dev, bool timing) {
    set(dev);
    gpuEvent_t e;
    GPU_CHECK(timing ? gpuEventCreate(&e) : gpuEventCreateWithFlags(&e, gpuEventDisableTiming));
    events_.push_back({"", e, dev});
    return e;
  }

  // Every rank's two streams finish the phase -> control stream records `name` -> every stream continues.
  void barrier(Timing* tm, const std::string& name, bool comp_only = false) {
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
    if (tm) tm->ctl_events.push_back({name, done, 0});
    if (capturing_ && tm) {
      // An external record node (the timed event) orders nothing inside the graph: the streams must wait on an
      // ordinary event recorded after it. (Waiting on the external one let the copies race the kernels: the
      // first H200 run of this code, caught by the per-iteration check as NONDETERMINISTIC/STALE_ITERATION.)
      done = new_event(0, false);
      GPU_CHECK(gpuEventRecord(done, ctl_));
    }
    for (auto& rb : ranks_) {
      set(rb.dev);
      GPU_CHECK(gpuStreamWaitEvent(rb.comp, done, 0));
      if (!comp_only) GPU_CHECK(gpuStreamWaitEvent(rb.copy, done, 0));
    }
  }

  gpuError_t launch_gemm(const dev::GemmOperands& op, int64_t m_begin, int64_t m_end, const dev::GemmDest& d,
                         gpuStream_t s) const {
    return hooks_.gemm ? hooks_.gemm(op, m_begin, m_end, d, s) : dev::launch_gemm(op, m_begin, m_end, d, s);
  }
  gpuError_t launch_widen(const dev::Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks,
                          gpuStream_t s) const {
    return hooks_.widen ? hooks_.widen(src, count, rows, n, blocks, s)
                        : dev::launch_widen(src, count, rows, n, blocks, s);
  }

  uint16_t* slice_of(uint16_t* base, int p) const { return base + int64_t(p) * S_ * N_; }
  // Rank q's bf16 partial of slice p, row 0 (fused-lsa's exists only in owner p's slot, where its epilogue stored it).
  uint16_t* partial_of(int q, int p) const {
    return epilogue_stores_ ? ranks_[p].recv + int64_t(q) * S_ * N_ : ranks_[q].c + int64_t(p) * S_ * N_;
  }
  // Where rank q's partial of slice p lives when the reduce of p runs.
  const uint16_t* slot_ptr(int p, int q) const {
    if (!epilogue_stores_ && q == p) return ranks_[q].c + int64_t(p) * S_ * N_;
    return ranks_[p].recv + int64_t(q) * S_ * N_;
  }

  void put(int r, void* dst, int dst_dev, const void* src, size_t bytes) {
    auto& rb = ranks_[r];
    set(rb.dev);
    if (dst_dev == rb.dev)
      GPU_CHECK(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, rb.copy));
    else
      GPU_CHECK(gpuMemcpyPeerAsync(dst, dst_dev, src, rb.dev, bytes, rb.copy));
  }

  // One launch of the whole op, leg by leg (docs/kernels.md): GEMM (+ the fused scatter), then either gemm-only's
  // copy, split-lsa's two-stage CU all-reduce, or scatter -> reduce (+ quantize) -> gather (-> dequantize).
  // Faults move or drop legs here, at the points the emulation (reference/emulation.hpp) applies them.
  void execute_once(Timing* tm) {
    const Faults& f = plan_.inject;
    const Mode mode = eff_.mode;
    const bool fp8 = uses_fp8_wire(eff_) && !f.fp8_wire_bypassed;
    const bool lsa_gather = eff_.gather_transport == Transport::Lsa;
    if (capturing_) fork();
    begin_launch(tm);
    gemm_leg(tm);
    if (!has_collective(mode)) {
      // The output of gemm-only is the local partial.
      for (auto& rb : ranks_) {
        set(rb.dev);
        GPU_CHECK(gpuMemcpyAsync(rb.out, rb.c, size_t(M_ * N_) * 2, gpuMemcpyDeviceToDevice, rb.comp));
      }
      finish(tm);
      return;
    }
    if (silent_sdma_gather(f)) prefill_local_partials(tm);
    if (traits(mode).two_stage_allreduce) {
      two_stage_allreduce(tm);
      finish(tm);
      return;
    }
    if (!is_fused(mode)) scatter_leg(tm);
    if (f.stale_replay) {  // the rows of the late put that did land before the reduce read the slot
      stale_copy(true);
      barrier(tm, kStaleReplayPhase);
    }
    // frozen-flag: the gather's wait was satisfied by the previous launch's signal, so it copies (pulls) the
    // owner's slice before this launch's reduce wrote it: what the previous launch left there.
    if (!f.frozen_flag) reduce_leg(fp8, tm);
    if (fp8 && lsa_gather) {
      pull_leg(tm);
    } else {
      for (int r = 0; r < W_; ++r) straggle(r, 2, ranks_[r].copy);
      gather(fp8, f);
      barrier(tm, "gather");
      if (f.no_release && !lsa_gather && !silent_sdma_gather(f)) {
        apply_no_release(fp8);
        barrier(tm, kNoReleasePhase);
      }
    }
    if (f.frozen_flag) reduce_leg(fp8, tm);
    if (fp8 && !lsa_gather) dequantize_leg(tm);
    finish(tm);
  }

  // Untimed per-launch set-up, then the start barrier and each rank's start event.
  void begin_launch(Timing* tm) {
    // The GEMM's tile counters. Everything else was poisoned once (poison_all): a launch that reads a buffer
    // before this launch wrote it sees the previous launch's data, as a replay does.
    for (auto& rb : ranks_) {
      set(rb.dev);
      GPU_CHECK(gpuMemsetAsync(rb.counters, 0, size_t(W_) * 4, rb.comp));
    }
    // stale-replay: the late put's rows that will not have landed when the reduce reads them keep what the
    // previous launch left in the slot (saved before this launch can write it).
    if (plan_.inject.stale_replay && has_collective(eff_.mode)) stale_copy(false);
    barrier(nullptr, "");
    if (tm) {
      tm->rank_start.resize(size_t(W_));
      tm->rank_end.resize(size_t(W_));
      for (int r = 0; r < W_; ++r) {
        tm->rank_start[r] = new_event(ranks_[r].dev, true);
        tm->rank_end[r] = new_event(ranks_[r].dev, true);
      }
    }
    barrier(tm, "start");
    if (tm)
      for (int r = 0; r < W_; ++r) {
        set(ranks_[r].dev);
        GPU_CHECK(record(tm->rank_start[r], ranks_[r].comp, true));
      }
  }

  // Every rank's GEMM; fused-sdma's epilogue chunks each hand their tiles to a copy-engine put, fused-lsa's
  // store them straight into the owner's slot.
  void gemm_leg(Timing* tm) {
    const Faults& f = plan_.inject;
    const size_t slice_bytes = size_t(S_ * N_) * 2;
    for (int r = 0; r < W_; ++r) {
      auto& rb = ranks_[r];
      set(rb.dev);
      straggle(r, 0, rb.comp);
      const dev::GemmOperands ops{rb.a, rb.b, rb.sa, rb.sb, M_, N_, K_, quant_};  // issue 25: any quant
      dev::GemmDest d{};
      d.slice_rows = S_;
      d.ldd = N_;
      d.counters = rb.counters;
      d.counters_release = persistent_puts_;  // the puts wait on them; otherwise a tally for verify_counters
      d.concurrent_gemms = ranks_on_device(rb.dev);
      for (int p = 0; p < W_; ++p) {
        if (epilogue_stores_)
          d.dst[p] = (p != r && f.silent_scatter) ? nullptr : partial_of(r, p);
        else
          d.dst[p] = slice_of(rb.c, p);
      }
      if (persistent_puts_) {
        // One launch; the GEMM's tile order finishes slice 0 first, and each peer's put leaves once its slice's
        // tiles are all stored (the epilogue's counter, after a fence), in slice order, while later slices compute.
        GPU_CHECK(launch_gemm(ops, 0, M_, d, rb.comp));
        for (int p = 0; p < W_; ++p) {
          if (p == r) continue;
          GPU_CHECK(gpu::stream_wait_geq(rb.copy, rb.counters + p, tiles_per_slice()));
          if (!f.silent_scatter)
            put(r, ranks_[p].recv + int64_t(r) * S_ * N_, ranks_[p].dev, slice_of(rb.c, p), slice_bytes);
        }
      } else if (epilogue_puts_) {
        // Destination chunks in the order the puts should leave: (r+1)%W first, the own slice last, so each
        // chunk's put overlaps the GEMM of the chunks after it. The put waits on its chunk's completion.
        for (int j = 1; j <= W_; ++j) {
          const int p = (r + j) % W_;
          GPU_CHECK(launch_gemm(ops, p * S_, (p + 1) * S_, d, rb.comp));
          if (p == r) continue;
          GPU_CHECK(gpuEventRecord(rb.chunk_ev[p], rb.comp));
          GPU_CHECK(gpuStreamWaitEvent(rb.copy, rb.chunk_ev[p], 0));
          if (!f.silent_scatter)
            put(r, ranks_[p].recv + int64_t(r) * S_ * N_, ranks_[p].dev, slice_of(rb.c, p), slice_bytes);
        }
      } else if (vendor_) {
        vendor_gemm(ops, rb.c, rb.comp);
      } else {
        GPU_CHECK(launch_gemm(ops, 0, M_, d, rb.comp));
      }
    }
    if (epilogue_puts_) {
      barrier(tm, "gemm", /*comp_only=*/true);
      barrier(tm, "drain");
    } else {
      barrier(tm, "gemm");
    }
  }

  // The fault whose signature is "what the output held before the gather": an in-place all-reduce's output
  // holds the local partial (copied untimed, outside the phases that are measured: the ctl events bracket it,
  // so run() subtracts it as its own phase "prefill").
  void prefill_local_partials(Timing* tm) {
    const size_t slice_bytes = size_t(S_ * N_) * 2;
    for (auto& rb : ranks_) {
      set(rb.dev);
      if (!epilogue_stores_) {
        GPU_CHECK(gpuMemcpyAsync(rb.out, rb.c, size_t(M_ * N_) * 2, gpuMemcpyDeviceToDevice, rb.comp));
      } else {  // fused-lsa's partial only exists as the slices it stored into the owners' slots
        for (int p = 0; p < W_; ++p)
          GPU_CHECK(gpuMemcpyAsync(slice_of(rb.out, p), partial_of(int(&rb - ranks_.data()), p), slice_bytes,
                                   gpuMemcpyDeviceToDevice, rb.comp));
      }
    }
    barrier(tm, kPrefillPhase);
  }

  // split-lsa's 2-stage CU all-reduce: stage 1 reads every peer's partial of the owned rows (peer loads) and
  // reduces; the barrier between stages is the event barrier (the kernels of W ranks on one device are not
  // guaranteed co-resident, so an in-kernel barrier could deadlock); stage 2 loads every peer's reduced rows into
  // the local output. frozen-flag: stage 2 does not wait for this launch's stage 1.
  void two_stage_allreduce(Timing* tm) {
    const Faults& f = plan_.inject;
    if (f.stale_replay) {
      stale_copy(true);
      barrier(tm, kStaleReplayPhase);
    }
    auto stage1 = [&] {
      for (int r = 0; r < W_; ++r) {
        auto& rb = ranks_[r];
        set(rb.dev);
        straggle(r, 1, rb.comp);
        dev::SlotSet ss{};
        for (int q = 0; q < W_; ++q) ss.slot[q] = reduce_slot(r, q);
        GPU_CHECK(dev::launch_reduce(ss, r, W_, S_, N_, slice_of(rb.out, r), nullptr, nullptr, rb.comp));
      }
      barrier(nullptr, "");
    };
    if (!f.frozen_flag) stage1();
    for (int r = 0; r < W_; ++r) {
      auto& rb = ranks_[r];
      set(rb.dev);
      straggle(r, 2, rb.comp);
      dev::Bf16Sources bs{};
      int cnt = 0;
      for (int j = 1; j < W_; ++j) {
        const int q = (r + j) % W_;
        bs.src[cnt] = slice_of(ranks_[q].out, q);
        bs.out[cnt] = slice_of(rb.out, q);
        ++cnt;
      }
      GPU_CHECK(dev::launch_copy_slices(bs, cnt, S_ * N_, 0, rb.comp));
    }
    if (f.frozen_flag) {
      barrier(nullptr, "");
      stage1();
    }
    barrier(tm, "allreduce");
  }

  // split-sdma's scatter: every rank puts each peer's slice of its partial into that owner's slot.
  void scatter_leg(Timing* tm) {
    const size_t slice_bytes = size_t(S_ * N_) * 2;
    for (int r = 0; r < W_; ++r)
      for (int j = 1; j < W_; ++j) {
        const int p = (r + j) % W_;
        if (!plan_.inject.silent_scatter)
          put(r, ranks_[p].recv + int64_t(r) * S_ * N_, ranks_[p].dev, slice_of(ranks_[r].c, p), slice_bytes);
      }
    barrier(tm, "scatter");
  }

  // Each owner sums its slice over the W slots (fixed order), then narrows it to the fp8 wire: folded into the
  // reduce (fuse_quantize) or as its own kernel.
  void reduce_leg(bool fp8, Timing* tm) {
    const bool fuse_q = fp8 && eff_.fuse_quantize;
    for (int r = 0; r < W_; ++r) {
      auto& rb = ranks_[r];
      set(rb.dev);
      straggle(r, 1, rb.comp);
      dev::SlotSet ss{};
      for (int q = 0; q < W_; ++q) ss.slot[q] = reduce_slot(r, q);
      GPU_CHECK(dev::launch_reduce(ss, r, W_, S_, N_, slice_of(rb.out, r), fuse_q ? rb.q : nullptr,
                                   fuse_q ? rb.qs : nullptr, rb.comp));
    }
    barrier(tm, "reduce");
    if (fp8 && !fuse_q) {
      for (auto& rb : ranks_) {
        set(rb.dev);
        GPU_CHECK(dev::launch_quantize(slice_of(rb.out, int(&rb - ranks_.data())), S_, N_, rb.q, rb.qs, rb.comp));
      }
      barrier(tm, "quantize");
    }
  }

  // The fp8 wire over lsa: each rank's CUs load the owners' fp8 slices and scales and widen them into its output
  // with the pull grid. CU loads, so a silent copy engine (silent_gather) does not affect them; the event barrier
  // before it is the gather's wait.
  void pull_leg(Timing* tm) {
    for (int r = 0; r < W_; ++r) {
      auto& rb = ranks_[r];
      set(rb.dev);
      straggle(r, 2, rb.comp);
      GPU_CHECK(launch_widen(peer_fp8_sources(r, /*landed=*/false), W_ - 1, S_, N_, pull_blocks(), rb.comp));
    }
    barrier(tm, "pull");
  }

  // The fp8 wire over copy engines: the gathered codes and scales landed in each rank's landing zone; widen them.
  void dequantize_leg(Timing* tm) {
    for (int r = 0; r < W_; ++r) {
      auto& rb = ranks_[r];
      set(rb.dev);
      GPU_CHECK(launch_widen(peer_fp8_sources(r, /*landed=*/true), W_ - 1, S_, N_, 0, rb.comp));
    }
    barrier(tm, "dequantize");
  }

  // Rank r's view of the W-1 peers' fp8 slices: in the owners' buffers (a pull) or in r's landing zone.
  dev::Fp8Sources peer_fp8_sources(int r, bool landed) {
    auto& rb = ranks_[r];
    dev::Fp8Sources src{};
    for (int j = 1; j < W_; ++j) {
      const int q = (r + j) % W_;
      src.q[j - 1] = landed ? rb.land + int64_t(q) * S_ * N_ : ranks_[q].q;
      src.scale[j - 1] = landed ? rb.land_s + int64_t(q) * S_ : ranks_[q].qs;
      src.out[j - 1] = slice_of(rb.out, q);
    }
    return src;
  }

  // silent_gather silences copy-engine puts only; an lsa gather is unaffected (reference/emulation.hpp).
  bool silent_sdma_gather(const Faults& f) const { return f.silent_gather && eff_.gather_transport == Transport::Sdma; }

  // Copy-engine puts of the owned slice to every peer: bf16 rows into the same rows of the peer's output, or
  // the fp8 slice + its row scales into the peer's landing zone.
  void gather(bool fp8, const Faults& f) {
    if (silent_sdma_gather(f)) return;
    for (int r = 0; r < W_; ++r)
      for (int j = 1; j < W_; ++j) {
        const int p = (r + j) % W_;
        if (fp8) {
          put(r, ranks_[p].land + int64_t(r) * S_ * N_, ranks_[p].dev, ranks_[r].q, size_t(S_ * N_));
          put(r, ranks_[p].land_s + int64_t(r) * S_, ranks_[p].dev, ranks_[r].qs, size_t(S_) * 4);
        } else {
          put(r, slice_of(ranks_[p].out, r), ranks_[p].dev, slice_of(ranks_[r].out, r), size_t(S_ * N_) * 2);
        }
      }
  }

  // The missing release, after the fact: the gather landed every line of the reduced slice; the lines the
  // copy engine would have read before the reduce's stores were visible (reference/no_release_pattern.hpp,
  // the emulation's own pattern) are replaced by what the owner's buffer held then: its local bf16 partial
  // (bf16 wire; the output is in place) or, on the fp8 wire, the zero codes of a quantize buffer not yet
  // written (the row scales land intact). The timed gather above is the real copy-engine traffic; this pass is
  // its own untimed phase, so the timing of the run stays that of the gather that really ran.
  void apply_no_release(bool fp8) {
    const uint64_t seed = plan_.seed;
    for (int r = 0; r < W_; ++r) {
      auto& rb = ranks_[r];
      set(rb.dev);
      dev::NoReleaseSet ns{};
      int cnt = 0;
      for (int j = 1; j < W_; ++j) {
        const int q = (r + j) % W_;
        ns.owner[cnt] = q;
        ns.band_mask[cnt] = no_release::band_mask(seed, r, q);
        ns.pre[cnt] = slot_ptr(q, q);  // owner q's own partial of its slice, where the reduce read it
        if (fp8)
          ns.landed[cnt] = rb.land + int64_t(q) * S_ * N_;
        else
          ns.landed[cnt] = slice_of(rb.out, q);
        ++cnt;
      }
      GPU_CHECK(dev::launch_no_release(ns, cnt, r, seed, no_release::line_threshold(seed, r), S_, N_, fp8, rb.comp));
    }
  }

  // The per-call guard (kernels/check/guard.hpp) after everything of the launch, as its own timed phase.
  void guard_leg(Timing* tm) {
    barrier(nullptr, "");
    for (int r = 0; r < W_; ++r) {
      auto& rb = ranks_[r];
      set(rb.dev);
      GuardRankView v;
      for (int p = 0; p < W_; ++p) v.partial_slice[p] = partial_of(r, p);
      v.output = plan_.inject.stale_output ? rb.out_alt : rb.out;  // what a reader of the output sees
      v.wire = rb.q;
      v.wire_scale = rb.qs;
      v.a = rb.a;
      v.a_scale = rb.sa;
      const ScaleBlock& sa = scale_block(quant_, false);
      v.a_scale_k = scale_k_extent(sa, K_);
      v.a_scale_k_major = sa.k_major;
      v.a_fnuz_half = fnuz_hw_;
      guard_->enqueue(r, v, rb.comp);
    }
    barrier(tm, "guard");
  }

  void finish(Timing* tm) {
    if (guard_) guard_leg(tm);
    if (tm)
      for (int r = 0; r < W_; ++r) {
        set(ranks_[r].dev);
        GPU_CHECK(record(tm->rank_end[r], ranks_[r].comp, true));
      }
    if (capturing_) join();
  }

  void sync_all() {
    for (auto& rb : ranks_) {
      set(rb.dev);
      GPU_CHECK(gpuStreamSynchronize(rb.comp));
      GPU_CHECK(gpuStreamSynchronize(rb.copy));
    }
    set(0);
    GPU_CHECK(gpuStreamSynchronize(ctl_));
    GPU_CHECK(gpuGetLastError());
  }

  // What each destination slice's counter reaches: every kernel of ours counts kBlockM x kBlockN tiles.
  unsigned tiles_per_slice() const { return unsigned((S_ / dev::kBlockM) * (N_ / dev::kBlockN)); }

  void verify_counters() {
    // Every GEMM tile of every destination was produced (the epilogue's per-destination counters). The vendor
    // GEMM has no such epilogue: its partials are checked by the read-back alone.
    if (vendor_) return;
    const unsigned expect = tiles_per_slice();
    for (int r = 0; r < W_; ++r) {
      std::vector<unsigned> c(static_cast<size_t>(W_));
      set(ranks_[r].dev);
      GPU_CHECK(gpuMemcpy(c.data(), ranks_[r].counters, size_t(W_) * 4, gpuMemcpyDeviceToHost));
      for (int p = 0; p < W_; ++p)
        if (c[p] != expect)
          throw EnvironmentError("rank " + std::to_string(r) + " produced " + std::to_string(c[p]) + " of " +
                                 std::to_string(expect) + " GEMM tiles for slice " + std::to_string(p));
    }
  }

  // The flip-unsampled fault: one bit of the last rank's output at (the last row of slice 0 that is not read
  // back, column n/2), flipped after the replay (faults/faults.cu), outside the timed events; done before the
  // read-back and the full compare look.
  void flip_unsampled() {
    int64_t row = S_ - 1;
    while (row > 0 && std::find(plan_.rows.begin(), plan_.rows.end(), row) != plan_.rows.end()) --row;
    RankBufs& rb = ranks_.back();
    set(rb.dev);
    uint16_t* at = (plan_.inject.stale_output ? rb.out_alt : rb.out) + row * N_ + N_ / 2;
    GPU_CHECK(dev::launch_flip_bits(at, 1, rb.comp));
    GPU_CHECK(gpuStreamSynchronize(rb.comp));
  }

  // Every element of every rank's output against the collective recomputed on the device from the partials
  // this replay reduced (kernels/check/output_compare.hpp), on rank 0's device (peers' buffers through peer access,
  // as the pipeline reads them). Gemm-only and one rank have no collective to check here: the read-back does it.
  std::optional<FullCompare> full_compare(int it) {
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
      ptrs[size_t(q)] = plan_.inject.stale_output ? ranks_[q].out_alt : ranks_[q].out;
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

  void read_back(RunOutput& ro) {
    const auto& rows = plan_.rows;
    ro.outputs.assign(size_t(W_), {});
    ro.partials.assign(size_t(W_), {});
    std::vector<uint16_t> tmp(static_cast<size_t>(N_));
    for (int r = 0; r < W_; ++r) {
      auto& rb = ranks_[r];
      set(rb.dev);
      ro.outputs[r].resize(rows.size() * size_t(N_));
      ro.partials[r].resize(rows.size() * size_t(N_));
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t row = rows[i];
        GEMMAR_CHECK(row >= 0 && row < M_, "row ", row, " out of range");
        GPU_CHECK(gpuMemcpy(ro.outputs[r].data() + i * N_, rb.out + row * N_, size_t(N_) * 2, gpuMemcpyDeviceToHost));
        const int p = int(row / S_);
        const uint16_t* part = partial_of(r, p) + (row - p * S_) * N_;
        if (epilogue_stores_) set(ranks_[p].dev);
        GPU_CHECK(gpuMemcpy(tmp.data(), part, size_t(N_) * 2, gpuMemcpyDeviceToHost));
        set(rb.dev);
        for (int64_t c = 0; c < N_; ++c) {
          const uint32_t u = uint32_t(tmp[size_t(c)]) << 16;
          float v;
          std::memcpy(&v, &u, 4);
          ro.partials[r][i * N_ + c] = v / cur_scale_[r];  // iteration 0's inputs (an exact power of two)
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

  DeviceRun plan_;
  PipelineHooks hooks_;
  Config eff_;
  int W_ = 0, ndev_used_ = 1, rpd_ = 1;
  int64_t M_ = 0, N_ = 0, K_ = 0, S_ = 0;
  Quant quant_ = Quant::Blockscale;
  int64_t sa_count_ = 0, sb_count_ = 0;  // fp32 scales of A and of B in the quant's layout
  bool fnuz_hw_ = false;
  std::unique_ptr<DeviceGuard> guard_;  // --guard
  bool vendor_ = false;
  bool epilogue_stores_ = false;  // fused-lsa: the GEMM epilogue stores each tile into its owner's slot
  bool epilogue_puts_ = false;    // fused-sdma: each slice's copy-engine put follows its GEMM tiles
  bool persistent_puts_ = false;  // ... in one GEMM launch, the puts waiting on the tile counters (else chunks)
  bool owner_loads_ = false;      // split-lsa: the owner's all-reduce loads the peers' GEMM outputs (no scatter)
  std::vector<RankBufs> ranks_;
  const uint16_t** cmp_ptrs_ = nullptr;  // full_compare: [W] outputs, [W * W] partial slices
  unsigned long long* cmp_counts_ = nullptr;
  gpuEvent_t cmp_ev_[2] = {nullptr, nullptr};
  gpuStream_t ctl_ = nullptr;
  std::vector<NamedEvent> events_;
  std::string device_;
  bool capturing_ = false;
  gpuGraph_t graph_ = nullptr;
  gpuGraphExec_t graph_exec_ = nullptr;
  std::vector<float> cur_scale_;  // the factor each rank's A scales carry now (prepare_iteration)
};

}  // namespace

int device_count() {
  int n = 0;
  if (gpuGetDeviceCount(&n) != gpuSuccess) {
    (void)gpuGetLastError();
    return 0;
  }
  return n;
}

std::string device_name(int device) {
  gpuDeviceProp prop{};
  GPU_CHECK(gpuGetDeviceProperties(&prop, device));
  return prop.name;
}

RunOutput run_gemm_ar(const DeviceRun& plan, const OperandFn& gen, const PipelineHooks& hooks) {
  Pipeline p(plan, gen, hooks);
  return p.run();
}

RunOutput run_gemm_ar(const DeviceRun& plan, const OperandFn& gen) { return run_gemm_ar(plan, gen, PipelineHooks{}); }

}  // namespace gemmar::kernels
