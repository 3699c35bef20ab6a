#include "validate/harness/verify.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include "common/errors.hpp"
#include "reference/emulation.hpp"
#include "reference/formats.hpp"
#include "reference/gemm.hpp"
#include "reference/numerics_inline.hpp"
#include "reference/operands.hpp"
#include "reference/quant.hpp"
#include "validate/harness/verify_files.hpp"

namespace gemmar {

namespace fs = std::filesystem;
using dump::DumpRun;
using dump::RankFile;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string sci(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// What every stage needs to know about the run.
struct Ctx {
  const DumpRun& run;
  const RankFile& f0;
  Shape shape;
  Config cfg;  // effective_config's
  int W;
  int64_t n, S;
  bool collective, fp8_wire;
};

Ctx context(const DumpRun& run) {
  const RankFile& f0 = run.rank(0);
  const Shape shape{f0.m, f0.n, f0.k, f0.world};
  const Config cfg = effective_config(f0.config);
  const bool collective = has_collective(cfg.mode);
  return Ctx{run, f0, shape, cfg, f0.world, f0.n, slice_rows(shape, cfg), collective, collective && uses_fp8_wire(cfg)};
}

// ---- numerics on the sampled rows: the fp32 reference from the dumped operands ---------------------------------

struct Sampled {
  output_check::ViewRelL2 rel;
  int64_t other_format_nan_codes = 0;  // operand codes that are NaN in the other fp8 reading
  double ratio_residual = 1.0;
};

// The output's scale against the reference (least squares over every view's finite elements), and how well the
// scaled reference explains the output: a format mix-up is a clean multiple (residual near the floor); a slice
// that never arrived also has a ratio below 1, but a large residual. Summed block by block: sum(o x), sum(x x),
// sum(o o), the residual sum(o - k x)^2 expanded from them.
struct RatioSums {
  double ox = 0, xx = 0, oo = 0;
  void add(const uint16_t* out, const float* ref, size_t count) {
    for (size_t i = 0; i < count; ++i) {
      if ((out[i] & 0x7f80) == 0x7f80) continue;
      const double o = double(reference::from_bf16(out[i])), x = double(ref[i]);
      ox += o * x, xx += x * x, oo += o * o;
    }
  }
  void finish(VerifyResult& res, Sampled& s) const {
    if (!(xx > 0)) return;
    const double k = ox / xx;
    res.output_to_reference_ratio = k;
    const double e2 = std::max(0.0, oo - 2 * k * ox + k * k * xx);
    s.ratio_residual = std::sqrt(e2 / (k * k * xx));
  }
};

// Rows of the relL2 per block: the block's fp32 reference, partials and views are all that is held (~30 MB at
// N = 7168), B once per rank; the mapped pages of a block's rows leave the resident set once it is summed.
constexpr size_t kRelL2BlockRows = 512;

void release_rows(const Ctx& c, const std::vector<int64_t>& file_rows, size_t b0, size_t b1) {
  const uint64_t r0 = uint64_t(file_rows[b0]), r1 = uint64_t(file_rows[b1 - 1]) + 1;
  for (int r = 0; r < c.W; ++r) {
    const RankFile& f = c.run.rank(r);
    for (const char* t : {"out", "partial"})
      if (f.file.has(t)) f.file.release(f.file.tensor(t), r0 * uint64_t(c.n) * 2, r1 * uint64_t(c.n) * 2);
    f.file.release(f.file.tensor("a"), r0 * uint64_t(c.shape.k), r1 * uint64_t(c.shape.k));
  }
}

// The fp32 reference from the dumped operands over the sampled rows (all of them with --check-rows 0), summed
// block by block over the rows: each view's per-row errors (the relL2 is combined from them, bit for bit what
// one pass over all rows gives), each rank's partial against its own fp32 product, the output ratio.
Sampled sampled_numerics(const Ctx& c, const std::vector<int64_t>& file_rows, VerifyResult& res) {
  Sampled s;
  const size_t R = file_rows.size(), n = size_t(c.n);
  std::vector<reference::RankOperands> ops(size_t(c.W));
  for (int r = 0; r < c.W; ++r) {
    const auto t = Clock::now();
    const RankFile& f = c.run.rank(r);
    ops[size_t(r)] = dump::read_operands(f, {}, c.shape);
    for (uint8_t x : ops[size_t(r)].b.codes)
      s.other_format_nan_codes += f.fp8 == Fp8Format::E4M3FNUZ ? (x & 0x7f) == 0x7f : x == 0x80;
    res.seconds_read += seconds_since(t);
  }
  std::vector<reference::RowErrors> views(size_t(c.W));
  std::vector<reference::RelL2Sums> partial_sums(size_t(c.W)), rank_sums(size_t(c.W));
  RatioSums ratio;
  std::vector<int64_t> block;
  for (size_t b0 = 0; b0 < R; b0 += kRelL2BlockRows) {
    const size_t b1 = std::min(R, b0 + kRelL2BlockRows);
    block.assign(file_rows.begin() + std::ptrdiff_t(b0), file_rows.begin() + std::ptrdiff_t(b1));
    std::vector<float> ref(block.size() * n, 0.0f);
    reference::Bf16Outputs outputs(size_t(c.W));
    for (int r = 0; r < c.W; ++r) {
      const RankFile& f = c.run.rank(r);
      reference::RankOperands& op = ops[size_t(r)];
      auto t = Clock::now();
      dump::read_a_rows(f, block, c.shape, op);
      outputs[size_t(r)] = dump::read_bf16_rows(f, "out", block);
      for (uint8_t x : op.a.codes)
        s.other_format_nan_codes += f.fp8 == Fp8Format::E4M3FNUZ ? (x & 0x7f) == 0x7f : x == 0x80;
      res.seconds_read += seconds_since(t);
      t = Clock::now();
      const std::vector<float> p = reference::reference_partial(op, c.cfg.quant, f.fp8);
      for (size_t i = 0; i < ref.size(); ++i) ref[i] += p[i];
      if (res.has_partials) {
        const std::vector<uint16_t> part = dump::read_bf16_rows(f, "partial", block);
        partial_sums[size_t(r)].add(part.data(), p.data(), p.size());
      }
      if (!c.collective) {
        rank_sums[size_t(r)].add(outputs[size_t(r)].data(), p.data(), p.size());
        ratio.add(outputs[size_t(r)].data(), p.data(), p.size());
      }
      res.seconds_reference += seconds_since(t);
    }
    const auto t = Clock::now();
    if (c.collective)
      for (int r = 0; r < c.W; ++r) {
        const reference::RowErrors e = reference::row_errors(outputs[size_t(r)], ref, c.n);
        auto& v = views[size_t(r)];
        v.err2.insert(v.err2.end(), e.err2.begin(), e.err2.end());
        v.ref2.insert(v.ref2.end(), e.ref2.begin(), e.ref2.end());
        ratio.add(outputs[size_t(r)].data(), ref.data(), ref.size());
      }
    res.seconds_reference += seconds_since(t);
    release_rows(c, file_rows, b0, b1);
  }
  if (res.has_partials)
    for (const auto& ps : partial_sums) res.partial_rel_l2.push_back(ps.value());
  std::vector<double> gemm_only;
  if (!c.collective)
    for (const auto& rs : rank_sums) gemm_only.push_back(rs.value());
  s.rel = output_check::rel_l2_of_row_errors(c.shape, c.cfg, res.rows, views, gemm_only);
  ratio.finish(res, s);
  return s;
}

// ---- every element, streamed in row chunks --------------------------------------------------------------------

// Rows per chunk: the mapped pages of a chunk (out and partial, every rank) are dropped once it is checked, so the
// resident set stays at ~8 MB a rank.
constexpr int64_t kChunkRows = 256;

const uint16_t* bf16_rows(const RankFile& f, const char* tensor, int64_t first_row, int64_t n) {
  return reinterpret_cast<const uint16_t*>(f.file.data(f.file.tensor(tensor))) + first_row * n;
}

output_check::ElementChecks stream_elements(const Ctx& c, const VerifyOptions& opt, VerifyResult& res) {
  output_check::ElementChecks checks(c.shape, c.cfg, c.f0.wire_format, opt.mismatches_listed);
  const int64_t total = res.row_subset ? int64_t(c.f0.rows.size()) : c.shape.m;
  res.element_rows = total;
  std::vector<int64_t> rows;
  for (int64_t i0 = 0; i0 < total; i0 += kChunkRows) {
    const int64_t i1 = std::min(total, i0 + kChunkRows);
    rows.clear();
    for (int64_t i = i0; i < i1; ++i) rows.push_back(res.row_subset ? c.f0.rows[size_t(i)] : i);
    output_check::Chunk chunk;
    chunk.rows = &rows;
    const int64_t per_row = c.n / numerics::kScatterScaleCols;
    for (int r = 0; r < c.W; ++r) {
      const RankFile& f = c.run.rank(r);
      chunk.views.push_back(bf16_rows(f, "out", i0, c.n));
      if (res.has_partials) chunk.partials.push_back(bf16_rows(f, "partial", i0, c.n));
      if (res.has_scatter) {
        chunk.scatter_codes.push_back(f.file.data(f.file.tensor("scatter")) + i0 * c.n);
        chunk.scatter_scales.push_back(reinterpret_cast<const float*>(f.file.data(f.file.tensor("scatter_scale"))) +
                                       i0 * per_row);
      }
    }
    checks.add(chunk);
    // The chunk's pages leave this process's resident set (they stay in the page cache).
    for (int r = 0; r < c.W; ++r) {
      const RankFile& f = c.run.rank(r);
      for (const char* t : {"out", "partial"})
        if (f.file.has(t)) f.file.release(f.file.tensor(t), uint64_t(i0 * c.n * 2), uint64_t(i1 * c.n * 2));
      if (res.has_scatter) {
        f.file.release(f.file.tensor("scatter"), uint64_t(i0 * c.n), uint64_t(i1 * c.n));
        f.file.release(f.file.tensor("scatter_scale"), uint64_t(i0 * per_row * 4), uint64_t(i1 * per_row * 4));
      }
    }
  }
  return checks;
}

// ---- the fp8 wire's tensors, when dumped: the owner's codes and scales against the recipes ----------------------

// One owned row's dumped codes and scale: a recipe reproduces them exactly, or they are within mori's tolerance
// of its reference (codes adjacent at a rounding midpoint of x / (amax / max), scale within 1e-6 relative).
bool wire_codes_explained(const uint16_t* reduced, int64_t n, const uint8_t* codes, float scale, Fp8Format fmt,
                          std::vector<uint8_t>& buf) {
  for (reference::WireRecipe w : reference::kWireRecipes) {
    if (w == reference::WireRecipe::AccAmax) continue;  // needs the accumulator: judged through the views
    const float s = reference::wire_quantize_row(reduced, n, buf.data(), fmt, w);
    if (std::memcmp(&s, &scale, 4) == 0 && std::memcmp(buf.data(), codes, size_t(n)) == 0) return true;
  }
  const bool fnuz = fmt == Fp8Format::E4M3FNUZ;
  const float s_ref = reference::wire_quantize_row(reduced, n, buf.data(), fmt, reference::WireRecipe::DivCodes);
  if (!(std::fabs(double(scale) - double(s_ref)) <= reference::kWireScaleRelTol * double(s_ref))) return false;
  for (int64_t i = 0; i < n; ++i) {
    if (codes[i] == buf[size_t(i)]) continue;
    const float scaled = numerics::div_rn(numerics::bf16_to_f32(reduced[i]), s_ref);
    const float mid = 0.5f * (numerics::e4m3_to_f32(codes[i], fnuz) + numerics::e4m3_to_f32(buf[size_t(i)], fnuz));
    const int step = std::abs(int(codes[i]) - int(buf[size_t(i)]));
    if (step != 1 || !(std::fabs(scaled - mid) <=
                       reference::kWireMidpointRelTol * std::fabs(scaled) + reference::kWireMidpointAbsTol))
      return false;
  }
  return true;
}

void check_wire_tensors(const Ctx& c, VerifyResult& res) {
  int64_t qbad = 0, gbad = 0;
  std::vector<uint8_t> buf(size_t(c.n));
  std::vector<uint16_t> deq(size_t(c.n));
  for (int o = 0; o < c.W; ++o) {
    const RankFile& fo = c.run.rank(o);
    const uint8_t* wc = fo.file.data(fo.file.tensor("wire"));
    const float* ws = reinterpret_cast<const float*>(fo.file.data(fo.file.tensor("wire_scale")));
    for (int64_t local = 0; local < c.S && int64_t(o) * c.S + local < c.shape.m; ++local) {
      const int64_t row = int64_t(o) * c.S + local;
      const uint16_t* reduced = reinterpret_cast<const uint16_t*>(fo.file.data(fo.file.tensor("out"))) + row * c.n;
      qbad += !wire_codes_explained(reduced, c.n, wc + local * c.n, ws[local], c.f0.wire_format, buf);
      reference::wire_dequantize_row(wc + local * c.n, ws[local], c.n, deq.data(), c.f0.wire_format);
      for (int r = 0; r < c.W; ++r) {
        if (r == o) continue;
        const RankFile& f = c.run.rank(r);
        const uint16_t* view = reinterpret_cast<const uint16_t*>(f.file.data(f.file.tensor("out"))) + row * c.n;
        for (int64_t col = 0; col < c.n; ++col) gbad += deq[size_t(col)] != view[col];
      }
    }
  }
  res.wire_quantize_mismatches = qbad;
  res.wire_gather_mismatches = gbad;
}

// ---- diagnoses: what the numbers say, in words, beside the judge's findings -------------------------------------

void nan_diagnosis(const Ctx& c, const Sampled& s, VerifyResult& res) {
  if (res.nonfinite_elements == 0) return;
  std::string d = std::to_string(res.nonfinite_elements) + " output elements are NaN or inf";
  // The format hints only where the dump does not state the codes' format by their dtype: F8_E4M3 codes are
  // e4m3fn by definition (0x80 is -0 there), U8 codes are what the metadata says.
  const bool stated_fn = c.f0.file.tensor("a").dtype == "F8_E4M3";
  if (c.f0.fp8 == Fp8Format::E4M3FNUZ && s.other_format_nan_codes > 0)
    d += ", and the e4m3fnuz operands hold " + std::to_string(s.other_format_nan_codes) +
         " codes 0x7f/0xff (+-240 in e4m3fnuz, NaN in e4m3fn): the kernel read e4m3fnuz operands as e4m3fn "
         "(the fp8 format mix-up)";
  else if (c.f0.fp8 == Fp8Format::E4M3FN && !stated_fn && s.other_format_nan_codes > 0)
    d += ", and the operands (U8 codes, metadata e4m3fn) hold " + std::to_string(s.other_format_nan_codes) +
         " codes 0x80 (-0 in e4m3fn, NaN in e4m3fnuz): check the kernel decodes e4m3fn, not e4m3fnuz";
  res.diagnoses.push_back(d + ".");
}

std::string rank_list(const std::vector<int64_t>& by_rank, const char* what) {
  std::string list;
  for (size_t r = 0; r < by_rank.size(); ++r)
    if (by_rank[r])
      list +=
          (list.empty() ? "" : ", ") + std::string(what) + " " + std::to_string(r) + ": " + std::to_string(by_rank[r]);
  return list;
}

void add_diagnoses(const Ctx& c, const Sampled& s, VerifyResult& res) {
  nan_diagnosis(c, s, res);
  auto near = [](double x, double target) { return std::fabs(x / target - 1.0) < 0.1; };
  if (res.output_to_reference_ratio && s.ratio_residual < 0.05) {
    const double k = *res.output_to_reference_ratio;
    std::string which;
    if (near(k, 4.0))
      which = "both operands decoded 2x too large: e4m3fnuz codes read as e4m3fn (the fp8 format mix-up)";
    else if (near(k, 0.25))
      which = "both operands decoded 2x too small: e4m3fn codes read as e4m3fnuz (the fp8 format mix-up)";
    else if (near(k, 2.0) || near(k, 0.5))
      which = "one operand decoded in the other fp8 format (e4m3fn vs e4m3fnuz) or one scale off by 2x";
    if (!which.empty())
      res.diagnoses.push_back("The output is " + sci(k) + "x the reference computed from the dumped operands in " +
                              to_string(c.f0.fp8) + ": " + which + ".");
  }
  for (size_t r = 0; r < res.partial_rel_l2.size(); ++r)
    if (!(res.partial_rel_l2[r] < 1e-2))
      res.diagnoses.push_back("Rank " + std::to_string(r) + "'s own partial has relL2 " + sci(res.partial_rel_l2[r]) +
                              " against the fp32 product of its dumped operands (bf16 rounding alone gives ~1.7e-3): "
                              "its GEMM, operands or scales are wrong before any collective.");
  if (const std::string list = rank_list(res.disagreeing_by_slice, "slice"); !list.empty())
    res.diagnoses.push_back("The ranks' views differ where the collective makes them equal (" +
                            std::string(c.fp8_wire ? "every view but the owner's, on the fp8 wire" : "every view") +
                            "); per rank: " + rank_list(res.disagreeing_by_rank, "rank") + "; per " + list +
                            ": ranks read different data (a missing release, a stale or unwritten view).");
  if (res.wire_quantize_mismatches && *res.wire_quantize_mismatches)
    res.diagnoses.push_back(std::to_string(*res.wire_quantize_mismatches) +
                            " owned rows' wire codes/scales match no quantization recipe of the owner's reduced row, "
                            "nor mori's tolerance: the quantize kernel is wrong (amax, scale or rounding).");
  if (res.wire_gather_mismatches && *res.wire_gather_mismatches)
    res.diagnoses.push_back(std::to_string(*res.wire_gather_mismatches) +
                            " peer output elements differ from the dequantized wire codes: the gather or the "
                            "dequantize of the fp8 wire is wrong (codes that never landed, a stale read).");
  if (res.scatter_wrong_codes)
    res.diagnoses.push_back(std::to_string(res.scatter_wrong_codes) +
                            " of the fp8 scatter's dumped codes or scales match no recipe of their rank's partial nor "
                            "mori's tolerance (" +
                            rank_list(res.scatter_wrong_by_rank, "rank") +
                            "): the scatter's quantizer is wrong (amax, scale or rounding) before any put.");
  int64_t wrong = 0;
  for (int64_t x : res.wrong_by_rank) wrong += x;
  if (wrong) {
    std::string slices;
    for (int sl = 0; sl < c.W; ++sl)
      if (res.wrong_by_slice[size_t(sl)]) slices += (slices.empty() ? "" : ",") + std::to_string(sl);
    res.diagnoses.push_back("Wrong elements lie in the slices owned by rank(s) " + slices + ".");
  }
}

// ---- the record, as run_and_check builds one, for the same judge ------------------------------------------------

RunRecord make_record(const Ctx& c, const VerifyResult& res, const Sampled& s,
                      const output_check::ElementChecks& checks) {
  RunRecord rec;
  rec.source = res.source;
  rec.shape = c.shape;
  rec.config = c.f0.config;
  rec.backend = "tensors";
  if (c.f0.pull_blocks) rec.pull_blocks = c.f0.pull_blocks;
  output_check::record_numerics(rec, s.rel, c.cfg, checks.nonfinite);
  checks.record(rec);
  if (rec.wrong_elements) rec.wrong_elements_basis = res.has_partials ? "partials" : "wire";
  rec.operand_dtype = c.f0.file.tensor("a").dtype;
  rec.timing = "none (tensor dump: no times)";
  const std::string device = dump::meta_get(c.f0, "device", false);
  if (!device.empty()) rec.device = device;
  const std::string profile = dump::meta_get(c.f0, "profile", false);
  rec.profile = !profile.empty() ? profile : default_profile("gpu", device, 1);
  rec.checked_rows = int64_t(res.rows.size());
  const std::string seed = dump::meta_get(c.f0, "seed", false);
  if (!seed.empty()) rec.seed = uint64_t(dump::meta_int(c.f0, "seed", seed, 0, std::numeric_limits<int64_t>::max()));
  const std::string inject = dump::meta_get(c.f0, "inject", false);
  if (!inject.empty()) rec.inject = inject;
  const std::string impl = dump::meta_get(c.f0, "gemm_impl", false);
  if (!impl.empty()) rec.gemm_impl = impl;
  rec.raw = run_record_to_json(rec);
  rec.raw["verify"] = {{"files", res.files}, {"row_subset", res.row_subset}, {"partials", res.has_partials}};
  return rec;
}

// The rows of the relL2: a row-subset dump's own rows (as file rows), else a stratified sample.
std::vector<int64_t> rell2_rows(const Ctx& c, const VerifyOptions& opt, VerifyResult& res) {
  std::vector<int64_t> file_rows;
  if (res.row_subset) {
    res.rows = c.f0.rows;
    for (size_t i = 0; i < res.rows.size(); ++i) file_rows.push_back(int64_t(i));
  } else {
    res.rows = output_check::rows_to_check(c.shape, c.cfg, opt.check_rows, opt.seed);
    file_rows = res.rows;
  }
  return file_rows;
}

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

// ---- verify one run: read -> reference -> element checks -> diagnoses -> record -> judge ---------------------------

VerifyResult verify_dump(const std::vector<std::string>& paths, const VerifyOptions& opt) {
  const auto t0 = Clock::now();
  const DumpRun run = dump::open_run(paths);
  VerifyResult res;
  const fs::path p0(paths.front());
  res.source = paths.size() > 1 && p0.has_parent_path() ? p0.parent_path().string() : p0.string();
  for (const RankFile* f : run.by_rank) res.files.push_back(f->file.path());
  const Ctx c = context(run);
  res.has_partials = c.f0.partial;
  res.has_wire = c.f0.wire;
  res.has_scatter = c.f0.scatter;
  res.row_subset = !c.f0.rows.empty();

  const Sampled s = sampled_numerics(c, rell2_rows(c, opt, res), res);
  auto t = Clock::now();
  const output_check::ElementChecks checks = stream_elements(c, opt, res);
  if (res.has_wire && c.fp8_wire) check_wire_tensors(c, res);
  res.seconds_elements = seconds_since(t);
  if (checks.compared) {
    res.wrong_by_rank = checks.wrong_by_rank;
    res.wrong_by_slice = checks.wrong_by_slice;
    res.first_mismatches = checks.first_mismatches;
  }
  if (c.collective && c.W > 1) {
    res.disagreeing_by_rank = checks.disagreeing_by_rank;
    res.disagreeing_by_slice = checks.disagreeing_by_slice;
    res.first_disagreements = checks.first_disagreements;
  }
  res.nonfinite_elements = checks.nonfinite;
  res.wire_recipe = checks.wire_recipe();
  res.scatter_recipe = checks.scatter_recipe();
  res.scatter_wrong_codes = checks.scatter_wrong_codes;
  if (c.cfg.scatter_dtype == WireDtype::Fp8) res.scatter_wrong_by_rank = checks.scatter_wrong_by_rank;
  add_diagnoses(c, s, res);

  res.record = make_record(c, res, s, checks);
  JudgeOptions jo = opt.judge;
  jo.judge_timing = false;
  res.verdict = judge(res.record, jo);
  res.seconds_total = seconds_since(t0);
  return res;
}

}  // namespace gemmar
