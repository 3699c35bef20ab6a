// The shape and configuration of one gemm_ar run, spelled as in the real benchmark (docs/spec.md 1.1, section 4),
// and the derived quantities every part shares: padding, slice rows, bytes per phase.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/modes.hpp"

namespace gemmar {

enum class WireDtype { Bf16, Fp8 };
enum class Transport { Sdma, Lsa };
// e4m3fn (OCP: gfx950, NVIDIA) or e4m3fnuz (gfx942). Same bits read 2x apart.
enum class Fp8Format { E4M3FN, E4M3FNUZ };
// Which GEMM computes the partials on the GPU, as the benchmark's --gemm-impl: ours (the fused modes always use
// it: their epilogue pushes tiles), or the vendor's blockscale GEMM (cuBLASLt) for gemm-only and the split modes.
enum class GemmImpl { Gemmar, Cublaslt };
// How the reduce publishes a band to the copy engine under fuse_reduce_push (mori python/mori/ops/gemm_ar/README.md,
// "Firing the gather's puts from inside the reduce"): cache-bypassing stores (the wait is the release), or cached
// stores and a system-scope release per block per band.
enum class Publish { Writethrough, Fence };
// How fused-sdma resolves its pushes per destination when --chunk-bands is 0 (docs/spec.md 1.1, "Chunks"):
// bench: bench_gemm_ar.py's run() @d5443336 (the asked --chunks, else 8, halved until it divides the M-tiles per
// destination); op: python/mori/ops/gemm_ar/op.py counter_chunks() @f3bff0ae (the largest divisor <= 8 of the
// row bands per destination). The two differ at 3, 5, 6, 7, 9, 10, 12, 14 and 15 bands.
enum class ChunkRule { Bench, Op };
// The public op's row planner (op.py _Schedule @f3bff0ae): none (mori's schedule="default": M padded to
// W * BLOCK_M, the chunk rule decides) or wo_b (a measured profile maps some logical M to a padded M, its
// chunk_bands and relaxed rows; other M fall back to none).
enum class Schedule { None, WoB };

struct Shape {
  int64_t m = 16384;  // rows of the output, before padding
  int64_t n = 7168;
  int64_t k = 2048;  // per rank
  int world = 8;
};

struct Config {
  Mode mode = Mode::FusedSdma;
  Quant quant = Quant::Blockscale;
  WireDtype gather_dtype = WireDtype::Bf16;
  Transport gather_transport = Transport::Sdma;
  int pull_blocks = 64;        // MORI_GEMM_AR_PULL_BLOCKS
  bool fuse_quantize = false;  // fold the fp8 narrowing into the reduce
  // The reduce fires the bf16 gather's copy-engine puts itself, band by band (mori's fuse_reduce_push): per band
  // a barrier of the reducing blocks, a counter atomic and the elected block's puts, so the gather of band b
  // overlaps the reduce of the later bands. Only on the bf16 gather over sdma.
  bool fuse_reduce_push = false;
  int gather_bands = 8;  // bands of the owned slice (mori's default)
  Publish publish = Publish::Writethrough;
  // fused-sdma: the asked pushes per destination of mori's epilogue (bench_gemm_ar.py --chunks): each
  // destination's slice leaves in this many puts, the first when 1/chunks of the GEMM is done. 0: mori's default
  // (8). The pushes that really run are chunk_plan(shape, config).chunks: this asked count halved until it divides
  // (chunk_rule bench), ignored under chunk_bands or the op's rule. Named `chunks` as mori's flag and RESULT_JSON key
  // are (the config field table, common/config_fields.hpp, says which key is asked and which resolved).
  int chunks = 0;
  // What the reduce-scatter leg carries (bench --scatter-dtype @d5443336 :800, op.py scatter_dtype): bf16, or
  // mori's lossy fp8 experiment (e4m3 codes with one fp32 scale per row and BLOCK_N-wide tile, quantized in the
  // fused epilogue); fp8 only under fused-sdma.
  WireDtype scatter_dtype = WireDtype::Bf16;
  // fused-sdma: fixed row bands per put (bench --chunk-bands N): chunks = ceil(bands / N), the last one short.
  // 0: the chunk rule decides.
  int chunk_bands = 0;
  // fused-sdma with chunk_bands: M need not be a multiple of W * BLOCK_M, only of W, with at least one full
  // BLOCK_M tile per rank (bench --relaxed-rows; kernels_fused.py compile_fused_gemm_scatter @f3bff0ae). M is
  // then not padded: a tile may straddle two owners and two chunks.
  bool relaxed_rows = false;
  ChunkRule chunk_rule = ChunkRule::Bench;
  Schedule schedule = Schedule::None;
  // The op's logical M (op.py __call__(..., logical_m=)): 0 means -m is the logical M and gemmar pads it as the
  // row plan says; otherwise -m is the physical (padded) M and must equal the plan's padded M of logical_m.
  int64_t logical_m = 0;
  // SDMA queues per (source, destination) pair: the bench asks 8 (--sdma-queues), the op 1 (its default). Puts
  // to destination d use queue d % sdma_queues. Recorded as mori's RESULT_JSON key; no rounding depends on it.
  int sdma_queues = 8;
};

std::string to_string(Mode);
std::string to_string(Quant);
std::string to_string(WireDtype);
std::string to_string(Transport);
std::string to_string(Fp8Format);
std::string to_string(GemmImpl);
std::string to_string(Publish);
std::string to_string(ChunkRule);
std::string to_string(Schedule);
// Parsers throw UsageError naming `option` and listing the accepted spellings.
Mode parse_mode(const std::string& s, const std::string& option = "--mode");
Quant parse_quant(const std::string& s, const std::string& option = "--quant");
WireDtype parse_wire(const std::string& s, const std::string& option = "--gather-dtype");
Transport parse_transport(const std::string& s, const std::string& option = "--gather-transport");
Fp8Format parse_fp8_format(const std::string& s, const std::string& option = "--fp8-format");
GemmImpl parse_gemm_impl(const std::string& s, const std::string& option = "--gemm-impl");
Publish parse_publish(const std::string& s, const std::string& option = "--publish");
WireDtype parse_scatter_wire(const std::string& s, const std::string& option = "--scatter-dtype");
ChunkRule parse_chunk_rule(const std::string& s, const std::string& option = "--chunk-rule");
// "none" or "wo_b"; mori's own spelling "default" is read as none.
Schedule parse_schedule(const std::string& s, const std::string& option = "--schedule");
// The accepted spellings of an enum, "bf16|fp8" (help texts and the field table); defined for every enum above.
template <typename E>
std::string enum_spellings();
const std::vector<Mode>& all_modes();
// "gemm-only|split-sdma|..." and "blockscale|ptpc|mxfp8", from the tables (for --help).
const char* mode_spellings();
const char* quant_spellings();

// The mode and quant rows are in common/modes.hpp: a new mode is a row there plus one branch per leg in
// reference/emulation.cpp, model/model.cpp and kernels/pipeline/plan.cu.
const ModeTraits& traits(Mode);

bool is_fused(Mode);
bool has_collective(Mode);  // false only for gemm-only
// split-lsa is a bf16-only 2-stage CU all-reduce: its gather "wire" is always bf16 over CUs.
bool uses_fp8_wire(const Config&);
// The config runs the pull kernel (an fp8 gather over CU loads, lsa): the only one the pull grid affects.
bool has_pull(const Config&);
// The phases a config runs, in order (docs/spec.md 1.1): gemm, then scatter (split) or drain (fused), reduce,
// quantize (fp8), gather, dequantize (fp8/sdma) or pull (fp8/lsa); split-lsa: gemm, allreduce.
std::vector<std::string> phase_names(const Config&);
// Every phase name in pipeline order (the order reports and tables use).
const std::vector<std::string>& all_phase_names();
// The gather leg as it really runs: split-lsa forces bf16/lsa, gemm-only has none.
Config effective_config(const Config&);

// BLOCK_M (quant_traits(q).block_m).
int block_m(Quant);
// M padded up to a multiple of world * BLOCK_M; padding rows are zero rows.
int64_t padded_m(const Shape&, Quant);
// Rows owned per rank after padding: S = padded_m / world.
int64_t slice_rows(const Shape&, Quant);
// The same under the run's row plan (--schedule wo_b, --relaxed-rows): row_plan(s, c).m_pad and m_pad / world.
// Code that runs a config should use these; the Quant overloads are the plain W * BLOCK_M padding.
int64_t padded_m(const Shape&, const Config&);
int64_t slice_rows(const Shape&, const Config&);

// ---- Row plan and chunk plan: the pure arithmetic every part shares (tests/common/common_chunks_test.cpp checks
// them against mori's own numbers). A "band" is BLOCK_M rows of one destination's slice.

// One logical M's physical rows and put protocol (op.py _RowPlan @f3bff0ae).
struct RowPlan {
  int64_t m_pad = 0;          // physical rows the op runs (the GEMM's M; rows past the logical M are zero rows)
  int chunk_bands = 0;        // bands per put; 0: the chunk rule decides
  bool relaxed_rows = false;  // m_pad is a multiple of W only (a tile may straddle two owners)
  bool measured = false;      // taken from the wo_b profile (false: the fallback, padded to W * BLOCK_M)
};

// op.py _Schedule.plan() for schedule="wo_b" @f3bff0ae: the measured overrides of the two targets (W=8 N=7168
// K=2048 blockscale with both legs bf16: 8200 -> (9216, 2), 11264 -> (11264, 1), 13312 -> (13312, 1); W=4 N=5120
// K=2048 mxfp8 with both legs bf16, or an fp8 scatter with a bf16 gather or an lsa gather: 4200 -> (4224, 1,
// relaxed), 8200 -> (8256, 1, relaxed), and with both legs bf16 also 11264 -> (11264, 2)); any other logical M or
// target pads to W * BLOCK_M with chunk_bands 0. Throws UsageError for logical_m < 1 (op.py "M must be positive").
RowPlan wo_b_plan(const Shape& target, const Config&, int64_t logical_m);
// The run's row plan: the wo_b profile for the logical M (logical_m, else -m); relaxed rows: -m as given; else
// -m padded to W * BLOCK_M. Then --chunk-bands / --relaxed-rows, when set, are the plan's.
RowPlan row_plan(const Shape&, const Config&);
// The logical M the run computes (logical_m, else -m).
int64_t logical_m(const Shape&, const Config&);

// The puts of one destination's slice: `chunks` puts of `chunk_bands` bands each but the last, which holds
// `tail_bands` (< chunk_bands only with --chunk-bands' short tail).
struct ChunkPlan {
  int64_t bands = 0;  // row bands per destination: ceil(slice rows / BLOCK_M)
  int chunks = 1;
  int64_t chunk_bands = 0;
  int64_t tail_bands = 0;
  // The bands [first, first + count) put by chunk c.
  int64_t first_band(int c) const { return int64_t(c) * chunk_bands; }
  int64_t band_count(int c) const { return c + 1 < chunks ? chunk_bands : tail_bands; }
};
// bench_gemm_ar.py run() @d5443336 :322-337: `asked` (0: DEFAULT_CHUNKS = 8) halved until it divides
// m_tiles_per_peer (the bench's max(1, ceil(M / BLOCK_M) // W)).
int bench_chunks(int64_t m_tiles_per_peer, int asked);
// op.py counter_chunks() @f3bff0ae: the largest c <= MAX_CHUNKS = 8 dividing `bands` (bands >= 1).
int op_counter_chunks(int64_t bands);
// bench --chunk-bands / op.py _build_cfg @f3bff0ae: ceil(bands / chunk_bands) puts, the last one short.
ChunkPlan short_tail_plan(int64_t bands, int chunk_bands);
// fused-sdma's puts per destination as mori resolves them for this run: the row plan's chunk_bands (short tail),
// else the chunk rule over the plan's bands. Other modes: the same arithmetic (the bench computes it for every
// mode; only the fused epilogue puts by chunk).
ChunkPlan chunk_plan(const Shape&, const Config&);
// chunk_plan(s, c).chunks, kept under its old name (the model's chunk pipeline reads it).
int effective_chunks(const Shape&, const Config&);

// Throws UsageError (exit 2) naming the option for any shape/config the op cannot run:
// K not a multiple of 128, N not a multiple of 1024 on an fp8 wire, world not dividing 512, absurd sizes,
// and, when `require_padded` is set, M not already a multiple of world * BLOCK_M. Also every combination mori
// refuses, with mori's reason (validate_knobs).
void validate_shape_config(const Shape&, const Config&, bool require_padded = false);
// split-lsa with an fp8 gather, refused where a config comes in (the command line, a record) in mori's words
// (bench_gemm_ar.py run() @d5443336 :274-285). Not in validate_knobs: code that runs every mode and wire leaves
// it to effective_config, which runs split-lsa's bf16 wire.
void validate_gather_wire(const Config&);
// The combinations of the knobs mori refuses, each with mori's own words (docs/spec.md 1.5 "Refusals"): an fp8
// scatter outside fused-sdma, --chunk-bands / --relaxed-rows outside fused-sdma,
// relaxed rows without chunk_bands or a full tile per rank or with M not a multiple of W, an M that is not the
// planned padded M of logical_m, --schedule wo_b without the op's chunk rule, and knobs the op does not take.
void validate_knobs(const Shape&, const Config&);
// mori's op takes e4m3fn operands only (op.py FP8_DTYPES @f3bff0ae); gemmar keeps e4m3fnuz for gfx942's
// blockscale but refuses it for mxfp8, whose ue8m0 scales are OCP MX's (e4m3fn). `option` names the source.
void validate_fp8_format(Quant, Fp8Format, const std::string& option = "--fp8-format");

// Canonical one-line label, e.g. "fused-sdma/blockscale/fp8/lsa".
std::string config_label(const Config&);

}  // namespace gemmar
