// The GEMM legs: every rank's GEMM into its own partial (gemm-only, the split modes; or the vendor's), into the
// owners' slots straight from the epilogue (fused-lsa), or with each slice's copy-engine put following its tiles
// (fused-sdma); and gemm-only's copy of the partial into the output.
#include "common/config.hpp"
#include "kernels/host_check.hpp"
#include "kernels/pipeline/engine.hpp"
#include "kernels/pipeline/legs.hpp"
#include "kernels/pipeline/put_plan.hpp"
#include "kernels/vendor_gemm.hpp"

namespace gemmar::kernels {
namespace {

// Rank r's GEMM operands and where its tiles go: its own partial, or (fused-lsa) the owners' slots (a silent
// scatter drops the peers' slices).
struct RankGemm {
  dev::GemmOperands ops;
  dev::GemmDest dest;
};

RankGemm rank_gemm(Engine& e, int r) {
  RankBufs& rb = e.rank(r);
  RankGemm g;
  g.ops = dev::GemmOperands{rb.a, rb.b, rb.sa, rb.sb, e.gemm_m(), e.n(), e.k(), e.quant()};
  g.dest = dev::GemmDest{};
  g.dest.slice_rows = e.slice_rows();
  // Relaxed rows: a tile counts for every owner its real rows reach (kernels/pipeline/put_plan.hpp); the slices'
  // destinations below are consecutive slices of the partial, so a straddling tile's rows land in their own slice.
  g.dest.rows = e.relaxed_rows() ? e.m() : 0;
  g.dest.ldd = e.n();
  g.dest.counters = rb.counters;
  g.dest.counters_release = e.persistent_puts();  // the puts wait on them; otherwise a tally for verify_counters
  g.dest.concurrent_gemms = e.ranks_on_device(rb.dev);
  for (int p = 0; p < e.world(); ++p) {
    if (e.epilogue_stores())
      g.dest.dst[p] = (p != r && e.faults().silent_scatter) ? nullptr : e.partial_of(r, p);
    else
      g.dest.dst[p] = e.slice_of(rb.c, p);
  }
  return g;
}

// The bf16 scatter: the partial's rows as the GEMM stored them, into owner p's slot r.
class Bf16ScatterWire final : public ScatterWire {
 public:
  void send(Engine& e, int r, int p, int64_t row0, int64_t rows) const override {
    if (e.faults().silent_scatter) return;
    const int64_t N = e.n(), at = (int64_t(r) * e.slice_rows() + row0) * N;
    e.put(r, e.rank(p).recv + at, e.rank(p).dev, e.slice_of(e.rank(r).c, p) + row0 * N,
          size_t(put_payload_bytes(rows, N, false)));
  }
};

// mori's fp8 scatter: the rows narrowed to codes and per-256-column scales on the put's stream, then the codes'
// put and the scales' put, one after the other on the same stream (kernels_fused.py @f3bff0ae: the scale put
// follows the payload's on the same queue). A silent scatter drops the puts, not the narrowing.
class Fp8ScatterWire final : public ScatterWire {
 public:
  void send(Engine& e, int r, int p, int64_t row0, int64_t rows) const override {
    RankBufs& rb = e.rank(r);
    e.set(rb.dev);
    const int64_t first = int64_t(p) * e.slice_rows() + row0;  // the rows in rank r's partial
    quantize(e, r, first, rows, rb.copy);
    if (e.faults().silent_scatter) return;
    const int64_t N = e.n(), segs = e.scatter_segments(), slot = int64_t(r) * e.slice_rows() + row0;
    RankBufs& to = e.rank(p);
    e.put(r, to.recv_q + slot * N, to.dev, rb.sq + first * N, size_t(put_payload_bytes(rows, N, true)));
    e.put(r, to.recv_qs + slot * segs, to.dev, rb.ss + first * segs, size_t(put_scale_bytes(rows, N, true)));
  }
  void keep(Engine& e, int r) const override {
    RankBufs& rb = e.rank(r);
    e.set(rb.dev);
    quantize(e, r, int64_t(r) * e.slice_rows(), e.slice_rows(), rb.comp);
  }

 private:
  static void quantize(Engine& e, int r, int64_t first, int64_t rows, gpuStream_t s) {
    RankBufs& rb = e.rank(r);
    const int64_t N = e.n(), segs = e.scatter_segments();
    GPU_CHECK(dev::launch_scatter_quantize(rb.c + first * N, rows, N, rb.sq + first * N, rb.ss + first * segs, s));
  }
};

// Every chunk of the put loop: mori's (destination, chunk) puts (kernels/pipeline/put_plan.hpp). They leave once
// the destination's whole slice is stored: the tile counters count per slice, and a chunk's tiles are not the
// first ones its slice's counter counts (the persistent GEMM's CTAs finish tiles out of order).
void send_slice(Engine& e, const ScatterWire& wire, int r, int p) {
  const ChunkPlan cp = chunk_plan(e.plan().shape, e.config());
  for (const PutRows& pr : chunk_put_rows(cp, block_m(e.quant()), e.slice_rows())) wire.send(e, r, p, pr.row0, pr.rows);
}

// Every rank's GEMM, then the phase "gemm": into the rank's partial, into the owners' slots (fused-lsa), or by the
// vendor's GEMM (no fused epilogue: gemm-only and the split modes only).
class GemmLeg final : public Leg {
 public:
  void enqueue(Engine& e, Timing* tm) override {
    for (int r = 0; r < e.world(); ++r) {
      RankBufs& rb = e.rank(r);
      e.set(rb.dev);
      e.straggle(r, 0, rb.comp);
      const RankGemm g = rank_gemm(e, r);
      if (e.vendor())
        vendor_gemm(g.ops, rb.c, rb.comp);
      else
        GPU_CHECK(e.launch_gemm(g.ops, 0, e.gemm_m(), g.dest, rb.comp));
    }
    e.barrier(tm, "gemm");
  }
};

// fused-sdma: each peer's slice leaves by a copy-engine put as soon as its tiles are stored. Then the phases
// "gemm" (the compute streams) and "drain" (the puts' tail).
class FusedSdmaGemmLeg final : public Leg {
 public:
  explicit FusedSdmaGemmLeg(const Engine& e) : wire_(make_scatter_wire(e)) {}
  void enqueue(Engine& e, Timing* tm) override {
    const int W = e.world();
    for (int r = 0; r < W; ++r) {
      RankBufs& rb = e.rank(r);
      e.set(rb.dev);
      e.straggle(r, 0, rb.comp);
      const RankGemm g = rank_gemm(e, r);
      if (e.persistent_puts()) {
        // One launch; the GEMM's tile order finishes slice 0 first, and each peer's put leaves once its slice's
        // tiles are all stored (the epilogue's counter, after a fence; relaxed rows: the tiles touching the slice,
        // a straddling one counted for both its owners), in slice order, while later slices compute.
        GPU_CHECK(e.launch_gemm(g.ops, 0, e.gemm_m(), g.dest, rb.comp));
        for (int p = 0; p < W; ++p) {
          if (p == r) continue;
          GPU_CHECK(gpu::stream_wait_geq(rb.copy, rb.counters + p, e.tiles_per_slice(p)));
          send_slice(e, *wire_, r, p);
        }
        wire_->keep(e, r);
      } else {
        // Where the driver has no stream memory operations: one launch per destination slice, in the order the
        // puts should leave ((r+1)%W first, the own slice last), so each slice's put overlaps the GEMM of the
        // slices after it; the put waits on its slice's launch. Each launch runs the whole tiles touching its slice
        // that no earlier one ran (put_plan.hpp slice_launch_rows: relaxed rows' straddling tiles run once).
        for (const LaunchRows& lr : slice_launch_rows(W, r, e.slice_rows(), dev::kBlockM)) {
          const int p = lr.slice;
          if (lr.end > lr.begin) GPU_CHECK(e.launch_gemm(g.ops, lr.begin, lr.end, g.dest, rb.comp));
          if (p == r) {
            wire_->keep(e, r);
            continue;
          }
          GPU_CHECK(gpuEventRecord(rb.chunk_ev[size_t(p)], rb.comp));
          GPU_CHECK(gpuStreamWaitEvent(rb.copy, rb.chunk_ev[size_t(p)], 0));
          send_slice(e, *wire_, r, p);
        }
      }
    }
    e.barrier(tm, "gemm", /*comp_only=*/true);
    e.barrier(tm, "drain");
  }

 private:
  std::unique_ptr<ScatterWire> wire_;
};

// gemm-only: the output is the local partial (no phase of its own).
class CopyOutLeg final : public Leg {
 public:
  void enqueue(Engine& e, Timing*) override {
    for (int r = 0; r < e.world(); ++r) {
      RankBufs& rb = e.rank(r);
      e.set(rb.dev);
      GPU_CHECK(gpuMemcpyAsync(rb.out, rb.c, size_t(e.m() * e.n()) * 2, gpuMemcpyDeviceToDevice, rb.comp));
    }
  }
};

}  // namespace

std::unique_ptr<ScatterWire> make_scatter_wire(const Engine& e) {
  if (e.fp8_scatter()) return std::make_unique<Fp8ScatterWire>();
  return std::make_unique<Bf16ScatterWire>();
}

std::unique_ptr<Leg> make_gemm_leg(const Engine& e) {
  if (e.epilogue_puts()) return std::make_unique<FusedSdmaGemmLeg>(e);
  return std::make_unique<GemmLeg>();
}
std::unique_ptr<Leg> make_copy_out_leg() { return std::make_unique<CopyOutLeg>(); }

}  // namespace gemmar::kernels
