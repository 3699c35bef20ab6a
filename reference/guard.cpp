#include "reference/guard.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "common/errors.hpp"
#include "reference/formats.hpp"
#include "reference/guard_sample.hpp"
#include "reference/quant.hpp"

namespace gemmar::reference {
namespace {

constexpr double kUnitBf16 = 0x1p-8;   // RNE to 8 significant bits
constexpr double kUnitFp32 = 0x1p-24;  // RNE to 24 significant bits
constexpr double kUnitE4m3 = 0x1p-4;   // RNE to 4 significant bits
// Half of bf16's smallest subnormal, 2^-133: the absolute error of one bf16 rounding below the normal range.
constexpr double kBf16Underflow = 0x1p-134;

bool same_bits(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

std::string num(double v) {
  std::ostringstream o;
  o.precision(4);
  o << v;
  return o.str();
}

// Rows of `rows` per slice (index = owner): [first, last) positions in the ascending row list.
std::vector<std::pair<size_t, size_t>> slice_ranges(const GuardContext& c) {
  const int W = c.shape.world;
  const int64_t S = slice_rows(c.shape, c.config);
  std::vector<std::pair<size_t, size_t>> out(size_t(W), {0, 0});
  size_t i = 0;
  for (int s = 0; s < W; ++s) {
    out[size_t(s)].first = i;
    while (i < c.rows.size() && c.rows[i] / S == s) ++i;
    out[size_t(s)].second = i;
  }
  GEMMAR_CHECK(i == c.rows.size(), "guard: rows must be ascending and below padded M");
  return out;
}

// Tracks the worst violation of one check: how many items broke their bound and the worst ratio.
struct Worst {
  int64_t count = 0;
  double ratio = 0, diff = 0, bound = 0;
  int64_t where = -1;
  void see(double d, double b, int64_t at) {
    if (d <= b) return;  // NaN fails this test and is counted
    ++count;
    const double q = std::isfinite(d) ? d / std::max(b, 1e-300) : INFINITY;
    if (where < 0 || q > ratio) {
      ratio = q;
      diff = d;
      bound = b;
      where = at;
    }
  }
  std::string text(const char* what) const {
    return std::string(what) + " " + std::to_string(where) + ": |difference| " + num(diff) + " against the bound " +
           num(bound) + (std::isfinite(diff) ? " (" + num(ratio) + "x)" : " (not finite)");
  }
};

std::string list_some(const std::vector<int64_t>& v, size_t most = 6) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < most; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() > most) s += ", ... (" + std::to_string(v.size()) + ")";
  return s;
}

void add_finding(std::vector<GuardFinding>& out, const std::string& code, const std::string& msg) {
  for (const auto& f : out)
    if (f.code == code) return;  // the first (lowest slice / rank) is reported: one finding per code
  out.push_back({code, msg});
}

struct Checker {
  const GuardContext& c;
  const std::vector<GuardSums>& sums;
  int W;
  int64_t N, nb;
  std::vector<std::pair<size_t, size_t>> ranges;
  std::vector<GuardFinding> out;

  // Rows of slice s whose owner's row sum is off the sum of the partials' (localises a reduce failure).
  std::vector<int64_t> reduce_rows(int s) const {
    std::vector<int64_t> bad;
    for (size_t i = ranges[size_t(s)].first; i < ranges[size_t(s)].second; ++i) {
      double p = 0, pa = 0;
      for (int r = 0; r < W; ++r)
        for (int64_t b = 0; b < nb; ++b) {
          p += sums[size_t(r)].partial_blk[i * size_t(nb) + size_t(b)];
          pa += sums[size_t(r)].partial_blk_abs[i * size_t(nb) + size_t(b)];
        }
      const double o = sums[size_t(s)].out_row[i];
      // The block sums were added up once more (nb terms): gamma(nb) on their abs sum.
      const double bound =
          guard_reduce_bound(sums[size_t(s)].out_row_abs[i], pa, N, W) + guard_gamma(nb, kUnitFp32) * pa;
      if (!(std::fabs(o - p) <= bound)) bad.push_back(c.rows[i]);
    }
    return bad;
  }

  void reduce(int s) {
    const auto [lo, hi] = ranges[size_t(s)];
    const int64_t R = int64_t(hi - lo);
    const GuardSums& own = sums[size_t(s)];
    Worst w;
    for (int64_t col = 0; col < N; ++col) {
      double p = 0, pa = 0;
      for (int r = 0; r < W; ++r) {
        p += sums[size_t(r)].partial_col[size_t(s * N + col)];
        pa += sums[size_t(r)].partial_col_abs[size_t(s * N + col)];
      }
      const size_t at = size_t(s * N + col);
      w.see(std::fabs(double(own.out_col[at]) - p), guard_reduce_bound(own.out_col_abs[at], pa, R, W), col);
    }
    if (!w.count) return;
    add_finding(out, "GUARD_REDUCE",
                "slice " + std::to_string(s) + " (owner rank " + std::to_string(s) +
                    "): its output's column sums are "
                    "off the sum over the " +
                    std::to_string(W) + " ranks' partials in " + std::to_string(w.count) + " of " + std::to_string(N) +
                    " columns; worst " + w.text("column") + "; rows off: " + list_some(reduce_rows(s)) +
                    ": the reduce did not sum what the GEMMs produced (a put that never "
                    "landed, a slot read before it landed, or an output left from another call).");
  }

  std::vector<int64_t> differing_rows(int r, int s) const {
    std::vector<int64_t> bad;
    for (size_t i = ranges[size_t(s)].first; i < ranges[size_t(s)].second; ++i)
      if (!same_bits(sums[size_t(r)].out_row[i], sums[size_t(s)].out_row[i])) bad.push_back(c.rows[i]);
    return bad;
  }

  // The fp8 wire's own check: its sums within the e4m3 bound of the owner's exact sums.
  void wire_bound(int s, int64_t R) {
    const GuardSums& own = sums[size_t(s)];
    Worst w;
    for (int64_t col = 0; col < N; ++col) {
      const size_t at = size_t(s * N + col);
      w.see(std::fabs(double(own.wire_col[size_t(col)]) - double(own.out_col[at])),
            guard_wire_bound(own.out_col_abs[at], own.wire_scale_sum, R, c.wire_format), col);
    }
    if (w.count)
      add_finding(out, "GUARD_WIRE",
                  "slice " + std::to_string(s) +
                      ": the fp8 wire's column sums are off the owner's bf16 sums beyond "
                      "e4m3's rounding in " +
                      std::to_string(w.count) + " columns; worst " + w.text("column") +
                      ": the quantize did not encode the reduced slice.");
  }

  void gather(int s) {
    const bool fp8 = uses_fp8_wire(c.config);
    const auto [lo, hi] = ranges[size_t(s)];
    if (hi == lo) return;
    const GuardSums& own = sums[size_t(s)];
    const float* exact = own.out_col.data() + s * N;
    const float* expect = fp8 ? own.wire_col.data() : exact;
    if (fp8) wire_bound(s, int64_t(hi - lo));
    const bool wire_changes = fp8 && !std::equal(exact, exact + N, expect, same_bits);
    for (int r = 0; r < W; ++r) {
      if (r == s) continue;
      const float* view = sums[size_t(r)].out_col.data() + s * N;
      std::vector<int64_t> cols;
      for (int64_t col = 0; col < N; ++col)
        if (!same_bits(view[col], expect[col])) cols.push_back(col);
      if (cols.empty()) continue;
      if (wire_changes && std::equal(view, view + N, exact, same_bits)) {
        add_finding(out, "GUARD_WIRE",
                    "rank " + std::to_string(r) + "'s view of slice " + std::to_string(s) +
                        " holds the owner's exact "
                        "bf16 sums, where the fp8 wire changes " +
                        std::to_string(cols.size()) + " of " + std::to_string(N) +
                        " columns: the gather moved bf16, the fp8 wire never engaged.");
        continue;
      }
      std::string rows_note;
      if (!fp8) rows_note = "; rows: " + list_some(differing_rows(r, s));
      add_finding(out, "GUARD_GATHER",
                  "rank " + std::to_string(r) + "'s view of slice " + std::to_string(s) + " differs from " +
                      (fp8 ? "the fp8 wire's sums (owner " : "the owner's (rank ") + std::to_string(s) + ") in " +
                      std::to_string(cols.size()) + " of " + std::to_string(N) + " column sums (first columns " +
                      list_some(cols, 4) + rows_note +
                      "): the gather to that rank did not deliver this call's slice "
                      "(a silent put, a stale or early read of the owner's data).");
    }
  }

  void gemm(int r) {
    const GuardSums& g = sums[size_t(r)];
    if (g.gemm_pred.empty()) return;
    Worst w;
    for (size_t i = 0; i < c.rows.size(); ++i)
      for (int64_t b = 0; b < nb; ++b) {
        const size_t at = i * size_t(nb) + size_t(b);
        const int64_t cols = std::min(kGuardColumnBlock, N - b * kGuardColumnBlock);
        w.see(std::fabs(double(g.partial_blk[at]) - double(g.gemm_pred[at])),
              guard_gemm_bound(g.partial_blk_abs[at], g.gemm_pred_abs[at], cols, c.shape.k, c.gemm_roundings),
              c.rows[i] * 1000 + b);
      }
    if (!w.count) return;
    add_finding(out, "GUARD_GEMM",
                "rank " + std::to_string(r) + "'s partial: " + std::to_string(w.count) + " of " +
                    std::to_string(int64_t(c.rows.size()) * nb) +
                    " row blocks are off A_row . checksum(B) beyond "
                    "the GEMM's rounding; worst row " +
                    std::to_string(w.where / 1000) + " block " + std::to_string(w.where % 1000) + ": |difference| " +
                    num(w.diff) + " against the bound " + num(w.bound) +
                    (std::isfinite(w.diff) ? " (" + num(w.ratio) + "x)" : " (not finite)") +
                    ": this rank's GEMM computed with other operands than the weights as loaded (a wrong scale, a "
                    "corrupted operand) or other inputs.");
  }
};

void check_sizes(const GuardContext& c, const GuardSums& g, bool collective) {
  const size_t W = size_t(c.shape.world), N = size_t(c.shape.n), R = c.rows.size();
  const size_t nb = size_t(guard_column_blocks(c.shape.n));
  GEMMAR_CHECK(g.partial_blk.size() == R * nb && g.partial_blk_abs.size() == R * nb, "guard: partial row sums");
  GEMMAR_CHECK(g.gemm_pred.empty() || (g.gemm_pred.size() == R * nb && g.gemm_pred_abs.size() == R * nb),
               "guard: GEMM prediction size");
  if (!collective) return;
  GEMMAR_CHECK(g.partial_col.size() == W * N && g.partial_col_abs.size() == W * N && g.out_col.size() == W * N &&
                   g.out_col_abs.size() == W * N && g.out_row.size() == R && g.out_row_abs.size() == R,
               "guard: column / row sums size");
  GEMMAR_CHECK(!uses_fp8_wire(c.config) || g.wire_col.size() == N, "guard: fp8 wire sums size");
}

}  // namespace

int64_t guard_column_blocks(int64_t n) { return (n + kGuardColumnBlock - 1) / kGuardColumnBlock; }

double guard_gamma(int64_t n, double u) {
  const double nu = double(n) * u;
  GEMMAR_CHECK(nu < 0.5, "guard: gamma(", n, ") out of its range");
  return nu / (1.0 - nu);
}

// Per element of the owner's output: out = bf16(fl32(sum of W bf16 partials, from 0)): W-1 fp32 additions,
// |error| <= gamma(W-1) sum|p_r|, then one bf16 rounding, <= u_bf16 |out| (+ underflow). Over `terms` elements,
// plus the checksums' own fp32 sums (<= gamma(terms) times the abs sum each) and the abs sums being computed
// in fp32 too (an underestimate by at most gamma(terms): divide by 1 - gamma).
double guard_reduce_bound(double abs_out, double abs_partials, int64_t terms, int world) {
  const double gs = guard_gamma(terms, kUnitFp32);
  const double e = (kUnitBf16 + gs) * abs_out + (guard_gamma(std::max(0, world - 1), kUnitFp32) + gs) * abs_partials;
  return e * (1 + gs) / (1 - gs) + double(terms) * kBf16Underflow;
}

// Per element of the owner's slice x (bf16): code = e4m3(fl(x * inv)), q = bf16(fl(decode(code) * scale)) with
// scale * inv = 1 +- 3 u_fp32 (both rounded once from amax): |q - x| <= c_rel |x| + half the e4m3 subnormal
// spacing times the row scale, c_rel = (1 + u_e4m3)(1 + u_bf16)(1 + gamma(5)) - 1. Checksums as above.
double guard_wire_bound(double abs_out, double scale_sum, int64_t terms, Fp8Format fmt) {
  const double gs = guard_gamma(terms, kUnitFp32);
  const double c_rel = (1 + kUnitE4m3) * (1 + kUnitBf16) * (1 + guard_gamma(5, kUnitFp32)) - 1;
  // e4m3fn's smallest subnormal is 2^-9, fnuz's 2^-10 (bias 8): half of it per element, times its row scale.
  const double sub_half = fmt == Fp8Format::E4M3FNUZ ? 0x1p-11 : 0x1p-10;
  const double e = (c_rel + gs * (2 + c_rel)) * abs_out + sub_half * (1 + kUnitBf16) * scale_sum * (1 + gs);
  return e * (1 + gs) / (1 - gs) + double(terms) * kBf16Underflow * 2;
}

// Per element: the GEMM's fp32 value c differs from sum_k A_deq B_deq by <= gamma(n_g + 2) sum_k |A_deq B_deq|
// (n_g roundings from the codes and scales to c, guard_gemm_roundings; 2 more because A_deq, B_deq are rounded
// products of code and scale); the partial is bf16(c), <= u_bf16 |p|. Over the block's `terms` columns the
// abs sums are |A_row| . babs = abs_pred; the prediction itself (bsum rounded to fp32, a K-term fp32 dot) is off
// by <= gamma(K + 1) abs_pred, the partial's block sum by gamma(terms) abs_partial.
double guard_gemm_bound(double abs_partial, double abs_pred, int64_t terms, int64_t k, int64_t gemm_roundings) {
  const double gs = guard_gamma(terms, kUnitFp32);
  const double gk = guard_gamma(k + 3, kUnitFp32);
  const double e =
      (guard_gamma(gemm_roundings + 2, kUnitFp32) + guard_gamma(k + 1, kUnitFp32)) * abs_pred * (1 + gk) / (1 - gk) +
      (kUnitBf16 + gs) * abs_partial * (1 + gs) / (1 - gs);
  return e + double(terms) * kBf16Underflow;
}

// The fp32 value of one partial element: K products of two codes (exact: 4 x 4 significant bits), their
// additions (K), and per scale block the scale product, its multiply and the accumulation (3); ptpc applies its
// scales once (3). The order of the additions inside the MMA does not matter to a gamma bound.
int64_t guard_gemm_roundings(Quant q, int64_t k) { return k + 3 * (k / scale_k_block(q, k)) + 3; }

GuardContext guard_context(const Shape& shape, const Config& config, const std::vector<int64_t>& rows) {
  GuardContext c;
  c.shape = shape;
  c.config = effective_config(config);
  c.rows = rows;
  c.gemm_roundings = guard_gemm_roundings(c.config.quant, shape.k);
  return c;
}

std::vector<size_t> guard_sample_positions(const std::vector<int64_t>& candidates, int64_t stride, uint64_t seed,
                                           uint64_t call) {
  GEMMAR_CHECK(guard_sample::valid_stride(stride), "guard: sample stride ", stride, " does not divide ",
               guard_sample::kMaxStride);
  std::vector<size_t> out;
  for (size_t i = 0; i < candidates.size();) {
    const int64_t stratum = candidates[i] / stride;
    size_t end = i;
    while (end < candidates.size() && candidates[end] / stride == stratum) ++end;
    out.push_back(i + size_t(guard_sample::pick(seed, call, stratum, int64_t(end - i))));
    i = end;
  }
  return out;
}

uint64_t guard_sample_seed(uint64_t run_seed) { return guard_sample::mix64(run_seed ^ 0x4755415244ull); }

GuardWeights guard_weights(const std::vector<float>& b_deq, int64_t n, int64_t k) {
  GEMMAR_CHECK(int64_t(b_deq.size()) == n * k, "guard: B size");
  GuardWeights w;
  w.k = k;
  w.blocks = guard_column_blocks(n);
  w.bsum.assign(size_t(w.blocks * k), 0.0f);
  w.babs.assign(size_t(w.blocks * k), 0.0f);
  std::vector<double> s(static_cast<size_t>(k)), a(static_cast<size_t>(k));
  for (int64_t b = 0; b < w.blocks; ++b) {
    std::fill(s.begin(), s.end(), 0.0);
    std::fill(a.begin(), a.end(), 0.0);
    for (int64_t col = b * kGuardColumnBlock; col < std::min(n, (b + 1) * kGuardColumnBlock); ++col)
      for (int64_t kk = 0; kk < k; ++kk) {
        s[size_t(kk)] += b_deq[size_t(col * k + kk)];
        a[size_t(kk)] += std::fabs(b_deq[size_t(col * k + kk)]);
      }
    for (int64_t kk = 0; kk < k; ++kk) {
      w.bsum[size_t(b * k + kk)] = float(s[size_t(kk)]);
      w.babs[size_t(b * k + kk)] = float(a[size_t(kk)]);
    }
  }
  return w;
}

GuardSums guard_rank_sums(const GuardContext& c, int rank, const std::vector<uint16_t>& partial,
                          const std::vector<uint16_t>& output, const std::vector<float>& a_deq,
                          const GuardWeights* weights) {
  const int W = c.shape.world;
  const int64_t N = c.shape.n, K = c.shape.k, nb = guard_column_blocks(N);
  const int64_t S = slice_rows(c.shape, c.config);
  const size_t R = c.rows.size();
  GEMMAR_CHECK(partial.size() == R * size_t(N) && output.size() == R * size_t(N), "guard: buffer sizes");
  const size_t WN = static_cast<size_t>(W * N);
  std::vector<double> pc(WN), pca(WN), oc(WN), oca(WN);
  std::vector<double> wire(static_cast<size_t>(N));
  GuardSums g;
  g.partial_blk.resize(R * size_t(nb));
  g.partial_blk_abs.resize(R * size_t(nb));
  g.out_row.resize(R);
  g.out_row_abs.resize(R);
  const bool fp8 = uses_fp8_wire(c.config);
  std::vector<uint8_t> codes(static_cast<size_t>(N));
  std::vector<uint16_t> deq(static_cast<size_t>(N));
  for (size_t i = 0; i < R; ++i) {
    const int64_t s = c.rows[i] / S;
    const uint16_t* p = partial.data() + i * size_t(N);
    const uint16_t* o = output.data() + i * size_t(N);
    double orow = 0, orow_abs = 0;
    for (int64_t b = 0; b < nb; ++b) {
      double bs = 0, ba = 0;
      for (int64_t col = b * kGuardColumnBlock; col < std::min(N, (b + 1) * kGuardColumnBlock); ++col) {
        const double x = from_bf16(p[col]), y = from_bf16(o[col]);
        bs += x;
        ba += std::fabs(x);
        orow += y;
        orow_abs += std::fabs(y);
        pc[size_t(s * N + col)] += x;
        pca[size_t(s * N + col)] += std::fabs(x);
        oc[size_t(s * N + col)] += y;
        oca[size_t(s * N + col)] += std::fabs(y);
      }
      g.partial_blk[i * size_t(nb) + size_t(b)] = float(bs);
      g.partial_blk_abs[i * size_t(nb) + size_t(b)] = float(ba);
    }
    g.out_row[i] = float(orow);
    g.out_row_abs[i] = float(orow_abs);
  }
  auto to_f = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  g.partial_col = to_f(pc);
  g.partial_col_abs = to_f(pca);
  g.out_col = to_f(oc);
  g.out_col_abs = to_f(oca);
  if (fp8) {
    // A second pass over the owned rows: each row quantized and dequantized as the wire does it.
    double ssum = 0;
    for (size_t i = 0; i < R; ++i) {
      if (c.rows[i] / S != rank) continue;
      const float scale = wire_quantize_row(output.data() + i * size_t(N), N, codes.data(), c.wire_format);
      wire_dequantize_row(codes.data(), scale, N, deq.data(), c.wire_format);
      ssum += scale;
      for (int64_t col = 0; col < N; ++col) wire[size_t(col)] += from_bf16(deq[size_t(col)]);
    }
    g.wire_col = to_f(wire);
    g.wire_scale_sum = float(ssum);
  }
  if (!a_deq.empty() && weights) {
    GEMMAR_CHECK(a_deq.size() == R * size_t(K) && weights->k == K && weights->blocks == nb, "guard: GEMM inputs");
    g.gemm_pred.resize(R * size_t(nb));
    g.gemm_pred_abs.resize(R * size_t(nb));
    for (size_t i = 0; i < R; ++i)
      for (int64_t b = 0; b < nb; ++b) {
        double s = 0, a = 0;
        const float* ar = a_deq.data() + i * size_t(K);
        for (int64_t kk = 0; kk < K; ++kk) {
          s += double(ar[kk]) * weights->bsum[size_t(b * K + kk)];
          a += std::fabs(double(ar[kk])) * weights->babs[size_t(b * K + kk)];
        }
        g.gemm_pred[i * size_t(nb) + size_t(b)] = float(s);
        g.gemm_pred_abs[i * size_t(nb) + size_t(b)] = float(a);
      }
  }
  return g;
}

std::vector<GuardFinding> guard_check(const GuardContext& c, const std::vector<GuardSums>& sums) {
  GEMMAR_CHECK(int(sums.size()) == c.shape.world, "guard: ", sums.size(), " ranks' sums for world ", c.shape.world);
  const bool collective = has_collective(c.config.mode);
  for (const auto& g : sums) check_sizes(c, g, collective);
  Checker k{c, sums, c.shape.world, c.shape.n, guard_column_blocks(c.shape.n), slice_ranges(c), {}};
  for (int r = 0; r < k.W; ++r) k.gemm(r);
  if (collective)
    for (int s = 0; s < k.W; ++s) {
      if (k.ranges[size_t(s)].first == k.ranges[size_t(s)].second) continue;
      k.reduce(s);
      k.gather(s);
    }
  return k.out;
}

}  // namespace gemmar::reference
