#include "reference/guard_caller.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "common/errors.hpp"
#include "reference/formats.hpp"
#include "reference/guard_sample.hpp"

namespace gemmar::reference {
namespace {

namespace cg = gemmar::caller_guard;

constexpr double kUnitBf16 = 0x1p-8;
constexpr double kUnitFp32 = 0x1p-24;
constexpr double kUnitE4m3 = 0x1p-4;
// The relative margin on the Gram matrix's largest eigenvalue: its double-precision rounding is ~1e-13 relative.
constexpr double kSpectralMargin = 1e-6;

float round_up(double x) {
  const float f = float(x);
  return double(f) >= x ? f : std::nextafter(f, INFINITY);
}

// The largest eigenvalue of B_b B_b^T (or B_b^T B_b, the smaller one), B_b the block's columns of B: ||B_b||_2^2.
double spectral_norm2(const std::vector<float>& b_deq, int64_t k, int64_t col0, int64_t cols) {
  Eigen::MatrixXd blk(cols, k);
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t j = 0; j < k; ++j) blk(c, j) = double(b_deq[size_t((col0 + c) * k + j)]);
  const Eigen::MatrixXd gram =
      cols <= k ? Eigen::MatrixXd(blk * blk.transpose()) : Eigen::MatrixXd(blk.transpose() * blk);
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(gram, Eigen::EigenvaluesOnly);
  GEMMAR_CHECK(eig.info() == Eigen::Success, "caller guard: the Gram matrix's eigenvalues did not converge");
  return std::max(0.0, eig.eigenvalues().maxCoeff());
}

std::string num(double v) {
  std::ostringstream o;
  o.precision(4);
  o << v;
  return o.str();
}

struct Where {
  int64_t row;
  int block;
};
Where where_of(const CallerPlan& p, int s, uint32_t idx, const std::vector<int64_t>& rows) {
  const int nb = p.layout.nb;
  const int64_t pos = int64_t(s) * p.layout.Ls + int64_t(idx / uint32_t(nb));
  return {pos < int64_t(rows.size()) ? rows[size_t(pos)] : -1, int(idx % uint32_t(nb))};
}

std::string confidence(const CallerPlan& p) {
  return "the bounds hold on a clean call with probability >= 1 - " + num(p.config.alpha) +
         " under the rounding model (lambda = " + num(p.consts.lambda) + " per check over " + std::to_string(p.checks) +
         " checks, aggregate threshold " + num(p.consts.agg_threshold) + " over " +
         std::to_string(p.layout.Ls * p.layout.nb) + " checks per cell)";
}

std::string reduce_message(const CallerPlan& p, int v, int s, const cg::Cell& c, const std::vector<int64_t>& rows,
                           int cells) {
  const Where w = where_of(p, s, c.worst_idx, rows);
  std::string m = "rank " + std::to_string(v) + "'s view of slice " + std::to_string(s) + ": " +
                  std::to_string(c.pred_fail) + " of " + std::to_string(c.checks) +
                  " block sums (1024 columns of a sampled row) off the sum over the " + std::to_string(p.layout.world) +
                  " ranks of A . checksum(B)";
  if (c.nonfinite) m += " (" + std::to_string(c.nonfinite) + " not finite)";
  m += "; worst row " + std::to_string(w.row) + " block " + std::to_string(w.block) + ": |difference| " +
       num(c.worst_d) + " against the bound " + num(c.worst_bound) + " (" + num(c.worst_ratio) + "x)" +
       "; sum of squared excesses " + num(c.zsum) + " against " + num(p.consts.agg_threshold) + "; " +
       std::to_string(cells) + " cell(s) flagged; " + confidence(p) +
       ": the output is not the reduce of what the inputs give (a dropped peer, a stale or zeroed slice, a wrong "
       "operand or scale, a NaN).";
  return m;
}

}  // namespace

double caller_lambda(double p) {
  GEMMAR_CHECK(p > 0 && p < 1, "caller guard: probability ", p);
  return std::sqrt(2.0 * std::log(2.0 / p));
}

double caller_agg_threshold(int64_t n, double p) {
  GEMMAR_CHECK(n > 0 && p > 0 && p < 1, "caller guard: threshold of ", n, " checks at ", p);
  // (n/2)(ln x - x + 1) = ln p for x = t / n > 1: the left side falls from 0, so bisect.
  const double target = std::log(p);
  auto f = [&](double x) { return 0.5 * double(n) * (std::log(x) - x + 1.0) - target; };
  double lo = 1.0, hi = 2.0 + 4.0 * (-target) / double(n);
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) > 0 ? lo : hi) = mid;
  }
  return hi * double(n);
}

CallerWeights caller_weights(const std::vector<float>& b_deq, int64_t n, int64_t k, int64_t gemm_roundings) {
  GEMMAR_CHECK(int64_t(b_deq.size()) == n * k, "caller guard: B size");
  CallerWeights w;
  w.n = n;
  w.k = k;
  w.nb = int((n + cg::kBlockCols - 1) / cg::kBlockCols);
  w.w.assign(size_t(w.nb * k), 0.0f);
  w.c_gemm.resize(size_t(w.nb));
  w.c_part.resize(size_t(w.nb));
  const double g = cg::gamma32(double(gemm_roundings + 2));
  std::vector<double> col(static_cast<size_t>(k));
  for (int b = 0; b < w.nb; ++b) {
    const int64_t c0 = int64_t(b) * cg::kBlockCols, cols = std::min<int64_t>(cg::kBlockCols, n - c0);
    std::fill(col.begin(), col.end(), 0.0);
    double f2 = 0;
    for (int64_t c = c0; c < c0 + cols; ++c)
      for (int64_t j = 0; j < k; ++j) {
        const double x = b_deq[size_t(c * k + j)];
        col[size_t(j)] += x;
        f2 += x * x;
      }
    for (int64_t j = 0; j < k; ++j) w.w[size_t(b * k + j)] = float(col[size_t(j)]);
    const double frob = std::sqrt(f2);
    const double spec = std::sqrt(spectral_norm2(b_deq, k, c0, cols)) * (1 + kSpectralMargin);
    w.c_gemm[size_t(b)] = round_up(g * frob);
    w.c_part[size_t(b)] = round_up(spec + (kUnitFp32 + g) * frob);
  }
  return w;
}

CallerPlan caller_plan(const CallerConfig& c) {
  GEMMAR_CHECK(c.world >= 1 && c.world <= cg::kMaxWorld && c.n > 0 && c.k > 0, "caller guard: shape");
  GEMMAR_CHECK(guard_sample::valid_stride(c.stride) && c.m % (int64_t(c.world) * c.stride) == 0,
               "caller guard: M = ", c.m, " must be a multiple of world x stride = ", c.world, " x ", c.stride);
  GEMMAR_CHECK(c.alpha > 0 && c.alpha < 1, "caller guard: alpha ", c.alpha);
  CallerPlan p;
  p.config = c;
  p.layout = cg::make_layout(c.world, c.m, c.n, c.stride);
  cg::Consts& k = p.consts;
  const bool fnuz = is_fnuz(c.wire_format);
  k.fp8_gather = c.fp8_gather ? 1 : 0;
  k.recipe_known = c.fp8_gather && c.recipe && *c.recipe != WireRecipe::AccAmax ? 1 : 0;
  const double gk = cg::gamma32(double(c.k + 3));
  k.det_pred = gk * (1 + gk) / (1 - gk);
  k.k_asq = 1.0 / ((1 - kUnitFp32) * (1 - kUnitFp32) * (1 - cg::gamma32(double(c.k + 1))));
  // The fp8 scatter (mori's recipe: scale = fl(amax / 448), inv = fl(1 / scale), q = RNE(fl(x * inv)), widened as
  // fl(decode(q) * scale)): e4m3's 2^-4 and three fp32 roundings relative to |x|, plus half a subnormal step times
  // the 256-column segment's scale (<= ||segment||_2 / 448): sqrt(256) 2^-10 / 448 per unit of the block's norm.
  const double c8 =
      c.fp8_scatter ? (1 + kUnitE4m3) * (1 + cg::gamma32(3)) - 1 + 16.0 * 0x1p-10 / 448.0 * (1 + 2 * kUnitFp32) : 0.0;
  k.part2 = kUnitBf16 * kUnitBf16 + (c8 * (1 + kUnitBf16)) * (c8 * (1 + kUnitBf16));
  k.reduce = cg::gamma32(double(std::max(0, c.world - 1))) * (1 + kUnitBf16) * (1 + c8);
  k.out2 = kUnitBf16 * kUnitBf16;
  if (c.fp8_gather) {
    k.wire_rel = (1 + kUnitE4m3) * (1 + kUnitBf16) * (1 + cg::gamma32(5)) - 1;
    k.wire_sub = (fnuz ? 0x1p-11 : 0x1p-10) * (1 + kUnitBf16) * (1 + cg::gamma32(2)) * (1 + kUnitFp32) /
                 double(fp8_max(c.wire_format));
  }
  k.underflow = double(c.world + 1) * 0x1p-134 + double(c.world) * double(c.gemm_roundings + 2) * 0x1p-150;
  // Bonferroni: half of alpha over the per-check tests (every view's block of every listed row, and the wire's
  // bound where no recipe is replayed), half over the cells' aggregate tests.
  p.checks = int64_t(c.world) * p.layout.L * p.layout.nb * (c.fp8_gather && !k.recipe_known ? 2 : 1);
  p.cells = int64_t(c.world) * c.world;
  k.lambda = caller_lambda(c.alpha / 2 / double(p.checks));
  k.agg_threshold = caller_agg_threshold(p.layout.Ls * p.layout.nb, c.alpha / 2 / double(p.cells));
  return p;
}

std::vector<int64_t> caller_rows(const CallerPlan& p, uint64_t seed, uint64_t call) {
  std::vector<int64_t> rows(size_t(p.layout.L));
  for (int64_t i = 0; i < p.layout.L; ++i)
    rows[size_t(i)] = p.config.stride == 1 ? i : guard_sample::row(seed, call, i, p.config.stride);
  return rows;
}

std::vector<float> caller_rank_record(const CallerPlan& p, int rank, uint32_t call, const std::vector<float>& a_deq,
                                      const std::vector<uint16_t>& out, const CallerWeights& w) {
  const cg::Layout& l = p.layout;
  const int64_t N = p.config.n, K = p.config.k, L = l.L;
  GEMMAR_CHECK(int64_t(a_deq.size()) == L * K && int64_t(out.size()) == L * N, "caller guard: record inputs");
  GEMMAR_CHECK(w.n == N && w.k == K && w.nb == l.nb, "caller guard: the weights' checksum of another shape");
  std::vector<float> r(size_t(l.floats), 0.0f);
  r[0] = numerics::bits_f32(call);
  for (int b = 0; b < l.nb; ++b) {
    r[size_t(l.wnorm + b)] = w.c_gemm[size_t(b)];
    r[size_t(l.wnorm + l.nb + b)] = w.c_part[size_t(b)];
  }
  for (int64_t i = 0; i < L; ++i) {
    const float* a = a_deq.data() + i * K;
    double asq = 0;
    for (int64_t j = 0; j < K; ++j) asq += double(a[j]) * a[j];
    r[size_t(l.asq + i)] = float(asq);
    const uint16_t* o = out.data() + i * N;
    for (int b = 0; b < l.nb; ++b) {
      double pred = 0, pabs = 0, s = 0, sq = 0, ab = 0;
      for (int64_t j = 0; j < K; ++j) {
        const double x = double(a[j]) * w.w[size_t(b * K + j)];
        pred += x;
        pabs += std::fabs(x);
      }
      for (int64_t c = int64_t(b) * cg::kBlockCols; c < std::min<int64_t>(N, (b + 1) * int64_t(cg::kBlockCols)); ++c) {
        const double y = from_bf16(o[c]);
        s += y;
        sq += y * y;
        ab += std::fabs(y);
      }
      const size_t at = size_t(i * l.nb + b);
      r[size_t(l.pred) + at] = float(pred);
      r[size_t(l.pabs) + at] = float(pabs);
      r[size_t(l.osum) + at] = float(s);
      r[size_t(l.osq) + at] = float(sq);
      r[size_t(l.oabs) + at] = float(ab);
    }
  }
  if (p.consts.recipe_known) {
    // The owner's listed rows as the wire carries them: quantized and widened row by row, summed as a view is.
    std::vector<uint8_t> codes(static_cast<size_t>(N));
    std::vector<uint16_t> deq(static_cast<size_t>(N));
    for (int64_t i = 0; i < l.Ls; ++i) {
      const uint16_t* o = out.data() + (int64_t(rank) * l.Ls + i) * N;
      const float scale = wire_quantize_row(o, N, codes.data(), p.config.wire_format, *p.config.recipe);
      wire_dequantize_row(codes.data(), scale, N, deq.data(), p.config.wire_format);
      r[size_t(l.wscale + i)] = scale;
      for (int b = 0; b < l.nb; ++b) {
        double s = 0;
        for (int64_t c = int64_t(b) * cg::kBlockCols; c < std::min<int64_t>(N, (b + 1) * int64_t(cg::kBlockCols)); ++c)
          s += from_bf16(deq[size_t(c)]);
        r[size_t(l.wsum + i * l.nb + b)] = float(s);
      }
    }
  }
  return r;
}

std::vector<cg::Cell> caller_judge(const CallerPlan& p, const std::vector<float>& records) {
  const cg::Layout& l = p.layout;
  const int W = l.world;
  GEMMAR_CHECK(int64_t(records.size()) == int64_t(W) * l.ld, "caller guard: ", records.size(),
               " floats of records for ", W, " ranks of ", l.floats);
  std::vector<cg::Cell> cells(size_t(W * W));
  for (int v = 0; v < W; ++v)
    for (int s = 0; s < W; ++s) {
      cg::Cell& c = cells[size_t(v * W + s)];
      c.other = uint32_t(cg::other_non_owner(W, v, s));
      for (int64_t i = 0; i < l.Ls; ++i)
        for (int b = 0; b < l.nb; ++b) {
          const cg::Outcome o = cg::check_one(l, p.consts, records.data(), v, s, int64_t(s) * l.Ls + i, b);
          cg::cell_add(c, o, uint32_t(i * l.nb + b));
        }
    }
  return cells;
}

std::vector<GuardFinding> caller_findings(const CallerPlan& p, const std::vector<cg::Cell>& cells,
                                          const std::vector<int64_t>& rows) {
  const int W = p.layout.world;
  GEMMAR_CHECK(int(cells.size()) == W * W, "caller guard: ", cells.size(), " cells for world ", W);
  std::vector<GuardFinding> out;
  int reduce_cells = 0, gather_cells = 0, wire_cells = 0;
  int first_reduce = -1, first_gather = -1, first_wire = -1;
  for (int i = 0; i < W * W; ++i) {
    const cg::Cell& c = cells[size_t(i)];
    if (cg::cell_reduce_flagged(c, p.consts) && reduce_cells++ == 0) first_reduce = i;
    if (c.gather && gather_cells++ == 0) first_gather = i;
    if ((c.wire || c.bypass) && wire_cells++ == 0) first_wire = i;
  }
  if (first_reduce >= 0)
    out.push_back({"GUARD_REDUCE", reduce_message(p, first_reduce / W, first_reduce % W, cells[size_t(first_reduce)],
                                                  rows, reduce_cells)});
  if (first_gather >= 0) {
    const int v = first_gather / W, s = first_gather % W;
    const cg::Cell& c = cells[size_t(first_gather)];
    const Where w = where_of(p, s, c.gather_first, rows);
    const std::string against = p.config.fp8_gather ? "rank " + std::to_string(c.other) +
                                                          "'s (the other non-owners' "
                                                          "views are equal bits)"
                                                    : "the owner's (the gather copies its bits)";
    out.push_back({"GUARD_GATHER", "rank " + std::to_string(v) + "'s view of slice " + std::to_string(s) +
                                       " differs bitwise from " + against + " in " + std::to_string(c.gather) + " of " +
                                       std::to_string(c.checks) + " block sums (first: row " + std::to_string(w.row) +
                                       " block " + std::to_string(w.block) + "); " + std::to_string(gather_cells) +
                                       " cell(s) flagged: the gather to that rank did not deliver this call's slice."});
  }
  if (first_wire >= 0) {
    const int v = first_wire / W, s = first_wire % W;
    const cg::Cell& c = cells[size_t(first_wire)];
    std::string m = "rank " + std::to_string(v) + "'s view of slice " + std::to_string(s) + ": ";
    if (c.bypass)
      m += std::to_string(c.bypass) +
           " block sums hold the owner's exact bf16 bits where the fp8 wire changes them: "
           "the gather moved bf16, the fp8 wire never engaged";
    else {
      const Where w = where_of(p, s, c.wire_first, rows);
      m += std::to_string(c.wire) + " of " + std::to_string(c.checks) + " block sums (first: row " +
           std::to_string(w.row) + " block " + std::to_string(w.block) + ") " +
           (p.consts.recipe_known ? "differ from the wire's re-quantization of the owner's rows (" +
                                        std::string(to_string(*p.config.recipe)) +
                                        ") while the non-owners agree: a wrong scale or code on the fp8 wire"
                                  : "are off the owner's beyond the fp8 wire's rounding bound: a wrong scale or code "
                                    "on the fp8 wire; " +
                                        confidence(p));
    }
    out.push_back({"GUARD_WIRE", m + "; " + std::to_string(wire_cells) + " cell(s) flagged."});
  }
  return out;
}

}  // namespace gemmar::reference
