// The testbed's gemm concern (lab/testbed.hpp): every gemm subject over gemm_cases(), checked, then timed beside
// cuBLASLt.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "lab/gemm_rig.hpp"
#include "lab/json_line.hpp"
#include "lab/testbed.hpp"
#include "lab/testbed_plan.hpp"
#include "reference/emulation.hpp"
#include "reference/operands.hpp"

namespace gemmar::lab {
namespace {

using namespace rig;

// The bench's check of a GEMM: the bf16 rounding (~1.7e-3 relative L2) when right, order one when a layout is wrong.
constexpr double kMaxRelErr = 4e-3;
constexpr int kTimedPairs = 10;  // ours and the vendor's, alternating, after 3 untimed pairs

double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
    const double d = double(got[i]) - double(ref[i]);
    err += d * d;
    norm += double(ref[i]) * double(ref[i]);
  }
  const double r = std::sqrt(err / std::max(norm, 1e-300));
  return std::isfinite(r) && got.size() == ref.size() ? r : 1e30;
}

float bf16_value(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// One case's operands (ours at the padded M) and the CPU's GEMM of its sampled rows.
struct CaseData {
  GemmCase c;
  int64_t mp = 0;
  reference::OperandSpec spec;
  RankOperands op;
  std::vector<int64_t> rows;
  std::vector<float> cpu;  // [i * n + col]
};

CaseData case_data(const GemmCase& c) {
  CaseData d;
  d.c = c;
  // The op's padded M for the quant (W x BLOCK_M at W = 1: 256 rows for mxfp8), which the operands are generated at,
  // and a whole number of our kernels' tiles: mxfp8's M = 128 cases stopped at GemmBuffers' size check when this was
  // the tile's padding alone.
  d.mp = std::max(padded_rows(c.m), padded_m(Shape{c.m, c.n, c.k, 1}, c.quant));
  d.spec.shape = Shape{d.mp, c.n, c.k, 1};
  d.spec.quant = c.quant;
  d.op = reference::make_rank_operands(d.spec, 0);
  d.rows = reference::sample_rows(Shape{c.m, c.n, c.k, 1}, c.quant, 64, 7);
  reference::PartialsRequest preq;
  preq.operands = d.spec;
  preq.rows = d.rows;
  preq.with_reference = false;
  d.cpu = reference::compute_partials(preq).partials[0];
  return d;
}

// cuBLASLt on the same operands at M (the padded M where it refuses M), or its blockscale GEMM on the same codes
// with unit scales where it has no GEMM for the quant; none where the build has no vendor GEMM.
struct Vendor {
  std::unique_ptr<GemmBuffers> buf;
  std::string what;
  int64_t m = 0;
};

Vendor make_vendor(const CaseData& d, gpuStream_t s) {
  Vendor v;
  if (!kernels::vendor_gemm_available()) {
    v.what = kernels::vendor_gemm_name(d.c.quant);
    return v;
  }
  const bool own = kernels::vendor_gemm_supports(d.c.quant);
  const Quant q = own ? d.c.quant : Quant::Blockscale;
  const RankOperands unit = own ? RankOperands{} : with_unit_scales(d.op, q, d.mp, d.c.n, d.c.k);
  const RankOperands& op = own ? d.op : unit;
  v.what = kernels::vendor_gemm_name(q) +
           (own ? "" : " (on the same codes with unit scales: no vendor GEMM for " + to_string(d.c.quant) + ")");
  for (const int64_t m : {d.c.m, d.mp}) {
    v.buf = std::make_unique<GemmBuffers>(op, d.c.m, d.mp, m, d.c.n, d.c.k, q);
    try {
      v.buf->launch(GemmImpl::Cublaslt, Subject::GemmProduct, s);
      GPU_CHECK(gpuStreamSynchronize(s));
      v.m = m;
      return v;
    } catch (const EnvironmentError&) {  // cuBLASLt refuses an M off the tile: the padded M, as ours
      (void)gpuGetLastError();
      v.buf.reset();
    }
  }
  v.what += ": refused this shape";
  return v;
}

struct Outcome {
  bool ran = false, checked = false;
  std::string why;
};

// Runs subject s once into buf (poisoned first) and checks it; `product` is GemmProduct's whole output (empty
// until it ran).
Outcome check_subject(Subject s, const CaseData& d, const GemmBuffers& buf, gpuStream_t st,
                      std::vector<uint16_t>& product, JsonLine& j) {
  Outcome o;
  GPU_CHECK(gpuMemset(buf.c, 0xff, size_t(buf.ops.m * buf.ops.n) * 2));
  const gpuError_t e = launch_gemm_subject(s, buf.ops, 0, buf.ops.m, buf.dest(), st);
  if (e == gpuErrorInvalidValue) {
    (void)gpuGetLastError();
    o.why = "not on this device (no compute capability 9.x, or a build without the sm_90a kernels)";
    return o;
  }
  GPU_CHECK(e);
  GPU_CHECK(gpuStreamSynchronize(st));
  o.ran = true;
  const std::vector<uint16_t> out = read_all(buf);
  int64_t poison = 0;
  for (const uint16_t h : out) poison += h == 0xffff;
  std::vector<float> sampled;
  for (const int64_t r : d.rows)
    for (int64_t col = 0; col < d.c.n; ++col) sampled.push_back(bf16_value(out[size_t(r * d.c.n + col)]));
  const double err = rel_err(sampled, d.cpu);
  int64_t diff = -1;  // -1: no product output to compare with
  if (s == Subject::GemmProduct) {
    product = out;
    diff = 0;
  } else if (!product.empty()) {
    diff = 0;
    for (size_t i = 0; i < out.size(); ++i) diff += out[i] != product[i];
  }
  const bool same_bits = subject_info(s).same_bits;
  o.checked = err < kMaxRelErr && poison == 0 && (!same_bits || diff == 0);
  if (!o.checked)
    o.why = err >= kMaxRelErr ? "error against the CPU's GEMM" : poison ? "elements left unwritten" : "bits differ";
  j.add("rel_err", err).add("unwritten", poison).add("bits_vs_product", diff).add("same_bits", same_bits);
  return o;
}

void run_case(const GemmCase& c, TestbedTally& tally) {
  GPU_CHECK(gpuSetDevice(0));
  const CaseData d = case_data(c);
  const TimingStream t;
  const GemmBuffers ours(d.op, c.m, d.mp, d.mp, c.n, c.k, c.quant);
  const Vendor vendor = make_vendor(d, t.s);
  std::vector<uint16_t> product;
  for (const Subject s : subjects_of(Concern::Gemm)) {
    const SubjectInfo& info = subject_info(s);
    JsonLine j;
    j.add("concern", "gemm").add("subject", info.name).add("product", info.product).add("quant", to_string(c.quant));
    j.add("m", c.m).add("m_padded", d.mp).add("n", c.n).add("k", c.k);
    ++tally.lines;
    if (!gemm_applies(s, c.quant, d.mp, c.n, c.k)) {
      j.add("applies", false).print("TESTBED_JSON");
      continue;
    }
    j.add("applies", true).add("kernel", gemm_subject_kernel(s, ours.ops, ours.dest()));
    const Outcome o = check_subject(s, d, ours, t.s, product, j);
    j.add("ran", o.ran).add("checked", o.checked);
    if (!o.why.empty()) j.add("why", o.why);
    tally.ran += o.ran;
    tally.failed += o.ran && !o.checked;
    if (o.ran && o.checked) {  // timed only once checked: ours and the vendor's alternating, the same clock for both
      auto run_ours = [&] { GPU_CHECK(launch_gemm_subject(s, ours.ops, 0, ours.ops.m, ours.dest(), t.s)); };
      std::vector<double> us_ours, us_vendor;
      for (int i = 0; i < 3 + kTimedPairs; ++i) {
        const double a = t.once_us(run_ours);
        const double b = vendor.buf ? t.once_us([&] { vendor.buf->launch(GemmImpl::Cublaslt, s, t.s); }) : -1;
        if (i >= 3) {
          us_ours.push_back(a);
          us_vendor.push_back(b);
        }
      }
      const double ours_us = median(us_ours), vendor_us = vendor.buf ? median(us_vendor) : -1;
      j.add("ours_us", ours_us).add("tflops", 2.0 * double(c.m) * double(c.n) * double(c.k) / ours_us * 1e-6);
      j.add("vendor", vendor.what).add("vendor_m", vendor.m).add("vendor_us", vendor_us);
      j.add("ratio", vendor_us > 0 ? vendor_us / ours_us : -1.0);
    }
    j.print("TESTBED_JSON");
  }
}

}  // namespace

void testbed_gemm(TestbedTally& tally, const std::vector<Quant>& quants) {
  for (const GemmCase& c : gemm_cases()) {
    if (!quants.empty() && std::find(quants.begin(), quants.end(), c.quant) == quants.end()) continue;
    // A GPU call that fails in one case is that case's failure, with its reason in the line: the testbed goes on to
    // the next (a sticky device error then fails the rest the same way, each line saying so).
    try {
      run_case(c, tally);
    } catch (const Error& e) {
      JsonLine j;
      j.add("concern", "gemm").add("quant", to_string(c.quant)).add("m", c.m).add("n", c.n).add("k", c.k);
      j.add("ran", false).add("checked", false).add("error", std::string(e.what()));
      j.print("TESTBED_JSON");
      std::fprintf(stderr, "testbed gemm %s %lld x %lld x %lld: %s\n", to_string(c.quant).c_str(), (long long)c.m,
                   (long long)c.n, (long long)c.k, e.what());
      ++tally.lines;
      ++tally.failed;
      (void)gpuGetLastError();
    }
  }
}

}  // namespace gemmar::lab
