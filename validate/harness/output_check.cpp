#include "validate/harness/output_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "common/errors.hpp"
#include "reference/formats.hpp"
#include "reference/numerics_inline.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar::output_check {

namespace nm = gemmar::numerics;
using reference::WireRecipe;

std::vector<int64_t> rows_to_check(const Shape& shape, Quant q, int64_t check_rows, uint64_t seed) {
  const int64_t count = check_rows == 0 ? std::numeric_limits<int64_t>::max() / 4 : check_rows;
  return reference::sample_rows(shape, q, std::max<int64_t>(count, shape.world), seed);
}

std::vector<int64_t> rows_to_check(const Shape& shape, const Config& cfg, int64_t check_rows, uint64_t seed) {
  const int64_t count = check_rows == 0 ? std::numeric_limits<int64_t>::max() / 4 : check_rows;
  return reference::sample_rows(shape, cfg, std::max<int64_t>(count, shape.world), seed);
}

ViewRelL2 rel_l2_of_views(const Shape& shape, const Config& cfg, const std::vector<int64_t>& rows,
                          const reference::Bf16Outputs& outputs, const std::vector<float>& ref,
                          const std::vector<std::vector<float>>& rank_refs) {
  ViewRelL2 v;
  if (has_collective(cfg.mode)) {
    for (const auto& x : reference::per_rank_rel_l2(shape, cfg, rows, outputs, ref)) v.per_rank.push_back(x.value);
    v.per_slice = reference::per_slice_rel_l2(shape, cfg, rows, outputs, ref);
    const reference::RelL2 av = reference::all_views_rel_l2(shape, cfg, rows, outputs, ref);
    v.all_views = av.value;
    v.all_views_stderr = av.stderr_;
  } else {
    // gemm-only: every rank's output is its own partial in bf16, judged against its own fp32 partial.
    GEMMAR_CHECK(rank_refs.size() == outputs.size(), "gemm-only needs one fp32 partial per rank");
    for (size_t r = 0; r < outputs.size(); ++r) v.per_rank.push_back(reference::rel_l2(outputs[r], rank_refs[r]));
    v.all_views = *std::max_element(v.per_rank.begin(), v.per_rank.end());
  }
  return v;
}

ViewRelL2 rel_l2_of_row_errors(const Shape& shape, const Config& cfg, const std::vector<int64_t>& rows,
                               const std::vector<reference::RowErrors>& views,
                               const std::vector<double>& gemm_only_per_rank) {
  ViewRelL2 v;
  if (has_collective(cfg.mode)) {
    for (const auto& x : reference::per_rank_rel_l2(shape, cfg, rows, views)) v.per_rank.push_back(x.value);
    v.per_slice = reference::per_slice_rel_l2(shape, cfg, rows, views);
    const reference::RelL2 av = reference::all_views_rel_l2(shape, cfg, rows, views);
    v.all_views = av.value;
    v.all_views_stderr = av.stderr_;
  } else {
    GEMMAR_CHECK(!gemm_only_per_rank.empty(), "gemm-only needs one relL2 per rank");
    v.per_rank = gemm_only_per_rank;
    v.all_views = *std::max_element(v.per_rank.begin(), v.per_rank.end());
  }
  return v;
}

void record_numerics(RunRecord& rec, const ViewRelL2& v, const Config& cfg, int64_t nonfinite) {
  rec.per_rank_rel_l2 = v.per_rank;
  rec.per_slice_rel_l2 = v.per_slice;
  double worst = 0;
  bool any_nan = nonfinite > 0;
  for (double x : v.per_rank) {
    if (!std::isfinite(x)) any_nan = true;
    worst = std::max(worst, x);
  }
  rec.rel_l2 = any_nan ? std::numeric_limits<double>::quiet_NaN() : worst;
  // `validated` as the benchmark's: every rank inside its acceptance window (a NaN anywhere fails it).
  bool ok = !v.per_rank.empty() && nonfinite == 0;
  // The benchmark's two-sided fp8 gate covers an fp8 gather or an fp8 scatter (bench_gemm_ar.py @d5443336 :530-543).
  const bool fp8_leg = uses_fp8_wire(cfg) || (has_collective(cfg.mode) && cfg.scatter_dtype == WireDtype::Fp8);
  for (double x : v.per_rank) ok = ok && verdict_rules::benchmark_accepts(x, fp8_leg);
  rec.validated = ok;
  rec.rel_l2_all_views = v.all_views;
  rec.rel_l2_all_views_stderr = v.all_views_stderr;
}

// ---- element checks ---------------------------------------------------------------------------------------

namespace {

bool nonfinite_bf16(uint16_t h) { return (h & 0x7f80) == 0x7f80; }

// mori's tolerance for one gathered element (tests/python/cco/gemm_ar_wire_reference.py): the reference code is
// torch's, q = RNE(x / s) with s = amax / max; the code sent may be it or an adjacent code where x / s lies
// within kWireMidpointRelTol relative (+ kWireMidpointAbsTol) of their midpoint, and the scale may be off by
// kWireScaleRelTol relative (reference/quant.hpp). bf16 rounding is
// monotone in the scale, so the view must lie between the dequantizations at the two ends of the scale range.
bool within_tolerance(float x, float s_ref, uint16_t view, bool fnuz) {
  const float scaled = nm::div_rn(x, s_ref);
  const uint8_t c_ref = nm::f32_to_e4m3(scaled, fnuz);
  const float v = nm::bf16_to_f32(view);
  auto fits = [&](uint8_t c) {
    const float d = nm::e4m3_to_f32(c, fnuz);
    const uint16_t a = nm::f32_to_bf16(nm::mul_rn(d, float(double(s_ref) * (1 - reference::kWireScaleRelTol))));
    const uint16_t b = nm::f32_to_bf16(nm::mul_rn(d, float(double(s_ref) * (1 + reference::kWireScaleRelTol))));
    if (a == b) return view == a;  // bit for bit (a -0 code gives -0, not +0)
    const float fa = nm::bf16_to_f32(a), fb = nm::bf16_to_f32(b);
    return std::min(fa, fb) <= v && v <= std::max(fa, fb);
  };
  if (fits(c_ref)) return true;
  const int mag = c_ref & 0x7f, sign = c_ref & 0x80;
  const int max_code = fnuz ? 0x7f : 0x7e;
  for (int d : {-1, 1}) {
    const int m2 = mag + d;
    if (m2 < 0 || m2 > max_code) continue;
    const uint8_t c2 = uint8_t(sign | m2);
    const float mid = 0.5f * (nm::e4m3_to_f32(c_ref, fnuz) + nm::e4m3_to_f32(c2, fnuz));
    if (std::fabs(scaled - mid) <=
            reference::kWireMidpointRelTol * std::fabs(scaled) + reference::kWireMidpointAbsTol &&
        fits(c2))
      return true;
  }
  return false;
}

// fuse_quantize without the partials: the wire's amax is the fp32 accumulator's, unknown here, but it rounds to
// the bf16 row's amax, so it lies within half a bf16 ulp of it (0x8000 in fp32 bits either side; below a power
// of two the lower binade's half ulp). One amax, so one scale, serves the whole row: every peer's view of every
// element bounds that scale (bf16(fl32(decode(code) * scale)) == view holds on an interval of scales), and the row
// is explained only when the intervals of all its elements intersect inside the window's scales. An element's
// code is taken from the bf16 row (mori's sdma_reduce_quant) at both ends of the window (codes are monotone in
// the amax); where they differ it is checked against the final interval with either code and does not narrow it.
// A flipped ulp, a zero, a NaN or a 1.01x edit on a peer moves its element's interval off the one the rest of the
// row agrees on (the intervals are exact sets of fp32 scales: touching at a rounding tie is not meeting).
// The fp32 scales, as bit patterns (positive floats order as their bits), for which
// bf16(fl32(decode(code) * scale)) == view: found exactly by stepping from the real-number estimate (one or two
// steps), so an interval that only touches another at a rounding tie does not meet it.
struct ScaleInterval {
  uint32_t lo, hi;
  static uint16_t mag(float ad, uint32_t s) { return nm::f32_to_bf16(nm::mul_rn(ad, nm::bits_f32(s))) & 0x7fff; }
  static bool of(float d, uint16_t view, ScaleInterval& out) {
    if (nonfinite_bf16(view) || d == 0.0f) return false;
    if (((view & 0x8000) != 0) != std::signbit(d)) return false;
    const uint16_t vm = view & 0x7fff;
    if (vm == 0) return false;
    const float ad = std::fabs(d);
    const uint32_t v32 = uint32_t(vm) << 16;
    uint32_t lo = nm::f32_bits(float(double(nm::bits_f32(v32 - 0x8000u)) / double(ad)));
    uint32_t hi = nm::f32_bits(float(double(nm::bits_f32(v32 + 0x8000u)) / double(ad)));
    for (int k = 0; k < 8 && lo > 0 && mag(ad, lo - 1) >= vm; ++k) --lo;
    for (int k = 0; k < 8 && mag(ad, lo) < vm; ++k) ++lo;
    for (int k = 0; k < 8 && mag(ad, hi + 1) <= vm; ++k) ++hi;
    for (int k = 0; k < 8 && hi > 0 && mag(ad, hi) > vm; ++k) --hi;
    if (mag(ad, lo) != vm || mag(ad, hi) != vm || lo > hi) return false;
    out = {lo, hi};
    return true;
  }
  bool meets(const ScaleInterval& o) const { return o.lo <= hi && lo <= o.hi; }
  void narrow(const ScaleInterval& o) { lo = std::max(lo, o.lo), hi = std::min(hi, o.hi); }
};

bool acc_amax_explains_row(const uint16_t* reduced, const std::vector<const uint16_t*>& peer_views, int64_t N,
                           bool fnuz) {
  float amax = 0.0f;
  for (int64_t col = 0; col < N; ++col) amax = nm::amax_step(amax, nm::bf16_to_f32(reduced[col]));
  if (!(amax > 0.0f) || !std::isfinite(amax)) return false;
  const uint32_t b = nm::f32_bits(amax);
  const float a_lo = nm::bits_f32(b - 0x8000u), a_hi = nm::bits_f32(b + 0x8000u);
  ScaleInterval s{nm::f32_bits(nm::wire_scale(a_lo, fnuz)), nm::f32_bits(nm::wire_scale(a_hi, fnuz))};
  const float inv_big = nm::wire_inv_scale(a_lo, fnuz), inv_small = nm::wire_inv_scale(a_hi, fnuz);
  std::vector<int64_t> ambiguous;
  for (int64_t col = 0; col < N; ++col) {
    const float x = nm::bf16_to_f32(reduced[col]);
    const uint8_t c1 = nm::quantize_scaled(x, inv_big, fnuz), c2 = nm::quantize_scaled(x, inv_small, fnuz);
    if (c1 != c2) {
      ambiguous.push_back(col);
      continue;
    }
    const float d = nm::e4m3_to_f32(c1, fnuz);
    for (size_t p = 0; p < peer_views.size(); ++p) {
      const uint16_t* v = peer_views[p];
      if (p > 0 && v[col] == peer_views[0][col]) continue;  // the same view bounds the scale the same way
      if (d == 0.0f) {  // a zero code: the view is that zero, sign included, for any scale
        if (v[col] != nm::f32_to_bf16(nm::mul_rn(d, nm::bits_f32(s.lo)))) return false;
        continue;
      }
      ScaleInterval e{};
      if (!ScaleInterval::of(d, v[col], e) || !s.meets(e)) return false;
      s.narrow(e);
    }
  }
  for (const int64_t col : ambiguous) {
    const float x = nm::bf16_to_f32(reduced[col]);
    for (const uint16_t* v : peer_views) {
      bool ok = false;
      for (const float inv : {inv_big, inv_small}) {
        ScaleInterval e{};
        ok = ok ||
             (ScaleInterval::of(nm::e4m3_to_f32(nm::quantize_scaled(x, inv, fnuz), fnuz), v[col], e) && s.meets(e));
      }
      if (!ok) return false;
    }
  }
  return true;
}

}  // namespace

ElementChecks::ElementChecks(const Shape& shape, const Config& cfg, Fp8Format wire_format, size_t listed, bool wire_leg)
    : shape_(shape),
      cfg_(cfg),
      wire_format_(wire_format),
      listed_(listed),
      collective_(has_collective(cfg.mode)),
      fp8_wire_(collective_ && uses_fp8_wire(cfg) && shape.world > 1),
      fp8_scatter_(collective_ && cfg.scatter_dtype == WireDtype::Fp8),
      S_(slice_rows(shape, cfg)),  // the run's row plan (relaxed rows own M / W rows each)
      codes_(size_t(shape.n)),
      deq_(size_t(shape.n)),
      reduced_(size_t(shape.n)),
      acc_(size_t(shape.n)),
      wide_(fp8_scatter_ ? size_t(shape.world) * size_t(shape.n) : 0),
      scodes_(size_t(shape.n)),
      sscales_(size_t(shape.n / numerics::kScatterScaleCols + 1)),
      wire_leg_(wire_leg) {
  const size_t W = size_t(shape.world);
  scatter_wrong_by_rank.assign(W, 0);
  wrong_by_rank.assign(W, 0);
  wrong_by_slice.assign(W, 0);
  disagreeing_by_rank.assign(W, 0);
  disagreeing_by_slice.assign(W, 0);
}

int ElementChecks::slice_of(int64_t row) const { return int(std::min<int64_t>(row / S_, shape_.world - 1)); }

void ElementChecks::wrong_at(int rank, int64_t row, int64_t col, uint16_t got, uint16_t want) {
  ++wrong;
  ++wrong_by_rank[size_t(rank)];
  ++wrong_by_slice[size_t(slice_of(row))];
  if (first_mismatches.size() < listed_) first_mismatches.push_back({rank, row, col, got, want});
}

void ElementChecks::add(const Chunk& c) {
  const int W = shape_.world;
  const int64_t N = shape_.n;
  const size_t R = c.rows->size();
  GEMMAR_CHECK(int(c.views.size()) == W, "a chunk needs every rank's view");
  for (int r = 0; r < W; ++r) {
    const uint16_t* v = c.views[size_t(r)];
    int64_t bad = 0;
    for (size_t e = 0; e < R * size_t(N); ++e) bad += nonfinite_bf16(v[e]);
    nonfinite += bad;
  }
  checked += int64_t(R) * N * W;
  const bool scatter_codes = fp8_scatter_ && !c.scatter_codes.empty();
  if (scatter_codes)
    GEMMAR_CHECK(int(c.scatter_codes.size()) == W && int(c.scatter_scales.size()) == W,
                 "a chunk's scatter codes need every rank's");
  for (size_t i = 0; i < R; ++i) {
    const int owner = slice_of((*c.rows)[i]);
    row_reduced_ = collective_ && (!c.partials.empty() || scatter_codes);
    if (!c.partials.empty() || scatter_codes) {
      reduce_row(c, i, owner);
      compare_rows(c, i, owner);
    }
    if (fp8_wire_ && wire_leg_) wire_row(c, i, owner);
    if (collective_ && W > 1) agreement_row(c, i, owner);
  }
}

void ElementChecks::reduce_row(const Chunk& c, size_t i, int owner) {
  if (!collective_) return;  // gemm-only: each rank's own partial
  if (fp8_scatter_) {
    scatter_reduce_row(c, i, owner);
    return;
  }
  const int64_t N = shape_.n;
  const size_t at = i * size_t(N);
  for (int64_t col = 0; col < N; ++col) {
    acc_[size_t(col)] =
        nm::reduce_sum(owner, shape_.world, [&](int p) { return c.partials[size_t(p)][at + size_t(col)]; });
    reduced_[size_t(col)] = nm::f32_to_bf16(acc_[size_t(col)]);
  }
}

// The fp8 scatter's reduce over the widened contributions in wide_ (every rank's, [W x N]).
void ElementChecks::widened_sum(int owner) {
  const int64_t N = shape_.n;
  for (int64_t col = 0; col < N; ++col) {
    acc_[size_t(col)] = nm::reduce_sum_f32(owner, shape_.world, [&](int p) { return wide_[size_t(p * N + col)]; });
    reduced_[size_t(col)] = nm::f32_to_bf16(acc_[size_t(col)]);
  }
}

// The fp8 scatter's reduce of one row. With the dumped codes: what arrived, widened (and the codes judged against
// the partials, when known). Without them: each recipe applied to every rank's partial, mori's first, until one
// reproduces the owner's row; if none does, mori's is the expected reduce and compare_rows counts what differs.
void ElementChecks::scatter_reduce_row(const Chunk& c, size_t i, int owner) {
  const int W = shape_.world;
  const int64_t N = shape_.n, per_row = N / nm::kScatterScaleCols;
  const size_t at = i * size_t(N);
  if (!c.scatter_codes.empty()) {
    scatter_from_codes = true;
    for (int p = 0; p < W; ++p)
      reference::scatter_widen_row(c.scatter_codes[size_t(p)] + at, c.scatter_scales[size_t(p)] + int64_t(i) * per_row,
                                   N, wide_.data() + p * N, wire_format_);
    widened_sum(owner);
    if (!c.partials.empty()) scatter_codes_row(c, i);
    return;
  }
  const uint16_t* got = c.views[size_t(owner)] + at;
  for (reference::ScatterRecipe w : reference::kScatterRecipes) {
    for (int p = 0; p < W; ++p) {
      reference::scatter_quantize_row(c.partials[size_t(p)] + at, N, scodes_.data(), sscales_.data(), wire_format_, w);
      reference::scatter_widen_row(scodes_.data(), sscales_.data(), N, wide_.data() + p * N, wire_format_);
    }
    widened_sum(owner);
    if (std::memcmp(got, reduced_.data(), size_t(N) * 2) == 0) {
      ++scatter_by_recipe[size_t(w)];
      return;
    }
  }
  ++scatter_rows_unexplained;
  for (int p = 0; p < W; ++p) {
    reference::scatter_quantize_row(c.partials[size_t(p)] + at, N, scodes_.data(), sscales_.data(), wire_format_);
    reference::scatter_widen_row(scodes_.data(), sscales_.data(), N, wide_.data() + p * N, wire_format_);
  }
  widened_sum(owner);
}

namespace {
// mori's tolerance for one rank's dumped scatter codes of one row (tests/python/cco/gemm_ar_wire_reference.py
// check_wire): the reference is x / scale's codes with scale = amax / max per 256 columns; each scale within
// kWireScaleRelTol relative of the reference's (bit-equal NaN included), each code equal to the reference's or
// adjacent to it (a byte apart) where x / scale lies within kWireMidpointRelTol (+ kWireMidpointAbsTol) of their
// midpoint. Returns the codes (and scales) it does not explain; `flips` counts the midpoint codes it does.
int64_t scatter_outside_tolerance(const uint16_t* partial, const uint8_t* codes, const float* scales,
                                  const uint8_t* ref_codes, const float* ref_scales, int64_t n, bool fnuz,
                                  int64_t& flips) {
  int64_t bad = 0;
  const int64_t per = nm::kScatterScaleCols;
  for (int64_t s = 0; s < n / per; ++s) {
    const float sr = ref_scales[s], sd = scales[s];
    const bool scale_ok = std::memcmp(&sr, &sd, 4) == 0 ||
                          std::fabs(double(sd) - double(sr)) <= reference::kWireScaleRelTol * std::fabs(double(sr));
    bad += !scale_ok;
    for (int64_t e = s * per; e < (s + 1) * per; ++e) {
      if (codes[e] == ref_codes[e]) continue;
      const float scaled = nm::div_rn(nm::bf16_to_f32(partial[e]), sr);
      const float mid = 0.5f * (nm::e4m3_to_f32(codes[e], fnuz) + nm::e4m3_to_f32(ref_codes[e], fnuz));
      const bool near = std::fabs(scaled - mid) <=
                        reference::kWireMidpointRelTol * std::fabs(scaled) + reference::kWireMidpointAbsTol;
      if (std::abs(int(codes[e]) - int(ref_codes[e])) == 1 && near && scale_ok)
        ++flips;
      else
        ++bad;
    }
  }
  return bad;
}
}  // namespace

// Every rank's dumped scatter codes and scales of one row, against the recipes applied to its own bf16 partial:
// a recipe reproducing them exactly, else mori's tolerance, else wrong elements (a code or a scale each).
void ElementChecks::scatter_codes_row(const Chunk& c, size_t i) {
  const int64_t N = shape_.n, per_row = N / nm::kScatterScaleCols, row = (*c.rows)[i];
  const size_t at = i * size_t(N);
  for (int p = 0; p < shape_.world; ++p) {
    const uint16_t* partial = c.partials[size_t(p)] + at;
    const uint8_t* codes = c.scatter_codes[size_t(p)] + at;
    const float* scales = c.scatter_scales[size_t(p)] + int64_t(i) * per_row;
    bool exact = false;
    for (reference::ScatterRecipe w : reference::kScatterRecipes) {
      reference::scatter_quantize_row(partial, N, scodes_.data(), sscales_.data(), wire_format_, w);
      if (std::memcmp(scodes_.data(), codes, size_t(N)) == 0 &&
          std::memcmp(sscales_.data(), scales, size_t(per_row) * 4) == 0) {
        ++scatter_by_recipe[size_t(w)];
        exact = true;
        break;
      }
    }
    if (exact) continue;
    reference::scatter_quantize_row(partial, N, scodes_.data(), sscales_.data(), wire_format_,
                                    reference::ScatterRecipe::DivCodes);
    int64_t flips = 0;
    const int64_t bad = scatter_outside_tolerance(partial, codes, scales, scodes_.data(), sscales_.data(), N,
                                                  wire_format_ == Fp8Format::E4M3FNUZ, flips);
    if (bad == 0) {
      ++scatter_within_tolerance;
      scatter_tolerance_codes += flips;
      continue;
    }
    scatter_wrong_codes += bad;
    scatter_wrong_by_rank[size_t(p)] += bad;
    wrong += bad;
    wrong_by_rank[size_t(p)] += bad;
    wrong_by_slice[size_t(slice_of(row))] += bad;
  }
}

// Bit for bit against the collective over the partials; on the fp8 wire only the owner's rows (the reduce):
// the gathered views are wire_row's.
void ElementChecks::compare_rows(const Chunk& c, size_t i, int owner) {
  compared = true;
  const int64_t N = shape_.n, row = (*c.rows)[i];
  for (int r = 0; r < shape_.world; ++r) {
    if (fp8_wire_ && r != owner) continue;
    const uint16_t* got = c.views[size_t(r)] + i * size_t(N);
    const uint16_t* want = collective_ ? reduced_.data() : c.partials[size_t(r)] + i * size_t(N);
    if (std::memcmp(got, want, size_t(N) * 2) == 0) continue;
    for (int64_t col = 0; col < N; ++col)
      if (got[col] != want[col]) wrong_at(r, row, col, got[col], want[col]);
  }
}

// The fp8 wire's gathered views of one row: the recipes tried in order (the one the config implies first), the
// first that reproduces every peer's view exactly is counted; otherwise each element is judged with mori's
// tolerance and what it does not explain is wrong. The reduced row: the emulation's when partials are known,
// else the owner's own view (never quantized).
void ElementChecks::wire_row(const Chunk& c, size_t i, int owner) {
  compared = true;
  const int W = shape_.world;
  const int64_t N = shape_.n, row = (*c.rows)[i];
  const bool fnuz = wire_format_ == Fp8Format::E4M3FNUZ;
  const bool known = row_reduced_;
  const uint16_t* reduced = known ? reduced_.data() : c.views[size_t(owner)] + i * size_t(N);
  const float* acc = known ? acc_.data() : nullptr;
  if (acc) has_acc_ = true;
  const WireRecipe first = first_recipe();
  std::vector<WireRecipe> order{first};
  for (WireRecipe w : reference::kWireRecipes)
    if (w != first && (w != WireRecipe::AccAmax || acc)) order.push_back(w);
  std::vector<uint16_t> expected_row;  // the first recipe's views, named in the mismatches
  bool any = false;
  for (WireRecipe w : order) {
    const float scale = reference::wire_quantize_row(reduced, N, codes_.data(), wire_format_, w, acc);
    reference::wire_dequantize_row(codes_.data(), scale, N, deq_.data(), wire_format_);
    if (expected_row.empty()) expected_row = deq_;
    bool all = true;
    for (int r = 0; r < W && all; ++r)
      all = r == owner || std::memcmp(c.views[size_t(r)] + i * size_t(N), deq_.data(), size_t(N) * 2) == 0;
    if (!all) continue;
    ++rows_by_recipe[size_t(w)];
    if (w == first) {
      ++rows_first;
      return;  // the others are not tried where the expected recipe holds
    }
    any = true;
  }
  if (any) {
    ++rows_other;
    return;
  }
  if (!known && cfg_.fuse_quantize) {
    std::vector<const uint16_t*> peers;
    for (int r = 0; r < W; ++r)
      if (r != owner) peers.push_back(c.views[size_t(r)] + i * size_t(N));
    if (acc_amax_explains_row(reduced, peers, N, fnuz)) {
      ++rows_acc_window;
      for (const uint16_t* v : peers)
        for (int64_t col = 0; col < N; ++col) acc_window_elements += v[col] != expected_row[size_t(col)];
      return;
    }
  }
  // mori's reference scale: fl32(amax / max) over the bf16 row.
  float amax = 0.0f;
  for (int64_t col = 0; col < N; ++col) amax = nm::amax_step(amax, nm::bf16_to_f32(reduced[col]));
  const float s_ref = amax == 0.0f ? 1.0f : nm::div_rn(amax, nm::fp8_max(fnuz));
  int64_t flips = 0;
  const int64_t wrong_before = wrong;
  for (int r = 0; r < W; ++r) {
    if (r == owner) continue;
    const uint16_t* got = c.views[size_t(r)] + i * size_t(N);
    for (int64_t col = 0; col < N; ++col) {
      if (got[col] == expected_row[size_t(col)]) continue;
      const float x = nm::bf16_to_f32(reduced[col]);
      if (!nm::is_nan_f32(amax) && !nonfinite_bf16(got[col]) && within_tolerance(x, s_ref, got[col], fnuz))
        ++flips;
      else
        wrong_at(r, row, col, got[col], expected_row[size_t(col)]);
    }
  }
  if (wrong == wrong_before) {
    ++rows_within_tolerance;
    tolerance_elements += flips;
  } else {
    ++wrong_wire_rows;
  }
}

// The views the collective makes equal: every rank's (bf16 wire), every rank's but the owner's (fp8 wire).
// A view differing from the majority of them counts once per element.
void ElementChecks::agreement_row(const Chunk& c, size_t i, int owner) {
  const int W = shape_.world;
  const int64_t N = shape_.n, row = (*c.rows)[i];
  std::vector<int> eligible;
  for (int r = 0; r < W; ++r)
    if (!fp8_wire_ || r != owner) eligible.push_back(r);
  if (eligible.size() < 2) return;
  auto at = [&](int r) { return c.views[size_t(r)] + i * size_t(N); };
  bool same = true;
  for (size_t e = 1; e < eligible.size() && same; ++e)
    same = std::memcmp(at(eligible[e]), at(eligible[0]), size_t(N) * 2) == 0;
  if (same) return;
  for (int64_t col = 0; col < N; ++col) {
    int best = -1, best_votes = 0;
    for (int a : eligible) {
      int votes = 0;
      for (int b : eligible) votes += at(a)[col] == at(b)[col];
      if (votes > best_votes) best = a, best_votes = votes;
      if (votes * 2 > int(eligible.size())) break;
    }
    if (best_votes == int(eligible.size())) continue;
    for (int a : eligible) {
      if (at(a)[col] == at(best)[col]) continue;
      ++disagreeing;
      ++disagreeing_by_rank[size_t(a)];
      ++disagreeing_by_slice[size_t(slice_of(row))];
      if (first_disagreements.size() < listed_) first_disagreements.push_back({a, row, col, at(a)[col], at(best)[col]});
    }
  }
}

std::string ElementChecks::wire_recipe() const {
  if (!fp8_wire_ || rows_first + rows_other + rows_within_tolerance + rows_acc_window + wrong_wire_rows == 0) return "";
  const WireRecipe first = first_recipe();
  // The recipes that reproduce every row the expected one does not (identical bits elsewhere are not told apart).
  std::string explaining;
  for (WireRecipe w : reference::kWireRecipes)
    if (w != first && rows_other > 0 && rows_by_recipe[size_t(w)] == rows_other)
      explaining += (explaining.empty() ? "" : " = ") + std::string(reference::to_string(w));
  const std::string rest = rows_first == 0 ? ""
                                           : " (" + std::string(reference::to_string(first)) +
                                                 " gives the same bits on " + std::to_string(rows_first) + " rows)";
  char tol[16];
  std::snprintf(tol, sizeof tol, "%g", reference::kWireScaleRelTol);
  // Rows with wrong gathered elements are counted by none of these: the text says so, as the verdict fails.
  const std::string failing =
      wrong_wire_rows == 0 ? ""
                           : "; " + std::to_string(wrong_wire_rows) + " rows hold gathered elements no recipe explains";
  if (rows_acc_window > 0)
    return "fp32-accumulator amax (fuse_quantize, no partials): " + std::to_string(rows_acc_window) +
           " rows are explained by one amax within half a bf16 ulp of the row's (" +
           std::to_string(acc_window_elements) + " gathered elements differ from the bf16-amax recipe)" + rest +
           (rows_within_tolerance > 0 ? "; " + std::to_string(rows_within_tolerance) + " rows within mori's tolerance"
                                      : "") +
           failing;
  if (rows_within_tolerance > 0)
    return "within mori's tolerance: " + std::to_string(tolerance_elements) + " gathered elements in " +
           std::to_string(rows_within_tolerance) + " rows differ from every recipe (codes adjacent at a rounding " +
           "midpoint, scale within " + tol + " relative)" + failing;
  if (rows_first + rows_other == 0) return "none" + failing;
  if (rows_other == 0) return reference::to_string(first) + failing;
  if (!explaining.empty()) return explaining + rest + failing;
  std::string mixed;
  for (WireRecipe w : reference::kWireRecipes)
    if (rows_by_recipe[size_t(w)])
      mixed += (mixed.empty() ? "" : ", ") + std::string(reference::to_string(w)) + ": " +
               std::to_string(rows_by_recipe[size_t(w)]) + " rows";
  return "mixed: " + mixed + failing;
}

std::string ElementChecks::scatter_recipe() const {
  if (!fp8_scatter_) return "";
  int64_t exact = 0;
  for (int64_t x : scatter_by_recipe) exact += x;
  const std::string unit = scatter_from_codes ? " rank rows" : " rows";
  if (exact + scatter_within_tolerance + scatter_wrong_codes + scatter_rows_unexplained == 0)
    return scatter_from_codes ? "not judged: the reduce was rebuilt from the dumped scatter codes (the partials are "
                                "needed to judge the codes themselves)"
                              : "";
  std::string named;
  int recipes = 0;
  for (reference::ScatterRecipe w : reference::kScatterRecipes)
    if (scatter_by_recipe[size_t(w)]) {
      ++recipes;
      named += (named.empty() ? "" : ", ") + std::string(reference::to_string(w)) + ": " +
               std::to_string(scatter_by_recipe[size_t(w)]) + unit;
    }
  std::string out = recipes == 1 && scatter_within_tolerance + scatter_wrong_codes + scatter_rows_unexplained == 0
                        ? named.substr(0, named.rfind(": "))
                        : (named.empty() ? "" : "mixed: " + named);
  char tol[16];
  std::snprintf(tol, sizeof tol, "%g", reference::kWireScaleRelTol);
  if (scatter_within_tolerance)
    out += (out.empty() ? "" : "; ") + std::string("within mori's tolerance: ") +
           std::to_string(scatter_tolerance_codes) + " codes in " + std::to_string(scatter_within_tolerance) + unit +
           " differ from every recipe (adjacent at a rounding midpoint, scales within " + tol + " relative)";
  if (scatter_wrong_codes)
    out += (out.empty() ? "" : "; ") + std::to_string(scatter_wrong_codes) +
           " codes or scales no recipe explains, nor mori's tolerance";
  if (scatter_rows_unexplained)
    out += (out.empty() ? "" : "; ") + std::to_string(scatter_rows_unexplained) +
           " owned rows no recipe's reduce reproduces (mori's is expected)";
  return out;
}

WireRecipe ElementChecks::first_recipe() const {
  return cfg_.fuse_quantize && has_acc_ ? WireRecipe::AccAmax : WireRecipe::Mori;
}

void ElementChecks::record(RunRecord& rec) const {
  rec.checked_elements = checked;
  rec.nonfinite_elements = nonfinite;
  if (compared) rec.wrong_elements = wrong;
  if (collective_ && shape_.world > 1) rec.disagreeing_elements = disagreeing;
  const std::string w = wire_recipe();
  if (!w.empty()) rec.wire_recipe = w;
}

// ---- per-iteration checks ----------------------------------------------------------------------------------

namespace {

std::string name_element(int rank, int64_t row, int64_t col, int iteration) {
  return "rank " + std::to_string(rank) + ", row " + std::to_string(row) + ", col " + std::to_string(col) +
         ", iteration " + std::to_string(iteration);
}

// Repeats: each checked iteration against the last checked one on the same inputs whose predecessor ran on the
// same inputs too. Iteration 0 follows the warm-up, which ran on iteration 0's own inputs, so it is compared
// with nothing: iterations 1 and 3, 2 and 4, ... are repeats.
void find_repeats(const IterationInputs& in, IterationChecks& out) {
  const auto& index = *in.iteration_index;
  const auto& outs = *in.iteration_outputs;
  for (size_t k = 0; k < index.size(); ++k) {
    if (index[k] == 0) continue;
    for (size_t j = k; j-- > 0;) {
      if (index[j] == 0 || index[j] % 2 != index[k] % 2) continue;
      NondeterministicIteration nd;
      nd.iteration = index[k];
      nd.repeat_of = index[j];
      for (int r = 0; r < in.world; ++r)
        if (outs[k][size_t(r)] != outs[j][size_t(r)]) nd.ranks.push_back(r);
      if (!nd.ranks.empty()) out.nondeterministic.push_back(nd);
      break;
    }
  }
}

// The sampled rows of iteration k against expected[it % 2]: wrong elements, stale ones, the first named. Ranks
// are compared in parallel (the CPU default compares 8 x 2048 x 2048 elements per iteration) and combined in rank
// order, so the first wrong element named is the same as a serial scan's.
int64_t sampled_wrong(const IterationInputs& in, size_t k, bool two, IterationChecks& out) {
  const int it = (*in.iteration_index)[k];
  const auto& got = (*in.iteration_outputs)[k];
  const auto& exp = *in.expected[it % 2];
  const auto* prev = it > 0 && two ? in.expected[(it + 1) % 2] : nullptr;
  const int world = in.world;
  std::vector<int64_t> wrong(size_t(world), 0), stale(size_t(world), 0), first(size_t(world), -1);
#pragma omp parallel for schedule(dynamic, 1)
  for (int r = 0; r < world; ++r) {
    const uint16_t* e = exp[size_t(r)].data();
    const uint16_t* g = got[size_t(r)].data();
    const uint16_t* p = prev ? (*prev)[size_t(r)].data() : nullptr;
    const size_t count = exp[size_t(r)].size();
    // A right view (every view of a clean run) is found equal at memory speed; only a wrong one is walked.
    if (std::memcmp(e, g, count * sizeof(uint16_t)) == 0) continue;
    for (size_t i = 0; i < count; ++i) {
      if (e[i] == g[i]) continue;
      ++wrong[size_t(r)];
      if (p && p[i] == g[i]) ++stale[size_t(r)];
      if (first[size_t(r)] < 0) first[size_t(r)] = int64_t(i);
    }
  }
  int64_t w = 0;
  for (int r = 0; r < world; ++r) {
    w += wrong[size_t(r)];
    out.stale_elements += stale[size_t(r)];
    if (first[size_t(r)] >= 0 && out.first_wrong.empty()) {
      const size_t i = size_t(first[size_t(r)]);
      out.first_wrong = name_element(r, (*in.rows)[i / size_t(in.n)], int64_t(i % size_t(in.n)), it);
    }
  }
  return w;
}

}  // namespace

IterationChecks check_iterations(const IterationInputs& in) {
  IterationChecks out;
  const auto& index = *in.iteration_index;
  GEMMAR_CHECK(index.size() == in.iteration_outputs->size(), "backend returned mismatched iterations");
  const bool full = in.full && !in.full->empty();
  if (full) GEMMAR_CHECK(in.full->size() == index.size(), "the full compare ran on other iterations than read back");
  if (in.expected[0] || full) {
    out.wrong = 0;
    const bool two = in.expected[1] != nullptr;
    std::vector<double> us;
    for (size_t k = 0; k < index.size(); ++k) {
      int64_t w = in.expected[0] ? sampled_wrong(in, k, two, out) : 0;
      if (full) {
        const FullCompare& fc = (*in.full)[k];
        int64_t fw = 0, nf = 0;
        for (size_t r = 0; r < fc.wrong.size(); ++r) {
          fw += fc.wrong[r];
          nf += fc.nonfinite[r];
          if (fc.first[r] >= 0 && out.first_wrong.empty())
            out.first_wrong = name_element(int(r), fc.first[r] / in.n, fc.first[r] % in.n, fc.iteration);
        }
        w = std::max(w, fw);
        out.full_elements = fc.elements;
        out.full_bytes = fc.bytes;
        out.full_nonfinite = std::max(out.full_nonfinite, nf);
        us.push_back(fc.us);
      }
      out.wrong_per_iteration.push_back(w);
      out.wrong += w;
    }
    if (!us.empty()) {
      std::sort(us.begin(), us.end());
      out.full_us = us[us.size() / 2];
    }
  }
  find_repeats(in, out);
  return out;
}

void record_iterations(RunRecord& rec, const IterationChecks& c) {
  if (c.wrong >= 0) {
    rec.wrong_elements = c.wrong;
    rec.wrong_elements_per_iteration = c.wrong_per_iteration;
    rec.stale_elements = c.stale_elements;
  }
  if (!c.first_wrong.empty()) rec.first_wrong_element = c.first_wrong;
  rec.nondeterministic_iterations = c.nondeterministic;
  if (c.full_elements > 0) {
    rec.checked_elements = std::max(rec.checked_elements.value_or(0), c.full_elements);
    rec.nonfinite_elements = std::max(rec.nonfinite_elements.value_or(0), c.full_nonfinite);
    rec.full_compare_us = c.full_us;
    rec.full_compare_bytes = c.full_bytes;
  }
}

}  // namespace gemmar::output_check
