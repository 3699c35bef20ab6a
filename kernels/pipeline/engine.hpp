// The pipeline's engine: what every mode's run shares. It owns the ranks' buffers and streams, the control stream
// and its events (the cross-rank barrier that also times each phase), the capture of one launch into a graph and
// its replays (with the eager fallbacks), the per-replay inputs, and the read-back and checks after the run. What a
// launch does between its start and its end is its legs' (kernels/pipeline/legs.hpp), planned once from the mode's
// traits; the engine only runs them in order. GPU-typed: inside kernels/ only (the API is kernels/gemm_ar.hpp).
//
// Ranks: one per device with peer access when W devices exist (or ranks_per_device says so), otherwise all on one
// device with separate allocations per rank, so "peer" traffic is local HBM but every byte still moves. Each rank
// has a compute stream and a copy stream; phases are separated by a cross-rank barrier made of events (each rank's
// streams -> the control stream on the first device -> every rank's streams), which is also what times each phase:
// the control stream's events bracket "all ranks finished phase X".
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/check/guard.hpp"
#include "kernels/gemm_ar.hpp"
#include "kernels/gpu_compat.hpp"
#include "kernels/kernels.hpp"
#include "kernels/pipeline/hooks.hpp"
#include "reference/numerics_inline.hpp"

namespace gemmar::kernels {

class Leg;

// One rank's buffers and streams.
struct RankBufs {
  int dev = 0;
  gpuStream_t comp = nullptr, copy = nullptr;
  uint8_t *a = nullptr, *b = nullptr;
  float *sa = nullptr, *sb = nullptr;
  uint16_t* c = nullptr;        // [m, n]: the GEMM partial (split / fused-sdma)
  uint16_t* recv = nullptr;     // [W][S][n]: slot q = peer q's partial of this rank's slice
  uint16_t* out = nullptr;      // [m, n]: the all-reduced output
  uint16_t* out_alt = nullptr;  // stale-output fault: the runs write here, `out` keeps the previous result
  uint8_t* q = nullptr;         // [S, n]: this rank's slice on the fp8 wire
  float* qs = nullptr;          // [S]
  uint8_t* land = nullptr;      // [W][S][n]: peers' fp8 slices landed here (fp8/sdma)
  float* land_s = nullptr;      // [W][S]
  // --scatter-dtype fp8 (mori's fp8 scatter): this rank's partial narrowed per row per 256 columns before its puts,
  // every slice (the own one too: the reduce reads it), and the peers' codes and scales landed per sender slot.
  uint8_t* sq = nullptr;         // [m, n] codes of c
  float* ss = nullptr;           // [m, n / 256]
  uint8_t* recv_q = nullptr;     // [W][S][n]: slot q = peer q's codes of this rank's slice
  float* recv_qs = nullptr;      // [W][S][n / 256]
  unsigned* counters = nullptr;  // [W]: finished GEMM tiles per destination slice
  unsigned long long* poison = nullptr;
  float* straggle = nullptr;         // [3]: this replay's delays before the GEMM, the reduce, the gather
  uint16_t* stale = nullptr;         // stale-replay: [S][n], what the reduce reads for the late peer's slot
  std::vector<gpuEvent_t> chunk_ev;  // fused-sdma per slice: one per destination slice
};

// The control stream's timed events of one launch (phase = the event's name, from the previous event to it) and
// each rank's start and end.
struct Timing {
  struct Named {
    std::string name;
    gpuEvent_t ev;
  };
  std::vector<Named> ctl_events;
  std::vector<gpuEvent_t> rank_start, rank_end;
};

// Phases that only set up a fault's signature; bracketed by the barrier events like the others, so their time is
// known exactly and subtracted from the run's totals.
inline const char* const kPrefillPhase = "prefill";
inline const char* const kNoReleasePhase = "no-release";
inline const char* const kStaleReplayPhase = "stale-replay";

class Engine {
 public:
  Engine(const DeviceRun& plan, const OperandFn& gen, const PipelineHooks& hooks);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Poison, the stale-output fault's previous launch, launch 0 eagerly, the capture, the replays (timed), the
  // summary, the read-back.
  RunOutput run();

  // ---- for the legs ----
  const DeviceRun& plan() const { return plan_; }
  const Config& config() const { return eff_; }  // the effective config (common/config.hpp effective_config)
  const Faults& faults() const { return plan_.inject; }
  int world() const { return W_; }
  int64_t m() const { return M_; }
  // The rows the GEMM runs: M, or (relaxed rows) M rounded up to whole dev::kBlockM tiles, the rows past M zero
  // rows of A nobody owns (mori: the last tile's rows past M are loaded as zeros and never stored or put).
  int64_t gemm_m() const { return Mg_; }
  // mori's --relaxed-rows (common/config.hpp row_plan): S = M / W rows a rank, a GEMM tile may straddle two owners.
  bool relaxed_rows() const { return relaxed_; }
  int64_t n() const { return N_; }
  int64_t k() const { return K_; }
  int64_t slice_rows() const { return S_; }
  Quant quant() const { return quant_; }
  bool fnuz_hw() const { return fnuz_hw_; }
  RankBufs& rank(int r) { return ranks_[size_t(r)]; }
  const RankBufs& rank(int r) const { return ranks_[size_t(r)]; }
  DeviceGuard* guard() const { return guard_.get(); }
  // The GEMM leg's kind, from the mode's traits and the run: the epilogue stores into the owners' slots
  // (fused-lsa), the slices' puts follow the GEMM (fused-sdma) in one launch waiting on the tile counters or per
  // slice, the owners' reduce loads the peers' GEMM outputs (split-lsa), or the vendor GEMM.
  bool epilogue_stores() const { return epilogue_stores_; }
  bool epilogue_puts() const { return epilogue_puts_; }
  bool persistent_puts() const { return persistent_puts_; }
  bool vendor() const { return vendor_; }
  // The scatter leg carries mori's fp8 codes and per-256-column scales (fused-sdma only: validate_knobs).
  bool fp8_scatter() const { return eff_.scatter_dtype == WireDtype::Fp8; }
  int64_t scatter_segments() const { return N_ / numerics::kScatterScaleCols; }

  void set(int dev);
  // Every rank's two streams (comp_only: compute streams) finish the phase -> the control stream records `name`
  // (timed when tm is given) -> every stream continues.
  void barrier(Timing* tm, const std::string& name, bool comp_only = false);
  // The straggler fault: rank r's stream spins for this replay's delay k (0 GEMM, 1 reduce, 2 gather).
  void straggle(int r, int k, gpuStream_t st);
  // A copy-engine put of rank r: within its device, or to a peer device.
  void put(int r, void* dst, int dst_dev, const void* src, size_t bytes);
  // The launches the lab may plug another kernel into (kernels/pipeline/hooks.hpp); otherwise the op's.
  gpuError_t launch_gemm(const dev::GemmOperands& op, int64_t m_begin, int64_t m_end, const dev::GemmDest& d,
                         gpuStream_t s) const;
  gpuError_t launch_widen(const dev::Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks,
                          gpuStream_t s) const;

  // ---- where the data of the collective lives ----
  uint16_t* slice_of(uint16_t* base, int p) const { return base + int64_t(p) * S_ * N_; }
  // Rank q's bf16 partial of slice p, row 0 (fused-lsa's exists only in owner p's slot, where its epilogue stored it).
  uint16_t* partial_of(int q, int p) const;
  // Where rank q's partial of slice p lives when the reduce of p runs.
  const uint16_t* slot_ptr(int p, int q) const;
  // What owner o's reduce reads for peer q (stale-replay: the late peer's slot as far as its put had landed).
  const uint16_t* reduce_slot(int o, int q) const;
  // Where owner o's reduce finds peer q's partial of slice o (split-lsa: in q's GEMM output).
  uint16_t* raw_slot(int o, int q) const;
  // Rank r's output as a reader sees it (stale-output: the buffer the runs never write).
  uint16_t* reader_output(int r) const;
  int pull_blocks() const;
  // Ranks placed on device `dev`, whose GEMMs run at once there (GemmDest::concurrent_gemms).
  int ranks_on_device(int dev) const;
  // What destination slice p's counter reaches: every kernel of ours counts kBlockM x kBlockN tiles, a tile once for
  // every slice its rows reach (put_plan.hpp slice_counter_targets; whole-tile slices: S / kBlockM x N / kBlockN).
  unsigned tiles_per_slice(int p) const { return counter_targets_[size_t(p)]; }
  // stale-replay: owner o's late peer (its put leaves last: (o+1)%W) and the rows of that put that have landed
  // when the reduce reads them (half the slice; reference::ReplayTiming without stragglers).
  int late_peer(int o) const { return (o + 1) % W_; }
  int64_t landed_rows() const { return S_ / 2; }

 private:
  struct Samples;  // the timed replays' phases, totals and per-rank times

  void place_ranks();
  void enable_peer_access();
  void allocate();
  bool stream_waits_work();
  void upload(const OperandFn& gen);
  void pad_gemm_rows(RankOperands& op) const;
  void poison_all();
  void prepare_iteration(int it);
  void run_previous_launch();
  std::string capture_graph(Timing& tm);
  void replay_and_time(Timing& graph_tm, RunOutput& ro, Samples& samples);
  void time_replay(const Timing& tm, Samples& samples) const;
  void summarise(const Samples& samples, RunOutput& ro) const;
  void execute_once(Timing* tm);
  void begin_launch(Timing* tm);
  void end_launch(Timing* tm);
  void fork();
  void join();
  gpuEvent_t new_event(int dev, bool timing);
  gpuError_t record(gpuEvent_t e, gpuStream_t s, bool timed);
  void sync_all();
  void verify_counters();
  std::vector<std::vector<uint16_t>> read_outputs();
  std::optional<FullCompare> full_compare(int it);
  void read_back(RunOutput& ro);

  DeviceRun plan_;
  PipelineHooks hooks_;
  Config eff_;
  int W_ = 0, ndev_used_ = 1, rpd_ = 1;
  int64_t M_ = 0, N_ = 0, K_ = 0, S_ = 0, Mg_ = 0;
  bool relaxed_ = false;
  std::vector<unsigned> counter_targets_;  // per destination slice
  Quant quant_ = Quant::Blockscale;
  int64_t sa_count_ = 0, sb_count_ = 0;  // fp32 scales of A and of B in the quant's layout
  bool fnuz_hw_ = false;
  std::unique_ptr<DeviceGuard> guard_;  // --guard
  bool vendor_ = false;
  bool epilogue_stores_ = false;  // fused-lsa: the GEMM epilogue stores each tile into its owner's slot
  bool epilogue_puts_ = false;    // fused-sdma: each slice's copy-engine put follows its GEMM tiles
  bool persistent_puts_ = false;  // ... in one GEMM launch, the puts waiting on the tile counters (else per slice)
  bool owner_loads_ = false;      // split-lsa: the owner's all-reduce loads the peers' GEMM outputs (no scatter)
  std::vector<RankBufs> ranks_;
  std::vector<std::unique_ptr<Leg>> legs_;  // one launch, in order (kernels/pipeline/plan.cu)
  const uint16_t** cmp_ptrs_ = nullptr;     // full_compare: [W] outputs, [W * W] partial slices
  unsigned long long* cmp_counts_ = nullptr;
  gpuEvent_t cmp_ev_[2] = {nullptr, nullptr};
  gpuStream_t ctl_ = nullptr;
  struct OwnedEvent {
    gpuEvent_t ev;
    int dev;
  };
  std::vector<OwnedEvent> events_;
  std::string device_;
  bool capturing_ = false;
  gpuGraph_t graph_ = nullptr;
  gpuGraphExec_t graph_exec_ = nullptr;
  std::vector<float> cur_scale_;  // the factor each rank's A scales carry now (prepare_iteration)
};

}  // namespace gemmar::kernels
