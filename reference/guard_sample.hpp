// Which rows the per-call guard reads (docs/guard.md "Sampled rows"), written once for the CPU emulation, the
// GPU kernels (kernels/check/guard.cu picks them on the device, inside the replayed graph) and, in plain Python,
// python/gemmar_guard.py.
//
// Why a sample: the guard's checks are linear, so they hold on any subset of rows; reading every row of every
// rank's partial and output costs ~28% of the op on one H200 (docs/guard.md), reading one row in G costs 1/G
// of that. The rows are drawn anew on every call from (seed, call), one per aligned stratum of G rows: a whole
// corrupted stratum, so any run of 2G - 1 or more consecutive corrupted rows (a 128-row GEMM tile band, a copy's
// band) holds a sampled row on every call, whatever the seed; a single corrupted row is read with probability
// 1/G per call, and a fault that corrupts a fixed set of rows cannot stay in the rows the guard skips, since
// they move.
// G = 1 reads every row (the full guard). G divides 128, so strata never cross a 128-row tile band or a slice.
// C++17, only <cstdint>: the device sources compile as C++17.
#pragma once
#include <cstdint>

#include "reference/numerics_inline.hpp"  // GEMMAR_HD

namespace gemmar::guard_sample {

constexpr int kMaxStride = 128;  // strata nest in the 128-row bands (BLOCK_M of blockscale, the slice unit)

GEMMAR_HD inline bool valid_stride(int64_t g) { return g >= 1 && g <= kMaxStride && kMaxStride % g == 0; }

GEMMAR_HD inline uint64_t mix64(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The draw of stratum `stratum` in call `call`: an index in [0, count) of that stratum's candidate rows
// (count = G on the device, where every row is a candidate; on the CPU emulation the rows it holds there).
GEMMAR_HD inline int64_t pick(uint64_t seed, uint64_t call, int64_t stratum, int64_t count) {
  const uint64_t h = mix64(mix64(seed ^ mix64(call)) ^ uint64_t(stratum));
  return int64_t(h % uint64_t(count));
}

// The sampled global row of stratum `stratum` when every row is a candidate.
GEMMAR_HD inline int64_t row(uint64_t seed, uint64_t call, int64_t stratum, int64_t stride) {
  return stratum * stride + pick(seed, call, stratum, stride);
}

}  // namespace gemmar::guard_sample
