// The "missing release" fault's pattern (reference/emulation.hpp Faults::no_release), written once for the
// CPU emulation and the GPU kernels (hipcc / nvcc include this same header), so the GPU's injected fault
// makes exactly the lines stale that the emulation does, and its output can be compared bit for bit.
//
// Per (seed, receiving rank r, owner o): 1 or 2 of the 32 bands of o's slice are hit; inside a hit band each
// 64-byte line of a row (32 bf16 or 64 fp8 elements) is stale with a probability drawn per receiving rank.
// The draws are reference::counter_hash (reference/operands.cpp) on the tag 0x4e52 ("NR"), re-implemented
// here with plain integer operations so the device can evaluate it. Both sides of the comparison (emulation.cpp
// and the kernels) call only this header, so they agree even if counter_hash changes; keeping the two equal
// keeps the pattern the one the emulation had before this header existed.
// C++17, only <cstdint>: the device sources compile as C++17.
#pragma once
#include <cstdint>

#include "reference/numerics_inline.hpp"  // GEMMAR_HD

namespace gemmar::no_release {

constexpr int kBands = 32;
constexpr int64_t kLineBytes = 64;  // what a copy engine reads stale at a time
constexpr uint32_t kTag = 0x4e52;

GEMMAR_HD inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// == reference::counter_hash(seed, rank, Tensor(kTag), row, col).
GEMMAR_HD inline uint64_t hash(uint64_t seed, int rank, int64_t row, int64_t col) {
  uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ ((uint64_t(uint32_t(rank)) << 32) | uint64_t(kTag)));
  h = splitmix64(h ^ uint64_t(row));
  return splitmix64(h ^ uint64_t(col));
}

// Bit b set: band b of `owner`'s slice is read stale by `receiver`.
GEMMAR_HD inline uint32_t band_mask(uint64_t seed, int receiver, int owner) {
  const int bands = 1 + int(hash(seed, receiver, -1, -1) & 1u);
  uint32_t mask = 0;
  for (int b = 0; b < bands; ++b) mask |= 1u << unsigned(hash(seed, receiver, -2 - owner, b) % kBands);
  return mask;
}

// The band of a global (padded) row inside its owner's slice of `slice_rows` rows.
GEMMAR_HD inline int band_of(int64_t row, int owner, int64_t slice_rows) {
  return int((row - int64_t(owner) * slice_rows) * kBands / slice_rows);
}

// The per-receiver line probability p = 0.004 + 0.008 u as an integer threshold on the 53-bit draw:
// u' = x * 2^-53 < p  <=>  x < ceil(p * 2^53) for the integer x (the scaling by 2^53 is exact). Host only:
// the device gets the threshold, so no device FMA contraction can move p by an ulp.
inline uint64_t line_threshold(uint64_t seed, int receiver) {
  const double u = double(hash(seed, receiver, -3, -3) >> 11) * 0x1.0p-53;
  const double spread = 0.008 * u;  // separate statements: nothing to contract into an FMA
  const double p = 0.004 + spread;
  const double t = p * 0x1.0p53;
  uint64_t c = uint64_t(t);  // floor (t >= 0)
  if (double(c) < t) ++c;
  return c;
}

// Is 64-byte line `line` of global row `row`, as read by `receiver`, stale (given its band is hit)?
GEMMAR_HD inline bool line_stale(uint64_t seed, int receiver, int64_t row, int64_t line, uint64_t threshold) {
  return (hash(seed, receiver, row, line) >> 11) < threshold;
}

}  // namespace gemmar::no_release
