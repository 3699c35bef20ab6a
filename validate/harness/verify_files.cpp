#include "validate/harness/verify_files.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/config_fields.hpp"
#include "common/errors.hpp"
#include "reference/numerics_inline.hpp"
#include "validate/harness/dump_write.hpp"

namespace gemmar::dump {

using reference::Operand;
using safetensors::shape_text;
using safetensors::TensorInfo;

void bad(const std::string& path, const std::string& what) { throw UsageError(path + ": " + what); }

std::string meta_get(const RankFile& f, const std::string& key, bool required) {
  const auto it = f.meta.find(key);
  if (it != f.meta.end()) return it->second;
  if (required)
    bad(f.file.path(), "metadata has no '" + key +
                           "' (a gemmar dump carries rank, world, mode, quant, gather_dtype, "
                           "gather_transport, fp8_format: see docs/verify.md)");
  return "";
}

int64_t meta_int(const RankFile& f, const std::string& key, const std::string& text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || !end || *end || errno || v < lo || v > hi)
    bad(f.file.path(), "metadata " + key + "='" + text + "' is not an integer in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  return v;
}

namespace {
template <typename F>
auto meta_parse(const RankFile& f, const std::string& key, const std::string& text, F parse) {
  try {
    return parse(text, key);
  } catch (const UsageError& e) {
    bad(f.file.path(), std::string("metadata ") + e.what());
  }
}

const TensorInfo& expect_tensor(const RankFile& f, const std::string& name, const std::vector<std::string>& dtypes,
                                const std::vector<int64_t>& shape, const std::string& layout_hint = "") {
  const TensorInfo& t = f.file.tensor(name);
  if (std::find(dtypes.begin(), dtypes.end(), t.dtype) == dtypes.end()) {
    std::string list;
    for (const auto& d : dtypes) list += (list.empty() ? "" : " or ") + d;
    bad(f.file.path(), "tensor '" + name + "' has dtype " + t.dtype + ", expected " + list);
  }
  if (t.shape != shape) {
    std::string msg = "tensor '" + name + "' has shape " + shape_text(t.shape) + ", expected " + shape_text(shape);
    if (!layout_hint.empty()) msg += " (" + layout_hint + ")";
    bad(f.file.path(), msg);
  }
  return t;
}

}  // namespace

// The scale shapes of docs/spec.md 1.2, as the file stores them (row-major bytes): blockscale A [K/128, rows] (that is,
// column-major [rows, K/128], torch._scaled_mm's layout), B [N/128, K/128]; ptpc [rows] and [N]; mxfp8 [rows,
// K/32] and [N/32, K/32].
std::vector<int64_t> scale_shape(Quant q, Operand op, int64_t rows, int64_t k) {
  const ScaleBlock& s = scale_block(q, op == Operand::B);
  const int64_t rb = rows / s.rows, kb = scale_k_blocks(s, k);
  if (s.k == 0) return {rb};
  return s.k_major ? std::vector<int64_t>{kb, rb} : std::vector<int64_t>{rb, kb};
}

namespace {
std::string scale_hint(Quant q, Operand op) { return scale_block(q, op == Operand::B).hint; }

// The run the dump belongs to, from the metadata: world, rank, config and the pull grid.
void read_run_metadata(RankFile& f, const std::string& path) {
  const std::string fmt = meta_get(f, "format", false);
  if (!fmt.empty() && fmt != kDumpFormat) bad(path, "metadata format='" + fmt + "' is not a gemmar dump");
  f.world = int(meta_int(f, "world", meta_get(f, "world", true), 1, 512));
  f.rank = int(meta_int(f, "rank", meta_get(f, "rank", true), 0, f.world - 1));
  for (const char* key : {"mode", "quant", "gather_dtype", "gather_transport"}) meta_get(f, key, true);
  // Every config key the metadata holds, through the field table (common/config_fields.hpp); absent: the default.
  config_from_metadata(f.meta, path, f.config);
  if (f.meta.count("pull_blocks")) f.pull_blocks = f.config.pull_blocks;
}

// A and B: codes, [M, K] and [N, K], in the metadata's fp8 format; the sizes M, N, K the file holds.
void read_operands(RankFile& f, const std::string& path) {
  const TensorInfo& a = f.file.tensor("a");
  const TensorInfo& b = f.file.tensor("b");
  for (const TensorInfo* t : {&a, &b}) {
    if (t->dtype != "F8_E4M3" && t->dtype != "U8")
      bad(path, "tensor '" + t->name + "' has dtype " + t->dtype +
                    ", expected F8_E4M3 (e4m3fn codes) or U8 (codes in "
                    "the metadata's fp8_format)");
    if (t->shape.size() != 2)
      bad(path, "tensor '" + t->name + "' has shape " + shape_text(t->shape) + ", expected 2-D");
  }
  if (a.dtype != b.dtype) bad(path, "tensors 'a' (" + a.dtype + ") and 'b' (" + b.dtype + ") have different dtypes");
  const std::string ff = meta_get(f, "fp8_format", a.dtype == "U8");
  f.fp8 = ff.empty() ? Fp8Format::E4M3FN : meta_parse(f, "fp8_format", ff, parse_fp8_format);
  if (a.dtype == "F8_E4M3" && f.fp8 != Fp8Format::E4M3FN)
    bad(path, "tensor 'a' has dtype F8_E4M3 (e4m3fn) but metadata fp8_format='" + ff +
                  "' (store e4m3fnuz codes as U8 with fp8_format=e4m3fnuz)");
  validate_fp8_format(f.config.quant, f.fp8, path + ": metadata fp8_format");
  const std::string wf = meta_get(f, "wire_format", false);
  f.wire_format = wf.empty() ? f.fp8 : meta_parse(f, "wire_format", wf, parse_fp8_format);

  f.file_rows = a.shape[0];
  f.k = a.shape[1];
  f.n = b.shape[0];
  if (b.shape[1] != f.k)
    bad(path, "tensor 'b' has shape " + shape_text(b.shape) + ": its K (" + std::to_string(b.shape[1]) +
                  ") differs from a's " + shape_text(a.shape) + " (b is [N, K], as gemm_ar holds it)");
}

// The run's M, and the rows of a row-subset dump (tensor 'rows', increasing, in [0, M)).
void read_rows(RankFile& f, const std::string& path) {
  if (f.file.has("rows")) {
    const TensorInfo& r = expect_tensor(f, "rows", {"I64"}, {f.file_rows});
    const std::string mm = meta_get(f, "m", false);
    if (mm.empty()) bad(path, "a row-subset dump (tensor 'rows') must carry metadata 'm' (the run's M)");
    f.m = meta_int(f, "m", mm, 1, int64_t(1) << 24);
    f.rows.resize(size_t(f.file_rows));
    std::memcpy(f.rows.data(), f.file.data(r), f.rows.size() * 8);
    for (size_t i = 0; i < f.rows.size(); ++i)
      if (f.rows[i] < 0 || f.rows[i] >= f.m || (i && f.rows[i] <= f.rows[i - 1]))
        bad(path, "tensor 'rows' must hold increasing rows in [0, m=" + std::to_string(f.m) + "); entry " +
                      std::to_string(i) + " is " + std::to_string(f.rows[i]));
  } else {
    f.m = f.file_rows;
    const std::string mm = meta_get(f, "m", false);
    if (!mm.empty() && meta_int(f, "m", mm, 1, int64_t(1) << 24) != f.m)
      bad(path, "metadata m=" + mm + " but tensor 'a' has " + std::to_string(f.file_rows) + " rows (the header lies)");
  }
}

// The scales, the output and the optional partial and wire tensors, in the shapes the run's quant and size give.
void check_tensors(RankFile& f, const std::string& path) {
  const Quant q = f.config.quant;
  expect_tensor(f, "a_scale", {"F32"}, scale_shape(q, Operand::A, f.file_rows, f.k), scale_hint(q, Operand::A));
  expect_tensor(f, "b_scale", {"F32"}, scale_shape(q, Operand::B, f.n, f.k), scale_hint(q, Operand::B));
  expect_tensor(f, "out", {"BF16"}, {f.file_rows, f.n}, "out is the op's bf16 output [M, N]");
  f.partial = f.file.has("partial");
  if (f.partial) expect_tensor(f, "partial", {"BF16"}, {f.file_rows, f.n}, "partial is the GEMM's bf16 result [M, N]");
  f.wire = f.file.has("wire");
  if (f.wire || f.file.has("wire_scale")) {
    if (!f.rows.empty()) bad(path, "wire tensors are only read from full dumps (no 'rows' tensor)");
    const Shape s{f.m, f.n, f.k, f.world};
    const int64_t S = slice_rows(s, f.config);
    expect_tensor(f, "wire", {"U8", "F8_E4M3"}, {S, f.n}, "the owned slice's fp8 codes, [padded M / W, N]");
    expect_tensor(f, "wire_scale", {"F32"}, {S}, "one fp32 scale per row of the owned slice");
    f.wire = true;
  }
  f.scatter = f.file.has("scatter");
  if (f.scatter || f.file.has("scatter_scale")) {
    if (f.config.scatter_dtype != WireDtype::Fp8)
      bad(path, "tensors 'scatter'/'scatter_scale' belong to an fp8-scatter run, but metadata scatter_dtype is " +
                    to_string(f.config.scatter_dtype) + " (give scatter_dtype=fp8)");
    if (f.n % numerics::kScatterScaleCols)
      bad(path,
          "the fp8 scatter narrows 256 columns per scale; N=" + std::to_string(f.n) + " is not a multiple of 256");
    expect_tensor(f, "scatter", {"U8", "F8_E4M3"}, {f.file_rows, f.n},
                  "the scatter leg's fp8 codes of this rank's whole partial, [M, N]");
    expect_tensor(f, "scatter_scale", {"F32"}, {f.file_rows, f.n / numerics::kScatterScaleCols},
                  "one fp32 scale per row per 256 columns, [M, N/256]");
    f.scatter = true;
  }
}

}  // namespace

RankFile open_rank_file(const std::string& path) {
  RankFile f(safetensors::File::open(path));
  f.meta = f.file.metadata();
  read_run_metadata(f, path);
  read_operands(f, path);
  read_rows(f, path);
  try {
    validate_shape_config(Shape{f.m, f.n, f.k, f.world}, f.config);
  } catch (const UsageError& e) {
    bad(path, "M=" + std::to_string(f.m) + " N=" + std::to_string(f.n) + " K=" + std::to_string(f.k) +
                  " W=" + std::to_string(f.world) +
                  " (from the tensors and metadata) is not a shape gemm_ar runs: " + e.what());
  }
  check_tensors(f, path);
  return f;
}

// The same run on every rank: everything but the rank must agree with rank 0.
void check_consistent(const RankFile& f0, const RankFile& f) {
  auto differ = [&](const std::string& what, const std::string& a, const std::string& b) {
    bad(f.file.path(), what + " " + b + " differs from " + f0.file.path() + "'s " + a);
  };
  if (f.world != f0.world) differ("metadata world", std::to_string(f0.world), std::to_string(f.world));
  const auto c0 = config_to_metadata(f0.config), c = config_to_metadata(f.config);
  for (const auto& [key, value] : c)
    if (value != c0.at(key)) differ("metadata " + key, c0.at(key), value);
  if (f.fp8 != f0.fp8) differ("fp8_format", to_string(f0.fp8), to_string(f.fp8));
  if (f.m != f0.m) differ("M", std::to_string(f0.m), std::to_string(f.m));
  for (const char* t : {"a", "b", "a_scale", "b_scale", "out"})
    if (f.file.tensor(t).shape != f0.file.tensor(t).shape)
      differ(std::string("tensor '") + t + "' shape", shape_text(f0.file.tensor(t).shape),
             shape_text(f.file.tensor(t).shape));
  if (f.rows != f0.rows) differ("tensor 'rows'", "rows", "rows");
  if (f.partial != f0.partial)
    bad(f.file.path(), std::string(f.partial ? "has" : "has no") + " tensor 'partial' but " + f0.file.path() +
                           (f0.partial ? " has" : " has not") + ": dump the partials on every rank or on none");
  if (f.wire != f0.wire)
    bad(f.file.path(), std::string(f.wire ? "has" : "has no") + " wire tensors but " + f0.file.path() +
                           (f0.wire ? " has" : " has not") + ": dump them on every rank or on none");
  if (f.scatter != f0.scatter)
    bad(f.file.path(), std::string(f.scatter ? "has" : "has no") + " scatter tensors but " + f0.file.path() +
                           (f0.scatter ? " has" : " has not") + ": dump them on every rank or on none");
  if (f.config.scatter_dtype != f0.config.scatter_dtype)
    differ("metadata scatter_dtype", to_string(f0.config.scatter_dtype), to_string(f.config.scatter_dtype));
}

// Reads the A rows (their codes and scales in the quant's A layout over the held rows) and the whole of B.
void read_a_rows(const RankFile& f, const std::vector<int64_t>& file_rows, const Shape& shape,
                 reference::RankOperands& op) {
  const Quant q = f.config.quant;
  const int64_t R = int64_t(file_rows.size()), K = shape.k;
  op.a.rows = R;
  op.a.cols = K;
  op.a.codes.resize(size_t(R * K));
  const uint8_t* a = f.file.data(f.file.tensor("a"));
  for (int64_t i = 0; i < R; ++i) std::memcpy(&op.a.codes[size_t(i * K)], a + file_rows[size_t(i)] * K, size_t(K));
  op.a.scales.resize(size_t(reference::scale_count(q, Operand::A, R, K)));
  const float* as = reinterpret_cast<const float*>(f.file.data(f.file.tensor("a_scale")));
  const int64_t bk = reference::scale_k_block(q, K);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t c = 0; c < K; c += bk)
      std::memcpy(&op.a.scales[size_t(reference::scale_index(q, Operand::A, R, K, i, c))],
                  as + reference::scale_index(q, Operand::A, f.file_rows, K, file_rows[size_t(i)], c), 4);
}

reference::RankOperands read_operands(const RankFile& f, const std::vector<int64_t>& file_rows, const Shape& shape) {
  reference::RankOperands op;
  op.rank = f.rank;
  read_a_rows(f, file_rows, shape, op);
  const int64_t K = shape.k, N = shape.n;
  op.b.rows = N;
  op.b.cols = K;
  const uint8_t* b = f.file.data(f.file.tensor("b"));
  op.b.codes.assign(b, b + N * K);
  const TensorInfo& bs = f.file.tensor("b_scale");
  const float* bsp = reinterpret_cast<const float*>(f.file.data(bs));
  op.b.scales.assign(bsp, bsp + bs.numel());
  return op;
}

std::vector<uint16_t> read_bf16_rows(const RankFile& f, const std::string& name,
                                     const std::vector<int64_t>& file_rows) {
  const int64_t N = f.n;
  std::vector<uint16_t> out(file_rows.size() * size_t(N));
  const uint8_t* p = f.file.data(f.file.tensor(name));
  for (size_t i = 0; i < file_rows.size(); ++i)
    std::memcpy(&out[i * size_t(N)], p + file_rows[i] * N * 2, size_t(N) * 2);
  return out;
}

namespace {
// "0-6", "1, 3, 5-7".
std::string rank_ranges(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (s.empty() ? "" : ", ") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return s;
}

// Not one file per rank: which ranks are there and the likely cause (the usual one: every rank wrote one path).
[[noreturn]] void wrong_file_count(const DumpRun& run, int W) {
  std::vector<int> present, missing;
  for (const auto& f : run.files) present.push_back(f.rank);
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  for (int r = 0; r < W; ++r)
    if (!std::binary_search(present.begin(), present.end(), r)) missing.push_back(r);
  std::string what = "metadata world=" + std::to_string(W) + " but " + std::to_string(run.files.size()) +
                     " file(s) were given (one per rank is needed)";
  if (int(run.files.size()) > W) {
    what += ": files of several runs in one place? give each run its own directory";
  } else if (run.files.size() == 1) {
    what += ", rank " + rank_ranges(present) +
            "'s alone: every rank likely wrote the same file, each overwriting the "
            "one before (python/gemmar_dump.dump takes a directory and writes DIR/rank<R>.safetensors), or ranks " +
            rank_ranges(missing) + " did not dump";
  } else {
    what += ": ranks " + rank_ranges(missing) + " are missing (did they dump into this directory? did they run?)";
  }
  bad(run.files.front().file.path(), what);
}
}  // namespace

DumpRun open_run(const std::vector<std::string>& paths) {
  GEMMAR_USAGE_CHECK(!paths.empty(), "no files");
  DumpRun run;
  for (const auto& p : paths) run.files.push_back(open_rank_file(p));
  const int W = run.files.front().world;
  if (int(run.files.size()) != W) wrong_file_count(run, W);
  run.by_rank.assign(size_t(W), nullptr);
  for (const auto& f : run.files) {
    if (run.by_rank[size_t(f.rank)])
      bad(f.file.path(), "rank " + std::to_string(f.rank) + " is also " + run.by_rank[size_t(f.rank)]->file.path());
    run.by_rank[size_t(f.rank)] = &f;
  }
  for (const RankFile* f : run.by_rank) check_consistent(run.rank(0), *f);
  return run;
}

}  // namespace gemmar::dump
