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

int effective_chunks(const Shape& s, const Config& c) {
  constexpr int kMoriDefaultChunks = 8;
  int chunks = c.chunks > 0 ? c.chunks : kMoriDefaultChunks;
  const int64_t bm = block_m(c.quant);
  const int64_t m_tiles_per_peer = std::max<int64_t>(1, (s.m + bm - 1) / bm / s.world);
  while (chunks > 1 && m_tiles_per_peer % chunks) chunks /= 2;
  return chunks;
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
  GEMMAR_USAGE_CHECK(c.gather_bands >= 1 && c.gather_bands <= 4096, "--gather-bands: ", c.gather_bands,
                     " is out of range [1, 4096]");
  GEMMAR_USAGE_CHECK(c.pull_blocks >= 1 && c.pull_blocks <= 65536, "--pull-blocks: ", c.pull_blocks,
                     " is out of range [1, 65536]");
  GEMMAR_USAGE_CHECK(c.chunks >= 0 && c.chunks <= 4096, "--chunks: ", c.chunks,
                     " is out of range [0, 4096] (0: mori's default)");
  if (require_padded) {
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
  return s;
}

}  // namespace gemmar
