// The device-side full compare of `gemmar run --backend gpu`: every element of every rank's output against the
// collective recomputed on the device from the device's own per-rank GEMM partials (the same partials the
// pipeline reduced), bit for bit. The numerics are reference/numerics_inline.hpp's (the reduce in peer order
// (owner + j) % W in fp32, bf16 RNE; the fp8 wire with mori's recipe: wire_scale / wire_inv_scale /
// quantize_scaled / wire_dequantize), so the expected bits are the CPU emulation's without a host round trip.
#pragma once
#include <cstdint>

#include "kernels/gpu_compat.hpp"

namespace gemmar::kernels::dev {

struct OutputCompareArgs {
  const uint16_t* const* outputs = nullptr;  // device array [world]: rank r's output [m, n]
  // device array [world * world]: slices[q * world + p] = rank q's bf16 partial of slice p, row 0 of the slice
  const uint16_t* const* slices = nullptr;
  int world = 0;
  int64_t m = 0, n = 0, slice_rows = 0;
  bool fp8_wire = false;       // non-owners hold the dequantized wire copy of the owner's reduced rows
  bool fuse_quantize = false;  // the wire's amax over the reduce's fp32 accumulator (mori's sdma_reduce_quant)
  // mori's fp8 scatter: each partial narrowed per row per 256 columns (numerics::scatter_scale) before the reduce,
  // which sums the widened codes; n is then a multiple of 256 and the kernel's 256 threads are one segment.
  bool fp8_scatter = false;
  // device [3 * world], zeroed by the caller except first: wrong[r], nonfinite[r], first[r] (flat index
  // row * n + col of rank r's first wrong element; the caller sets it to ~0ull).
  unsigned long long* counts = nullptr;
};

// One block per output row; reads every partial twice on the fp8 wire (once for the row's amax), once on bf16.
gpuError_t launch_output_compare(const OutputCompareArgs&, gpuStream_t);

}  // namespace gemmar::kernels::dev
