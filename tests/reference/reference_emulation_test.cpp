// The pipeline emulation: every mode bit for bit on the bf16 wire, the fp8 wire's owner rows and transports,
// row selection, external partials, the faults' signatures, and the sampled relL2 estimator.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include <cmath>

#include "reference/emulation.hpp"
#include "reference/formats.hpp"
#include "reference/numerics_inline.hpp"
#include "reference/quant.hpp"

using namespace gemmar;
using namespace gemmar::reference;

namespace {

const Shape kShape{1024, 1024, 128, 8};  // one blockscale unit of rows per world: S = 128

const PartialsResult& partials() {
  static const PartialsResult p = [] {
    PartialsRequest r;
    r.operands.shape = kShape;
    return compute_partials(r);
  }();
  return p;
}

Config make_config(Mode m, WireDtype w, Transport t) {
  Config c;
  c.mode = m;
  c.gather_dtype = w;
  c.gather_transport = t;
  return c;
}

Bf16Outputs run(const Config& c, const Faults& f = {}, const std::vector<int64_t>* rows = nullptr,
                const Partials* parts = nullptr) {
  CollectiveRequest r;
  r.shape = kShape;
  r.config = c;
  r.rows = rows ? *rows : partials().rows;
  r.faults = f;
  return emulate_collective(r, parts ? *parts : partials().partials);
}

double view_rel_l2(const Bf16Outputs& o) {
  return all_views_rel_l2(kShape, Config{}, partials().rows, o, partials().reference).value;
}

}  // namespace

TEST(Emulation, EveryModeOnTheBf16WireEqualsTheStraightforwardSumBitForBit) {
  const std::vector<uint16_t> want =
      straightforward_sum(kShape, Quant::Blockscale, partials().rows, partials().partials);
  for (Mode m : {Mode::SplitSdma, Mode::FusedSdma, Mode::SplitLsa, Mode::FusedLsa})
    for (Transport t : {Transport::Sdma, Transport::Lsa}) {
      const Bf16Outputs out = run(make_config(m, WireDtype::Bf16, t));
      for (int r = 0; r < kShape.world; ++r) ASSERT_EQ(out[size_t(r)], want) << to_string(m) << " rank " << r;
    }
  // And it is the bf16 floor, not a trivially equal pair of wrong answers.
  const double e = rel_l2(want, partials().reference);
  EXPECT_GT(e, 1.5e-3);
  EXPECT_LT(e, 3.0e-3);
}

TEST(Emulation, GemmOnlyOutputsTheLocalBf16Partial) {
  const Bf16Outputs out = run(make_config(Mode::GemmOnly, WireDtype::Bf16, Transport::Sdma));
  for (int r = 0; r < kShape.world; ++r)
    for (size_t i = 0; i < out[0].size(); i += 97)
      ASSERT_EQ(out[size_t(r)][i], to_bf16(partials().partials[size_t(r)][i]));
}

TEST(Emulation, Fp8WireSdmaAndLsaAreIdenticalAndOwnerRowsAreNeverQuantized) {
  const std::vector<uint16_t> bf16 =
      straightforward_sum(kShape, Quant::Blockscale, partials().rows, partials().partials);
  const Bf16Outputs sdma = run(make_config(Mode::FusedSdma, WireDtype::Fp8, Transport::Sdma));
  Config fused_q = make_config(Mode::FusedSdma, WireDtype::Fp8, Transport::Sdma);
  fused_q.fuse_quantize = true;
  const Bf16Outputs fq = run(fused_q);
  for (Mode m : {Mode::SplitSdma, Mode::FusedSdma, Mode::FusedLsa})
    for (Transport t : {Transport::Sdma, Transport::Lsa}) {
      Config c = make_config(m, WireDtype::Fp8, t);
      EXPECT_EQ(run(c), sdma) << config_label(c);
      c.fuse_quantize = true;
      EXPECT_EQ(run(c), fq) << config_label(c);
    }
  // fuse_quantize takes the amax from the reduce's fp32 accumulator (mori's sdma_reduce_quant): the same
  // owner rows, gathered rows that differ only where the accumulator's amax moves the row scale.
  int64_t fq_rows_differ = 0;
  for (int r = 0; r < kShape.world; ++r) {
    EXPECT_EQ(fq[size_t(r)].size(), sdma[size_t(r)].size());
    for (size_t i = 0; i < partials().rows.size(); ++i)
      fq_rows_differ +=
          !std::equal(fq[size_t(r)].begin() + long(i) * kShape.n, fq[size_t(r)].begin() + long(i + 1) * kShape.n,
                      sdma[size_t(r)].begin() + long(i) * kShape.n);
  }
  EXPECT_GT(fq_rows_differ, 0);
  EXPECT_LT(fq_rows_differ, int64_t(kShape.world) * int64_t(partials().rows.size()));
  const int64_t S = slice_rows(kShape, Quant::Blockscale), N = kShape.n;
  for (int r = 0; r < kShape.world; ++r) {
    int64_t foreign_differs = 0;
    for (size_t i = 0; i < partials().rows.size(); ++i) {
      const bool own = partials().rows[i] / S == r;
      for (int64_t c = 0; c < N; ++c) {
        const size_t at = i * size_t(N) + size_t(c);
        if (own) {
          ASSERT_EQ(sdma[size_t(r)][at], bf16[at]) << "rank " << r << " row " << partials().rows[i];
        } else {
          foreign_differs += sdma[size_t(r)][at] != bf16[at];
        }
      }
    }
    EXPECT_GT(foreign_differs, (kShape.world - 1) * S * N / 2) << "the fp8 wire must have narrowed foreign rows";
  }
  const double e = view_rel_l2(sdma);
  EXPECT_GT(e, 1.5e-2);
  EXPECT_LT(e, 3.0e-2);
}

// The fp8 scatter (mori's --scatter-dtype fp8): each rank's bf16 partial of a row, its own included, narrowed per 256
// columns with mori's recipe; the owner sums the widened slots in fp32 in peer order (owner + j) % W from its own,
// stores bf16; the gather copies (bf16) or narrows per row (fp8) as ever. Written out here from the recipe's row
// functions (tested bit for bit in reference_scatter_test.cpp) and compared with every rank's view.
TEST(Emulation, Fp8ScatterNarrowsEveryRanksPartialIncludingTheOwnersAndSumsWidenedInPeerOrder) {
  const int W = kShape.world;
  const int64_t N = kShape.n, S = slice_rows(kShape, Quant::Blockscale);
  const auto& rows = partials().rows;
  std::vector<uint16_t> want(rows.size() * size_t(N)), skip_own(want.size());
  std::vector<uint16_t> bf(static_cast<size_t>(N));
  std::vector<uint8_t> codes(static_cast<size_t>(N));
  std::vector<float> scales(size_t(N / 256));
  std::vector<std::vector<float>> wide(static_cast<size_t>(W), std::vector<float>(static_cast<size_t>(N)));
  for (size_t i = 0; i < rows.size(); ++i) {
    const int owner = int(rows[i] / S);
    for (int p = 0; p < W; ++p) {
      for (int64_t c = 0; c < N; ++c)
        bf[size_t(c)] = to_bf16(partials().partials[size_t(p)][i * size_t(N) + size_t(c)]);
      scatter_quantize_row(bf.data(), N, codes.data(), scales.data(), Fp8Format::E4M3FN);
      scatter_widen_row(codes.data(), scales.data(), N, wide[size_t(p)].data(), Fp8Format::E4M3FN);
    }
    for (int64_t c = 0; c < N; ++c) {
      // acc_own: a reduce that left the owner's own contribution unquantized
      float acc = wide[size_t(owner)][size_t(c)];
      float acc_own = from_bf16(to_bf16(partials().partials[size_t(owner)][i * size_t(N) + size_t(c)]));
      for (int j = 1; j < W; ++j) {
        acc += wide[size_t((owner + j) % W)][size_t(c)];
        acc_own += wide[size_t((owner + j) % W)][size_t(c)];
      }
      want[i * size_t(N) + size_t(c)] = to_bf16(acc);
      skip_own[i * size_t(N) + size_t(c)] = to_bf16(acc_own);
    }
  }
  Config c = make_config(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma);
  c.scatter_dtype = WireDtype::Fp8;
  const Bf16Outputs out = run(c);
  for (int r = 0; r < W; ++r) ASSERT_EQ(out[size_t(r)], want) << "rank " << r;
  EXPECT_NE(want, skip_own);  // the owner's own contribution goes through fp8 too
  const double e = view_rel_l2(out);
  EXPECT_GT(e, 2.3e-2);  // e4m3's 3 mantissa bits on every contribution
  EXPECT_LT(e, 2.9e-2);
  // With the fp8 gather: the owner holds that reduce, every peer its per-row narrowing.
  c.gather_dtype = WireDtype::Fp8;
  const Bf16Outputs both = run(c);
  std::vector<uint16_t> deq(static_cast<size_t>(N));
  for (size_t i = 0; i < rows.size(); i += 13) {
    const int owner = int(rows[i] / S);
    const uint16_t* reduced = want.data() + i * size_t(N);
    const float scale = wire_quantize_row(reduced, N, codes.data(), Fp8Format::E4M3FN);
    wire_dequantize_row(codes.data(), scale, N, deq.data(), Fp8Format::E4M3FN);
    for (int r = 0; r < W; ++r) {
      const uint16_t* view = both[size_t(r)].data() + i * size_t(N);
      ASSERT_TRUE(std::equal(view, view + N, r == owner ? reduced : deq.data())) << "rank " << r << " row " << rows[i];
    }
  }
  const double e2 = view_rel_l2(both);
  EXPECT_GT(e2, 3.2e-2);  // the two legs' errors add in quadrature: sqrt(0.026^2 + 0.025^2)
  EXPECT_LT(e2, 4.0e-2);
}

// A scatter put that does nothing leaves the owner's slot as mori's zeroed window holds it (codes 0, scales 0):
// widened, zero, so the owner's reduce holds its own narrowed partial only.
TEST(EmulationFaults, SilentFp8ScatterLeavesTheOwnersOwnNarrowedPartial) {
  Config c = make_config(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma);
  c.scatter_dtype = WireDtype::Fp8;
  Faults f;
  f.silent_scatter = true;
  const Bf16Outputs out = run(c, f);
  const int64_t N = kShape.n, S = slice_rows(kShape, Quant::Blockscale);
  std::vector<uint16_t> bf(static_cast<size_t>(N));
  std::vector<uint8_t> codes(static_cast<size_t>(N));
  std::vector<float> scales(size_t(N / 256)), wide(static_cast<size_t>(N));
  for (size_t i = 0; i < partials().rows.size(); i += 7) {
    const int owner = int(partials().rows[i] / S);
    for (int64_t col = 0; col < N; ++col)
      bf[size_t(col)] = to_bf16(partials().partials[size_t(owner)][i * size_t(N) + size_t(col)]);
    scatter_quantize_row(bf.data(), N, codes.data(), scales.data(), Fp8Format::E4M3FN);
    scatter_widen_row(codes.data(), scales.data(), N, wide.data(), Fp8Format::E4M3FN);
    for (int64_t col = 0; col < N; ++col)
      ASSERT_EQ(out[size_t(owner)][i * size_t(N) + size_t(col)], to_bf16(wide[size_t(col)] + 0.0f)) << i << " " << col;
  }
  EXPECT_GT(view_rel_l2(out), 0.8);
}

// Relaxed rows (mori's --relaxed-rows, kernels_fused.py @f3bff0ae): M = 1040 is not padded to W * BLOCK_M = 512, each
// rank owns 260 rows, not 384: row 300 belongs to rank 1 (its reduce starts from rank 1's value, and on the fp8 gather
// rank 1's view is the unquantized one), and the rows whose owner is the same in both layouts are bit for bit equal.
TEST(Emulation, RelaxedRowsMoveRowsToTheUnpaddedSlicesOwner) {
  const Shape shape{1040, 1024, 128, 4};
  PartialsRequest pr;
  pr.operands.shape = shape;
  for (int64_t r = 0; r < shape.m; ++r) pr.rows.push_back(r);
  const PartialsResult p = compute_partials(pr);
  Config padded = make_config(Mode::FusedSdma, WireDtype::Fp8, Transport::Sdma);
  Config relaxed = padded;
  relaxed.chunk_bands = 1;
  relaxed.relaxed_rows = true;
  validate_shape_config(shape, relaxed);
  ASSERT_EQ(slice_rows(shape, relaxed), 260);
  ASSERT_EQ(slice_rows(shape, padded), 384);
  CollectiveRequest cr;
  cr.shape = shape;
  cr.rows = p.rows;
  cr.config = relaxed;
  const Bf16Outputs a = emulate_collective(cr, p.partials);
  cr.config = padded;
  const Bf16Outputs b = emulate_collective(cr, p.partials);
  const int64_t N = shape.n;
  auto row_of = [&](const Bf16Outputs& o, int r, int64_t row) {
    return std::vector<uint16_t>(o[size_t(r)].begin() + row * N, o[size_t(r)].begin() + (row + 1) * N);
  };
  for (int r = 0; r < 4; ++r)
    for (int64_t row : {int64_t(0), int64_t(100), int64_t(259)}) EXPECT_EQ(row_of(a, r, row), row_of(b, r, row)) << r;
  // Row 300: the reduce from owner 1 (relaxed) or 0 (padded), in fp32 over the bf16 partials, as the owner holds it.
  for (const auto& [out, owner] : {std::pair{&a, 1}, std::pair{&b, 0}}) {
    std::vector<uint16_t> want(static_cast<size_t>(N));
    for (int64_t c = 0; c < N; ++c)
      want[size_t(c)] = numerics::reduce_element(
          owner, 4, [&](int q) { return to_bf16(p.partials[size_t(q)][size_t(300 * N + c)]); });
    EXPECT_EQ(row_of(*out, owner, 300), want) << "owner " << owner;
  }
  EXPECT_NE(row_of(a, 1, 300), row_of(b, 1, 300));  // rank 1 holds the reduce, not its fp8 narrowing
}

// The chunks of the fused scatter only split the puts (mori: "Outputs are bitwise equal to the baseline", README
// "Short final chunks"): chunk_bands' short tail and either chunk rule give the same bits, on both scatter wires.
TEST(Emulation, ChunkBandsAndTheChunkRuleChangeNoValue) {
  for (WireDtype scatter : {WireDtype::Bf16, WireDtype::Fp8}) {
    Config base = make_config(Mode::FusedSdma, WireDtype::Fp8, Transport::Lsa);
    base.scatter_dtype = scatter;
    const Bf16Outputs want = run(base);
    for (int bands : {1, 3}) {  // S = 128 rows of BLOCK_M 128 here: one band a rank, so 3 is a short tail of 1
      Config c = base;
      c.chunk_bands = bands;
      EXPECT_EQ(run(c), want) << bands;
    }
    Config op = base;
    op.chunk_rule = ChunkRule::Op;
    EXPECT_EQ(run(op), want);
  }
}

// The wo_b schedule's padded rows (op.py pad_rows: A zero-extended before quantizing): logical M 4200 runs as 4224
// rows on W=4 mxfp8 5120 x 2048 (relaxed, 1056 a rank); rows 4200..4223 are zero in every view, on the fp8 scatter too.
TEST(Emulation, WoBScheduleRowsPastTheLogicalMAreZero) {
  EmulationRequest req;
  req.shape = {4200, 5120, 2048, 4};
  req.config = make_config(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma);
  req.config.quant = Quant::Mxfp8;
  req.config.schedule = Schedule::WoB;
  req.config.chunk_rule = ChunkRule::Op;
  req.config.scatter_dtype = WireDtype::Fp8;
  ASSERT_EQ(padded_m(req.shape, req.config), 4224);
  req.rows = {1055, 1056, 4199, 4200, 4223};
  const EmulationResult r = emulate(req);
  for (int rank = 0; rank < 4; ++rank)
    for (size_t i = 0; i < req.rows.size(); ++i) {
      const bool pad = req.rows[i] >= 4200;
      int64_t nonzero = 0;
      for (int64_t c = 0; c < req.shape.n; ++c)
        nonzero += (r.outputs[size_t(rank)][i * size_t(req.shape.n) + size_t(c)] & 0x7fff) != 0;
      if (pad) {
        EXPECT_EQ(nonzero, 0) << "rank " << rank << " row " << req.rows[i];
      } else {
        EXPECT_GT(nonzero, req.shape.n / 2) << "rank " << rank << " row " << req.rows[i];
      }
    }
}

TEST(Emulation, SplitLsaIsBf16OnlyEvenWhenAskedForFp8) {
  const Bf16Outputs a = run(make_config(Mode::SplitLsa, WireDtype::Fp8, Transport::Lsa));
  const Bf16Outputs b = run(make_config(Mode::SplitLsa, WireDtype::Bf16, Transport::Lsa));
  EXPECT_EQ(a, b);
}

TEST(Emulation, SelectedRowsEqualTheSameRowsOfTheFullEmulation) {
  const Config c = make_config(Mode::FusedSdma, WireDtype::Fp8, Transport::Lsa);
  const Bf16Outputs full = run(c);
  const std::vector<int64_t> rows{3, 200, 513, 1000};
  Partials sub(size_t(kShape.world));
  for (int r = 0; r < kShape.world; ++r)
    for (int64_t row : rows)
      sub[size_t(r)].insert(sub[size_t(r)].end(), partials().partials[size_t(r)].begin() + row * kShape.n,
                            partials().partials[size_t(r)].begin() + (row + 1) * kShape.n);
  const Bf16Outputs part = run(c, {}, &rows, &sub);
  for (int r = 0; r < kShape.world; ++r)
    for (size_t i = 0; i < rows.size(); ++i)
      for (int64_t col = 0; col < kShape.n; ++col)
        ASSERT_EQ(part[size_t(r)][i * size_t(kShape.n) + size_t(col)],
                  full[size_t(r)][size_t(rows[i] * kShape.n + col)]);
}

TEST(Emulation, EmulateEqualsTheCollectiveOverComputedPartialsAndOperandsOnlyFeedPartials) {
  EmulationRequest req;
  req.shape = kShape;
  req.config = make_config(Mode::FusedLsa, WireDtype::Fp8, Transport::Lsa);
  req.rows = {0, 130, 260, 390, 520, 650, 780, 910};
  const EmulationResult e = emulate(req);
  ASSERT_EQ(e.partials.size(), size_t(kShape.world));
  CollectiveRequest cr;
  cr.shape = kShape;
  cr.config = req.config;
  cr.rows = e.rows;
  EXPECT_EQ(emulate_collective(cr, e.partials), e.outputs);
  for (size_t i = 0; i < e.rows.size(); ++i)
    EXPECT_EQ(e.partials[3][i * size_t(kShape.n)], partials().partials[3][size_t(e.rows[i] * kShape.n)]);
}

TEST(Emulation, Fp32ReferenceAgreesWithFp64TruthAndWithTheBlockscalePartials) {
  PartialsRequest req;
  req.operands.shape = kShape;
  req.rows = sample_rows(kShape, Quant::Blockscale, 32, 5);
  req.with_truth = true;
  const PartialsResult p = compute_partials(req);
  double e = 0, n = 0, e2 = 0;
  std::vector<double> sum(p.reference.size(), 0);
  for (const auto& part : p.partials)
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
  for (size_t i = 0; i < p.reference.size(); ++i) {
    e += (p.reference[i] - p.truth[i]) * (p.reference[i] - p.truth[i]);
    e2 += (sum[i] - p.truth[i]) * (sum[i] - p.truth[i]);
    n += p.truth[i] * p.truth[i];
  }
  EXPECT_LT(std::sqrt(e / n), 1e-6);
  EXPECT_LT(std::sqrt(e2 / n), 1e-6);
  EXPECT_GT(n, 0);
}

TEST(EmulationFaults, SilentPutsOnBothLegsLeaveEachRankItsLocalPartial) {
  Faults f;
  f.silent_scatter = f.silent_gather = true;
  const Bf16Outputs out = run(make_config(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma), f);
  for (int r = 0; r < kShape.world; ++r)
    for (size_t i = 0; i < out[0].size(); i += 101)
      ASSERT_EQ(out[size_t(r)][i], to_bf16(partials().partials[size_t(r)][i]));
  const double e = view_rel_l2(out);
  EXPECT_NEAR(e, std::sqrt(7.0 / 8.0), 0.04);
  // One leg silent is as visible; lsa gathers are CU loads and are not affected by silent copy-engine puts.
  Faults g;
  g.silent_gather = true;
  EXPECT_GT(view_rel_l2(run(make_config(Mode::FusedSdma, WireDtype::Fp8, Transport::Sdma), g)), 0.8);
  EXPECT_LT(view_rel_l2(run(make_config(Mode::FusedSdma, WireDtype::Fp8, Transport::Lsa), g)), 3e-2);
  Faults s;
  s.silent_scatter = true;
  EXPECT_GT(view_rel_l2(run(make_config(Mode::SplitSdma, WireDtype::Bf16, Transport::Sdma), s)), 0.8);
}

TEST(EmulationFaults, MissingSliceIsNamedByPerSliceRelL2) {
  Bf16Outputs out = run(make_config(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma));
  const int64_t S = slice_rows(kShape, Quant::Blockscale);
  for (int r = 0; r < kShape.world; ++r)
    for (int64_t row = 5 * S; row < 6 * S; ++row)
      if (r != 5)
        for (int64_t c = 0; c < kShape.n; ++c) out[size_t(r)][size_t(row * kShape.n + c)] = 0;  // slice 5 never landed
  const auto per_slice = per_slice_rel_l2(kShape, Config{}, partials().rows, out, partials().reference);
  for (int h = 0; h < kShape.world; ++h) {
    if (h == 5) {
      EXPECT_GT(per_slice[size_t(h)], 0.9);
    } else {
      EXPECT_LT(per_slice[size_t(h)], 3e-3);
    }
  }
  const auto per_rank = per_rank_rel_l2(kShape, Config{}, partials().rows, out, partials().reference);
  EXPECT_LT(per_rank[5].value, 3e-3);  // the owner itself has its rows
  EXPECT_GT(per_rank[0].value, 0.3);
}

TEST(EmulationFaults, NoReleaseGivesAPerRankErrorAroundOneHundredth) {
  Faults f;
  f.no_release = true;
  const Bf16Outputs out = run(make_config(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma), f);
  const auto per_rank = per_rank_rel_l2(kShape, Config{}, partials().rows, out, partials().reference);
  double lo = 1, hi = 0;
  for (const auto& r : per_rank) {
    lo = std::min(lo, r.value);
    hi = std::max(hi, r.value);
  }
  EXPECT_GT(lo, 3e-3);      // every rank above the bf16 floor
  EXPECT_LT(hi, 8e-2);      // but nowhere near a missing slice
  EXPECT_GT(hi / lo, 1.1);  // different per rank
}

TEST(EmulationFaults, PerturbedRankStaleOutputBypassedWireAndFnuzReadAsFn) {
  Faults p;
  p.perturbed_rank = 2;
  const double pe = view_rel_l2(run(make_config(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma), p));
  EXPECT_GT(pe, 0.05);
  EXPECT_LT(pe, 0.2);

  Faults b;
  b.fp8_wire_bypassed = true;
  EXPECT_EQ(run(make_config(Mode::FusedSdma, WireDtype::Fp8, Transport::Lsa), b),
            run(make_config(Mode::FusedSdma, WireDtype::Bf16, Transport::Lsa)));

  EmulationRequest req;
  req.shape = kShape;
  req.rows = {1, 129, 257, 385, 513, 641, 769, 897};
  req.faults.stale_output = true;
  const EmulationResult st = emulate(req);
  const double se = all_views_rel_l2(kShape, Config{}, st.rows, st.outputs, st.reference).value;
  EXPECT_NEAR(se, std::sqrt(2.0), 0.25);

  req.faults = {};
  req.data = DataKind::Bench;  // benchmark data never reaches fnuz's max, so the 2x per operand shows cleanly
  req.fp8_format = Fp8Format::E4M3FNUZ;
  const EmulationResult good = emulate(req);
  EXPECT_LT(all_views_rel_l2(kShape, Config{}, good.rows, good.outputs, good.reference).value, 3e-3);
  req.faults.fnuz_read_as_fn = true;
  const EmulationResult bad = emulate(req);
  EXPECT_NEAR(all_views_rel_l2(kShape, Config{}, bad.rows, bad.outputs, bad.reference).value, 3.0, 0.05);
}

TEST(RelL2, SampledAgreesWithFullWithinItsStandardError) {
  const Config c = make_config(Mode::FusedSdma, WireDtype::Fp8, Transport::Lsa);
  const Bf16Outputs out = run(c);
  const RelL2 full = all_views_rel_l2(kShape, Config{}, partials().rows, out, partials().reference);
  EXPECT_EQ(full.stderr_, 0.0);
  const std::vector<int64_t> rows = sample_rows(kShape, Quant::Blockscale, 64, 99);
  ASSERT_EQ(rows.size(), 64u);
  Bf16Outputs sub(out.size());
  std::vector<float> ref;
  for (int64_t row : rows) {
    for (size_t r = 0; r < out.size(); ++r)
      sub[r].insert(sub[r].end(), out[r].begin() + row * kShape.n, out[r].begin() + (row + 1) * kShape.n);
    ref.insert(ref.end(), partials().reference.begin() + row * kShape.n,
               partials().reference.begin() + (row + 1) * kShape.n);
  }
  const RelL2 s = all_views_rel_l2(kShape, Config{}, rows, sub, ref);
  EXPECT_GT(s.stderr_, 0.0);
  EXPECT_LT(s.stderr_, 0.05 * s.value);
  EXPECT_LT(std::fabs(s.value - full.value), 4 * s.stderr_) << s.value << " vs " << full.value;
}

TEST(RelL2, SampleRowsCoversEverySliceAndSkipsPadding) {
  const Shape s{3000, 1024, 256, 8};  // padded to 3072, S = 384: the last slice holds 312 real rows
  const auto rows = sample_rows(s, Quant::Blockscale, 80, 1);
  ASSERT_EQ(rows.size(), 80u);
  std::vector<int> per(8, 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_LT(rows[i], 3000);
    if (i) {
      EXPECT_LT(rows[i - 1], rows[i]);
    }
    ++per[size_t(rows[i] / 384)];
  }
  for (int n : per) EXPECT_EQ(n, 10);
}

// ---- Iterations, replays, stragglers ---------------------------------------------------------------------------

namespace {
Partials scaled(const Partials& p, uint64_t seed, int it) {
  Partials out = p;
  for (size_t r = 0; r < out.size(); ++r)
    for (float& x : out[r]) x *= iteration_input_scale(seed, it, int(r));
  return out;
}
}  // namespace

TEST(EmulationIterations, InputScalesArePowersOfTwoAlternatingWithPeriodTwo) {
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(iteration_input_scale(5, 0, r), 1.0f);
    EXPECT_EQ(iteration_input_scale(5, 2, r), 1.0f);
    const float f = iteration_input_scale(5, 1, r);
    EXPECT_TRUE(f == 2.0f || f == 0.5f) << f;
    EXPECT_EQ(f, iteration_input_scale(5, 3, r));
  }
  // A uniform power of two commutes with every rounding of the pipeline: output x2 exactly, both wires.
  for (WireDtype w : {WireDtype::Bf16, WireDtype::Fp8}) {
    const Config c = make_config(Mode::FusedSdma, w, Transport::Sdma);
    Partials twice = partials().partials;
    for (auto& p : twice)
      for (float& x : p) x *= 2.0f;
    const Bf16Outputs a = run(c), b = run(c, {}, nullptr, &twice);
    for (int r = 0; r < 8; ++r)
      for (size_t i = 0; i < a[r].size(); i += 97) EXPECT_EQ(2.0f * from_bf16(a[r][i]), from_bf16(b[r][i]));
  }
}

TEST(EmulationIterations, StraggleDelaysAreBoundedAndOrderThePuts) {
  ReplayTiming t;
  t.world = 4;
  t.delay_us = {0, 0, 0, 0};
  // No stragglers: puts to owner 0 leave 1 (j=3), 2 (j=2), 3 (j=1): 3 lands first, 1 last, half of it landed.
  EXPECT_EQ(t.arrival_order(0), (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(t.late_peer(0), 1);
  EXPECT_EQ(t.landed_rows(0, 128), 64);
  t.delay_us = {0, 0, 0, 100};  // rank 3 straggles: its put lands last, nothing of it has landed
  EXPECT_EQ(t.late_peer(0), 3);
  EXPECT_EQ(t.landed_rows(0, 128), 0);
  t.delay_us = {100, 0, 0, 0};  // the owner straggles: 3/4 of the late put landed (at most)
  EXPECT_EQ(t.landed_rows(0, 128), 96);
  for (int i = 0; i < 100; ++i) {
    const double d = straggle_delay_us(9, i, i % 8, 50);
    EXPECT_GE(d, 0);
    EXPECT_LT(d, 50);
  }
  EXPECT_EQ(straggle_delay_us(9, 1, 1, 0), 0);
}

TEST(EmulationIterations, ReplayStateWithoutFaultsChangesNothingAndStraggleOrderDoesNotMoveBits) {
  for (Mode m : {Mode::SplitSdma, Mode::FusedSdma, Mode::FusedLsa, Mode::SplitLsa})
    for (WireDtype w : {WireDtype::Bf16, WireDtype::Fp8}) {
      const Config c = make_config(m, w, Transport::Sdma);
      const Partials p1 = scaled(partials().partials, 3, 1);
      const Bf16Outputs ref0 = run(c), ref1 = run(c, {}, nullptr, &p1);
      CollectiveRequest r;
      r.shape = kShape;
      r.config = c;
      r.rows = partials().rows;
      ReplayState state;
      ReplayTiming timing;
      timing.world = 8;
      timing.delay_us = {7, 0, 31, 2, 19, 5, 0, 11};
      r.replay = &state;
      r.timing = &timing;
      EXPECT_EQ(emulate_collective(r, partials().partials), ref0);
      EXPECT_TRUE(state.valid);
      EXPECT_EQ(emulate_collective(r, p1), ref1);  // a fault-free replay on other inputs: the other inputs' bits
    }
}

TEST(EmulationIterations, StaleReplayLeavesThePreviousPartialInTheLatePutsUnlandedRows) {
  const Config c = make_config(Mode::SplitSdma, WireDtype::Bf16, Transport::Sdma);
  const Partials p1 = scaled(partials().partials, 3, 1);
  CollectiveRequest r;
  r.shape = kShape;
  r.config = c;
  r.rows = partials().rows;
  r.faults.stale_replay = true;
  ReplayState state;
  r.replay = &state;
  EXPECT_EQ(emulate_collective(r, partials().partials), run(c));  // first replay: fresh flags, right
  const Bf16Outputs got = emulate_collective(r, p1);
  // Expected: owner o's reduce read peer (o+1)%8's rows [64, 128) of the slice from iteration 0's partial.
  Partials mixed = p1;
  const int64_t S = 128;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const int64_t row = r.rows[i];
    const int owner = int(row / S), late = (owner + 1) % 8;
    if (row - owner * S >= 64)
      for (int64_t col = 0; col < kShape.n; ++col)
        mixed[size_t(late)][i * size_t(kShape.n) + size_t(col)] =
            partials().partials[size_t(late)][i * size_t(kShape.n) + size_t(col)];
  }
  // The owner's reduce sums the mixed slots; every view of the slice agrees (the stale sum is gathered).
  const Bf16Outputs want = run(c, {}, nullptr, &mixed);
  const Bf16Outputs fresh = run(c, {}, nullptr, &p1);
  int64_t differ = 0;
  for (int rk = 0; rk < 8; ++rk)
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const int owner = int(r.rows[i] / S);
      if (rk == owner || owner == (rk + 7) % 8) continue;  // rank `late` holds its own fresh partial in place
      for (int64_t col = 0; col < kShape.n; col += 61) {
        const size_t e = i * size_t(kShape.n) + size_t(col);
        EXPECT_EQ(got[rk][e], want[rk][e])
            << "rank " << rk << " row " << r.rows[i] << " col " << col << " fresh " << fresh[rk][e];
        differ += got[rk][e] != fresh[rk][e];
      }
    }
  EXPECT_GT(differ, 0);
}

TEST(EmulationIterations, FrozenFlagGathersThePreviousReplaysSlice) {
  for (WireDtype w : {WireDtype::Bf16, WireDtype::Fp8}) {
    const Config c = make_config(Mode::FusedLsa, w, Transport::Lsa);
    const Partials p1 = scaled(partials().partials, 3, 1);
    CollectiveRequest r;
    r.shape = kShape;
    r.config = c;
    r.rows = partials().rows;
    r.faults.frozen_flag = true;
    ReplayState state;
    r.replay = &state;
    const Bf16Outputs first = emulate_collective(r, partials().partials);
    EXPECT_EQ(first, run(c));
    const Bf16Outputs second = emulate_collective(r, p1);
    const Bf16Outputs fresh = run(c, {}, nullptr, &p1);
    for (int rk = 0; rk < 8; ++rk)
      for (size_t i = 0; i < r.rows.size(); ++i) {
        const int owner = int(r.rows[i] / 128);
        const auto& src = rk == owner ? fresh : first;  // the owner's rows are this replay's, peers' the last one's
        for (int64_t col = 0; col < kShape.n; col += 53) {
          const size_t e = i * size_t(kShape.n) + size_t(col);
          EXPECT_EQ(second[rk][e], src[rk][e]) << rk << " " << i << " " << col;
        }
      }
  }
}
