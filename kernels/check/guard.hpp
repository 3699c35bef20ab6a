// The per-call guard on the device (docs/guard.md; the checks and bounds are reference/guard.hpp's): every rank's
// checksums of one call computed by streaming kernels on its own compute stream, right after the op, inside the
// same graph. Plain C++ (no GPU headers): the pipeline's engine (kernels/pipeline/engine.hpp) owns one DeviceGuard per
// run when DeviceRun::guard is set.
//
// Choice and cost (docs/guard.md "Device implementation"): one launch per rank and call (guard_call_kernel), whose
// grid holds every pass's blocks: the partial's column and row-block sums and the output's, streaming over the
// call's sampled rows (not folded into the GEMM epilogue: three main-loop families, two vendors and the fused
// pushes), the fp8 wire's sums over the owner's codes, and the GEMM check (A's sampled rows against every column
// block's checksum, any quant's A-scale layout). Cross-block sums are finished by the last block to arrive.
// The lab's guard variants keep only some passes' blocks, to time each (lab/README.md).
// Every sum is taken in a fixed order (atomics only count arrivals), so equal data gives equal bits: the views of a
// slice compare bitwise on the host.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "reference/guard.hpp"

namespace gemmar::kernels {

constexpr int kGuardMaxWorld = 64;

// Which passes of the guard run: all, in the op. A pass left out leaves its sums zero, so the guard then flags
// calls: only the lab leaves one out, to time each pass's share of the guard's phase.
struct GuardPasses {
  bool partial = true, output = true, wire = true, gemm = true;
};

// What one rank's guard reads in one call; all device pointers on the rank's device.
struct GuardRankView {
  const uint16_t* partial_slice[kGuardMaxWorld] = {};  // this rank's bf16 partial of slice p, row 0 of the slice
  const uint16_t* output = nullptr;                    // [m, n]: the rank's output as a reader sees it
  const uint8_t* wire = nullptr;                       // [S, n]: its own slice's fp8 codes (fp8 wire), else null
  const float* wire_scale = nullptr;                   // [S]
  const uint8_t* a = nullptr;                          // [m, k] e4m3 codes as the GEMM reads them
  const float* a_scale = nullptr;                      // the quant's A scales (common/modes.hpp's scale_block):
  int64_t a_scale_k = 128;                             // one per row and a_scale_k columns of K,
  bool a_scale_k_major = true;                         // [k / a_scale_k, m] (blockscale) or [m, k / a_scale_k]
  bool a_fnuz_half = false;  // gfx942: the codes were re-encoded fnuz (read as fnuz they are half the value)
};

class DeviceGuard {
 public:
  // m padded (a multiple of world * 128), n a multiple of 128, k of 128. Each call reads one row of every
  // `stride` (reference/guard_sample.hpp, drawn on the device from `seed` and the call count; 1: every row).
  // passes: all but in the lab's guard variants.
  DeviceGuard(int world, int64_t m, int64_t n, int64_t k, bool fp8_wire, const std::vector<int>& rank_device,
              int64_t stride, uint64_t seed, GuardPasses passes = {});
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  // The weights' checksum of one rank (reference::guard_weights of its B as loaded), uploaded once.
  void set_weights(int rank, const reference::GuardWeights&);
  // Enqueues rank's sums of the call on stream `s` (a gpuStream_t, passed as void*: no GPU headers here).
  // Throws EnvironmentError on a failed launch.
  void enqueue(int rank, const GuardRankView&, void* stream);
  // After the streams finished: the rows the last call read and every rank's sums over them.
  reference::GuardCall read() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gemmar::kernels
