// The legs that check or corrupt a launch: the per-call guard (kernels/check/guard.hpp), and the faults that add a
// leg of their own (common/faults.hpp lists what each one models; reference/emulation.hpp applies the same).
#include <algorithm>

#include "kernels/host_check.hpp"
#include "kernels/pipeline/engine.hpp"
#include "kernels/pipeline/legs.hpp"
#include "reference/no_release_pattern.hpp"

namespace gemmar::kernels {
namespace {

// The per-call guard after everything of the launch, as its own timed phase.
class GuardLeg final : public Leg {
 public:
  void enqueue(Engine& e, Timing* tm) override {
    e.barrier(nullptr, "");
    const ScaleBlock& sa = scale_block(e.quant(), false);
    for (int r = 0; r < e.world(); ++r) {
      RankBufs& rb = e.rank(r);
      e.set(rb.dev);
      GuardRankView v;
      for (int p = 0; p < e.world(); ++p) v.partial_slice[p] = e.partial_of(r, p);
      v.output = e.reader_output(r);  // what a reader of the output sees
      v.wire = rb.q;
      v.wire_scale = rb.qs;
      v.a = rb.a;
      v.a_scale = rb.sa;
      v.a_scale_k = scale_k_extent(sa, e.k());
      v.a_scale_k_major = sa.k_major;
      v.a_fnuz_half = e.fnuz_hw();
      e.guard()->enqueue(r, v, rb.comp);
    }
    e.barrier(tm, "guard");
  }
};

// silent-gather over sdma: the signature is "what the output held before the gather", which for an in-place
// all-reduce is the local partial (copied untimed, outside the phases that are measured: the control stream's events
// bracket it, so the run subtracts it as its own phase "prefill").
class PrefillLeg final : public Leg {
 public:
  void enqueue(Engine& e, Timing* tm) override {
    const size_t slice_bytes = size_t(e.slice_rows() * e.n()) * 2;
    for (int r = 0; r < e.world(); ++r) {
      RankBufs& rb = e.rank(r);
      e.set(rb.dev);
      if (!e.epilogue_stores()) {
        GPU_CHECK(gpuMemcpyAsync(rb.out, rb.c, size_t(e.m() * e.n()) * 2, gpuMemcpyDeviceToDevice, rb.comp));
      } else {  // fused-lsa's partial only exists as the slices it stored into the owners' slots
        for (int p = 0; p < e.world(); ++p)
          GPU_CHECK(
              gpuMemcpyAsync(e.slice_of(rb.out, p), e.partial_of(r, p), slice_bytes, gpuMemcpyDeviceToDevice, rb.comp));
      }
    }
    e.barrier(tm, kPrefillPhase);
  }
};

// stale-replay: owner o's reduce reads its late peer's slot (reduce_slot: rb.stale) as far as that put had landed:
// before the launch can write the slot, the rows that will not have landed keep what the previous launch left
// (before_start); after the scatter, the rows that did land are this launch's (enqueue, its own phase).
class StaleReplayLeg final : public Leg {
 public:
  void before_start(Engine& e) override { copy(e, /*landed_part=*/false); }
  void enqueue(Engine& e, Timing* tm) override {
    copy(e, /*landed_part=*/true);
    e.barrier(tm, kStaleReplayPhase);
  }

 private:
  static void copy(Engine& e, bool landed_part) {
    const int64_t cut = e.landed_rows(), S = e.slice_rows(), N = e.n();
    for (int o = 0; o < e.world(); ++o) {
      RankBufs& rb = e.rank(o);
      e.set(rb.dev);
      const int64_t r0 = landed_part ? 0 : cut, r1 = landed_part ? cut : S;
      if (r1 > r0)
        GPU_CHECK(gpuMemcpyAsync(rb.stale + r0 * N, e.raw_slot(o, e.late_peer(o)) + r0 * N, size_t((r1 - r0) * N) * 2,
                                 gpuMemcpyDeviceToDevice, rb.comp));
    }
  }
};

// no-release, after the fact: the gather landed every line of the reduced slice; the lines the copy engine would have
// read before the reduce's stores were visible (reference/no_release_pattern.hpp, the emulation's own pattern) are
// replaced by what the owner's buffer held then: its local bf16 partial (bf16 wire; the output is in place) or, on
// the fp8 wire, the zero codes of a quantize buffer not yet written (the row scales land intact). The timed gather
// is the real copy-engine traffic; this pass is its own untimed phase, so the run's timing stays the gather's.
class NoReleaseLeg final : public Leg {
 public:
  explicit NoReleaseLeg(bool fp8) : fp8_(fp8) {}
  void enqueue(Engine& e, Timing* tm) override {
    const uint64_t seed = e.plan().seed;
    const int W = e.world();
    for (int r = 0; r < W; ++r) {
      RankBufs& rb = e.rank(r);
      e.set(rb.dev);
      dev::NoReleaseSet ns{};
      int cnt = 0;
      for (int j = 1; j < W; ++j) {
        const int q = (r + j) % W;
        ns.owner[cnt] = q;
        ns.band_mask[cnt] = no_release::band_mask(seed, r, q);
        ns.pre[cnt] = e.slot_ptr(q, q);  // owner q's own partial of its slice, where the reduce read it
        ns.landed[cnt] = fp8_ ? static_cast<void*>(rb.land + int64_t(q) * e.slice_rows() * e.n())
                              : static_cast<void*>(e.slice_of(rb.out, q));
        ++cnt;
      }
      GPU_CHECK(dev::launch_no_release(ns, cnt, r, seed, no_release::line_threshold(seed, r), e.slice_rows(), e.n(),
                                       fp8_, rb.comp));
    }
    e.barrier(tm, kNoReleasePhase);
  }

 private:
  bool fp8_;
};

// flip-unsampled: one bit of the last rank's output at (the last row of slice 0 that is not read back, column n/2),
// flipped after each replay (faults/faults.cu), outside the timed events; before the read-back and the full compare
// look.
class FlipUnsampledLeg final : public Leg {
 public:
  void enqueue(Engine&, Timing*) override {}
  void after_replay(Engine& e) override {
    const std::vector<int64_t>& rows = e.plan().rows;
    int64_t row = e.slice_rows() - 1;
    while (row > 0 && std::find(rows.begin(), rows.end(), row) != rows.end()) --row;
    const int last = e.world() - 1;
    RankBufs& rb = e.rank(last);
    e.set(rb.dev);
    uint16_t* at = e.reader_output(last) + row * e.n() + e.n() / 2;
    GPU_CHECK(dev::launch_flip_bits(at, 1, rb.comp));
    GPU_CHECK(gpuStreamSynchronize(rb.comp));
  }
};

}  // namespace

std::unique_ptr<Leg> make_guard_leg() { return std::make_unique<GuardLeg>(); }
std::unique_ptr<Leg> make_prefill_leg() { return std::make_unique<PrefillLeg>(); }
std::unique_ptr<Leg> make_stale_replay_leg() { return std::make_unique<StaleReplayLeg>(); }
std::unique_ptr<Leg> make_no_release_leg(bool fp8) { return std::make_unique<NoReleaseLeg>(fp8); }
std::unique_ptr<Leg> make_flip_unsampled_leg() { return std::make_unique<FlipUnsampledLeg>(); }

}  // namespace gemmar::kernels
