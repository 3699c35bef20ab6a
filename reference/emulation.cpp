#include "reference/emulation.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/errors.hpp"
#include "reference/formats.hpp"
#include "reference/gemm.hpp"
#include "reference/no_release_pattern.hpp"
#include "reference/quant.hpp"

namespace gemmar::reference {
namespace {

constexpr int64_t kFusedTileN = 256;  // columns per epilogue push in the fused modes

// The no-release pattern (reference/no_release_pattern.hpp, shared with the GPU's injection).
struct ReleasePattern {
  uint64_t seed;
  int world;
  int64_t slice;
  bool band_hit(int receiver, int owner, int64_t row) const {
    return (no_release::band_mask(seed, receiver, owner) >> no_release::band_of(row, owner, slice)) & 1u;
  }
  uint64_t line_threshold(int receiver) const { return no_release::line_threshold(seed, receiver); }
  bool line_stale(int receiver, int64_t row, int64_t line, uint64_t threshold) const {
    return no_release::line_stale(seed, receiver, row, line, threshold);
  }
};

}  // namespace

float iteration_input_scale(uint64_t seed, int iteration, int rank) {
  if (iteration % 2 == 0) return 1.0f;
  return (counter_hash(seed, rank, Tensor(0x4954), 0, 0) & 1u) ? 2.0f : 0.5f;
}

double straggle_delay_us(uint64_t seed, int iteration, int rank, double max_us) {
  if (!(max_us > 0)) return 0.0;
  const uint64_t h = counter_hash(seed, rank, Tensor(0x5354), iteration, 0);
  return max_us * double(h >> 11) * (1.0 / 9007199254740992.0);
}

double ReplayTiming::arrival_us(int peer, int owner) const {
  const int j = ((owner - peer) % world + world) % world;
  const double d = size_t(peer) < delay_us.size() ? delay_us[size_t(peer)] : 0.0;
  return d + double(j) * kPutSlotUs;
}

std::vector<int> ReplayTiming::arrival_order(int owner) const {
  std::vector<int> peers;
  for (int p = 0; p < world; ++p)
    if (p != owner) peers.push_back(p);
  std::stable_sort(peers.begin(), peers.end(),
                   [&](int a, int b) { return arrival_us(a, owner) < arrival_us(b, owner); });
  return peers;
}

int ReplayTiming::late_peer(int owner) const {
  const std::vector<int> order = arrival_order(owner);
  return order.empty() ? owner : order.back();
}

int64_t ReplayTiming::landed_rows(int owner, int64_t slice_rows) const {
  const int late = late_peer(owner);
  const double d_owner = size_t(owner) < delay_us.size() ? delay_us[size_t(owner)] : 0.0;
  const double d_late = size_t(late) < delay_us.size() ? delay_us[size_t(late)] : 0.0;
  // The reduce reads when the owner's own GEMM is done (its delay later); the late put has been landing since
  // its peer's delay; a put takes kPutSlotUs per slice.
  const double frac = std::clamp(0.5 + (d_owner - d_late) / kPutSlotUs, 0.0, 0.75);
  return int64_t(frac * double(slice_rows));
}

namespace {

// What every row's legs read, fixed before the first row runs.
struct CollectivePlan {
  CollectivePlan(const CollectiveRequest& req, const Config& cfg);
  const CollectiveRequest& req;
  const Faults& f;
  int W;
  int64_t N, S;
  bool fused;        // the epilogue pushes each finished tile
  bool owner_loads;  // the owner loads its peers' partials (split-lsa's first stage): there are no puts to go silent
  bool fp8;          // fp8 codes on the gather wire (fp8_wire_bypassed: an fp8 config whose gather moved bf16)
  // fp8 codes on the scatter leg (mori's --scatter-dtype fp8): each sender narrows its bf16 partial per row per 256
  // columns before the put, the owner's own slice included; the reduce widens every slot with its scale.
  bool fp8_scatter;
  bool acc_amax;  // fuse_quantize: the wire's amax from the reduce's fp32 accumulator (mori's sdma_reduce_quant)
  // silent_gather and no_release hit only copy-engine gathers. cfg is effective_config's: split-lsa's gather
  // transport is already lsa.
  bool sdma_gather;
  // The previous replay's buffers, which replay faults read; none on the first replay.
  const ReplayState* previous;
  bool stale_slots, frozen_gather;
  std::vector<std::vector<int>> order;  // per owner: its peers, in the order their puts land
  std::vector<int> late;                // per owner: the peer whose put lands last
  std::vector<int64_t> landed_rows;     // per owner: rows of the late put that landed before the reduce read
  ReleasePattern rel;
  std::vector<uint64_t> line_threshold;  // per receiving rank
};

CollectivePlan::CollectivePlan(const CollectiveRequest& r, const Config& cfg)
    : req(r),
      f(r.faults),
      W(r.shape.world),
      N(r.shape.n),
      S(slice_rows(r.shape, cfg)),  // the run's row plan: relaxed rows own M / W rows each, unpadded
      fused(traits(cfg.mode).fused),
      owner_loads(!fused && !traits(cfg.mode).scatter_by_copy_engine),
      fp8(cfg.gather_dtype == WireDtype::Fp8 && !f.fp8_wire_bypassed),
      fp8_scatter(cfg.scatter_dtype == WireDtype::Fp8),
      acc_amax(fp8 && cfg.fuse_quantize),
      sdma_gather(cfg.gather_transport == Transport::Sdma),
      previous(r.replay && r.replay->valid ? r.replay : nullptr),
      stale_slots(f.stale_replay && previous),
      frozen_gather(f.frozen_flag && previous),
      rel{r.seed, W, S} {
  if (previous) {
    GEMMAR_CHECK(int(previous->local.size()) == W && previous->reduced.size() == r.rows.size() * size_t(N),
                 "replay state of another shape");
  }
  ReplayTiming no_straggle;
  no_straggle.world = W;
  const ReplayTiming& timing = r.timing ? *r.timing : no_straggle;
  for (int o = 0; o < W; ++o) {
    order.push_back(timing.arrival_order(o));
    late.push_back(timing.late_peer(o));
    landed_rows.push_back(timing.landed_rows(o, S));
    line_threshold.push_back(rel.line_threshold(o));
  }
}

// One requested row: i indexes the request's rows (and so every buffer's rows), global is the padded row.
struct Row {
  int64_t i;
  int64_t global;
  int owner;
};

// One thread's scratch, reused row after row.
struct RowBuffers {
  RowBuffers(int W, int64_t N)
      : slots(size_t(W * N)),
        acc(size_t(N)),
        reduced(size_t(N)),
        wire(size_t(N)),
        landed8(size_t(N)),
        wide(size_t(W * N)),
        scatter_scales(size_t(N / numerics::kScatterScaleCols + 1)) {}
  std::vector<uint16_t> slots;        // the owner's receive window: slot p holds peer p's partial
  std::vector<float> acc;             // the reduce's fp32 accumulator (before the bf16 store)
  std::vector<uint16_t> reduced;      // the owner's reduced row
  std::vector<uint8_t> wire;          // its fp8 codes
  std::vector<uint8_t> landed8;       // the codes a faulty fp8 gather lands instead
  std::vector<float> wide;            // fp8 scatter: slot p's codes widened by its scales, fp32 [W, N]
  std::vector<float> scatter_scales;  // fp8 scatter: one slot's scales, one per 256 columns
};

uint16_t* row_of(Bf16Outputs& out, int rank, int64_t i, int64_t N) { return out[size_t(rank)].data() + i * N; }
const uint16_t* row_of(const Bf16Outputs& out, int rank, int64_t i, int64_t N) {
  return out[size_t(rank)].data() + i * N;
}

// Each rank's local bf16 partial; the output buffer starts holding it (in-place all-reduce).
Bf16Outputs local_partials(const Partials& partials, int64_t cells, int perturbed_rank) {
  Bf16Outputs out(partials.size(), std::vector<uint16_t>(size_t(cells)));
  for (size_t r = 0; r < partials.size(); ++r) {
    const float mult = int(r) == perturbed_rank ? kPerturbFactor : 1.0f;
    const float* src = partials[r].data();
    uint16_t* dst = out[r].data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < cells; ++i) dst[i] = to_bf16(mult == 1.0f ? src[i] : src[i] * mult);
  }
  return out;
}

// stale_replay: the owner's ready flag was left set, so the reduce reads while the late peer's put (split-lsa:
// its GEMM's store) is still landing; its rows past those that landed hold the previous replay's partial. A
// silent put never starts landing, so nothing of it is stale.
bool put_in_flight(const CollectivePlan& c, const Row& row, int peer) {
  const size_t o = size_t(row.owner);
  return c.stale_slots && peer == c.late[o] && row.global - int64_t(row.owner) * c.S >= c.landed_rows[o] &&
         !(c.f.silent_scatter && !c.owner_loads);
}

// Scatter leg: slot p of the owner receives peer p's bf16 partial of this row. Every rank's output row still
// holds its local partial: nothing writes a row before its own gather.
void receive_slots(const CollectivePlan& c, const Bf16Outputs& out, const Row& row, std::vector<uint16_t>& slots) {
  const int64_t N = c.N;
  std::fill(slots.begin(), slots.end(), uint16_t(0));  // fresh receive windows
  // The owner's own partial, read in place: no put carries it.
  std::memcpy(slots.data() + row.owner * N, row_of(out, row.owner, row.i, N), size_t(N) * 2);
  // The peers in the order their puts land (straggle delays and put order: ReplayTiming).
  for (int p : c.order[size_t(row.owner)]) {
    uint16_t* slot = slots.data() + p * N;
    const uint16_t* partial = row_of(out, p, row.i, N);
    if (put_in_flight(c, row, p)) {
      std::memcpy(slot, c.previous->local[size_t(p)].data() + row.i * N, size_t(N) * 2);
    } else if (c.owner_loads) {
      std::memcpy(slot, partial, size_t(N) * 2);
    } else if (c.f.silent_scatter) {
      // the put did nothing: the slot keeps its fresh contents
    } else if (c.fused) {
      for (int64_t c0 = 0; c0 < N; c0 += kFusedTileN)
        std::memcpy(slot + c0, partial + c0, size_t(std::min(kFusedTileN, N - c0)) * 2);
    } else {
      std::memcpy(slot, partial, size_t(N) * 2);  // split-sdma: one copy-engine put per slice
    }
  }
}

// fp8 scatter: what the owner's reduce reads from slot p is the codes and scales the sender's epilogue made of its
// bf16 partial (reference/quant.hpp scatter_quantize_row, mori's recipe), widened to fp32. A slot no put reached
// (silent scatter) holds zero codes and zero scales in mori's zeroed window: widened, 0, as the zero row's
// quantization (scale 1, codes 0) gives here; a stale slot holds the previous replay's quantization of its partial.
void widen_slots(const CollectivePlan& c, RowBuffers& b) {
  for (int p = 0; p < c.W; ++p) {
    reference::scatter_quantize_row(b.slots.data() + p * c.N, c.N, b.wire.data(), b.scatter_scales.data(),
                                    c.req.wire_format);
    reference::scatter_widen_row(b.wire.data(), b.scatter_scales.data(), c.N, b.wide.data() + p * c.N,
                                 c.req.wire_format);
  }
}

// Reduce: fp32 in peer order (owner + j) % W, stored bf16, so every mode equals the straightforward sum; then,
// on the fp8 wire, quantized once per row for every peer's gather. Returns the row scale.
float reduce_row(const CollectivePlan& c, int owner, RowBuffers& b) {
  if (c.fp8_scatter) widen_slots(c, b);
  for (int64_t col = 0; col < c.N; ++col) {
    b.acc[size_t(col)] =
        c.fp8_scatter ? numerics::reduce_sum_f32(owner, c.W, [&](int p) { return b.wide[size_t(p * c.N + col)]; })
                      : numerics::reduce_sum(owner, c.W, [&](int p) { return b.slots[size_t(p * c.N + col)]; });
    b.reduced[size_t(col)] = numerics::f32_to_bf16(b.acc[size_t(col)]);
  }
  if (!c.fp8) return 1.0f;
  return wire_quantize_row(b.reduced.data(), c.N, b.wire.data(), c.req.wire_format,
                           c.acc_amax ? WireRecipe::AccAmax : WireRecipe::Mori, b.acc.data());
}

// This replay's buffers, filled row by row, for the next replay's faults to read.
ReplayState next_replay_state(const Bf16Outputs& local, size_t rows, int64_t N) {
  ReplayState next;
  next.local = local;
  next.reduced.assign(rows * size_t(N), 0);
  next.wire.assign(rows * size_t(N), 0);
  next.wire_scale.assign(rows, 0.0f);
  return next;
}

void keep_for_next_replay(const CollectivePlan& c, int64_t i, const RowBuffers& b, float scale, ReplayState& next) {
  std::memcpy(next.reduced.data() + i * c.N, b.reduced.data(), size_t(c.N) * 2);
  if (c.fp8) std::memcpy(next.wire.data() + i * c.N, b.wire.data(), size_t(c.N));
  next.wire_scale[size_t(i)] = scale;
}

// Gather leg, bf16 wire: the owner's reduced row, copied exactly. owner_local is the owner's pre-reduce row,
// what a line read before the release still holds.
void gather_bf16(const CollectivePlan& c, const Row& row, int r, bool stale_band, const RowBuffers& b,
                 const uint16_t* owner_local, uint16_t* dst) {
  if (c.sdma_gather && c.f.silent_gather) return;  // keeps its local partial
  if (c.frozen_gather) {
    // frozen_flag: the wait passed on the previous replay's signal; the owner's rows as it left them
    std::memcpy(dst, c.previous->reduced.data() + row.i * c.N, size_t(c.N) * 2);
    return;
  }
  if (!stale_band) {
    std::memcpy(dst, b.reduced.data(), size_t(c.N) * 2);
    return;
  }
  const int64_t per_line = no_release::kLineBytes / 2;
  for (int64_t col = 0; col < c.N; ++col) {
    const bool stale = c.rel.line_stale(r, row.global, col / per_line, c.line_threshold[size_t(r)]);
    dst[col] = stale ? owner_local[col] : b.reduced[size_t(col)];
  }
}

// Gather leg, fp8 wire: the owner's codes and row scale land, and the receiver widens them to bf16 (sdma: the
// dequantize kernel; lsa: the pull, in registers; the same math).
void gather_fp8(const CollectivePlan& c, const Row& row, int r, bool stale_band, RowBuffers& b, float scale,
                uint16_t* dst) {
  const uint8_t* landed = b.wire.data();
  float landed_scale = scale;
  if (c.sdma_gather && c.f.silent_gather) {
    std::fill(b.landed8.begin(), b.landed8.end(), uint8_t(0));  // nothing landed
    landed = b.landed8.data();
    landed_scale = 0.0f;
  } else if (c.frozen_gather) {
    // frozen_flag: the previous replay's fp8 slice and row scale
    landed = c.previous->wire.data() + row.i * c.N;
    landed_scale = c.previous->wire_scale[size_t(row.i)];
  } else if (stale_band) {
    for (int64_t col = 0; col < c.N; ++col) {
      const bool stale = c.rel.line_stale(r, row.global, col / no_release::kLineBytes, c.line_threshold[size_t(r)]);
      b.landed8[size_t(col)] = stale ? 0 : b.wire[size_t(col)];  // zero codes; the row scale landed intact
    }
    landed = b.landed8.data();
  }
  wire_dequantize_row(landed, landed_scale, c.N, dst, c.req.wire_format);
}

// Every peer reads the owner's row; the owner's own output is its reduce output, in place and never quantized.
// The owner's row is written last: a peer's stale no-release lines read its pre-reduce contents.
void gather_row(const CollectivePlan& c, const Row& row, RowBuffers& b, float scale, Bf16Outputs& out) {
  uint16_t* owner_row = row_of(out, row.owner, row.i, c.N);
  for (int r = 0; r < c.W; ++r) {
    if (r == row.owner) continue;
    uint16_t* dst = row_of(out, r, row.i, c.N);
    const bool stale_band = c.f.no_release && c.sdma_gather && c.rel.band_hit(r, row.owner, row.global);
    if (c.fp8) {
      gather_fp8(c, row, r, stale_band, b, scale, dst);
    } else {
      gather_bf16(c, row, r, stale_band, b, owner_row, dst);
    }
  }
  std::memcpy(owner_row, b.reduced.data(), size_t(c.N) * 2);
}

}  // namespace

Bf16Outputs emulate_collective(const CollectiveRequest& req, const Partials& partials) {
  const Config cfg = effective_config(req.config);
  const int W = req.shape.world;
  const int64_t R = int64_t(req.rows.size()), N = req.shape.n, pm = padded_m(req.shape, cfg);
  GEMMAR_CHECK(int(partials.size()) == W, "partials for ", partials.size(), " ranks, world is ", W);
  for (const auto& p : partials) GEMMAR_CHECK(int64_t(p.size()) == R * N, "partials of the wrong size");
  for (int64_t r : req.rows) GEMMAR_CHECK(r >= 0 && r < pm, "row ", r, " outside the padded M ", pm);
  if (req.faults.stale_output) {
    GEMMAR_CHECK(req.previous_outputs != nullptr, "stale_output needs the previous run's outputs");
    GEMMAR_CHECK(int(req.previous_outputs->size()) == W);
    return *req.previous_outputs;
  }
  Bf16Outputs out = local_partials(partials, R * N, req.faults.perturbed_rank);
  if (!has_collective(cfg.mode)) return out;

  const CollectivePlan plan(req, cfg);
  ReplayState next;
  if (req.replay) next = next_replay_state(out, size_t(R), N);
#pragma omp parallel
  {
    RowBuffers b(W, N);
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < R; ++i) {
      const Row row{i, req.rows[size_t(i)], int(req.rows[size_t(i)] / plan.S)};
      receive_slots(plan, out, row, b.slots);
      const float scale = reduce_row(plan, row.owner, b);
      if (req.replay) keep_for_next_replay(plan, i, b, scale, next);
      gather_row(plan, row, b, scale, out);
    }
  }
  if (req.replay) {
    next.valid = true;
    *req.replay = std::move(next);
  }
  return out;
}

std::vector<uint16_t> straightforward_sum(const Shape& s, Quant q, const std::vector<int64_t>& rows,
                                          const Partials& partials) {
  const int W = s.world;
  const int64_t N = s.n, S = slice_rows(s, q);
  std::vector<uint16_t> out(rows.size() * size_t(N));
  for (size_t i = 0; i < rows.size(); ++i) {
    const int owner = int(rows[i] / S);
    for (int64_t c = 0; c < N; ++c) {
      // From the owner's own value, as numerics::reduce_sum (an all -0 element stays -0).
      float acc = from_bf16(to_bf16(partials[size_t(owner)][i * size_t(N) + size_t(c)]));
      for (int j = 1; j < W; ++j)
        acc += from_bf16(to_bf16(partials[size_t((owner + j) % W)][i * size_t(N) + size_t(c)]));
      out[i * size_t(N) + size_t(c)] = to_bf16(acc);
    }
  }
  return out;
}

PartialsResult compute_partials(const PartialsRequest& req) {
  const OperandSpec& spec = req.operands;
  const Shape& s = spec.shape;
  PartialsResult res;
  res.rows = req.rows.empty() ? all_rows(s, spec.quant) : req.rows;
  const size_t cells = res.rows.size() * size_t(s.n);
  if (req.with_reference) res.reference.assign(cells, 0.0f);
  if (req.with_truth) res.truth.assign(cells, 0.0);
  const Fp8Format decode_as = req.fnuz_read_as_fn ? Fp8Format::E4M3FN : spec.fp8_format;
  for (int r = 0; r < s.world; ++r) {
    const RankOperands op = make_rank_operands(spec, r, res.rows);
    res.partials.push_back(emulated_partial(op, spec.quant, decode_as));
    if (req.with_reference) {
      std::vector<float> p = reference_partial(op, spec.quant, spec.fp8_format);
      for (size_t i = 0; i < cells; ++i) res.reference[i] += p[i];
      if (req.keep_rank_references) res.rank_references.push_back(std::move(p));
    }
    if (req.with_truth) {
      const std::vector<double> p = truth_partial(op, spec.quant, spec.fp8_format);
      for (size_t i = 0; i < cells; ++i) res.truth[i] += p[i];
    }
  }
  return res;
}

EmulationResult emulate(const EmulationRequest& req) {
  validate_shape_config(req.shape, req.config);
  PartialsRequest pr;
  // Rows past the logical M are zero rows (mori's pad_rows zero-extends A before quantizing), up to the row plan's
  // padded M (--schedule wo_b, --relaxed-rows: not the W * BLOCK_M padding).
  Shape logical = req.shape;
  logical.m = logical_m(req.shape, req.config);
  pr.operands = {logical, req.config.quant, req.data, req.seed, req.fp8_format};
  pr.rows = req.rows;
  if (pr.rows.empty())
    for (int64_t r = 0; r < padded_m(req.shape, req.config); ++r) pr.rows.push_back(r);
  pr.fnuz_read_as_fn = req.faults.fnuz_read_as_fn;
  PartialsResult p = compute_partials(pr);

  CollectiveRequest cr;
  cr.shape = req.shape;
  cr.config = req.config;
  cr.rows = p.rows;
  cr.wire_format = req.fp8_format;
  cr.faults = req.faults;
  cr.seed = req.seed;
  Bf16Outputs previous;
  if (req.faults.stale_output) {
    // A previous, fault-free run of the same config on other data.
    PartialsRequest prev = pr;
    prev.operands.seed = req.seed ^ 0x5ca1ab1e5eedull;
    prev.fnuz_read_as_fn = false;
    prev.with_reference = false;
    const PartialsResult pp = compute_partials(prev);
    CollectiveRequest pc = cr;
    pc.faults = {};
    previous = emulate_collective(pc, pp.partials);
    cr.previous_outputs = &previous;
  }
  EmulationResult res;
  res.outputs = emulate_collective(cr, p.partials);
  res.rows = std::move(p.rows);
  res.partials = std::move(p.partials);
  res.reference = std::move(p.reference);
  return res;
}

// ---- relL2 ---------------------------------------------------------------------------------------------

namespace {
// The relL2 helpers below need only the rows each rank owns (S, the run's row plan: slice_rows(Shape, Config)) and
// the real rows (s.m); sample_rows' Quant overload is the plain W * BLOCK_M padding.
std::vector<int64_t> sample_rows_at(const Shape& s, int64_t S, int64_t count, uint64_t seed) {
  const int W = s.world;
  std::vector<int64_t> rows;
  // Real rows per slice; a slice entirely of padding has none to sample.
  std::vector<int64_t> real(static_cast<size_t>(W));
  int nonempty = 0;
  for (int h = 0; h < W; ++h) {
    real[size_t(h)] = std::clamp<int64_t>(s.m - int64_t(h) * S, 0, S);
    nonempty += real[size_t(h)] > 0;
  }
  int idx = 0;
  for (int h = 0; h < W; ++h) {
    if (real[size_t(h)] == 0) continue;
    const int64_t want = count / nonempty + (idx < count % nonempty ? 1 : 0);
    ++idx;
    const int64_t nh = std::min(want, real[size_t(h)]);
    const int64_t base = int64_t(h) * S;
    for (int64_t j = 0; j < nh; ++j) {
      // One draw inside each of nh equal sub-ranges: distinct, spread over the slice.
      const int64_t lo = j * real[size_t(h)] / nh, hi = (j + 1) * real[size_t(h)] / nh;
      const int64_t off = lo + int64_t(counter_hash(seed, h, Tensor(0x5350), j, 0) % uint64_t(hi - lo));
      rows.push_back(base + off);
    }
  }
  return rows;
}
}  // namespace

std::vector<int64_t> sample_rows(const Shape& s, Quant q, int64_t count, uint64_t seed) {
  return sample_rows_at(s, slice_rows(s, q), count, seed);
}
std::vector<int64_t> sample_rows(const Shape& s, const Config& c, int64_t count, uint64_t seed) {
  return sample_rows_at(s, slice_rows(s, c), count, seed);
}

RowErrors row_errors(const std::vector<uint16_t>& out, const std::vector<float>& ref, int64_t n) {
  GEMMAR_CHECK(out.size() == ref.size() && n > 0 && out.size() % size_t(n) == 0);
  const size_t R = out.size() / size_t(n);
  RowErrors e;
  e.err2.assign(R, 0.0);
  e.ref2.assign(R, 0.0);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < R; ++i) {
    double a = 0, b = 0;
    for (size_t c = 0; c < size_t(n); ++c) {
      const double r = ref[i * size_t(n) + c];
      const double d = double(from_bf16(out[i * size_t(n) + c])) - r;
      a += d * d;
      b += r * r;
    }
    e.err2[i] = a;
    e.ref2[i] = b;
  }
  return e;
}

namespace {
RelL2 stratified_at(const Shape& s, int64_t S, const std::vector<int64_t>& rows, const RowErrors& e) {
  const int W = s.world;
  GEMMAR_CHECK(e.err2.size() == rows.size() && e.ref2.size() == rows.size());
  std::vector<double> se(size_t(W), 0), sr(size_t(W), 0);
  std::vector<int64_t> nh(size_t(W), 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t h = size_t(rows[i] / S);
    se[h] += e.err2[i];
    sr[h] += e.ref2[i];
    ++nh[h];
  }
  std::vector<double> Nh(static_cast<size_t>(W)), wh(size_t(W), 0);
  double E = 0, Rf = 0;
  for (int h = 0; h < W; ++h) {
    const int64_t real = std::clamp<int64_t>(s.m - int64_t(h) * S, 0, S);
    Nh[size_t(h)] = double(std::max(real, nh[size_t(h)]));
    if (nh[size_t(h)] == 0) continue;
    wh[size_t(h)] = Nh[size_t(h)] / double(nh[size_t(h)]);
    E += wh[size_t(h)] * se[size_t(h)];
    Rf += wh[size_t(h)] * sr[size_t(h)];
  }
  RelL2 out;
  if (!(Rf > 0)) {
    out.value = E > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    if (std::isnan(E)) out.value = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  const double Q = E / Rf;
  out.value = std::sqrt(Q);
  if (!std::isfinite(Q)) return out;
  // Linearized ratio estimator: d_i = e_i - Q r_i; variance per stratum with finite-population correction.
  std::vector<double> mean(size_t(W), 0), ss(size_t(W), 0);
  for (int h = 0; h < W; ++h)
    if (nh[size_t(h)]) mean[size_t(h)] = (se[size_t(h)] - Q * sr[size_t(h)]) / double(nh[size_t(h)]);
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t h = size_t(rows[i] / S);
    const double d = e.err2[i] - Q * e.ref2[i] - mean[h];
    ss[h] += d * d;
  }
  double pooled_ss = 0;
  int64_t pooled_df = 0;
  for (int h = 0; h < W; ++h)
    if (nh[size_t(h)] > 1) {
      pooled_ss += ss[size_t(h)];
      pooled_df += nh[size_t(h)] - 1;
    }
  const double pooled = pooled_df > 0 ? pooled_ss / double(pooled_df) : 0.0;
  double var = 0;
  for (int h = 0; h < W; ++h) {
    const double n = double(nh[size_t(h)]);
    if (n == 0) continue;
    const double s2 = n > 1 ? ss[size_t(h)] / (n - 1) : pooled;
    const double fpc = 1.0 - n / Nh[size_t(h)];
    var += Nh[size_t(h)] * Nh[size_t(h)] * fpc * s2 / n;
  }
  const double se_q = std::sqrt(var) / Rf;
  out.stderr_ = out.value > 0 ? se_q / (2.0 * out.value) : se_q;
  return out;
}
}  // namespace

namespace {
std::vector<RowErrors> view_errors(const Shape& s, const Bf16Outputs& outs, const std::vector<float>& ref) {
  std::vector<RowErrors> v;
  for (const auto& o : outs) v.push_back(row_errors(o, ref, s.n));
  return v;
}
}  // namespace

namespace {
std::vector<RelL2> per_rank_at(const Shape& s, int64_t S, const std::vector<int64_t>& rows,
                               const std::vector<RowErrors>& views) {
  std::vector<RelL2> v;
  for (const auto& e : views) v.push_back(stratified_at(s, S, rows, e));
  return v;
}

RelL2 all_views_at(const Shape& s, int64_t S, const std::vector<int64_t>& rows, const std::vector<RowErrors>& views) {
  RowErrors sum;
  sum.err2.assign(rows.size(), 0.0);
  for (const auto& e : views) {
    for (size_t i = 0; i < rows.size(); ++i) sum.err2[i] += e.err2[i] / double(views.size());
    sum.ref2 = e.ref2;
  }
  return stratified_at(s, S, rows, sum);
}

std::vector<double> per_slice_at(const Shape& s, int64_t S, const std::vector<int64_t>& rows,
                                 const std::vector<RowErrors>& views) {
  std::vector<double> e(size_t(s.world), 0), r(size_t(s.world), 0);
  std::vector<int64_t> n(size_t(s.world), 0);
  for (const auto& re : views) {
    for (size_t i = 0; i < rows.size(); ++i) {
      const size_t h = size_t(rows[i] / S);
      e[h] += re.err2[i];
      r[h] += re.ref2[i];
      ++n[h];
    }
  }
  std::vector<double> out(size_t(s.world));
  for (size_t h = 0; h < out.size(); ++h)
    out[h] = n[h] == 0
                 ? std::numeric_limits<double>::quiet_NaN()
                 : (r[h] > 0 ? std::sqrt(e[h] / r[h]) : (e[h] > 0 ? std::numeric_limits<double>::infinity() : 0.0));
  return out;
}
}  // namespace

std::vector<RelL2> per_rank_rel_l2(const Shape& s, const Config& c, const std::vector<int64_t>& rows,
                                   const std::vector<RowErrors>& views) {
  return per_rank_at(s, slice_rows(s, c), rows, views);
}
RelL2 all_views_rel_l2(const Shape& s, const Config& c, const std::vector<int64_t>& rows,
                       const std::vector<RowErrors>& views) {
  return all_views_at(s, slice_rows(s, c), rows, views);
}
std::vector<double> per_slice_rel_l2(const Shape& s, const Config& c, const std::vector<int64_t>& rows,
                                     const std::vector<RowErrors>& views) {
  return per_slice_at(s, slice_rows(s, c), rows, views);
}

std::vector<RelL2> per_rank_rel_l2(const Shape& s, const Config& c, const std::vector<int64_t>& rows,
                                   const Bf16Outputs& outs, const std::vector<float>& ref) {
  return per_rank_rel_l2(s, c, rows, view_errors(s, outs, ref));
}
RelL2 all_views_rel_l2(const Shape& s, const Config& c, const std::vector<int64_t>& rows, const Bf16Outputs& outs,
                       const std::vector<float>& ref) {
  return all_views_rel_l2(s, c, rows, view_errors(s, outs, ref));
}
std::vector<double> per_slice_rel_l2(const Shape& s, const Config& c, const std::vector<int64_t>& rows,
                                     const Bf16Outputs& outs, const std::vector<float>& ref) {
  return per_slice_rel_l2(s, c, rows, view_errors(s, outs, ref));
}

void RelL2Sums::add(const uint16_t* out, const float* ref, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const double d = double(from_bf16(out[i])) - double(ref[i]);
    e += d * d;
    r += double(ref[i]) * double(ref[i]);
  }
}

double RelL2Sums::value() const {
  return r > 0 ? std::sqrt(e / r) : (e > 0 ? std::numeric_limits<double>::infinity() : 0.0);
}

double rel_l2(const std::vector<uint16_t>& out, const std::vector<float>& ref) {
  GEMMAR_CHECK(out.size() == ref.size());
  RelL2Sums s;
  s.add(out.data(), ref.data(), out.size());
  return s.value();
}

}  // namespace gemmar::reference
