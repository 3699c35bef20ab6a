// The GEMM legs: every rank's GEMM into its own partial (gemm-only, the split modes; or the vendor's), into the
// owners' slots straight from the epilogue (fused-lsa), or with each slice's copy-engine put following its tiles
// (fused-sdma); and gemm-only's copy of the partial into the output.
#include "kernels/host_check.hpp"
#include "kernels/pipeline/engine.hpp"
#include "kernels/pipeline/legs.hpp"
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
  g.ops = dev::GemmOperands{rb.a, rb.b, rb.sa, rb.sb, e.m(), e.n(), e.k(), e.quant()};
  g.dest = dev::GemmDest{};
  g.dest.slice_rows = e.slice_rows();
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

// Rank r's put of its partial of slice p into owner p's slot r.
void put_slice(Engine& e, int r, int p) {
  if (e.faults().silent_scatter) return;
  const int64_t slice = e.slice_rows() * e.n();
  e.put(r, e.rank(p).recv + int64_t(r) * slice, e.rank(p).dev, e.slice_of(e.rank(r).c, p), size_t(slice) * 2);
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
        GPU_CHECK(e.launch_gemm(g.ops, 0, e.m(), g.dest, rb.comp));
    }
    e.barrier(tm, "gemm");
  }
};

// fused-sdma: each peer's slice leaves by a copy-engine put as soon as its tiles are stored. Then the phases
// "gemm" (the compute streams) and "drain" (the puts' tail).
class FusedSdmaGemmLeg final : public Leg {
 public:
  void enqueue(Engine& e, Timing* tm) override {
    const int W = e.world();
    for (int r = 0; r < W; ++r) {
      RankBufs& rb = e.rank(r);
      e.set(rb.dev);
      e.straggle(r, 0, rb.comp);
      const RankGemm g = rank_gemm(e, r);
      if (e.persistent_puts()) {
        // One launch; the GEMM's tile order finishes slice 0 first, and each peer's put leaves once its slice's
        // tiles are all stored (the epilogue's counter, after a fence), in slice order, while later slices compute.
        GPU_CHECK(e.launch_gemm(g.ops, 0, e.m(), g.dest, rb.comp));
        for (int p = 0; p < W; ++p) {
          if (p == r) continue;
          GPU_CHECK(gpu::stream_wait_geq(rb.copy, rb.counters + p, e.tiles_per_slice()));
          put_slice(e, r, p);
        }
      } else {
        // Where the driver has no stream memory operations: one launch per destination slice, in the order the
        // puts should leave ((r+1)%W first, the own slice last), so each slice's put overlaps the GEMM of the
        // slices after it; the put waits on its slice's launch.
        for (int j = 1; j <= W; ++j) {
          const int p = (r + j) % W;
          GPU_CHECK(e.launch_gemm(g.ops, p * e.slice_rows(), (p + 1) * e.slice_rows(), g.dest, rb.comp));
          if (p == r) continue;
          GPU_CHECK(gpuEventRecord(rb.chunk_ev[size_t(p)], rb.comp));
          GPU_CHECK(gpuStreamWaitEvent(rb.copy, rb.chunk_ev[size_t(p)], 0));
          put_slice(e, r, p);
        }
      }
    }
    e.barrier(tm, "gemm", /*comp_only=*/true);
    e.barrier(tm, "drain");
  }
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

std::unique_ptr<Leg> make_gemm_leg(const Engine& e) {
  if (e.epilogue_puts()) return std::make_unique<FusedSdmaGemmLeg>();
  return std::make_unique<GemmLeg>();
}
std::unique_ptr<Leg> make_copy_out_leg() { return std::make_unique<CopyOutLeg>(); }

}  // namespace gemmar::kernels
