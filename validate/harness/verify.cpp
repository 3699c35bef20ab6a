#include "validate/harness/verify.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "common/errors.hpp"
#include "reference/emulation.hpp"
#include "reference/formats.hpp"
#include "reference/gemm.hpp"
#include "reference/operands.hpp"
#include "reference/quant.hpp"
#include "validate/record/safetensors.hpp"

namespace gemmar {

namespace fs = std::filesystem;
using reference::Operand;
using safetensors::shape_text;
using safetensors::TensorInfo;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string sci(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string hex16(uint16_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

// ---- one rank's file, its metadata and tensors checked -------------------------------------------------------

struct RankFile {
  explicit RankFile(safetensors::File f) : file(std::move(f)) {}
  safetensors::File file;
  int rank = 0, world = 0;
  Config config;
  Fp8Format fp8 = Fp8Format::E4M3FN;
  Fp8Format wire_format = Fp8Format::E4M3FN;
  std::optional<int> pull_blocks;
  std::map<std::string, std::string> meta;
  int64_t m = 0, n = 0, k = 0;  // m: the real M; the file holds `file_rows` rows of A, out and partial
  int64_t file_rows = 0;
  std::vector<int64_t> rows;    // row-subset dumps: the global rows held
  bool partial = false, wire = false;
};

[[noreturn]] void bad(const std::string& path, const std::string& what) { throw UsageError(path + ": " + what); }

std::string meta_get(const RankFile& f, const std::string& key, bool required) {
  const auto it = f.meta.find(key);
  if (it != f.meta.end()) return it->second;
  if (required)
    bad(f.file.path(), "metadata has no '" + key + "' (a gemmar dump carries rank, world, mode, quant, gather_dtype, "
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

// The scale shapes of docs/spec.md 1.2, as the file stores them (row-major bytes): blockscale A [K/128, rows] (that is,
// column-major [rows, K/128], torch._scaled_mm's layout), B [N/128, K/128]; ptpc [rows] and [N]; mxfp8 [rows,
// K/32] and [N, K/32].
std::vector<int64_t> scale_shape(Quant q, Operand op, int64_t rows, int64_t k) {
  switch (q) {
    case Quant::Blockscale: return op == Operand::A ? std::vector<int64_t>{k / 128, rows} : std::vector<int64_t>{rows / 128, k / 128};
    case Quant::Ptpc: return {rows};
    case Quant::Mxfp8: return {rows, k / 32};
  }
  return {};
}

std::string scale_hint(Quant q, Operand op) {
  switch (q) {
    case Quant::Blockscale:
      return op == Operand::A ? "blockscale A scales are one fp32 per 1x128 block, stored column-major as [K/128, M]: "
                                "write scale_a.t().contiguous() for torch._scaled_mm's [M, K/128]"
                              : "blockscale B scales are one fp32 per 128x128 block, row-major [N/128, K/128]";
    case Quant::Ptpc: return op == Operand::A ? "ptpc: one fp32 per row of A, [M]" : "ptpc: one fp32 per row of B, [N]";
    case Quant::Mxfp8: return "mxfp8: one fp32 (a power of two) per 1x32 block along K, [rows, K/32]";
  }
  return "";
}

RankFile open_rank_file(const std::string& path) {
  RankFile f(safetensors::File::open(path));
  f.meta = f.file.metadata();
  const std::string fmt = meta_get(f, "format", false);
  if (!fmt.empty() && fmt != kDumpFormat) bad(path, "metadata format='" + fmt + "' is not a gemmar dump");
  f.world = int(meta_int(f, "world", meta_get(f, "world", true), 1, 512));
  f.rank = int(meta_int(f, "rank", meta_get(f, "rank", true), 0, f.world - 1));
  f.config.mode = meta_parse(f, "mode", meta_get(f, "mode", true), parse_mode);
  f.config.quant = meta_parse(f, "quant", meta_get(f, "quant", true), parse_quant);
  f.config.gather_dtype = meta_parse(f, "gather_dtype", meta_get(f, "gather_dtype", true), parse_wire);
  f.config.gather_transport = meta_parse(f, "gather_transport", meta_get(f, "gather_transport", true), parse_transport);
  const std::string fq = meta_get(f, "fuse_quantize", false);
  if (!fq.empty()) {
    if (fq != "0" && fq != "1" && fq != "true" && fq != "false" && fq != "True" && fq != "False")
      bad(path, "metadata fuse_quantize='" + fq + "' is not a boolean (0|1|true|false)");
    f.config.fuse_quantize = fq == "1" || fq == "true" || fq == "True";
  }
  const std::string pb = meta_get(f, "pull_blocks", false);
  if (!pb.empty()) {
    f.pull_blocks = int(meta_int(f, "pull_blocks", pb, 1, 65536));
    f.config.pull_blocks = *f.pull_blocks;
  }

  // A and B: codes, [M, K] and [N, K].
  const TensorInfo& a = f.file.tensor("a");
  const TensorInfo& b = f.file.tensor("b");
  for (const TensorInfo* t : {&a, &b}) {
    if (t->dtype != "F8_E4M3" && t->dtype != "U8")
      bad(path, "tensor '" + t->name + "' has dtype " + t->dtype + ", expected F8_E4M3 (e4m3fn codes) or U8 (codes in "
                "the metadata's fp8_format)");
    if (t->shape.size() != 2) bad(path, "tensor '" + t->name + "' has shape " + shape_text(t->shape) + ", expected 2-D");
  }
  if (a.dtype != b.dtype) bad(path, "tensors 'a' (" + a.dtype + ") and 'b' (" + b.dtype + ") have different dtypes");
  const std::string ff = meta_get(f, "fp8_format", a.dtype == "U8");
  f.fp8 = ff.empty() ? Fp8Format::E4M3FN : meta_parse(f, "fp8_format", ff, parse_fp8_format);
  if (a.dtype == "F8_E4M3" && f.fp8 != Fp8Format::E4M3FN)
    bad(path, "tensor 'a' has dtype F8_E4M3 (e4m3fn) but metadata fp8_format='" + ff +
                  "' (store e4m3fnuz codes as U8 with fp8_format=e4m3fnuz)");
  const std::string wf = meta_get(f, "wire_format", false);
  f.wire_format = wf.empty() ? f.fp8 : meta_parse(f, "wire_format", wf, parse_fp8_format);

  f.file_rows = a.shape[0];
  f.k = a.shape[1];
  f.n = b.shape[0];
  if (b.shape[1] != f.k)
    bad(path, "tensor 'b' has shape " + shape_text(b.shape) + ": its K (" + std::to_string(b.shape[1]) +
                  ") differs from a's " + shape_text(a.shape) + " (b is [N, K], as gemm_ar holds it)");

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
  try {
    validate_shape_config(Shape{f.m, f.n, f.k, f.world}, f.config);
  } catch (const UsageError& e) {
    bad(path, "M=" + std::to_string(f.m) + " N=" + std::to_string(f.n) + " K=" + std::to_string(f.k) + " W=" +
                  std::to_string(f.world) + " (from the tensors and metadata) is not a shape gemm_ar runs: " + e.what());
  }
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
    const int64_t S = slice_rows(s, q);
    expect_tensor(f, "wire", {"U8", "F8_E4M3"}, {S, f.n}, "the owned slice's fp8 codes, [padded M / W, N]");
    expect_tensor(f, "wire_scale", {"F32"}, {S}, "one fp32 scale per row of the owned slice");
    f.wire = true;
  }
  return f;
}

// The same run on every rank: everything but the rank must agree with rank 0.
void check_consistent(const RankFile& f0, const RankFile& f) {
  auto differ = [&](const std::string& what, const std::string& a, const std::string& b) {
    bad(f.file.path(), what + " " + b + " differs from " + f0.file.path() + "'s " + a);
  };
  if (f.world != f0.world) differ("metadata world", std::to_string(f0.world), std::to_string(f.world));
  if (config_label(f.config) != config_label(f0.config))
    differ("config", config_label(f0.config), config_label(f.config));
  if (f.fp8 != f0.fp8) differ("fp8_format", to_string(f0.fp8), to_string(f.fp8));
  if (f.m != f0.m) differ("M", std::to_string(f0.m), std::to_string(f.m));
  for (const char* t : {"a", "b", "a_scale", "b_scale", "out"})
    if (f.file.tensor(t).shape != f0.file.tensor(t).shape)
      differ(std::string("tensor '") + t + "' shape", shape_text(f0.file.tensor(t).shape), shape_text(f.file.tensor(t).shape));
  if (f.rows != f0.rows) differ("tensor 'rows'", "rows", "rows");
  if (f.partial != f0.partial)
    bad(f.file.path(), std::string(f.partial ? "has" : "has no") + " tensor 'partial' but " + f0.file.path() +
                           (f0.partial ? " has" : " has not") + ": dump the partials on every rank or on none");
  if (f.wire != f0.wire)
    bad(f.file.path(), std::string(f.wire ? "has" : "has no") + " wire tensors but " + f0.file.path() +
                           (f0.wire ? " has" : " has not") + ": dump them on every rank or on none");
}

// Reads the A rows (their codes and scales in the quant's A layout over the held rows) and the whole of B.
reference::RankOperands read_operands(const RankFile& f, const std::vector<int64_t>& file_rows, const Shape& shape) {
  const Quant q = f.config.quant;
  reference::RankOperands op;
  op.rank = f.rank;
  const int64_t R = int64_t(file_rows.size()), K = shape.k, N = shape.n;
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
  op.b.rows = N;
  op.b.cols = K;
  const uint8_t* b = f.file.data(f.file.tensor("b"));
  op.b.codes.assign(b, b + N * K);
  const TensorInfo& bs = f.file.tensor("b_scale");
  const float* bsp = reinterpret_cast<const float*>(f.file.data(bs));
  op.b.scales.assign(bsp, bsp + bs.numel());
  return op;
}

std::vector<uint16_t> read_bf16_rows(const RankFile& f, const std::string& name, const std::vector<int64_t>& file_rows) {
  const int64_t N = f.n;
  std::vector<uint16_t> out(file_rows.size() * size_t(N));
  const uint8_t* p = f.file.data(f.file.tensor(name));
  for (size_t i = 0; i < file_rows.size(); ++i)
    std::memcpy(&out[i * size_t(N)], p + file_rows[i] * N * 2, size_t(N) * 2);
  return out;
}

bool real_nan(uint16_t h) { return (h & 0x7f80) == 0x7f80; }  // NaN or inf

}  // namespace

// ---- grouping the inputs -------------------------------------------------------------------------------------

std::vector<std::vector<std::string>> dump_groups(const std::vector<std::string>& inputs) {
  GEMMAR_USAGE_CHECK(!inputs.empty(), "no input (give a dump directory or the rank files)");
  auto files_in = [](const fs::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".safetensors") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
  };
  std::vector<std::vector<std::string>> groups;
  std::vector<std::string> loose;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<std::string> here = files_in(in);
      if (!here.empty()) {
        groups.push_back(here);
        continue;
      }
      std::vector<fs::path> subs;
      for (const auto& e : fs::directory_iterator(in))
        if (e.is_directory()) subs.push_back(e.path());
      std::sort(subs.begin(), subs.end());
      size_t found = 0;
      for (const auto& s : subs) {
        std::vector<std::string> g = files_in(s);
        if (!g.empty()) {
          groups.push_back(g);
          ++found;
        }
      }
      GEMMAR_USAGE_CHECK(found, in, ": no *.safetensors files in the directory or its subdirectories");
    } else {
      GEMMAR_USAGE_CHECK(fs::is_regular_file(in, ec), in, ": no such file or directory");
      loose.push_back(in);
    }
  }
  if (!loose.empty()) groups.push_back(loose);
  return groups;
}

// ---- verify one run --------------------------------------------------------------------------------------------

VerifyResult verify_dump(const std::vector<std::string>& paths, const VerifyOptions& opt) {
  const auto t0 = Clock::now();
  GEMMAR_USAGE_CHECK(!paths.empty(), "no files");
  VerifyResult res;
  {
    const fs::path p0(paths.front());
    res.source = paths.size() > 1 && p0.has_parent_path() ? p0.parent_path().string() : p0.string();
  }

  // Open and check every file; order by rank.
  std::vector<RankFile> files;
  for (const auto& p : paths) files.push_back(open_rank_file(p));
  const int W = files.front().world;
  if (int(files.size()) != W)
    bad(files.front().file.path(), "metadata world=" + std::to_string(W) + " but " + std::to_string(files.size()) +
                                       " file(s) were given (one per rank)");
  std::vector<RankFile*> by_rank(size_t(W), nullptr);
  for (auto& f : files) {
    if (by_rank[size_t(f.rank)])
      bad(f.file.path(), "rank " + std::to_string(f.rank) + " is also " + by_rank[size_t(f.rank)]->file.path());
    by_rank[size_t(f.rank)] = &f;
  }
  const RankFile& f0 = *by_rank[0];
  for (const RankFile* f : by_rank) check_consistent(f0, *f);
  for (const RankFile* f : by_rank) res.files.push_back(f->file.path());

  const Shape shape{f0.m, f0.n, f0.k, W};
  const Config cfg = effective_config(f0.config);
  const Quant q = cfg.quant;
  const int64_t n = shape.n;
  const int64_t S = slice_rows(shape, q);
  res.has_partials = f0.partial;
  res.has_wire = f0.wire;
  res.row_subset = !f0.rows.empty();

  // The rows to check: a row-subset dump's own rows, else a stratified sample as `gemmar run --check-rows`.
  std::vector<int64_t> file_rows;
  if (res.row_subset) {
    res.rows = f0.rows;
    for (size_t i = 0; i < res.rows.size(); ++i) file_rows.push_back(int64_t(i));
  } else {
    const int64_t count = opt.check_rows == 0 ? std::numeric_limits<int64_t>::max() / 4 : opt.check_rows;
    res.rows = reference::sample_rows(shape, q, std::max<int64_t>(count, W), opt.seed);
    file_rows = res.rows;
  }
  const std::vector<int64_t>& rows = res.rows;
  const size_t R = rows.size();

  // Per rank: the output and partial rows, and the fp32 reference (the sum over ranks 0..W-1 of the reference
  // partials, as reference::compute_partials forms it), from the dumped operands themselves.
  reference::Bf16Outputs outputs(static_cast<size_t>(W));
  reference::Partials partials;
  std::vector<float> ref(R * size_t(n), 0.0f);
  std::vector<std::vector<float>> ref_partials;  // per rank (for the partial check and gemm-only)
  int64_t fn_nan_codes = 0;                      // codes that are NaN in the other fp8 reading
  double t_read = 0, t_ref = 0;
  for (int r = 0; r < W; ++r) {
    const RankFile& f = *by_rank[size_t(r)];
    auto t = Clock::now();
    const reference::RankOperands op = read_operands(f, file_rows, shape);
    outputs[size_t(r)] = read_bf16_rows(f, "out", file_rows);
    std::vector<uint16_t> part;
    if (res.has_partials) part = read_bf16_rows(f, "partial", file_rows);
    for (const auto* codes : {&op.a.codes, &op.b.codes})
      for (uint8_t c : *codes)
        fn_nan_codes += f.fp8 == Fp8Format::E4M3FNUZ ? (c & 0x7f) == 0x7f : c == 0x80;
    t_read += seconds_since(t);
    t = Clock::now();
    std::vector<float> p = reference::reference_partial(op, q, f.fp8);
    for (size_t i = 0; i < ref.size(); ++i) ref[i] += p[i];
    if (res.has_partials) {
      res.partial_rel_l2.push_back(reference::rel_l2(part, p));
      std::vector<float> widened(part.size());
      for (size_t i = 0; i < part.size(); ++i) widened[i] = reference::from_bf16(part[i]);
      partials.push_back(std::move(widened));
    }
    if (!has_collective(cfg.mode)) ref_partials.push_back(std::move(p));
    t_ref += seconds_since(t);
  }

  // relL2 against the reference, as run_and_check computes it.
  std::vector<double> per_rank, per_slice;
  double all_views = 0, all_views_stderr = 0;
  auto t = Clock::now();
  if (has_collective(cfg.mode)) {
    for (const auto& x : reference::per_rank_rel_l2(shape, q, rows, outputs, ref)) per_rank.push_back(x.value);
    per_slice = reference::per_slice_rel_l2(shape, q, rows, outputs, ref);
    const reference::RelL2 av = reference::all_views_rel_l2(shape, q, rows, outputs, ref);
    all_views = av.value;
    all_views_stderr = av.stderr_;
  } else {
    for (int r = 0; r < W; ++r) per_rank.push_back(reference::rel_l2(outputs[size_t(r)], ref_partials[size_t(r)]));
    all_views = *std::max_element(per_rank.begin(), per_rank.end());
  }

  // Bit-exactness: the collective re-emulated over the dumped partials.
  std::optional<int64_t> wrong;
  if (res.has_partials) {
    reference::CollectiveRequest cr;
    cr.shape = shape;
    cr.config = cfg;
    cr.rows = rows;
    cr.wire_format = f0.wire_format;
    const reference::Bf16Outputs expected = reference::emulate_collective(cr, partials);
    res.wrong_by_rank.assign(size_t(W), 0);
    res.wrong_by_slice.assign(size_t(W), 0);
    for (int r = 0; r < W; ++r)
      for (size_t i = 0; i < R; ++i)
        for (int64_t c = 0; c < n; ++c) {
          const uint16_t got = outputs[size_t(r)][i * size_t(n) + size_t(c)];
          const uint16_t want = expected[size_t(r)][i * size_t(n) + size_t(c)];
          if (got == want) continue;
          ++res.wrong_by_rank[size_t(r)];
          ++res.wrong_by_slice[size_t(std::min<int64_t>(rows[i] / S, W - 1))];
          if (res.first_mismatches.size() < opt.mismatches_listed)
            res.first_mismatches.push_back({r, rows[i], c, got, want});
        }
    wrong = 0;
    for (int64_t x : res.wrong_by_rank) *wrong += x;
  }

  // Ranks that must agree: every view on a bf16 wire (and split-lsa); every view but the owner's on an fp8 wire.
  const bool fp8_wire = has_collective(cfg.mode) && uses_fp8_wire(cfg);
  if (has_collective(cfg.mode) && W > 1) {
    res.disagreeing_by_rank.assign(size_t(W), 0);
    std::vector<int> eligible;
    for (size_t i = 0; i < R; ++i) {
      const int owner = int(std::min<int64_t>(rows[i] / S, W - 1));
      eligible.clear();
      for (int r = 0; r < W; ++r)
        if (!fp8_wire || r != owner) eligible.push_back(r);
      if (eligible.size() < 2) continue;
      for (int64_t c = 0; c < n; ++c) {
        const size_t at = i * size_t(n) + size_t(c);
        // The majority value among the eligible views; the others disagree.
        int best = -1, best_votes = 0;
        for (int a : eligible) {
          int votes = 0;
          for (int b : eligible) votes += outputs[size_t(a)][at] == outputs[size_t(b)][at];
          if (votes > best_votes) best = a, best_votes = votes;
          if (votes * 2 > int(eligible.size())) break;
        }
        if (best_votes == int(eligible.size())) continue;
        for (int a : eligible)
          if (outputs[size_t(a)][at] != outputs[size_t(best)][at]) ++res.disagreeing_by_rank[size_t(a)];
      }
    }
  }

  // The fp8 wire's legs, when the wire tensors were dumped: the owner's codes and scales must be the quantization
  // of its own reduced rows (its output rows, never quantized), and every peer's view the dequantization of them.
  if (res.has_wire && fp8_wire) {
    int64_t qbad = 0, gbad = 0;
    std::vector<uint8_t> codes(static_cast<size_t>(n));
    std::vector<uint16_t> deq(static_cast<size_t>(n));
    for (size_t i = 0; i < R; ++i) {
      const int owner = int(std::min<int64_t>(rows[i] / S, W - 1));
      const RankFile& fo = *by_rank[size_t(owner)];
      const int64_t local = rows[i] - int64_t(owner) * S;
      const uint8_t* wc = fo.file.data(fo.file.tensor("wire")) + local * n;
      float ws;
      std::memcpy(&ws, fo.file.data(fo.file.tensor("wire_scale")) + local * 4, 4);
      const float want_scale =
          reference::wire_quantize_row(&outputs[size_t(owner)][i * size_t(n)], n, codes.data(), f0.wire_format);
      for (int64_t c = 0; c < n; ++c) qbad += codes[size_t(c)] != wc[c];
      if (std::memcmp(&want_scale, &ws, 4) != 0) ++qbad;
      reference::wire_dequantize_row(wc, ws, n, deq.data(), f0.wire_format);
      for (int r = 0; r < W; ++r) {
        if (r == owner) continue;
        for (int64_t c = 0; c < n; ++c) gbad += deq[size_t(c)] != outputs[size_t(r)][i * size_t(n) + size_t(c)];
      }
    }
    res.wire_quantize_mismatches = qbad;
    res.wire_gather_mismatches = gbad;
  }

  // The output's scale against the reference (least squares over every view's finite elements), and NaN.
  int64_t nan_out = 0;
  double ratio_residual = 1.0;
  {
    double num = 0, den = 0;
    for (int r = 0; r < W; ++r) {
      const std::vector<float>& rr = has_collective(cfg.mode) ? ref : ref_partials[size_t(r)];
      for (size_t i = 0; i < rr.size(); ++i) {
        const uint16_t h = outputs[size_t(r)][i];
        if (real_nan(h)) {
          ++nan_out;
          continue;
        }
        num += double(reference::from_bf16(h)) * rr[i];
        den += double(rr[i]) * rr[i];
      }
    }
    if (den > 0) {
      res.output_to_reference_ratio = num / den;
      // How well the scaled reference explains the output: a format mix-up is a clean multiple (residual near
      // the floor); a slice that never arrived also has a ratio below 1, but a large residual.
      const double kk = num / den;
      double e2 = 0;
      for (int r = 0; r < W; ++r) {
        const std::vector<float>& rr = has_collective(cfg.mode) ? ref : ref_partials[size_t(r)];
        for (size_t i = 0; i < rr.size(); ++i) {
          const uint16_t h = outputs[size_t(r)][i];
          if (real_nan(h)) continue;
          const double d = double(reference::from_bf16(h)) - kk * rr[i];
          e2 += d * d;
        }
      }
      ratio_residual = std::sqrt(e2 / (kk * kk * den));
    }
  }
  const double t_check = seconds_since(t);

  // ---- diagnoses: what the numbers say, in words, beside the judge's findings.
  auto near = [](double x, double target) { return std::fabs(x / target - 1.0) < 0.1; };
  if (nan_out > 0) {
    std::string d = std::to_string(nan_out) + " checked output elements are NaN or inf";
    if (f0.fp8 == Fp8Format::E4M3FNUZ && fn_nan_codes > 0)
      d += ", and the e4m3fnuz operands hold " + std::to_string(fn_nan_codes) +
           " codes 0x7f/0xff (+-240 in e4m3fnuz, NaN in e4m3fn): the kernel read e4m3fnuz operands as e4m3fn "
           "(the fp8 format mix-up)";
    else if (f0.fp8 == Fp8Format::E4M3FN && fn_nan_codes > 0)
      d += ", and the e4m3fn operands hold " + std::to_string(fn_nan_codes) +
           " codes 0x80 (-0 in e4m3fn, NaN in e4m3fnuz): check the kernel decodes e4m3fn, not e4m3fnuz";
    res.diagnoses.push_back(d + ".");
  }
  if (res.output_to_reference_ratio && ratio_residual < 0.05) {
    const double k = *res.output_to_reference_ratio;
    std::string which;
    if (near(k, 4.0)) which = "both operands decoded 2x too large: e4m3fnuz codes read as e4m3fn (the fp8 format mix-up)";
    else if (near(k, 0.25)) which = "both operands decoded 2x too small: e4m3fn codes read as e4m3fnuz (the fp8 format mix-up)";
    else if (near(k, 2.0) || near(k, 0.5)) which = "one operand decoded in the other fp8 format (e4m3fn vs e4m3fnuz) or one scale off by 2x";
    if (!which.empty())
      res.diagnoses.push_back("The output is " + sci(k) + "x the reference computed from the dumped operands in " +
                              to_string(f0.fp8) + ": " + which + ".");
  }
  for (size_t r = 0; r < res.partial_rel_l2.size(); ++r)
    if (!(res.partial_rel_l2[r] < 1e-2))
      res.diagnoses.push_back("Rank " + std::to_string(r) + "'s own partial has relL2 " + sci(res.partial_rel_l2[r]) +
                              " against the fp32 product of its dumped operands (bf16 rounding alone gives ~1.7e-3): "
                              "its GEMM, operands or scales are wrong before any collective.");
  {
    std::string list;
    int64_t total = 0;
    for (size_t r = 0; r < res.disagreeing_by_rank.size(); ++r)
      if (res.disagreeing_by_rank[r]) {
        list += (list.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + ": " +
                std::to_string(res.disagreeing_by_rank[r]);
        total += res.disagreeing_by_rank[r];
      }
    if (total)
      res.diagnoses.push_back("The ranks' outputs differ where the collective makes them equal (" +
                              std::string(fp8_wire ? "every view but the owner's, on the fp8 wire" : "every view") +
                              "), elements differing from the majority: " + list +
                              ": ranks read different data (a missing release, a stale or unwritten view).");
  }
  if (res.wire_quantize_mismatches && *res.wire_quantize_mismatches)
    res.diagnoses.push_back(std::to_string(*res.wire_quantize_mismatches) +
                            " wire codes/scales differ from the per-row quantization of the owner's reduced rows: the "
                            "quantize kernel is wrong (amax, scale or rounding).");
  if (res.wire_gather_mismatches && *res.wire_gather_mismatches)
    res.diagnoses.push_back(std::to_string(*res.wire_gather_mismatches) +
                            " peer output elements differ from the dequantized wire codes: the gather or the "
                            "dequantize of the fp8 wire is wrong (codes that never landed, a stale read).");
  if (res.has_partials && wrong && *wrong) {
    std::string slices;
    for (int s = 0; s < W; ++s)
      if (res.wrong_by_slice[size_t(s)]) slices += (slices.empty() ? "" : ",") + std::to_string(s);
    res.diagnoses.push_back("Wrong elements lie in the slices owned by rank(s) " + slices + ".");
  }

  // ---- the record, as run_and_check builds one, and the same judge.
  RunRecord rec;
  rec.source = res.source;
  rec.shape = shape;
  rec.config = f0.config;
  rec.backend = "tensors";
  if (f0.pull_blocks) rec.pull_blocks = f0.pull_blocks;
  rec.per_rank_rel_l2 = per_rank;
  rec.per_slice_rel_l2 = per_slice;
  double worst = 0;
  bool any_nan = false;
  for (double x : per_rank) {
    if (!std::isfinite(x)) any_nan = true;
    worst = std::max(worst, x);
  }
  rec.rel_l2 = any_nan ? std::numeric_limits<double>::quiet_NaN() : worst;
  bool ok = !per_rank.empty();
  for (double x : per_rank) ok = ok && verdict_rules::benchmark_accepts(x, uses_fp8_wire(cfg));
  rec.validated = ok;
  rec.timing = "none (tensor dump: no times)";
  const std::string device = meta_get(f0, "device", false);
  if (!device.empty()) rec.device = device;
  const std::string profile = meta_get(f0, "profile", false);
  rec.profile = !profile.empty() ? profile : !device.empty() ? default_profile("gpu", device, 1) : "mi355x";
  if (wrong) rec.wrong_elements = *wrong;
  rec.checked_rows = int64_t(R);
  rec.rel_l2_all_views = all_views;
  rec.rel_l2_all_views_stderr = all_views_stderr;
  const std::string seed = meta_get(f0, "seed", false);
  if (!seed.empty()) rec.seed = uint64_t(meta_int(f0, "seed", seed, 0, std::numeric_limits<int64_t>::max()));
  const std::string inject = meta_get(f0, "inject", false);
  if (!inject.empty()) rec.inject = inject;
  const std::string impl = meta_get(f0, "gemm_impl", false);
  if (!impl.empty()) rec.gemm_impl = impl;
  rec.raw = run_record_to_json(rec);
  rec.raw["verify"] = {{"files", res.files}, {"row_subset", res.row_subset}, {"partials", res.has_partials}};

  JudgeOptions jo = opt.judge;
  jo.judge_timing = false;
  res.verdict = judge(rec, jo);
  res.record = std::move(rec);
  res.seconds_read = t_read;
  res.seconds_reference = t_ref + t_check;
  res.seconds_total = seconds_since(t0);
  return res;
}

// ---- output ------------------------------------------------------------------------------------------------

nlohmann::json verify_results_to_json(const std::vector<VerifyResult>& results) {
  std::vector<Verdict> verdicts;
  for (const auto& r : results) verdicts.push_back(r.verdict);
  nlohmann::json j = to_json(verdicts);
  nlohmann::json v = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json mm = nlohmann::json::array();
    for (const auto& m : r.first_mismatches)
      mm.push_back({{"rank", m.rank}, {"row", m.row}, {"col", m.col}, {"got", hex16(m.got)},
                    {"expected", hex16(m.expected)}, {"got_value", reference::from_bf16(m.got)},
                    {"expected_value", reference::from_bf16(m.expected)}});
    nlohmann::json e = {{"source", r.source},
                        {"files", r.files},
                        {"checked_rows", r.rows.size()},
                        {"row_subset", r.row_subset},
                        {"partials", r.has_partials},
                        {"wire", r.has_wire},
                        {"first_mismatches", mm},
                        {"diagnoses", r.diagnoses},
                        {"seconds", {{"read", r.seconds_read}, {"reference", r.seconds_reference}, {"total", r.seconds_total}}}};
    if (r.has_partials) {
      e["wrong_by_rank"] = r.wrong_by_rank;
      e["wrong_by_slice"] = r.wrong_by_slice;
      nlohmann::json pr = nlohmann::json::array();
      for (double x : r.partial_rel_l2) pr.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
      e["partial_rel_l2"] = pr;
    }
    if (!r.disagreeing_by_rank.empty()) e["disagreeing_by_rank"] = r.disagreeing_by_rank;
    if (r.wire_quantize_mismatches) e["wire_quantize_mismatches"] = *r.wire_quantize_mismatches;
    if (r.wire_gather_mismatches) e["wire_gather_mismatches"] = *r.wire_gather_mismatches;
    if (r.output_to_reference_ratio && std::isfinite(*r.output_to_reference_ratio))
      e["output_to_reference_ratio"] = *r.output_to_reference_ratio;
    v.push_back(e);
  }
  j["verify"] = v;
  return j;
}

std::string verify_text(const VerifyResult& r) {
  std::ostringstream os;
  const RunRecord& rec = r.record;
  char buf[160];
  os << "verify " << r.source << ": " << rec.shape.world << " ranks, M=" << rec.shape.m << " N=" << rec.shape.n
     << " K=" << rec.shape.k << ", " << config_label(rec.config) << "; " << r.rows.size() << " rows checked"
     << (r.row_subset ? " (the rows the dump holds)" : r.rows.size() >= size_t(rec.shape.m) ? " (every row)" : " (sampled)")
     << "; partials " << (r.has_partials ? "yes" : "no (the collective is not checked bit for bit)") << "\n";
  std::snprintf(buf, sizeof buf, "  read %.2f s, reference and checks %.2f s, total %.2f s\n", r.seconds_read,
                r.seconds_reference, r.seconds_total);
  os << buf;
  auto list = [](const std::vector<int64_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
    return s;
  };
  auto dlist = [](const std::vector<double>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + sci(v[i]);
    return s;
  };
  if (r.has_partials) {
    os << "  collective vs the emulation over the dumped partials: " << rec.wrong_elements.value_or(0)
       << " wrong elements; per rank [" << list(r.wrong_by_rank) << "], per slice [" << list(r.wrong_by_slice) << "]\n";
    for (const auto& m : r.first_mismatches)
      os << "    rank " << m.rank << " row " << m.row << " col " << m.col << ": " << hex16(m.got) << " ("
         << sci(reference::from_bf16(m.got)) << "), expected " << hex16(m.expected) << " ("
         << sci(reference::from_bf16(m.expected)) << ")\n";
    os << "  each rank's partial vs its fp32 reference: relL2 [" << dlist(r.partial_rel_l2) << "]\n";
  }
  os << "  relL2 vs the fp32 reference: per rank [" << dlist(rec.per_rank_rel_l2) << "]";
  if (!rec.per_slice_rel_l2.empty()) os << ", per slice [" << dlist(rec.per_slice_rel_l2) << "]";
  os << "\n";
  if (r.wire_quantize_mismatches)
    os << "  fp8 wire: " << *r.wire_quantize_mismatches << " quantize mismatches, " << *r.wire_gather_mismatches
       << " gather mismatches\n";
  for (const auto& d : r.diagnoses) os << "  diagnosis: " << d << "\n";
  return os.str();
}

// ---- writing -------------------------------------------------------------------------------------------------

void write_rank_dump(const std::string& path, const RankDump& d) {
  GEMMAR_CHECK(d.a_codes && d.a_scales && d.b_codes && d.b_scales && d.out);
  const Quant q = d.config.quant;
  const int64_t R = d.rows.empty() ? d.shape.m : int64_t(d.rows.size());
  const int64_t N = d.shape.n, K = d.shape.k;
  std::map<std::string, std::string> meta = d.extra_metadata;
  meta["format"] = kDumpFormat;
  meta["version"] = kDumpVersion;
  meta["rank"] = std::to_string(d.rank);
  meta["world"] = std::to_string(d.shape.world);
  meta["m"] = std::to_string(d.shape.m);
  meta["n"] = std::to_string(N);
  meta["k"] = std::to_string(K);
  meta["mode"] = to_string(d.config.mode);
  meta["quant"] = to_string(q);
  meta["gather_dtype"] = to_string(d.config.gather_dtype);
  meta["gather_transport"] = to_string(d.config.gather_transport);
  meta["fuse_quantize"] = d.config.fuse_quantize ? "1" : "0";
  meta["fp8_format"] = to_string(d.fp8_format);
  if (!meta.count("pull_blocks")) meta["pull_blocks"] = std::to_string(d.config.pull_blocks);
  const std::string code_dtype = d.fp8_format == Fp8Format::E4M3FN ? "F8_E4M3" : "U8";
  std::vector<safetensors::TensorOut> t;
  t.push_back({"a", code_dtype, {R, K}, d.a_codes->data(), d.a_codes->size()});
  t.push_back({"a_scale", "F32", scale_shape(q, Operand::A, R, K), d.a_scales->data(), d.a_scales->size() * 4});
  t.push_back({"b", code_dtype, {N, K}, d.b_codes->data(), d.b_codes->size()});
  t.push_back({"b_scale", "F32", scale_shape(q, Operand::B, N, K), d.b_scales->data(), d.b_scales->size() * 4});
  t.push_back({"out", "BF16", {R, N}, d.out->data(), d.out->size() * 2});
  if (d.partial) t.push_back({"partial", "BF16", {R, N}, d.partial->data(), d.partial->size() * 2});
  if (!d.rows.empty()) t.push_back({"rows", "I64", {R}, d.rows.data(), d.rows.size() * 8});
  safetensors::write_file(path, meta, t);
}

void dump_backend_result(const std::string& dir, const RunRequest& req, const BackendResult& res) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw EnvironmentError("--dump " + dir + ": cannot create the directory: " + ec.message());
  reference::OperandSpec spec;
  spec.shape = req.shape;
  spec.quant = req.config.quant;
  spec.seed = req.seed;
  // The fnuz-read-as-fn fault runs on e4m3fnuz operands (the CPU backend encodes them so): the dump holds them.
  if (req.inject.fnuz_read_as_fn) spec.fp8_format = Fp8Format::E4M3FNUZ;
  bool every_row = int64_t(res.rows.size()) == req.shape.m;
  for (size_t i = 0; every_row && i < res.rows.size(); ++i) every_row = res.rows[i] == int64_t(i);
  for (int r = 0; r < req.shape.world; ++r) {
    const reference::RankOperands ops = reference::make_rank_operands(spec, r, res.rows);
    std::vector<uint16_t> partial;
    if (!res.partials.empty())
      for (float x : res.partials[size_t(r)]) partial.push_back(reference::to_bf16(x));
    RankDump d;
    d.rank = r;
    d.shape = req.shape;
    d.config = req.config;
    d.fp8_format = spec.fp8_format;
    if (!every_row) d.rows = res.rows;
    d.a_codes = &ops.a.codes;
    d.a_scales = &ops.a.scales;
    d.b_codes = &ops.b.codes;
    d.b_scales = &ops.b.scales;
    d.out = &res.outputs[size_t(r)];
    if (!partial.empty()) d.partial = &partial;
    d.extra_metadata = {{"producer", "gemmar run"},
                        {"backend", res.backend},
                        {"seed", std::to_string(req.seed)},
                        {"inject", req.inject.label()},
                        {"pull_blocks", std::to_string(req.inject.pull_blocks.value_or(req.config.pull_blocks))},
                        {"profile", req.profile.empty() ? default_profile(res.backend, res.device, res.ranks_per_device)
                                                        : req.profile}};
    if (!res.device.empty()) d.extra_metadata["device"] = res.device;
    if (!res.gemm_impl.empty()) d.extra_metadata["gemm_impl"] = res.gemm_impl;
    write_rank_dump((fs::path(dir) / ("rank" + std::to_string(r) + ".safetensors")).string(), d);
  }
}

}  // namespace gemmar
