// The collective's legs after the GEMM: split-sdma's scatter, the reduce over the W slots (with the fp8 wire's
// quantize), the gather of the owned slice (copy-engine puts), the fp8 wire's receive side (the dequantize of the
// landed slices, or the pull over peer pointers), and split-lsa's two-stage CU all-reduce.
#include "kernels/host_check.hpp"
#include "kernels/pipeline/engine.hpp"
#include "kernels/pipeline/legs.hpp"

namespace gemmar::kernels {
namespace {

// Every owner's reduce of its slice over the W slots, in the fixed peer order (the one reduce launch of both the
// reduce leg and split-lsa's first stage); fuse_quantize: the fp8 wire's narrowing folded into it.
void enqueue_reduces(Engine& e, bool fuse_quantize) {
  for (int r = 0; r < e.world(); ++r) {
    RankBufs& rb = e.rank(r);
    e.set(rb.dev);
    e.straggle(r, 1, rb.comp);
    if (e.fp8_scatter()) {
      // mori's fp8 scatter: slot r is the owner's own codes of its slice, slot q the codes q's puts landed.
      const int64_t S = e.slice_rows(), N = e.n(), segs = e.scatter_segments();
      dev::Fp8ScatterSlots fs{};
      for (int q = 0; q < e.world(); ++q) {
        fs.q[q] = q == r ? rb.sq + int64_t(r) * S * N : rb.recv_q + int64_t(q) * S * N;
        fs.scale[q] = q == r ? rb.ss + int64_t(r) * S * segs : rb.recv_qs + int64_t(q) * S * segs;
      }
      GPU_CHECK(dev::launch_reduce_fp8_scatter(fs, r, e.world(), S, N, e.slice_of(rb.out, r),
                                               fuse_quantize ? rb.q : nullptr, fuse_quantize ? rb.qs : nullptr,
                                               rb.comp));
      continue;
    }
    dev::SlotSet ss{};
    for (int q = 0; q < e.world(); ++q) ss.slot[q] = e.reduce_slot(r, q);
    GPU_CHECK(dev::launch_reduce(ss, r, e.world(), e.slice_rows(), e.n(), e.slice_of(rb.out, r),
                                 fuse_quantize ? rb.q : nullptr, fuse_quantize ? rb.qs : nullptr, rb.comp));
  }
}

// Rank r's view of the W-1 peers' fp8 slices: in the owners' buffers (a pull) or in r's landing zone.
dev::Fp8Sources peer_fp8_sources(Engine& e, int r, bool landed) {
  RankBufs& rb = e.rank(r);
  const int64_t slice = e.slice_rows() * e.n();
  dev::Fp8Sources src{};
  for (int j = 1; j < e.world(); ++j) {
    const int q = (r + j) % e.world();
    src.q[j - 1] = landed ? rb.land + int64_t(q) * slice : e.rank(q).q;
    src.scale[j - 1] = landed ? rb.land_s + int64_t(q) * e.slice_rows() : e.rank(q).qs;
    src.out[j - 1] = e.slice_of(rb.out, q);
  }
  return src;
}

// split-sdma's scatter: every rank puts each peer's slice of its partial into that owner's slot.
class ScatterLeg final : public Leg {
 public:
  void enqueue(Engine& e, Timing* tm) override {
    const int W = e.world();
    const int64_t slice = e.slice_rows() * e.n();
    for (int r = 0; r < W; ++r)
      for (int j = 1; j < W; ++j) {
        const int p = (r + j) % W;
        if (!e.faults().silent_scatter)
          e.put(r, e.rank(p).recv + int64_t(r) * slice, e.rank(p).dev, e.slice_of(e.rank(r).c, p), size_t(slice) * 2);
      }
    e.barrier(tm, "scatter");
  }
};

// Each owner sums its slice over the W slots (fixed order), then narrows it to the fp8 wire: folded into the reduce
// (fuse_quantize) or as its own kernel.
class ReduceLeg final : public Leg {
 public:
  explicit ReduceLeg(bool fp8) : fp8_(fp8) {}
  void enqueue(Engine& e, Timing* tm) override {
    const bool fuse_q = fp8_ && e.config().fuse_quantize;
    enqueue_reduces(e, fuse_q);
    e.barrier(tm, "reduce");
    if (fp8_ && !fuse_q) {
      for (int r = 0; r < e.world(); ++r) {
        RankBufs& rb = e.rank(r);
        e.set(rb.dev);
        GPU_CHECK(dev::launch_quantize(e.slice_of(rb.out, r), e.slice_rows(), e.n(), rb.q, rb.qs, rb.comp));
      }
      e.barrier(tm, "quantize");
    }
  }

 private:
  bool fp8_;
};

// Copy-engine puts of the owned slice to every peer: bf16 rows into the same rows of the peer's output, or the fp8
// slice + its row scales into the peer's landing zone. silent-gather (over sdma) drops the puts.
class GatherLeg final : public Leg {
 public:
  explicit GatherLeg(bool fp8) : fp8_(fp8) {}
  void enqueue(Engine& e, Timing* tm) override {
    const int W = e.world();
    for (int r = 0; r < W; ++r) e.straggle(r, 2, e.rank(r).copy);
    const bool silent = e.faults().silent_gather && e.config().gather_transport == Transport::Sdma;
    const int64_t S = e.slice_rows(), N = e.n();
    for (int r = 0; r < W && !silent; ++r)
      for (int j = 1; j < W; ++j) {
        const int p = (r + j) % W;
        RankBufs &from = e.rank(r), &to = e.rank(p);
        if (fp8_) {
          e.put(r, to.land + int64_t(r) * S * N, to.dev, from.q, size_t(S * N));
          e.put(r, to.land_s + int64_t(r) * S, to.dev, from.qs, size_t(S) * 4);
        } else {
          e.put(r, e.slice_of(to.out, r), to.dev, e.slice_of(from.out, r), size_t(S * N) * 2);
        }
      }
    e.barrier(tm, "gather");
  }

 private:
  bool fp8_;
};

// The fp8 wire over lsa: each rank's CUs load the owners' fp8 slices and scales and widen them into its output with
// the pull grid. CU loads, so a silent copy engine (silent-gather) does not affect them; the event barrier before
// it is the gather's wait.
class PullLeg final : public Leg {
 public:
  void enqueue(Engine& e, Timing* tm) override {
    for (int r = 0; r < e.world(); ++r) {
      RankBufs& rb = e.rank(r);
      e.set(rb.dev);
      e.straggle(r, 2, rb.comp);
      GPU_CHECK(e.launch_widen(peer_fp8_sources(e, r, /*landed=*/false), e.world() - 1, e.slice_rows(), e.n(),
                               e.pull_blocks(), rb.comp));
    }
    e.barrier(tm, "pull");
  }
};

// The fp8 wire over copy engines: the gathered codes and scales landed in each rank's landing zone; widen them.
class DequantizeLeg final : public Leg {
 public:
  void enqueue(Engine& e, Timing* tm) override {
    for (int r = 0; r < e.world(); ++r) {
      RankBufs& rb = e.rank(r);
      e.set(rb.dev);
      GPU_CHECK(
          e.launch_widen(peer_fp8_sources(e, r, /*landed=*/true), e.world() - 1, e.slice_rows(), e.n(), 0, rb.comp));
    }
    e.barrier(tm, "dequantize");
  }
};

// split-lsa's 2-stage CU all-reduce: stage 1 reads every peer's partial of the owned rows (peer loads) and reduces;
// the barrier between stages is the event barrier (the kernels of W ranks on one device are not guaranteed
// co-resident, so an in-kernel barrier could deadlock); stage 2 loads every peer's reduced rows into the local
// output. frozen-flag: stage 2 does not wait for this launch's stage 1.
class AllReduceLeg final : public Leg {
 public:
  void enqueue(Engine& e, Timing* tm) override {
    const bool frozen = e.faults().frozen_flag;
    if (!frozen) stage1(e);
    const int W = e.world();
    for (int r = 0; r < W; ++r) {
      RankBufs& rb = e.rank(r);
      e.set(rb.dev);
      e.straggle(r, 2, rb.comp);
      dev::Bf16Sources bs{};
      int cnt = 0;
      for (int j = 1; j < W; ++j) {
        const int q = (r + j) % W;
        bs.src[cnt] = e.slice_of(e.rank(q).out, q);
        bs.out[cnt] = e.slice_of(rb.out, q);
        ++cnt;
      }
      GPU_CHECK(dev::launch_copy_slices(bs, cnt, e.slice_rows() * e.n(), 0, rb.comp));
    }
    if (frozen) {
      e.barrier(nullptr, "");
      stage1(e);
    }
    e.barrier(tm, "allreduce");
  }

 private:
  static void stage1(Engine& e) {
    enqueue_reduces(e, /*fuse_quantize=*/false);
    e.barrier(nullptr, "");
  }
};

}  // namespace

std::unique_ptr<Leg> make_scatter_leg() { return std::make_unique<ScatterLeg>(); }
std::unique_ptr<Leg> make_reduce_leg(bool fp8) { return std::make_unique<ReduceLeg>(fp8); }
std::unique_ptr<Leg> make_gather_leg(bool fp8) { return std::make_unique<GatherLeg>(fp8); }
std::unique_ptr<Leg> make_pull_leg() { return std::make_unique<PullLeg>(); }
std::unique_ptr<Leg> make_dequantize_leg() { return std::make_unique<DequantizeLeg>(); }
std::unique_ptr<Leg> make_allreduce_leg() { return std::make_unique<AllReduceLeg>(); }

}  // namespace gemmar::kernels
