// THE CALLER GUARD's judge (docs/guard.md "The guard from what the caller holds"), written once for the CPU
// reference (reference/guard_caller.cpp) and the device library (kernels/check/caller_guard.cu), which include this
// header; python/gemmar_guard.py carries the same formulas in numpy (tests/reference/reference_guard_caller_test.cpp
// checks they agree).
//
// A serving process holds, per rank r, the op's inputs A_r [M, K] (fp8 codes and scales), its weights B_r [N, K] and
// its output view O_r [M, N] (bf16), never the partials. The all-reduce is linear, so for every row i and column
// block b (kBlockCols columns): sum over the block of O[i, :] = sum_r A_r[i, :] . w_r,b with w_r,b[k] = the block's
// column sum of B_r's dequantized values (the weights' checksum, taken once at weight load). Each rank reduces its
// own view and its own inputs, over the call's sampled rows (reference/guard_sample.hpp), to one record (Layout);
// the ranks exchange the records (an all_gather of a few tens of KB) and every rank judges every (view, slice) cell
// identically, so every rank reaches the same verdict.
//
// The bound is probabilistic, derived from the rounding points the reference emulates (never tuned): every
// narrowing of an element (each rank's fp32 GEMM value, its bf16 partial, the fp8 scatter's codes, the reduce's fp32
// sum, the bf16 output, the fp8 gather's codes) leaves an error bounded by a known multiple of that element, and
// the errors of distinct elements and rounding points are independent with mean zero (the standard probabilistic
// model of rounding error). A block's checksum error is then a sum of independent bounded terms: Hoeffding,
//     P(|error| >= lambda * sigma) <= 2 exp(-lambda^2 / 2),   sigma^2 = sum of the squared per-term bounds,
// and, over the n checks of one cell, each error / sigma is 1-sub-Gaussian, so
//     P(sum of (error / sigma)^2 >= t) <= (t / n)^(n/2) exp(-(t - n) / 2)            (the aggregate test).
// sigma needs each rank's partial norm over the block, which the caller does not hold: it is bounded by
// ||B_r,b||_2 ||A_r[i, :]||_2 (the block's spectral norm, taken once at weight load), rigorous. The few roundings of
// the checksums themselves (fp32 sums on the device) are bounded worst case (det). lambda and t come from the
// per-call false-alarm probability alpha (Bonferroni over the checks and the cells): guard_caller.cpp
// caller_consts, python/gemmar_guard.py CallerPlan.
//
// C++17, <cmath> and <cstdint> only: the device sources compile as C++17.
#pragma once
#include <cmath>
#include <cstdint>

#include "reference/numerics_inline.hpp"  // GEMMAR_HD, f32_bits

namespace gemmar::caller_guard {

inline constexpr int kBlockCols = 1024;  // columns per checksum block (reference::kGuardColumnBlock)
inline constexpr int kHeaderFloats = 4;  // [0]: the call number's bits, [1]: the implementation id, [2..3] spare
inline constexpr int kMaxWorld = 64;

// Where each array sits in one rank's record (floats, row-major [listed row][block]); every rank's record has the
// same layout, so the gathered records are one [world][floats] array.
struct Layout {
  int world = 0, nb = 0;
  int64_t n = 0, L = 0, Ls = 0;         // columns; listed rows per call, per slice
  int64_t wnorm = 0;                    // [2][nb]: c_gemm[b], c_part[b] of this rank's weights (CallerWeights)
  int64_t pred = 0, pabs = 0;           // [L][nb]: A_row . w_b and |A_row| . |w_b|
  int64_t osum = 0, osq = 0, oabs = 0;  // [L][nb]: the view's block sums of O, O^2, |O|
  int64_t asq = 0;                      // [L]: ||A_row||^2 (dequantized)
  int64_t wsum = 0, wscale = 0;         // [Ls][nb], [Ls]: fp8 gather, own slice: the block sums of the wire's view of
                                        // the owner's rows (its re-quantization), and each row's wire scale
  int64_t floats = 0;                   // the record's size, a multiple of 4 (16 bytes)
  int64_t ld = 0;                       // floats from one rank's record to the next in the gathered array (>= floats: a
                                        // batch of calls exchanged at once interleaves them)
};

GEMMAR_HD inline Layout make_layout(int world, int64_t m, int64_t n, int64_t stride) {
  Layout l;
  l.world = world;
  l.n = n;
  l.nb = int((n + kBlockCols - 1) / kBlockCols);
  l.L = m / stride;
  l.Ls = l.L / world;
  int64_t o = kHeaderFloats;
  l.wnorm = o;
  o += 2 * l.nb;
  const int64_t grid = l.L * l.nb;
  l.pred = o;
  l.pabs = o + grid;
  l.osum = o + 2 * grid;
  l.osq = o + 3 * grid;
  l.oabs = o + 4 * grid;
  o += 5 * grid;
  l.asq = o;
  o += l.L;
  l.wsum = o;
  o += l.Ls * l.nb;
  l.wscale = o;
  o += l.Ls;
  l.floats = (o + 3) / 4 * 4;
  l.ld = l.floats;
  return l;
}

GEMMAR_HD inline int block_cols(const Layout& l, int b) {
  const int64_t left = l.n - int64_t(b) * kBlockCols;
  return int(left < kBlockCols ? left : kBlockCols);
}

// gamma(n) = n u / (1 - n u), u = 2^-24: the worst relative error of n fp32 roundings.
GEMMAR_HD inline double gamma32(double n) { return n * 0x1p-24 / (1.0 - n * 0x1p-24); }

// The per-configuration constants of the bound (host: guard_caller.cpp caller_consts, python CallerPlan.consts).
struct Consts {
  double lambda = 0;         // per-check multiple of sigma
  double agg_threshold = 0;  // per cell: the largest clean sum of (excess / sigma)^2
  double det_pred = 0;       // times sum_r pabs_r: the predictions' own fp32 dots
  double k_asq = 1;          // asq (fp32, from rounded A values) -> an upper bound of ||A_row||^2
  double part2 = 0;          // times P_r^2: the partial's narrowings (bf16; + the fp8 scatter's codes)
  double reduce = 0;         // times sum_r P_r: the reduce's W - 1 fp32 additions
  double out2 = 0;           // times the owner's osq: the bf16 output rounding
  double wire_rel = 0;       // fp8 gather, non-owner views: relative error of bf16(decode(code) * scale)
  double wire_sub = 0;       // fp8 gather: half a subnormal step times the row scale, per unit of row amax
  double underflow = 0;      // per column: the half subnormal steps of the partials, the output and the GEMM
  int fp8_gather = 0;        // the gather leg carries fp8 (non-owner views differ from the owner's by the wire)
  int recipe_known = 0;      // the owner re-quantizes its rows as the wire does: non-owners must match bitwise
};

// One check: a view's block sum against the prediction.
struct Terms {
  double d = 0;      // |osum_v - sum_r pred_r|
  double det = 0;    // the checksums' own worst-case rounding
  double sigma = 0;  // Hoeffding's scale of the op's rounding errors
};

GEMMAR_HD inline const float* rank_record(const float* base, const Layout& l, int r) {
  return base + int64_t(r) * l.ld;
}

// The prediction check of view v at listed row p (global position in the call's list) and block b; s owns p.
// kWorld > 0: l.world known when compiled (the device issues every rank's loads before the math); the sums run in the
// same rank order either way, so the bits are the same.
template <int kWorld = 0>
GEMMAR_HD inline Terms check_terms(const Layout& l, const Consts& c, const float* base, int v, int s, int64_t p,
                                   int b) {
  const int64_t at = p * l.nb + b;
  double pred = 0, pabs = 0, g2 = 0, p2 = 0, psum = 0;
  // One rank's terms, added in rank order.
  const auto add_rank = [&](float rp, float ra, float rs, float w1, float w2) {
    pred += double(rp);
    pabs += double(ra);
    const double asq = double(rs);
    const double a = sqrt((asq > 0 ? asq : 0.0) * c.k_asq);
    const double g = a * double(w1);
    const double q = a * double(w2);
    g2 += g * g;
    p2 += q * q;
    psum += q;
  };
  if constexpr (kWorld > 0) {
    // Every rank's five loads before any of the math: one round trip, not one per rank (a square root's slow path
    // between them keeps the compiler from hoisting the next rank's loads).
    float rp[kWorld], ra[kWorld], rs[kWorld], w1[kWorld], w2[kWorld];
    for (int r = 0; r < kWorld; ++r) {
      const float* R = rank_record(base, l, r);
      rp[r] = R[l.pred + at];
      ra[r] = R[l.pabs + at];
      rs[r] = R[l.asq + p];
      w1[r] = R[l.wnorm + b];
      w2[r] = R[l.wnorm + l.nb + b];
    }
    for (int r = 0; r < kWorld; ++r) add_rank(rp[r], ra[r], rs[r], w1[r], w2[r]);
  } else {
    for (int r = 0; r < l.world; ++r) {
      const float* R = rank_record(base, l, r);
      add_rank(R[l.pred + at], R[l.pabs + at], R[l.asq + p], R[l.wnorm + b], R[l.wnorm + l.nb + b]);
    }
  }
  const float* V = rank_record(base, l, v);
  const float* O = rank_record(base, l, s);
  const int T = block_cols(l, b);
  const double gT = gamma32(T), kT = 1.0 / (1.0 - gT);
  const double own_sq = double(O[l.osq + at]) * kT;
  const double red = c.reduce * psum;
  double sigma2 = g2 + c.part2 * p2 + red * red + c.out2 * own_sq;
  if (c.fp8_gather && v != s) {
    double row_sq = 0;
    for (int bb = 0; bb < l.nb; ++bb) row_sq += double(O[l.osq + p * l.nb + bb]);
    const double amax = sqrt(row_sq * kT);
    const double w = c.wire_rel * sqrt(own_sq) + sqrt(double(T)) * amax * c.wire_sub;
    sigma2 += w * w;
  }
  Terms t;
  t.d = fabs(double(V[l.osum + at]) - pred);
  t.det = c.det_pred * pabs + gT * kT * double(V[l.oabs + at]) + double(T) * c.underflow;
  t.sigma = sqrt(sigma2);
  return t;
}

// What one (view, slice) cell found over its checks; 16 words, the device writes it as it is: the C ABI
// (kernels/check/gemmar_guard.h, "cells of 16 words") and Python's cell_dtype (python/gemmar_guard_caller.py) read
// it at that stride. Without the two pad words the device wrote 14-word cells, and Python read every cell after the
// first from the wrong offset: every clean call was flagged on the first device run of the library (2026-12-07).
struct Cell {
  uint32_t checks = 0, pred_fail = 0, nonfinite = 0, worst_idx = 0;  // idx = local row * nb + block
  float worst_ratio = -1, worst_d = 0, worst_bound = 0, zsum = 0;    // worst_ratio: +inf for a non-finite sum
  uint32_t gather = 0, gather_first = 0xffffffffu;  // bitwise mismatches against the view it must equal
  uint32_t wire = 0, wire_first = 0xffffffffu;      // fp8 gather: off the wire's re-quantization or its bound
  uint32_t bypass = 0, other = 0xffffffffu;         // non-owner holding the owner's exact sums; the compared rank
  uint32_t pad0 = 0, pad1 = 0;
};
static_assert(sizeof(Cell) == 16 * sizeof(uint32_t), "the C ABI's and Python's cell is 16 words");

struct Outcome {
  bool fail = false, nonfinite = false;
  bool gather = false, wire = false, bypass = false;
  double ratio = 0, z2 = 0, d = 0, bound = 0;
};

GEMMAR_HD inline bool same_bits(float a, float b) { return numerics::f32_bits(a) == numerics::f32_bits(b); }

// The rank an fp8 gather's non-owner view is compared with bitwise: the lowest other non-owner (-1: none).
GEMMAR_HD inline int other_non_owner(int world, int v, int s) {
  for (int r = 0; r < world; ++r)
    if (r != v && r != s) return r;
  return -1;
}

// Every test of view v at listed row p, block b (s owns p); kWorld as check_terms'.
template <int kWorld = 0>
GEMMAR_HD inline Outcome check_one(const Layout& l, const Consts& c, const float* base, int v, int s, int64_t p,
                                   int b) {
  Outcome o;
  const Terms t = check_terms<kWorld>(l, c, base, v, s, p, b);
  const double bound = t.det + c.lambda * t.sigma;
  o.d = t.d;
  o.bound = bound;
  o.fail = !(t.d <= bound);  // NaN fails
  o.nonfinite = !(t.d - t.d == 0.0);
  o.ratio = o.nonfinite ? INFINITY : (bound > 0 ? t.d / bound : (t.d > 0 ? INFINITY : 0.0));
  const double excess = t.d - t.det;
  o.z2 =
      o.nonfinite ? INFINITY : (excess <= 0 ? 0.0 : (t.sigma > 0 ? (excess / t.sigma) * (excess / t.sigma) : INFINITY));
  if (v == s) return o;
  const int64_t at = p * l.nb + b;
  const float* V = rank_record(base, l, v);
  const float* O = rank_record(base, l, s);
  const float view = V[l.osum + at], own = O[l.osum + at];
  if (!c.fp8_gather) {  // the gather copies the owner's bits; every view is summed by the same code
    o.gather = !same_bits(view, own);
    return o;
  }
  const int other = other_non_owner(l.world, v, s);
  const bool agrees = other < 0 || same_bits(view, rank_record(base, l, other)[l.osum + at]);
  const int64_t own_at = (p - int64_t(s) * l.Ls) * l.nb + b;
  if (c.recipe_known) {
    const float wire = O[l.wsum + own_at];
    if (same_bits(view, wire)) return o;
    if (same_bits(view, own) && !same_bits(own, wire) && double(O[l.osq + at]) > 0) {
      o.bypass = true;  // the gather moved the owner's bf16: the fp8 wire never engaged
      return o;
    }
    // Every non-owner holds the same wrong view: the wire (its scale or codes) was wrong; one alone: its gather.
    if (agrees)
      o.wire = true;
    else
      o.gather = true;
    return o;
  }
  o.gather = !agrees;
  if (same_bits(view, own) && double(O[l.osq + at]) > 0) {
    o.bypass = true;
    return o;
  }
  // No recipe to replay: the owner's and the view's sums within the wire's rounding bound.
  const int T = block_cols(l, b);
  const double gT = gamma32(T), kT = 1.0 / (1.0 - gT);
  double row_sq = 0;
  for (int bb = 0; bb < l.nb; ++bb) row_sq += double(O[l.osq + p * l.nb + bb]);
  const double sigma = c.wire_rel * sqrt(double(O[l.osq + at]) * kT) + sqrt(double(T)) * sqrt(row_sq * kT) * c.wire_sub;
  const double det = gT * kT * (double(V[l.oabs + at]) + double(O[l.oabs + at]));
  o.wire = !(fabs(double(view) - double(own)) <= det + c.lambda * sigma);
  return o;
}

// Adds one check's outcome (index idx in the cell) to a cell; the device adds per thread in index order and merges
// the threads' cells with cell_merge in a fixed tree, the host adds in index order: counts, worst and firsts agree.
GEMMAR_HD inline void cell_add(Cell& cell, const Outcome& o, uint32_t idx) {
  ++cell.checks;
  if (o.fail) ++cell.pred_fail;
  if (o.nonfinite) ++cell.nonfinite;
  const float ratio = float(o.ratio);
  if (ratio > cell.worst_ratio) {  // indices come in increasing order: a tie keeps the first
    cell.worst_ratio = ratio;
    cell.worst_idx = idx;
    cell.worst_d = float(o.d);
    cell.worst_bound = float(o.bound);
  }
  cell.zsum = float(double(cell.zsum) + o.z2);
  if (o.gather && cell.gather++ == 0) cell.gather_first = idx;
  if (o.wire && cell.wire++ == 0) cell.wire_first = idx;
  if (o.bypass) ++cell.bypass;
}

GEMMAR_HD inline void cell_merge(Cell& a, const Cell& b) {
  if (b.checks == 0) return;
  if (a.checks == 0) {
    a = b;
    return;
  }
  if (b.worst_ratio > a.worst_ratio || (b.worst_ratio == a.worst_ratio && b.worst_idx < a.worst_idx)) {
    a.worst_ratio = b.worst_ratio;
    a.worst_idx = b.worst_idx;
    a.worst_d = b.worst_d;
    a.worst_bound = b.worst_bound;
  }
  a.checks += b.checks;
  a.pred_fail += b.pred_fail;
  a.nonfinite += b.nonfinite;
  a.zsum = float(double(a.zsum) + double(b.zsum));
  a.gather += b.gather;
  a.gather_first = b.gather_first < a.gather_first ? b.gather_first : a.gather_first;
  a.wire += b.wire;
  a.wire_first = b.wire_first < a.wire_first ? b.wire_first : a.wire_first;
  a.bypass += b.bypass;
}

// The cell's verdict bits: the prediction (per check or aggregate), the gather, the wire.
GEMMAR_HD inline bool cell_reduce_flagged(const Cell& c, const Consts& k) {
  return c.pred_fail > 0 || !(double(c.zsum) <= k.agg_threshold);
}

}  // namespace gemmar::caller_guard
