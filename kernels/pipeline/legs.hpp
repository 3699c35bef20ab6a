// The legs of one launch of the op, each a plug-in of the engine (kernels/pipeline/engine.hpp): the GEMM (with the
// fused modes' scatter in its epilogue), the scatter, the reduce (with the fp8 wire's quantize), the gather and its
// receive side (the dequantize, or the pull), split-lsa's two-stage all-reduce, the device guard, and the faults
// that change what a leg does or add a leg of their own. plan_legs reads the mode's traits (common/modes.hpp) and
// the run's faults once and lists the legs in launch order; the engine runs them. A new leg is a new Leg and one
// line in plan_legs, not an edit of the engine.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace gemmar::kernels {

class Engine;
struct Timing;

class Leg {
 public:
  virtual ~Leg() = default;
  // Untimed set-up of each launch, before its start barrier (stale-replay saves what the late put will not have
  // overwritten when the reduce reads it).
  virtual void before_start(Engine&) {}
  // The leg's part of one launch on every rank's streams, then the barrier that ends its phase (timed when tm is
  // given; a leg may end several phases).
  virtual void enqueue(Engine&, Timing* tm) = 0;
  // After each replay, outside the graph and its timed events, before the read-back (flip-unsampled).
  virtual void after_replay(Engine&) {}
};

// fused-sdma's send side: what the GEMM's epilogue does with a destination's rows once their tiles are stored,
// up to and including their put, chosen by the config's scatter_dtype (make_scatter_wire). bf16: the copy-engine put
// of the partial's rows. fp8 (mori's fp8 scatter, kernels_fused.py @f3bff0ae compile_fused_gemm_scatter): the rows
// narrowed per row per 256 columns (dev::launch_scatter_quantize) on the put's stream, then the put of the codes
// and, on the same stream, of their scales. The put loop (the GEMM leg) calls it once per chunk of
// chunk_plan(shape, config), as mori's epilogue puts per chunk.
class ScatterWire {
 public:
  virtual ~ScatterWire() = default;
  // Rank r's rows [row0, row0 + rows) of slice p (rows of the slice), to owner p's slot r, on r's copy stream.
  virtual void send(Engine&, int r, int p, int64_t row0, int64_t rows) const = 0;
  // Rank r's own slice, which no put carries, once the GEMM has stored it, on r's compute stream (fp8: the reduce
  // reads the owner's own contribution from its codes, as mori's sdma_reduce does).
  virtual void keep(Engine&, int /*r*/) const {}
};
std::unique_ptr<ScatterWire> make_scatter_wire(const Engine&);

// The legs of one launch of the engine's run, in order.
std::vector<std::unique_ptr<Leg>> plan_legs(const Engine&);

// The legs (kernels/pipeline/legs_*.cu), for plan_legs.
std::unique_ptr<Leg> make_gemm_leg(const Engine&);  // by the traits: local, fused-lsa, fused-sdma, the vendor's
std::unique_ptr<Leg> make_copy_out_leg();           // gemm-only: the output is the local partial
std::unique_ptr<Leg> make_scatter_leg();            // split-sdma: copy-engine puts of the peers' slices
std::unique_ptr<Leg> make_reduce_leg(bool fp8);     // the reduce over the slots, then the fp8 wire's quantize
std::unique_ptr<Leg> make_gather_leg(bool fp8);     // copy-engine puts of the owned slice (bf16 or the fp8 wire)
std::unique_ptr<Leg> make_pull_leg();               // fp8 over lsa: the CUs load and widen the owners' slices
std::unique_ptr<Leg> make_dequantize_leg();         // fp8 over sdma: widen the landed slices
std::unique_ptr<Leg> make_allreduce_leg();          // split-lsa: the two-stage CU all-reduce
std::unique_ptr<Leg> make_guard_leg();              // --guard: the per-call checksums, its own phase
// Faults (common/faults.hpp): the output holds the local partial before the gather (silent-gather over sdma); the
// late put's rows not yet landed when the reduce reads them (stale-replay); the gather's missing release
// (no-release); one bit of an unsampled output flipped after each replay (flip-unsampled).
std::unique_ptr<Leg> make_prefill_leg();
std::unique_ptr<Leg> make_stale_replay_leg();
std::unique_ptr<Leg> make_no_release_leg(bool fp8);
std::unique_ptr<Leg> make_flip_unsampled_leg();

}  // namespace gemmar::kernels
