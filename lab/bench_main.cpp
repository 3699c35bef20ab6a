// gemmar_gpu_bench: the lab's bench, standalone (no CLI libraries needed on the device). SUBJECT is one of
// lab/variants.hpp's names (`gemmar_gpu_bench variants` lists them); the default is the op's own code.
//   gemmar_gpu_bench ceilings [GiB] [M...]       HBM copy kernel, memcpy D2D, peer copy, launch floor, and the
//                                                vendor GEMM ceiling (cuBLASLt blockscale) at M x 7168 x 2048
//   gemmar_gpu_bench gemm M N K [QUANT [SUBJECT]]  our GEMM and cuBLASLt's, timed in alternation in one run, on the
//                                                same operands, each checked against the CPU fp32 GEMM; QUANT
//                                                blockscale (default) | ptpc (cuBLASLt's outer-vector scaling) |
//                                                mxfp8 (no vendor MX GEMM on Hopper: the ceiling printed is
//                                                blockscale's, ours and cuBLASLt's, at the same shape in the same run)
//                                                M: any (ours runs it padded to 128 rows with zero rows, as the
//                                                op; cuBLASLt at M itself); GEMMAR_BENCH_BURST=N adds
//                                                GEMM_BURST_JSON: N launches back to back of each (sustained)
//   gemmar_gpu_bench gemm-concurrent M N K W [QUANT [SUBJECT]]  W such GEMMs on W streams at once (the one-device
//   backend's
//                                                gemm phase), ours and cuBLASLt's, against W x their solo time
//   gemmar_gpu_bench gemm-nan M N K [QUANT [SUBJECT]]  the stores' NaN canonicalisation (exit 1 when wrong)
//   gemmar_gpu_bench data [ROWS N PULL [SUBJECT]]  quantize / dequantize / pull kernels alone vs the copy ceiling
//   gemmar_gpu_bench copy-overlap [MiB]         where a copy of MiB (64) runs: alone, and issued beside a kernel
//                                                holding every SM; device to device as the one-device puts,
//                                                through the batch API's overlap hint, and to pinned host memory
//   gemmar_gpu_bench selftest                    the fp8 wire's hardware conversions vs numerics_inline.hpp, all
//                                                2^32 fp32 inputs (4 scales) and every code at 65536 scales
//   gemmar_gpu_bench variants                    every subject of the testbed (JSON lines)
//   gemmar_gpu_bench testbed [gemm|widen|pipeline|guard ...] [QUANT ...]  every subject of those concerns (all four
//                                                by default; the gemm cases of the QUANTs named, all by default)
//                                                checked against the CPU reference, then timed (lab/testbed.hpp)
//   gemmar_gpu_bench pipeline SUBJECT M MODE[/WIRE[/TRANSPORT]] [QUANT [guard]]  one config (8 ranks, N = 7168,
//                                                K = 2048) as the op runs it and as SUBJECT, as the testbed does
// A config end to end (every mode, checked and judged) is `gemmar run --backend gpu` / `gemmar validate`.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/config.hpp"
#include "common/errors.hpp"
#include "kernels/gemm_ar.hpp"
#include "lab/bench_api.hpp"
#include "lab/testbed.hpp"
#include "lab/testbed_plan.hpp"
#include "reference/emulation.hpp"
#include "reference/formats.hpp"
#include "reference/operands.hpp"

using namespace gemmar;
using lab::Subject;

namespace {

kernels::OperandFn generator(const reference::OperandSpec& spec) {
  return [spec](int rank, kernels::RankOperands& dst) { dst = reference::make_rank_operands(spec, rank); };
}

// A bench knob from the environment: `fallback` when unset or empty, else an integer in [lo, hi] (a UsageError
// naming the variable otherwise).
int env_count(const char* name, int fallback, long lo, long hi) {
  const char* env = std::getenv(name);
  if (!env || !*env) return fallback;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  if (*end || v < lo || v > hi)
    throw gemmar::UsageError(std::string(name) + "=" + env + ": expected an integer in " + std::to_string(lo) + ".." +
                             std::to_string(hi));
  return int(v);
}

// Timed launches per GEMM measurement: GEMMAR_BENCH_ITERS (default 20). More iterations hold the device at its
// loaded clock and power for longer (20 x 440 us is 9 ms), which is how the op runs in a serving loop.
int bench_iters() { return env_count("GEMMAR_BENCH_ITERS", 20, 1, 100000); }

// Back-to-back launches per sustained burst of each GEMM (kernels::time_gemm_pair): GEMMAR_BENCH_BURST (default 0,
// no bursts). 1000 at 16384 x 7168 x 2048 is about 0.45 s per burst.
int bench_burst() { return env_count("GEMMAR_BENCH_BURST", 0, 0, 100000); }

// One GEMM implementation at one shape: median time and the error of its bf16 partial against the CPU's
// fp32 GEMM on 64 sampled rows (the bf16 rounding, ~1.7e-3, when right; order one when a layout is wrong).
struct GemmResult {
  double us = -1, rel_err = -1;
  double burst_us = -1;  // mean per launch in back-to-back bursts (GEMMAR_BENCH_BURST), -1 when not measured
};
// The error of a bf16 partial's sampled rows against the CPU's fp32 GEMM of the same operands.
double partial_rel_err(const reference::OperandSpec& spec, const std::vector<int64_t>& rows,
                       const std::vector<float>& partial_rows) {
  reference::PartialsRequest preq;
  preq.operands = spec;
  preq.rows = rows;
  preq.with_reference = false;
  const reference::PartialsResult cpu = reference::compute_partials(preq);
  double err = 0, ref = 0;
  for (size_t i = 0; i < partial_rows.size(); ++i) {
    const double d = double(partial_rows[i]) - double(cpu.partials[0][i]);
    err += d * d;
    ref += double(cpu.partials[0][i]) * double(cpu.partials[0][i]);
  }
  const double r = std::sqrt(err / std::max(ref, 1e-300));
  return std::isfinite(r) ? r : 1e30;
}

reference::OperandSpec gemm_spec(int64_t m, int64_t n, int64_t k, Quant quant) {
  reference::OperandSpec spec;
  spec.shape = Shape{lab::gemm_padded_rows(m), n, k, 1};  // the operands at the padded M (ours runs it; time_gemm_only)
  spec.quant = quant;
  return spec;
}

GemmResult bench_gemm(GemmImpl impl, int64_t m, int64_t n, int64_t k, int iters, Quant quant, Subject variant) {
  const reference::OperandSpec spec = gemm_spec(m, n, k, quant);
  const std::vector<int64_t> rows = reference::sample_rows(Shape{m, n, k, 1}, quant, 64, 7);
  const lab::GemmTiming t = lab::time_gemm_only(m, n, k, iters, generator(spec), impl, rows, quant, variant);
  GemmResult r;
  r.us = t.us;
  r.rel_err = partial_rel_err(spec, rows, t.partial_rows);
  return r;
}

// Ours and cuBLASLt's timed in alternation on the same operands (kernels::time_gemm_pair).
std::pair<GemmResult, GemmResult> bench_gemm_pair(int64_t m, int64_t vendor_m, int64_t n, int64_t k, int iters,
                                                  Quant quant, Subject variant) {
  const reference::OperandSpec spec = gemm_spec(m, n, k, quant);
  const std::vector<int64_t> rows = reference::sample_rows(Shape{m, n, k, 1}, quant, 64, 7);
  const lab::GemmPairTiming t =
      lab::time_gemm_pair(m, vendor_m, n, k, iters, generator(spec), rows, quant, variant, bench_burst());
  GemmResult ours, vendor;
  ours.us = t.ours.us;
  ours.burst_us = t.ours_burst_us;
  vendor.burst_us = t.vendor_burst_us;
  ours.rel_err = partial_rel_err(spec, rows, t.ours.partial_rows);
  vendor.us = t.vendor.us;
  vendor.rel_err = partial_rel_err(spec, rows, t.vendor.partial_rows);
  return {ours, vendor};
}

int cmd_ceilings(double gib, const std::vector<int64_t>& ms) {
  const auto c = lab::measure_ceilings(int64_t(gib * double(1ull << 30)), 20);
  std::string vendor;
  for (int64_t m : ms) {
    if (!kernels::vendor_gemm_available()) break;
    const GemmResult g = bench_gemm(GemmImpl::Cublaslt, m, 7168, 2048, 20, Quant::Blockscale, Subject::GemmProduct);
    char buf[256];
    std::snprintf(
        buf, sizeof buf, "%s{\"m\": %lld, \"n\": 7168, \"k\": 2048, \"us\": %.2f, \"tflops\": %.1f, \"rel_err\": %.3g}",
        vendor.empty() ? "" : ", ", (long long)m, g.us, 2.0 * double(m) * 7168 * 2048 / g.us * 1e-6, g.rel_err);
    vendor += buf;
  }
  std::printf(
      "CEILINGS_JSON {\"device\": \"%s\", \"bytes\": %lld, \"l2_bytes\": %.0f, \"hbm_copy_kernel_gbs\": %.1f, "
      "\"memcpy_d2d_gbs\": %.1f, \"peer_copy_gbs\": %.1f, \"launch_floor_us\": %.2f, \"vendor_gemm\": \"%s\", "
      "\"vendor_gemm_ceiling\": [%s]}\n",
      kernels::device_name(0).c_str(), (long long)c.bytes, c.l2_bytes, c.hbm_copy_kernel_gbs, c.memcpy_d2d_gbs,
      c.peer_copy_gbs, c.launch_floor_us, kernels::vendor_gemm_name().c_str(), vendor.c_str());
  return 0;
}

int cmd_gemm(int64_t m, int64_t n, int64_t k, Quant quant, Subject variant) {
  const double flop = 2.0 * double(m) * double(n) * double(k);
  const int iters = bench_iters();
  // Ours and cuBLASLt's in alternation (the same clock and power state for both); ours alone where there is no
  // vendor GEMM for the quant.
  GemmResult ours, lt;
  const bool vendor = kernels::vendor_gemm_supports(quant);
  std::string vendor_error;  // cuBLASLt refusing ptpc's outer-vector scaling is a finding, not a failed run
  int64_t vendor_m = m;      // where cuBLASLt refuses an M off the 128-row tile, it runs the padded M as ours does
  if (!vendor) {
    ours = bench_gemm(GemmImpl::Gemmar, m, n, k, iters, quant, variant);
  } else {
    try {
      std::tie(ours, lt) = bench_gemm_pair(m, m, n, k, iters, quant, variant);
    } catch (const gemmar::EnvironmentError& e) {
      const int64_t mp = lab::gemm_padded_rows(m);
      if (quant == Quant::Blockscale && m == mp) throw;
      vendor_error = e.what();
      std::printf("VENDOR_UNAVAILABLE %s at m = %lld: %s\n", to_string(quant).c_str(), (long long)m,
                  vendor_error.c_str());
      if (m != mp) {
        vendor_m = mp;
        std::tie(ours, lt) = bench_gemm_pair(m, vendor_m, n, k, iters, quant, variant);
      } else {
        ours = bench_gemm(GemmImpl::Gemmar, m, n, k, iters, quant, variant);
      }
    }
  }
  const bool ok = ours.rel_err >= 0 && ours.rel_err < 4e-3 && (lt.us < 0 || lt.rel_err < 4e-3);
  if (quant == Quant::Mxfp8) {
    // No vendor MX GEMM on Hopper: the ceiling is the blockscale GEMM of the same shape (one promotion per 128 of K
    // where mxfp8 needs one per 32), ours and cuBLASLt's, measured here.
    GemmResult bs, bs_lt;
    if (kernels::vendor_gemm_available())
      std::tie(bs, bs_lt) = bench_gemm_pair(m, m, n, k, iters, Quant::Blockscale, Subject::GemmProduct);
    else
      bs = bench_gemm(GemmImpl::Gemmar, m, n, k, iters, Quant::Blockscale, Subject::GemmProduct);
    std::printf(
        "MXFP8_CEILING_JSON {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"mxfp8_us\": %.2f, "
        "\"blockscale_ours_us\": %.2f, \"blockscale_cublaslt_us\": %.2f, \"vs_blockscale_ours\": %.3f, "
        "\"vs_blockscale_cublaslt\": %.3f}\n",
        (long long)m, (long long)n, (long long)k, ours.us, bs.us, bs_lt.us, bs.us / ours.us,
        bs_lt.us > 0 ? bs_lt.us / ours.us : 0.0);
  }
  std::printf(
      "GEMM_JSON {\"quant\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"ours_kernel\": \"%s\", \"ours_us\": "
      "%.2f, "
      "\"ours_tflops\": %.1f, \"ours_rel_err\": %.3g, \"cublaslt_us\": %.2f, \"cublaslt_tflops\": %.1f, "
      "\"cublaslt_rel_err\": %.3g, \"cublaslt\": \"%s\", \"cublaslt_m\": %lld, \"ratio\": %.3f, \"checked\": %s}\n",
      to_string(quant).c_str(), (long long)m, (long long)n, (long long)k,
      lab::gemm_kernel_name(variant, quant, m, n, k).c_str(), ours.us, flop / ours.us * 1e-6, ours.rel_err, lt.us,
      lt.us > 0 ? flop / lt.us * 1e-6 : 0.0, lt.rel_err, kernels::vendor_gemm_name(quant).c_str(), (long long)vendor_m,
      lt.us > 0 ? lt.us / ours.us : 0.0, ok ? "true" : "false");
  if (ours.burst_us > 0 && lt.burst_us > 0)
    std::printf(
        "GEMM_BURST_JSON {\"quant\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"launches\": %d, "
        "\"ours_us\": %.2f, \"cublaslt_us\": %.2f, \"ratio\": %.3f}\n",
        to_string(quant).c_str(), (long long)m, (long long)n, (long long)k, bench_burst(), ours.burst_us, lt.burst_us,
        lt.burst_us / ours.burst_us);
  return ok ? 0 : 1;
}

// W GEMMs at once on W streams of one device, as the one-device backend's gemm phase runs the ranks' GEMMs: ours
// and cuBLASLt's, each rank on its own operands; against W x the solo time of the same implementation.
int cmd_gemm_concurrent(int64_t m, int64_t n, int64_t k, int world, Quant quant, Subject variant) {
  reference::OperandSpec spec;
  spec.shape = Shape{lab::gemm_padded_rows(m), n, k, world};
  spec.quant = quant;
  const kernels::OperandFn gen = generator(spec);
  auto solo = [&](GemmImpl impl) { return lab::time_gemm_concurrent(m, n, k, 1, 20, gen, impl, quant, variant); };
  auto all = [&](GemmImpl impl) { return lab::time_gemm_concurrent(m, n, k, world, 10, gen, impl, quant, variant); };
  const double ours1 = solo(GemmImpl::Gemmar), oursw = all(GemmImpl::Gemmar);
  const bool vendor = kernels::vendor_gemm_supports(quant);
  const double lt1 = vendor ? solo(GemmImpl::Cublaslt) : -1, ltw = vendor ? all(GemmImpl::Cublaslt) : -1;
  std::printf(
      "GEMM_CONCURRENT_JSON {\"quant\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"world\": %d, "
      "\"ours_solo_us\": %.2f, \"ours_concurrent_us\": %.2f, \"ours_vs_w_solo\": %.3f, \"cublaslt_solo_us\": "
      "%.2f, \"cublaslt_concurrent_us\": %.2f, \"cublaslt_vs_w_solo\": %.3f, \"ratio_concurrent\": %.3f}\n",
      to_string(quant).c_str(), (long long)m, (long long)n, (long long)k, world, ours1, oursw, oursw / (world * ours1),
      lt1, ltw, lt1 > 0 ? ltw / (world * lt1) : 0.0, ltw > 0 ? ltw / oursw : 0.0);
  return 0;
}

// Our GEMM's NaN rounding on the device: an e4m3 NaN code in one row of A and one (negative) in one row of B make
// that output row and that output column NaN; the store must write each as the reference's canonical bf16 NaN
// (numerics::f32_to_bf16's), whatever NaN the conversion made, and leave every other element finite. The
// epilogue finds NaNs per thread before it canonicalizes, so a probe that misses one stores a non-canonical NaN.
int cmd_gemm_nan(int64_t m, int64_t n, int64_t k, Quant quant, Subject variant) {
  const reference::OperandSpec spec = gemm_spec(m, n, k, quant);
  const int64_t nan_row = m / 2 + 3, nan_col = n / 3 + 5;
  const kernels::OperandFn gen = [spec, nan_row, nan_col, k](int rank, kernels::RankOperands& dst) {
    dst = reference::make_rank_operands(spec, rank);
    dst.a.codes[size_t(nan_row * k + k / 2 + 1)] = 0x7f;  // e4m3fn's NaN codes: 0x7f and 0xff
    dst.b.codes[size_t(nan_col * k + 7)] = 0xff;
  };
  const std::vector<int64_t> rows = {0, nan_row, m - 1};
  const lab::GemmTiming t = lab::time_gemm_only(m, n, k, 1, gen, GemmImpl::Gemmar, rows, quant, variant);
  const uint32_t canonical_nan = uint32_t(reference::to_bf16(std::nanf(""))) << 16;  // as read_rows widens it
  int64_t wrong = 0, first = -1;
  for (size_t i = 0; i < t.partial_rows.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &t.partial_rows[i], 4);
    const int64_t row = rows[i / size_t(n)], col = int64_t(i % size_t(n));
    const bool expect_nan = row == nan_row || col == nan_col;
    const bool ok = expect_nan ? bits == canonical_nan : std::isfinite(t.partial_rows[i]);
    if (!ok && first < 0) first = int64_t(i);
    wrong += !ok;
  }
  std::printf(
      "GEMM_NAN_JSON {\"quant\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"nan_row\": %lld, "
      "\"nan_col\": %lld, \"checked_elements\": %zu, \"wrong\": %lld, \"first_wrong\": %lld, \"ok\": %s}\n",
      to_string(quant).c_str(), (long long)m, (long long)n, (long long)k, (long long)nan_row, (long long)nan_col,
      t.partial_rows.size(), (long long)wrong, (long long)first, wrong == 0 ? "true" : "false");
  return wrong == 0 ? 0 : 1;
}

int cmd_data(int64_t rows, int64_t n, int pull_blocks, Subject widen) {
  const lab::DataKernelRates r = lab::measure_data_kernels(rows, n, 20, pull_blocks, widen);
  const double ceil = std::max(r.copy_kernel_gbs, r.memcpy_gbs);
  std::printf(
      "DATA_JSON {\"rows\": %lld, \"n\": %lld, \"copy_kernel_gbs\": %.1f, \"memcpy_gbs\": %.1f, "
      "\"quantize_gbs\": %.1f, \"quantize_vs_copy\": %.3f, \"dequantize_gbs\": %.1f, \"dequantize_vs_copy\": %.3f, "
      "\"pull_blocks\": %d, \"pull_gbs\": %.1f, \"pull_vs_copy\": %.3f, \"widen_kernel\": \"%s\", "
      "\"widen_ceiling_gbs\": %.1f, \"pull_ceiling_gbs\": %.1f, \"copy_at_pull_grid_gbs\": %.1f, "
      "\"pull_vs_copy_at_pull_grid\": %.3f, \"load_at_pull_grid_gbs\": %.1f, \"store_at_pull_grid_gbs\": %.1f}\n",
      (long long)rows, (long long)n, r.copy_kernel_gbs, r.memcpy_gbs, r.quantize_gbs, r.quantize_gbs / ceil,
      r.dequantize_gbs, r.dequantize_gbs / ceil, r.pull_blocks, r.pull_gbs, r.pull_gbs / ceil,
      lab::subject_info(widen).name, r.widen_ceiling_gbs, r.pull_ceiling_gbs, r.copy_at_pull_grid_gbs,
      r.copy_at_pull_grid_gbs > 0 ? r.pull_gbs / r.copy_at_pull_grid_gbs : 0.0, r.load_at_pull_grid_gbs,
      r.store_at_pull_grid_gbs);
  return 0;
}

int cmd_copy_overlap(double mib) {
  for (const lab::CopyOverlap& r : lab::measure_copy_overlap(int64_t(mib * double(1 << 20)))) {
    std::printf(
        "COPY_OVERLAP_JSON {\"path\": \"%s\", \"mib\": %.2f, \"alone_us\": %.1f, \"alone_gbs\": %.1f, "
        "\"hold_us\": %.1f, \"end_after_hold_start_us\": %.1f, \"beside_sms\": %s, \"copied\": %s}\n",
        r.path.c_str(), mib, r.alone_us, 2.0 * mib * double(1 << 20) / (r.alone_us * 1e3), r.hold_us,
        r.end_after_hold_start_us, r.beside_sms ? "true" : "false", r.copied ? "true" : "false");
  }
  return 0;
}

int cmd_selftest() {
  uint64_t first = 0;
  const std::vector<float> invs = {1.0f, 448.0f / 3.1f, 448.0f / 0.0123f, 0.37f};
  const uint64_t bad = lab::fp8_conversion_selftest(invs, &first);
  std::printf(
      "SELFTEST_JSON {\"fp8_conversions\": \"%s\", \"inputs\": %llu, \"mismatches\": %llu, \"first\": \"0x%08llx\"}\n",
      bad ? "FAIL" : "ok", (unsigned long long)(invs.size() << 32), (unsigned long long)bad, (unsigned long long)first);
  return bad ? 1 : 0;
}

// The subject named by argument i, of `concern` (`fallback` when absent); a UsageError naming it otherwise.
Subject subject_arg(const std::vector<std::string>& a, size_t i, lab::Concern concern, Subject fallback) {
  if (a.size() <= i) return fallback;
  Subject s;
  GEMMAR_USAGE_CHECK(lab::find_subject(a[i].c_str(), &s) && lab::subject_info(s).concern == concern, "SUBJECT '", a[i],
                     "': not a ", lab::to_string(concern), " subject (gemmar_gpu_bench variants lists them)");
  return s;
}

// One pipeline config run as the op runs it and as a pipeline subject, checked and timed (the testbed's lines).
// CONFIG: MODE[/WIRE[/TRANSPORT]], e.g. fused-sdma/fp8/sdma.
int cmd_pipeline(Subject s, int64_t m, const std::string& config, Quant quant, bool guard) {
  lab::PipelineCase c;
  c.config.quant = quant;
  std::vector<std::string> parts;
  for (size_t at = 0; at <= config.size();) {
    const size_t slash = std::min(config.find('/', at), config.size());
    parts.push_back(config.substr(at, slash - at));
    at = slash + 1;
  }
  c.config.mode = parse_mode(parts[0], "CONFIG");
  if (parts.size() > 1) c.config.gather_dtype = parse_wire(parts[1], "CONFIG");
  if (parts.size() > 2) c.config.gather_transport = parse_transport(parts[2], "CONFIG");
  c.shape = Shape{m, 7168, 2048, 8};
  c.shape.m = padded_m(c.shape, quant);
  c.guard = guard;
  if (s != Subject::PipelineProduct) c.variants = {s};
  lab::TestbedTally tally;
  lab::testbed_pipeline_case(c, tally);
  return tally.failed == 0 ? 0 : 1;
}

int cmd_variants() {
  for (const lab::SubjectInfo& i : lab::subjects())
    std::printf(
        "VARIANT_JSON {\"name\": \"%s\", \"concern\": \"%s\", \"product\": %s, \"same_bits\": %s, \"was\": \"%s\", "
        "\"what\": \"%s\"}\n",
        i.name, lab::to_string(i.concern), i.product ? "true" : "false", i.same_bits ? "true" : "false", i.was, i.what);
  return 0;
}

int run(const std::vector<std::string>& a) {
  auto num = [&](size_t i, int64_t def) { return a.size() > i ? std::atoll(a[i].c_str()) : def; };
  auto quant = [&](size_t i) { return a.size() > i ? parse_quant(a[i], "QUANT") : Quant::Blockscale; };
  if (a[0] == "variants") return cmd_variants();
  if (kernels::device_count() <= 0) {
    std::fprintf(stderr, "gemmar_gpu_bench: no GPU device\n");
    return 3;
  }
  if (a[0] == "ceilings") {
    std::vector<int64_t> ms;
    for (size_t i = 2; i < a.size(); ++i) ms.push_back(std::atoll(a[i].c_str()));
    if (ms.empty()) ms = {4096, 8192, 16384};
    return cmd_ceilings(a.size() > 1 ? std::atof(a[1].c_str()) : 2.0, ms);
  }
  if (a[0] == "selftest") return cmd_selftest();
  if (a[0] == "copy-overlap") return cmd_copy_overlap(a.size() > 1 ? std::atof(a[1].c_str()) : 64.0);
  if (a[0] == "data")
    return cmd_data(num(1, 131072), num(2, 7168), int(num(3, 64)),
                    subject_arg(a, 4, lab::Concern::Widen, Subject::WidenProduct));
  if (a[0] == "gemm-concurrent")
    return cmd_gemm_concurrent(num(1, 16384), num(2, 7168), num(3, 2048), int(num(4, 8)), quant(5),
                               subject_arg(a, 6, lab::Concern::Gemm, Subject::GemmProduct));
  if (a[0] == "gemm-nan")
    return cmd_gemm_nan(num(1, 4096), num(2, 7168), num(3, 2048), quant(4),
                        subject_arg(a, 5, lab::Concern::Gemm, Subject::GemmProduct));
  if (a[0] == "gemm")
    return cmd_gemm(num(1, 16384), num(2, 7168), num(3, 2048), quant(4),
                    subject_arg(a, 5, lab::Concern::Gemm, Subject::GemmProduct));
  if (a[0] == "pipeline")
    return cmd_pipeline(subject_arg(a, 1, lab::Concern::Pipeline, Subject::PipelineProduct), num(2, 4096),
                        a.size() > 3 ? a[3] : "fused-sdma", quant(4), a.size() > 5 && a[5] == "guard");
  if (a[0] == "testbed") {
    std::vector<lab::Concern> concerns;
    std::vector<Quant> quants;  // the gemm cases of these quants only (every quant when none is named)
    for (size_t i = 1; i < a.size(); ++i) {
      if (a[i] == "gemm")
        concerns.push_back(lab::Concern::Gemm);
      else if (a[i] == "widen")
        concerns.push_back(lab::Concern::Widen);
      else if (a[i] == "pipeline")
        concerns.push_back(lab::Concern::Pipeline);
      else if (a[i] == "guard")
        concerns.push_back(lab::Concern::Guard);
      else
        quants.push_back(parse_quant(a[i], "testbed (a concern gemm|widen|pipeline|guard or a QUANT)"));
    }
    if (concerns.empty())
      concerns = {lab::Concern::Gemm, lab::Concern::Widen, lab::Concern::Pipeline, lab::Concern::Guard};
    return lab::run_testbed(concerns, quants) ? 0 : 1;
  }
  std::fprintf(stderr, "gemmar_gpu_bench: unknown command '%s'\n", a[0].c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> a(argv + 1, argv + argc);
    if (a.empty()) {
      std::fprintf(
          stderr,
          "usage: gemmar_gpu_bench ceilings [GiB [M...]] | gemm M N K [QUANT [SUBJECT]] | gemm-concurrent M N K "
          "W [QUANT [SUBJECT]] | gemm-nan M N K [QUANT [SUBJECT]] | data [ROWS N PULL [SUBJECT]] | "
          "copy-overlap [MiB] | selftest | variants | testbed [gemm|widen|pipeline|guard ...] [QUANT ...]\n");
      return 2;
    }
    return run(a);
  } catch (const gemmar::Error& e) {
    std::fprintf(stderr, "gemmar_gpu_bench: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemmar_gpu_bench: %s\n", e.what());
    return 3;
  }
}
