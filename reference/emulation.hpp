// THE PIPELINE EMULATION: the CPU backend of `gemmar run` / `gemmar validate` (docs/spec.md 1.1).
//
// W ranks are separate buffers. Each rank's fp32 partial is rounded to bf16 (its local partial; the output
// buffer holds it before the collective, as an in-place all-reduce's does). Scatter leg: the owner of a row
// (rank r owns padded rows [r*S, (r+1)*S)) receives every peer's bf16 partial in one slot per peer. Reduce:
// fp32 sum in peer order (owner + j) % W, j = 0..W-1, stored bf16 (numerics::reduce_element). fp8 scatter
// (config.scatter_dtype, mori's --scatter-dtype fp8): every sender narrows its bf16 partial per row per 256 columns
// before the put, its own slice included (quant.hpp scatter_quantize_row, mori's recipe), and the reduce sums the
// slots widened to fp32 (numerics::reduce_sum_f32 over scatter_widen). Gather leg:
//   bf16 wire: exact copies of the owner's rows into every peer's output;
//   fp8 wire (sdma and lsa alike): the owner quantizes each owned row with mori's recipe (quant.hpp
//   wire_quantize_row, WireRecipe::Mori; with fuse_quantize the amax comes from the reduce's fp32 accumulator,
//   WireRecipe::AccAmax, as mori's sdma_reduce_quant), peers dequantize to bf16; the owner's own rows are never
//   quantized.
// Rows are owned as the run's row plan says (common/config.hpp row_plan): rank r owns [r*S, (r+1)*S) with
// S = padded_m(shape, config) / W, so relaxed rows (mori's --relaxed-rows, M not padded to W * BLOCK_M) and the
// wo_b schedule's padded M move rows to other owners, which changes the reduce's peer order and the rows that never
// cross the fp8 gather. The chunks of the fused scatter (chunk_bands' short tail, either chunk rule) only split the
// puts: they change no value.
// split-lsa is bf16 only (effective_config), gemm-only has no collective (output = local bf16 partial).
// The collective is row local, so it runs on any selection of rows: sampled rows of the full reference shape,
// or all rows of a small shape. It runs on computed partials or on externally supplied ones (a GPU's).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "common/config.hpp"
#include "common/faults.hpp"
#include "reference/floors.hpp"
#include "reference/operands.hpp"

namespace gemmar::reference {

// The faults of common/faults.hpp, as the emulation applies each of them, physically:
//  silent_scatter: peer puts of the scatter leg do nothing (split-sdma copies, fused epilogue pushes); the
//    owner's slots for those peers keep their fresh (zero) contents, so the reduce holds the owner's own
//    partial only. split-lsa pulls with CU loads: unaffected.
//  silent_gather: copy-engine puts of the gather leg (transport sdma) do nothing: a peer's output rows keep
//    what they held, its own local bf16 partial (bf16 wire) or, on the fp8 wire, the dequantize kernel widens
//    a landing buffer that never got data (zeros). lsa gathers are CU loads: unaffected.
//    Both legs silent: every rank's output is its own local partial, relL2 ~ sqrt((W-1)/W).
//  stale_output: every output holds a previous run's result (another seed).
//  no_release: the copy engine of the sdma gather reads some 64-byte lines of the owner's slice before the
//    reduce's stores are visible: stale lines carry the pre-reduce contents (bf16: the owner's local partial;
//    fp8: zero codes). Per (seed, receiving rank): 1-2 of 32 bands of each slice, each line stale with a
//    probability drawn per rank; relL2 ~1e-2, different per rank.
//  perturbed_rank: that rank's fp32 partial is scaled by 1.25 before the collective (a wrong scale).
//  fp8_wire_bypassed: an fp8-wire config whose gather actually moved bf16.
//  fnuz_read_as_fn: the kernels decode e4m3fnuz operands as e4m3fn (only when partials are computed here).
//  stale_replay (a ReplayState is needed; nothing happens on the first replay): the owner's "slots ready" flag
//    was not reset after the previous replay, so the reduce starts without waiting for the puts. The put that
//    lands last (ReplayTiming::late_peer: the latest arrival, straggle delays included) is still in flight:
//    its rows from ReplayTiming::landed_rows on still hold the previous replay's partial of that peer.
//    split-lsa alike (stage 1 reads the peer's partial in place, after the same kind of flag).
//  frozen_flag (a ReplayState is needed; nothing happens on the first replay): the gather's wait value was
//    captured once (iteration 0's epoch), so from the second replay on the wait is satisfied by the previous
//    replay's signal and every peer copies the owner's slice as the previous replay left it: its reduced bf16
//    rows, or its fp8 codes and row scale. Every gather transport (a copy-engine put and an lsa pull alike).

// perturbed_rank's factor on that rank's fp32 partial.
inline constexpr float kPerturbFactor = 1.25f;

// Per rank, row-major [rows.size(), N].
using Partials = std::vector<std::vector<float>>;
using Bf16Outputs = std::vector<std::vector<uint16_t>>;

// ---- iterations and replays (docs/reliability.md) -------------------------------------------------------------
// The inputs of iteration i: rank r's A scales multiplied by iteration_input_scale(seed, i, r), a power of two,
// so its partial is multiplied by exactly that (block_accumulate scales every term exactly; bf16 and the fp8
// wire's amax scaling commute with it). 1 on even iterations; 2 or 1/2 per rank on odd ones: iteration i repeats
// iteration i-2's inputs (bit-identical repeats are checkable) and differs from i-1's in every nonzero element
// of every rank (an output, slot or flag left from the previous iteration is caught).
float iteration_input_scale(uint64_t seed, int iteration, int rank);
// Straggler injection: rank r's delay before iteration i's launch, uniform in [0, max_us) (0 when max_us <= 0).
double straggle_delay_us(uint64_t seed, int iteration, int rank, double max_us);

// When each put of the scatter leg lands, in one replay: put p -> owner o leaves p in position
// j = (o - p) mod W (the fused GEMM's chunk order, (p+1)%W first; split-sdma issues its puts in the same order),
// kPutSlotUs apart, after p's straggle delay. The emulation visits the peers in this arrival order.
struct ReplayTiming {
  static constexpr double kPutSlotUs = 2.0;  // one put's duration (docs/spec.md: ~2 us per copy-engine packet)
  std::vector<double> delay_us;              // per rank
  int world = 1;
  double arrival_us(int peer, int owner) const;
  std::vector<int> arrival_order(int owner) const;  // every peer but the owner, earliest first
  int late_peer(int owner) const;                   // the last to land
  // Rows of the late put that landed before the owner's reduce read them (stale_replay): half the slice when
  // nobody straggles; more when the owner is late, less when the late peer is; at most 3/4 of the slice.
  int64_t landed_rows(int owner, int64_t slice_rows) const;
};

// What the buffers hold from the previous replay (per requested row). emulate_collective reads it when a
// replay fault is injected and `valid`, and leaves this replay's contents in it.
struct ReplayState {
  bool valid = false;
  std::vector<std::vector<uint16_t>> local;  // [rank][rows * N]: each rank's bf16 partial (what its puts carry)
  std::vector<uint16_t> reduced;             // [rows * N]: the owner's reduced bf16 row
  std::vector<uint8_t> wire;                 // [rows * N]: the owner's fp8 codes (fp8 wire)
  std::vector<float> wire_scale;             // [rows]
};

struct CollectiveRequest {
  Shape shape;
  Config config;
  std::vector<int64_t> rows;                  // global padded rows, each < padded_m(shape, config)
  Fp8Format wire_format = Fp8Format::E4M3FN;  // the fp8 wire's format
  Faults faults;
  uint64_t seed = 1234;  // drives the no-release pattern
  // stale_output: the previous run's outputs (same rows); required when stale_output is set.
  const Bf16Outputs* previous_outputs = nullptr;
  // Replays: the previous replay's buffers (read by stale_replay / frozen_flag, then updated); the straggle
  // delays of this replay (peer-loop order, the late put). Both optional.
  ReplayState* replay = nullptr;
  const ReplayTiming* timing = nullptr;
};

// The collective on given fp32 partials -> every rank's bf16 output rows.
Bf16Outputs emulate_collective(const CollectiveRequest&, const Partials&);

// The straightforward sum the bf16 wire must equal bit for bit: bf16(sum over j of bf16(partial[(o+j)%W])).
std::vector<uint16_t> straightforward_sum(const Shape&, Quant, const std::vector<int64_t>& rows, const Partials&);

struct PartialsRequest {
  OperandSpec operands;
  std::vector<int64_t> rows;  // empty = all padded rows
  bool fnuz_read_as_fn = false;
  bool with_reference = true;
  bool with_truth = false;  // fp64 reference as well (small shapes)
  // Each rank's fp32 reference partial kept too (with_reference): gemm-only's views are judged against them.
  bool keep_rank_references = false;
};
struct PartialsResult {
  std::vector<int64_t> rows;
  Partials partials;             // emulated GPU partials per rank
  std::vector<float> reference;  // fp32: sum over ranks (0..W-1) of the dequantized fp32 partials
  std::vector<double> truth;     // fp64 sum, if requested
  Partials rank_references;      // keep_rank_references: each rank's dequantized fp32 partial
};
// Generates each rank's operands (only the requested A rows, all of B) and computes partials and references.
PartialsResult compute_partials(const PartialsRequest&);

struct EmulationRequest {
  Shape shape;
  Config config;
  DataKind data = DataKind::Normal;
  uint64_t seed = 1234;
  Fp8Format fp8_format = Fp8Format::E4M3FN;  // operands and wire
  std::vector<int64_t> rows;                 // empty = all padded rows
  Faults faults;
};
struct EmulationResult {
  std::vector<int64_t> rows;
  Bf16Outputs outputs;           // per rank [rows, N] bf16 bits
  Partials partials;             // the partials the collective ran on (before any perturbation)
  std::vector<float> reference;  // fp32 reference rows [rows, N]
};
// Operands -> partials -> collective (with faults).
EmulationResult emulate(const EmulationRequest&);

// ---- relL2 -------------------------------------------------------------------------------------------
// Stratified row sampling: `count` rows spread evenly over the W slices (real rows only, never padding),
// one draw per equal sub-range of each slice; deterministic in seed; sorted. count >= all real rows -> all.
std::vector<int64_t> sample_rows(const Shape&, Quant, int64_t count, uint64_t seed);
// The same under the run's row plan (slices of slice_rows(Shape, Config) rows); the Quant overload samples slices of
// the plain W * BLOCK_M padding (a GEMM's rows, a floor's).
std::vector<int64_t> sample_rows(const Shape&, const Config&, int64_t count, uint64_t seed);

struct RelL2 {
  double value = 0;
  double stderr_ = 0;  // standard error from the row sampling (0 when every real row is included)
};
// Per-row squared error and squared reference norm, for one output view.
struct RowErrors {
  std::vector<double> err2, ref2;  // one per row
};
RowErrors row_errors(const std::vector<uint16_t>& out, const std::vector<float>& ref, int64_t n);
// relL2 of every rank's output; and relL2 over all ranks' views together (mean of squared errors); each slice (the
// rows the run's row plan gives a rank: slice_rows(Shape, Config), so relaxed rows and the wo_b schedule's padded M
// count) a stratum of the rows sampled.
std::vector<RelL2> per_rank_rel_l2(const Shape&, const Config&, const std::vector<int64_t>& rows, const Bf16Outputs&,
                                   const std::vector<float>& ref);
RelL2 all_views_rel_l2(const Shape&, const Config&, const std::vector<int64_t>& rows, const Bf16Outputs&,
                       const std::vector<float>& ref);
// Per slice (index = owning rank) over all ranks' views of that slice's rows: a missing slice shows as ~1.
// Slices with no sampled row get NaN.
std::vector<double> per_slice_rel_l2(const Shape&, const Config&, const std::vector<int64_t>& rows, const Bf16Outputs&,
                                     const std::vector<float>& ref);
// The same from each view's per-row errors (one RowErrors per rank, rows as `rows`), computed block by block
// (gemmar verify streams them): bit-identical to the above, whose per-row sums are independent.
std::vector<RelL2> per_rank_rel_l2(const Shape&, const Config&, const std::vector<int64_t>& rows,
                                   const std::vector<RowErrors>& views);
RelL2 all_views_rel_l2(const Shape&, const Config&, const std::vector<int64_t>& rows,
                       const std::vector<RowErrors>& views);
std::vector<double> per_slice_rel_l2(const Shape&, const Config&, const std::vector<int64_t>& rows,
                                     const std::vector<RowErrors>& views);
// Plain relL2 of one bf16 output against an fp32 reference (same layout).
double rel_l2(const std::vector<uint16_t>& out, const std::vector<float>& ref);
// rel_l2's sums, added to in element order over consecutive blocks (the same sums, bit for bit).
struct RelL2Sums {
  double e = 0, r = 0;
  void add(const uint16_t* out, const float* ref, size_t count);
  double value() const;
};

}  // namespace gemmar::reference
