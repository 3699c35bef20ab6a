// plan_legs: the legs of one launch, from the mode's traits (common/modes.hpp) and the run's faults, in the order
// the emulation (reference/emulation.cpp) applies them: the GEMM (and the fused modes' scatter), then gemm-only's
// copy, split-lsa's two-stage all-reduce, or scatter -> reduce (+ quantize) -> gather (-> dequantize) or pull;
// the guard last. The faults move or drop legs here, at the points the emulation applies them.
#include "common/errors.hpp"
#include "common/modes.hpp"
#include "kernels/pipeline/engine.hpp"
#include "kernels/pipeline/legs.hpp"

namespace gemmar::kernels {

std::vector<std::unique_ptr<Leg>> plan_legs(const Engine& e) {
  const Config& c = e.config();
  const ModeTraits& mt = traits(c.mode);
  const Faults& f = e.faults();
  const bool fp8 = uses_fp8_wire(c) && !f.fp8_wire_bypassed;
  const bool lsa_gather = c.gather_transport == Transport::Lsa;
  // silent-gather silences copy-engine puts only; an lsa gather is unaffected (reference/emulation.hpp).
  const bool silent_sdma_gather = f.silent_gather && c.gather_transport == Transport::Sdma;
  // The stale-replay fault keeps the late put's bf16 rows; the fp8 scatter's slots hold codes and scales.
  GEMMAR_USAGE_CHECK(!(f.stale_replay && c.scatter_dtype == WireDtype::Fp8),
                     "--inject stale-replay: not modelled with --scatter-dtype fp8 on the GPU");
  std::vector<std::unique_ptr<Leg>> legs;
  legs.push_back(make_gemm_leg(e));
  if (!mt.collective) {
    legs.push_back(make_copy_out_leg());
  } else {
    if (silent_sdma_gather) legs.push_back(make_prefill_leg());
    if (!mt.two_stage_allreduce && !mt.fused) legs.push_back(make_scatter_leg());
    // the rows of the late put that did land before the reduce read the slot
    if (f.stale_replay) legs.push_back(make_stale_replay_leg());
    if (mt.two_stage_allreduce) {
      legs.push_back(make_allreduce_leg());
    } else {
      // frozen-flag: the gather's wait was satisfied by the previous launch's signal, so it copies (pulls) the
      // owner's slice before this launch's reduce wrote it: what the previous launch left there.
      if (!f.frozen_flag) legs.push_back(make_reduce_leg(fp8));
      if (fp8 && lsa_gather) {
        legs.push_back(make_pull_leg());
      } else {
        legs.push_back(make_gather_leg(fp8));
        if (f.no_release && !lsa_gather && !silent_sdma_gather) legs.push_back(make_no_release_leg(fp8));
      }
      if (f.frozen_flag) legs.push_back(make_reduce_leg(fp8));
      if (fp8 && !lsa_gather) legs.push_back(make_dequantize_leg());
    }
  }
  if (e.guard()) legs.push_back(make_guard_leg());
  if (f.flip_unsampled) legs.push_back(make_flip_unsampled_leg());
  return legs;
}

}  // namespace gemmar::kernels
