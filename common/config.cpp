#include "common/config.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <utility>

#include "common/errors.hpp"

namespace gemmar {
namespace {

template <typename E, std::size_t N>
E parse_enum(const std::string& s, const std::string& option, const std::array<std::pair<const char*, E>, N>& table) {
  std::string accepted;
  for (const auto& [name, value] : table) {
    if (s == name) return value;
    accepted += accepted.empty() ? name : std::string("|") + name;
  }
  throw UsageError(option + ": unknown value '" + s + "' (accepted: " + accepted + ")");
}

template <typename E, std::size_t N>
std::string enum_name(E v, const std::array<std::pair<const char*, E>, N>& table) {
  for (const auto& [name, value] : table)
    if (value == v) return name;
  return "?";
}

// Mode and quant spellings come from their trait tables (common/modes.hpp).
template <typename E, typename Row, std::size_t N>
constexpr std::array<std::pair<const char*, E>, N> names_of(const Row (&rows)[N], E Row::*key) {
  std::array<std::pair<const char*, E>, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = {rows[i].name, rows[i].*key};
  return out;
}
// constexpr: other files' static initializers may parse a mode before this file's run.
constexpr auto kModes = names_of(kModeTable, &ModeTraits::mode);
constexpr auto kQuants = names_of(kQuantTable, &QuantTraits::quant);
constexpr std::array<std::pair<const char*, WireDtype>, 2> kWires{{{"bf16", WireDtype::Bf16}, {"fp8", WireDtype::Fp8}}};
constexpr std::array<std::pair<const char*, Transport>, 2> kTransports{
    {{"sdma", Transport::Sdma}, {"lsa", Transport::Lsa}}};
constexpr std::array<std::pair<const char*, Fp8Format>, 2> kFp8Formats{
    {{"e4m3fn", Fp8Format::E4M3FN}, {"e4m3fnuz", Fp8Format::E4M3FNUZ}}};
constexpr std::array<std::pair<const char*, GemmImpl>, 2> kGemmImpls{
    {{"gemmar", GemmImpl::Gemmar}, {"cublaslt", GemmImpl::Cublaslt}}};
constexpr std::array<std::pair<const char*, Publish>, 2> kPublishes{
    {{"writethrough", Publish::Writethrough}, {"fence", Publish::Fence}}};
constexpr std::array<std::pair<const char*, ChunkRule>, 2> kChunkRules{
    {{"bench", ChunkRule::Bench}, {"op", ChunkRule::Op}}};
// "default" is op.py's own spelling of none (_Schedule: schedule not in ("default", "wo_b")); written as "none".
constexpr std::array<std::pair<const char*, Schedule>, 3> kSchedules{
    {{"none", Schedule::None}, {"wo_b", Schedule::WoB}, {"default", Schedule::None}}};

}  // namespace

std::string to_string(Mode v) { return enum_name(v, kModes); }
std::string to_string(Quant v) { return enum_name(v, kQuants); }
std::string to_string(WireDtype v) { return enum_name(v, kWires); }
std::string to_string(Transport v) { return enum_name(v, kTransports); }
std::string to_string(Fp8Format v) { return enum_name(v, kFp8Formats); }
Mode parse_mode(const std::string& s, const std::string& o) { return parse_enum(s, o, kModes); }
Quant parse_quant(const std::string& s, const std::string& o) { return parse_enum(s, o, kQuants); }
WireDtype parse_wire(const std::string& s, const std::string& o) { return parse_enum(s, o, kWires); }
Transport parse_transport(const std::string& s, const std::string& o) { return parse_enum(s, o, kTransports); }
Fp8Format parse_fp8_format(const std::string& s, const std::string& o) { return parse_enum(s, o, kFp8Formats); }
std::string to_string(GemmImpl v) { return enum_name(v, kGemmImpls); }
GemmImpl parse_gemm_impl(const std::string& s, const std::string& o) { return parse_enum(s, o, kGemmImpls); }
std::string to_string(Publish v) { return enum_name(v, kPublishes); }
Publish parse_publish(const std::string& s, const std::string& o) { return parse_enum(s, o, kPublishes); }
WireDtype parse_scatter_wire(const std::string& s, const std::string& o) { return parse_enum(s, o, kWires); }
std::string to_string(ChunkRule v) { return enum_name(v, kChunkRules); }
ChunkRule parse_chunk_rule(const std::string& s, const std::string& o) { return parse_enum(s, o, kChunkRules); }
std::string to_string(Schedule v) { return enum_name(v, kSchedules); }
Schedule parse_schedule(const std::string& s, const std::string& o) { return parse_enum(s, o, kSchedules); }

namespace {
// Aliases (a second name of the same value, like schedule's "default") are read but not listed.
template <typename E, std::size_t N>
std::string joined(const std::array<std::pair<const char*, E>, N>& table) {
  std::string s;
  for (std::size_t i = 0; i < N; ++i) {
    bool alias = false;
    for (std::size_t j = 0; j < i; ++j) alias = alias || table[j].second == table[i].second;
    if (!alias) s += (s.empty() ? "" : "|") + std::string(table[i].first);
  }
  return s;
}
}  // namespace

template <>
std::string enum_spellings<Mode>() {
  return joined(kModes);
}
template <>
std::string enum_spellings<Quant>() {
  return joined(kQuants);
}
template <>
std::string enum_spellings<WireDtype>() {
  return joined(kWires);
}
template <>
std::string enum_spellings<Transport>() {
  return joined(kTransports);
}
template <>
std::string enum_spellings<Fp8Format>() {
  return joined(kFp8Formats);
}
template <>
std::string enum_spellings<GemmImpl>() {
  return joined(kGemmImpls);
}
template <>
std::string enum_spellings<Publish>() {
  return joined(kPublishes);
}
template <>
std::string enum_spellings<ChunkRule>() {
  return joined(kChunkRules);
}
template <>
std::string enum_spellings<Schedule>() {
  return joined(kSchedules);
}

namespace {
template <typename Row, std::size_t N>
std::string joined_names(const Row (&rows)[N]) {
  std::string s;
  for (const Row& r : rows) s += (s.empty() ? "" : "|") + std::string(r.name);
  return s;
}
}  // namespace

const char* mode_spellings() {
  static const std::string s = joined_names(kModeTable);
  return s.c_str();
}

const char* quant_spellings() {
  static const std::string s = joined_names(kQuantTable);
  return s.c_str();
}

const std::vector<Mode>& all_modes() {
  static const std::vector<Mode> modes = [] {
    std::vector<Mode> v;
    for (const ModeTraits& t : kModeTable) v.push_back(t.mode);
    return v;
  }();
  return modes;
}

const ModeTraits& traits(Mode m) {
  GEMMAR_CHECK(int(m) >= 0 && size_t(m) < std::size(kModeTable), "unknown mode value ", int(m));
  return mode_traits(m);
}

bool is_fused(Mode m) { return traits(m).fused; }
bool has_collective(Mode m) { return traits(m).collective; }

std::vector<std::string> phase_names(const Config& c) {
  const Config e = effective_config(c);
  const ModeTraits& t = traits(e.mode);
  if (!t.collective) return {"gemm"};
  if (t.two_stage_allreduce) return {"gemm", "allreduce"};
  std::vector<std::string> p{"gemm", t.fused ? "drain" : "scatter", "reduce"};
  const bool fp8 = e.gather_dtype == WireDtype::Fp8;
  if (fp8) p.push_back("quantize");
  p.push_back("gather");
  if (fp8) p.push_back(has_pull(e) ? "pull" : "dequantize");
  return p;
}

const std::vector<std::string>& all_phase_names() {
  static const std::vector<std::string> p{"gemm",   "scatter",    "drain", "reduce",   "quantize",
                                          "gather", "dequantize", "pull",  "allreduce"};
  return p;
}

Config effective_config(const Config& c) {
  Config e = c;
  if (!has_collective(c.mode)) {
    e.fuse_reduce_push = false;
    return e;
  }
  if (!traits(c.mode).fp8_wire) {
    e.gather_dtype = WireDtype::Bf16;
    e.gather_transport = Transport::Lsa;
  }
  if (c.gather_dtype == WireDtype::Bf16) e.fuse_quantize = false;
  // The reduce fires copy-engine puts of its bf16 output: only where a reduce feeds a bf16 sdma gather.
  if (traits(c.mode).two_stage_allreduce || e.gather_dtype != WireDtype::Bf16 || e.gather_transport != Transport::Sdma)
    e.fuse_reduce_push = false;
  return e;
}

bool uses_fp8_wire(const Config& c) {
  const Config e = effective_config(c);
  return has_collective(e.mode) && e.gather_dtype == WireDtype::Fp8;
}

bool has_pull(const Config& c) {
  const Config e = effective_config(c);
  return uses_fp8_wire(e) && e.gather_transport == Transport::Lsa;
}

int block_m(Quant q) { return quant_traits(q).block_m; }

int64_t padded_m(const Shape& s, Quant q) {
  const int64_t unit = int64_t(s.world) * block_m(q);
  return (s.m + unit - 1) / unit * unit;
}

int64_t slice_rows(const Shape& s, Quant q) { return padded_m(s, q) / s.world; }

int64_t padded_m(const Shape& s, const Config& c) { return row_plan(s, c).m_pad; }
int64_t slice_rows(const Shape& s, const Config& c) { return padded_m(s, c) / s.world; }

int64_t logical_m(const Shape& s, const Config& c) { return c.logical_m > 0 ? c.logical_m : s.m; }

RowPlan wo_b_plan(const Shape& t, const Config& c, int64_t m) {
  GEMMAR_USAGE_CHECK(m >= 1, "--logical-m: M must be positive, got ", m, " (op.py _Schedule.plan)");
  struct Override {
    int64_t logical, m_pad;
    int chunk_bands;
    bool relaxed;
  };
  const bool bf16 = c.scatter_dtype == WireDtype::Bf16 && c.gather_dtype == WireDtype::Bf16;
  // op.py _Schedule.__init__: the fp8 profiles were measured with an fp8 scatter and a bf16 or lsa gather.
  const bool fp8 =
      c.scatter_dtype == WireDtype::Fp8 && (c.gather_dtype == WireDtype::Bf16 || c.gather_transport == Transport::Lsa);
  std::vector<Override> o;
  if (t.world == 8 && t.n == 7168 && t.k == 2048 && c.quant == Quant::Blockscale && bf16)
    o = {{8200, 9216, 2, false}, {11264, 11264, 1, false}, {13312, 13312, 1, false}};
  if (t.world == 4 && t.n == 5120 && t.k == 2048 && c.quant == Quant::Mxfp8 && (bf16 || fp8)) {
    o = {{4200, 4224, 1, true}, {8200, 8256, 1, true}};
    if (bf16) o.push_back({11264, 11264, 2, false});
  }
  for (const Override& x : o)
    if (x.logical == m) return {x.m_pad, x.chunk_bands, x.relaxed, true};
  Shape p = t;
  p.m = m;
  return {padded_m(p, c.quant), 0, false, false};
}

RowPlan row_plan(const Shape& s, const Config& c) {
  const int64_t m = logical_m(s, c);
  RowPlan p;
  if (c.schedule == Schedule::WoB) {
    p = wo_b_plan(s, c, m);
  } else if (c.relaxed_rows) {
    p.m_pad = s.m;  // not padded: validate_knobs asks M to be a multiple of W with a full tile per rank
  } else {
    Shape q = s;
    q.m = m;
    p.m_pad = padded_m(q, c.quant);
  }
  if (c.chunk_bands > 0) p.chunk_bands = c.chunk_bands;
  if (c.relaxed_rows) p.relaxed_rows = true;
  return p;
}

int bench_chunks(int64_t m_tiles_per_peer, int asked) {
  constexpr int kDefaultChunks = 8;  // bench_gemm_ar.py DEFAULT_CHUNKS
  int chunks = asked > 0 ? asked : kDefaultChunks;
  while (chunks > 1 && m_tiles_per_peer % chunks) chunks /= 2;
  return chunks;
}

int op_counter_chunks(int64_t bands) {
  constexpr int kMaxChunks = 8;  // op.py MAX_CHUNKS
  GEMMAR_CHECK(bands >= 1, "op_counter_chunks: ", bands, " bands");
  int best = 1;
  for (int c = 1; c <= kMaxChunks && c <= bands; ++c)
    if (bands % c == 0) best = c;
  return best;
}

ChunkPlan short_tail_plan(int64_t bands, int chunk_bands) {
  GEMMAR_CHECK(bands >= 1 && chunk_bands >= 1, "short_tail_plan: ", bands, " bands of ", chunk_bands);
  ChunkPlan p;
  p.bands = bands;
  p.chunks = int((bands + chunk_bands - 1) / chunk_bands);
  p.chunk_bands = chunk_bands;
  p.tail_bands = bands - int64_t(p.chunks - 1) * chunk_bands;
  return p;
}

ChunkPlan chunk_plan(const Shape& s, const Config& c) {
  const RowPlan rp = row_plan(s, c);
  const int64_t bm = block_m(c.quant);
  const int64_t rows = rp.m_pad / s.world;
  const int64_t bands = std::max<int64_t>(1, (rows + bm - 1) / bm);
  if (rp.chunk_bands > 0) return short_tail_plan(bands, rp.chunk_bands);
  ChunkPlan p;
  p.bands = bands;
  if (c.chunk_rule == ChunkRule::Op) {
    p.chunks = op_counter_chunks(bands);
  } else {
    // The bench counts the M-tiles of its whole (padded) M: max(1, ceil(M / BLOCK_M) // W).
    p.chunks = bench_chunks(std::max<int64_t>(1, (rp.m_pad + bm - 1) / bm / s.world), c.chunks);
  }
  p.chunk_bands = std::max<int64_t>(1, bands / p.chunks);
  p.tail_bands = p.chunk_bands;
  return p;
}

int effective_chunks(const Shape& s, const Config& c) { return chunk_plan(s, c).chunks; }

void validate_fp8_format(Quant q, Fp8Format f, const std::string& option) {
  GEMMAR_USAGE_CHECK(!(q == Quant::Mxfp8 && f == Fp8Format::E4M3FNUZ), option,
                     ": e4m3fnuz with --quant mxfp8: mori's op takes float8_e4m3fn only (op.py FP8_DTYPES: \"admitting "
                     "FNUZ would read every A and every B element at 2x\"), and mxfp8's ue8m0 scales are OCP MX's");
}

namespace {
// bench_gemm_ar.py @d5443336 run() :274-288 and kernels_fused.py compile_fused_gemm_scatter() @f3bff0ae: which
// mode may carry which knob.
void validate_mode_knobs(const Config& c) {
  const std::string mode = to_string(c.mode);
  GEMMAR_USAGE_CHECK(!(c.scatter_dtype == WireDtype::Fp8 && c.mode != Mode::FusedSdma),
                     "--scatter-dtype: fp8 with --mode ", mode,
                     ": FP8 scatter experiment is wired only through fused-sdma");
  GEMMAR_USAGE_CHECK(!(c.chunk_bands > 0 && c.mode != Mode::FusedSdma), "--chunk-bands: ", c.chunk_bands,
                     " with --mode ", mode, ": chunk_bands requires fused SDMA");
  GEMMAR_USAGE_CHECK(!(c.relaxed_rows && c.mode != Mode::FusedSdma), "--relaxed-rows with --mode ", mode,
                     ": relaxed rows requires fused SDMA, a full tile per peer, and chunk_bands");
}

// op.py @f3bff0ae: the schedule, the chunk rule and the knobs the op does not take.
void validate_op_knobs(const Config& c) {
  GEMMAR_USAGE_CHECK(!(c.schedule == Schedule::WoB && c.chunk_rule != ChunkRule::Op),
                     "--schedule wo_b: is the public op's planner (GemmAllReduceOp(schedule=\"wo_b\")), whose fallback "
                     "is counter_chunks(): add --chunk-rule op");
  GEMMAR_USAGE_CHECK(!(c.chunk_rule == ChunkRule::Op && c.chunks > 0), "--chunks: ", c.chunks,
                     " with --chunk-rule op: the op takes no chunk count (counter_chunks() picks the largest divisor "
                     "<= 8 of the bands per destination)");
  GEMMAR_USAGE_CHECK(!(c.schedule == Schedule::WoB && c.chunk_bands > 0), "--chunk-bands: ", c.chunk_bands,
                     " with --schedule wo_b: the op takes no chunk_bands (its wo_b profile picks them per logical M)");
  GEMMAR_USAGE_CHECK(!(c.schedule == Schedule::WoB && c.relaxed_rows),
                     "--relaxed-rows with --schedule wo_b: the op takes no relaxed_rows (its wo_b profile picks them "
                     "per logical M)");
}

// kernels_fused.py compile_fused_gemm_scatter() @f3bff0ae, layout.py ArConfig.slice_rows, and op.py _row_plan().
void validate_rows(const Shape& s, const Config& c) {
  const RowPlan p = row_plan(s, c);
  if (c.logical_m > 0) {
    GEMMAR_USAGE_CHECK(p.m_pad == s.m, "-m: M=", s.m, " does not match planned padded M=", p.m_pad,
                       "; use padded_m()/pad_rows() and pass the original logical_m");
  }
  if (!p.relaxed_rows) return;
  const int64_t bm = block_m(c.quant);
  GEMMAR_USAGE_CHECK(p.m_pad % s.world == 0, "-m: m=", p.m_pad, " must divide by world_size=", s.world,
                     " (--relaxed-rows: M is not padded)");
  GEMMAR_USAGE_CHECK(p.chunk_bands > 0, "--relaxed-rows without --chunk-bands",
                     ": relaxed rows requires fused SDMA, a full tile per peer, and chunk_bands");
  GEMMAR_USAGE_CHECK(p.m_pad / s.world >= bm, "--relaxed-rows: -m ", p.m_pad, " leaves ", p.m_pad / s.world,
                     " rows per rank, under BLOCK_M = ", bm,
                     ": relaxed rows requires fused SDMA, a full tile per peer, and chunk_bands");
}
}  // namespace

void validate_gather_wire(const Config& c) {
  GEMMAR_USAGE_CHECK(!(has_collective(c.mode) && !traits(c.mode).fp8_wire && c.gather_dtype == WireDtype::Fp8),
                     "--gather-dtype: --mode ", to_string(c.mode),
                     " has no fp8 gather leg (build_lsa_ar takes no gather_dtype); use split-sdma or fused-sdma for "
                     "--gather-dtype fp8");
}

void validate_knobs(const Shape& s, const Config& c) {
  GEMMAR_USAGE_CHECK(c.chunk_bands >= 0 && c.chunk_bands <= 4096, "--chunk-bands: ", c.chunk_bands,
                     " is out of range [0, 4096] (0: the chunk rule decides)");
  GEMMAR_USAGE_CHECK(c.sdma_queues >= 1 && c.sdma_queues <= 64, "--sdma-queues: ", c.sdma_queues,
                     " is out of range [1, 64]");
  GEMMAR_USAGE_CHECK(c.logical_m >= 0 && c.logical_m <= (int64_t(1) << 20), "--logical-m: ", c.logical_m,
                     " is out of range [0, 2^20] (0: -m is the logical M; else -m is the padded M)");
  validate_mode_knobs(c);
  validate_op_knobs(c);
  validate_rows(s, c);
}

void validate_shape_config(const Shape& s, const Config& c, bool require_padded) {
  // Limits keep every buffer addressable and every host-side count in range; far above any real layer.
  constexpr int64_t kMaxDim = int64_t(1) << 20;
  GEMMAR_USAGE_CHECK(s.world >= 1 && s.world <= 512 && 512 % s.world == 0, "--world: ", s.world,
                     " must divide 512 (1, 2, 4, 8, ... 512)");
  GEMMAR_USAGE_CHECK(s.m >= 1 && s.m <= kMaxDim, "-m: ", s.m, " is out of range [1, ", kMaxDim, "]");
  GEMMAR_USAGE_CHECK(s.n >= 128 && s.n <= kMaxDim, "-n: ", s.n, " is out of range [128, ", kMaxDim, "]");
  GEMMAR_USAGE_CHECK(s.k >= 128 && s.k <= kMaxDim, "-k: ", s.k, " is out of range [128, ", kMaxDim, "]");
  GEMMAR_USAGE_CHECK(s.k % 128 == 0, "-k: ", s.k, " is not a multiple of 128 (the blockscale K block)");
  GEMMAR_USAGE_CHECK(s.n % 128 == 0, "-n: ", s.n, " is not a multiple of 128 (the B scale block)");
  GEMMAR_USAGE_CHECK(padded_m(s, c.quant) * s.n <= (int64_t(1) << 34), "-m/-n: output of ", padded_m(s, c.quant), " x ",
                     s.n, " elements is absurdly large (limit 2^34)");
  if (uses_fp8_wire(c))
    GEMMAR_USAGE_CHECK(s.n % 1024 == 0, "-n: ", s.n, " is not a multiple of 1024, required on an fp8 wire",
                       " (--gather-dtype fp8)");
  // One fp32 scale per row and 256-wide N tile (layout.py ArConfig.scatter_tiles_per_row, scatter_scale_n 256).
  if (c.scatter_dtype == WireDtype::Fp8)
    GEMMAR_USAGE_CHECK(s.n % 256 == 0, "-n: n=", s.n,
                       " must be a multiple of scatter_scale_n=256 (--scatter-dtype fp8)");
  GEMMAR_USAGE_CHECK(c.gather_bands >= 1 && c.gather_bands <= 4096, "--gather-bands: ", c.gather_bands,
                     " is out of range [1, 4096]");
  GEMMAR_USAGE_CHECK(c.pull_blocks >= 1 && c.pull_blocks <= 65536, "--pull-blocks: ", c.pull_blocks,
                     " is out of range [1, 65536]");
  GEMMAR_USAGE_CHECK(c.chunks >= 0 && c.chunks <= 4096, "--chunks: ", c.chunks,
                     " is out of range [0, 4096] (0: mori's default)");
  validate_knobs(s, c);
  if (require_padded && !row_plan(s, c).relaxed_rows) {
    const int64_t unit = int64_t(s.world) * block_m(c.quant);
    GEMMAR_USAGE_CHECK(s.m % unit == 0, "-m: ", s.m, " is not a multiple of world*BLOCK_M = ", unit, " (pad it to ",
                       padded_m(s, c.quant), ")");
  }
}

std::string config_label(const Config& c) {
  const Config e = effective_config(c);
  std::string s = to_string(e.mode) + "/" + to_string(e.quant);
  if (has_collective(e.mode)) s += "/" + to_string(e.gather_dtype) + "/" + to_string(e.gather_transport);
  if (e.fuse_quantize) s += "/fuse-quantize";
  if (e.fuse_reduce_push) s += "/fuse-reduce-push-" + std::to_string(e.gather_bands) + "-" + to_string(e.publish);
  // The knobs of mori 2026-09, named only when set, so the labels of the configs before them are unchanged.
  if (e.scatter_dtype == WireDtype::Fp8) s += "/scatter-fp8";
  if (e.chunk_rule == ChunkRule::Op) s += "/op-chunks";
  if (e.schedule == Schedule::WoB) s += "/wo_b";
  if (e.chunk_bands > 0) s += "/chunk-bands-" + std::to_string(e.chunk_bands);
  if (e.relaxed_rows) s += "/relaxed-rows";
  return s;
}

}  // namespace gemmar
