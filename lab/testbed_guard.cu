// The testbed's guard concern (lab/testbed.hpp): the caller guard's kernels (libgemmar_guard.so) on mori's targets.
// Every rank's record and the judge's cells of the product are checked against the CPU reference
// (reference/guard_caller.cpp: the record within the fp32 sums' rounding, the cells equal), each lab variant's bit
// for bit against the product's (one that sums in another order, same_bits false, against the CPU as the product); then
// each is timed beside the product: one rank's sums kernel (and each of its block kinds alone), the judge, and a call
// of every rank in turn (W sums, W judges: the graph the Python cost measure replays, without the exchange); the sums
// and the call also "cold", with L2 overwritten before each launch, as a serving process calls the guard right after
// the op has streamed hundreds of MB through it.
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "kernels/device_common.cuh"
#include "lab/gemm_rig.hpp"
#include "lab/guard/caller_guard_variants.hpp"
#include "lab/json_line.hpp"
#include "lab/testbed.hpp"
#include "lab/testbed_plan.hpp"
#include "reference/guard_caller.hpp"
#include "reference/numerics_inline.hpp"

namespace gemmar::lab {
namespace {

using namespace rig;
namespace nm = gemmar::numerics;
namespace cg = gemmar::caller_guard;

constexpr int kTimed = 30;
constexpr uint64_t kSeed = 0x5eed;

uint64_t mix(uint64_t x) {  // splitmix64: the operands, reproducible
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
float unit(uint64_t i) { return float(mix(i) >> 40) / float(1 << 24); }  // [0, 1)

// One case's operands on the host: A's codes (no NaN code) and scales in the case's layout, one output view (every
// rank holds the same view, as after a correct gather), the weights' checksum and norms.
struct HostOperands {
  std::vector<uint8_t> a, a_scale;  // a_scale: the bytes of the layout (fp32 or e8m0)
  std::vector<uint16_t> out;
  std::vector<float> w, wnorm;  // [nb][k], [2][nb]
};

float a_scale_host(const GuardCase& c, const std::vector<uint8_t>& bytes, int64_t row, int64_t kb) {
  if (c.a_scale_kind == GG_A_SCALE_F32_K_MAJOR) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * (kb * c.m + row), 4);
    return f;
  }
  // mori's packed e8m0 (caller_guard_kernels.cuh a_scale_of)
  const uint8_t e = bytes[size_t(kb * c.m + row / 64 * 64 + row % 16 * 4 + row % 64 / 16)];
  return nm::bits_f32(uint32_t(e) << 23);
}

HostOperands make_operands(const GuardCase& c, int nb) {
  HostOperands h;
  h.a.resize(size_t(c.m * c.k));
  for (size_t i = 0; i < h.a.size(); ++i) {
    uint8_t q = uint8_t(mix(i) >> 13);
    if ((q & 0x7f) == 0x7f) q ^= 1;  // e4m3fn's NaN codes
    h.a[i] = q;
  }
  const int64_t kbs = c.k / c.a_scale_k;
  if (c.a_scale_kind == GG_A_SCALE_F32_K_MAJOR) {
    h.a_scale.resize(size_t(4 * kbs * c.m));
    for (int64_t i = 0; i < kbs * c.m; ++i) {
      const float f = std::ldexp(1.0f + unit(~uint64_t(i)), -8);
      std::memcpy(h.a_scale.data() + 4 * i, &f, 4);
    }
  } else {
    h.a_scale.resize(size_t(kbs * c.m));
    for (size_t i = 0; i < h.a_scale.size(); ++i) h.a_scale[i] = uint8_t(118 + mix(i + 7) % 4);
  }
  h.out.resize(size_t(c.m * c.n));
  for (size_t i = 0; i < h.out.size(); ++i) h.out[i] = nm::f32_to_bf16(8.0f * unit(i + (1ull << 40)) - 4.0f);
  h.w.resize(size_t(int64_t(nb) * c.k));
  for (size_t i = 0; i < h.w.size(); ++i) h.w[i] = 16.0f * unit(i + (3ull << 40)) - 8.0f;
  h.wnorm.resize(size_t(2 * nb));
  for (int b = 0; b < 2 * nb; ++b) h.wnorm[size_t(b)] = b < nb ? 1e-3f : 40.0f;
  return h;
}

// One case on the device: the operands, W records (gathered), the cells.
struct DeviceCase {
  const GuardCase& c;
  cg::Layout l;
  reference::CallerPlan plan;
  uint8_t *a = nullptr, *a_scale = nullptr;
  uint16_t* out = nullptr;
  float *w = nullptr, *records = nullptr;
  cg::Cell* cells = nullptr;
  unsigned long long* call = nullptr;
  std::vector<float> initial;  // every rank's record before its sums: zeros, the weights' norms

  DeviceCase(const GuardCase& gc, const HostOperands& h) : c(gc) {
    reference::CallerConfig cfg;
    cfg.world = c.world;
    cfg.m = c.m;
    cfg.n = c.n;
    cfg.k = c.k;
    cfg.fp8_gather = c.fp8_gather;
    plan = reference::caller_plan(cfg);
    l = plan.layout;
    a = dalloc<uint8_t>(int64_t(h.a.size()));
    a_scale = dalloc<uint8_t>(int64_t(h.a_scale.size()));
    out = dalloc<uint16_t>(int64_t(h.out.size()));
    w = dalloc<float>(int64_t(h.w.size()));
    records = dalloc<float>(c.world * l.floats);
    cells = dalloc<cg::Cell>(c.world * c.world + 1);
    call = dalloc<unsigned long long>(1);
    GPU_CHECK(gpuMemcpy(a, h.a.data(), h.a.size(), gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemcpy(a_scale, h.a_scale.data(), h.a_scale.size(), gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemcpy(out, h.out.data(), h.out.size() * 2, gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemcpy(w, h.w.data(), h.w.size() * 4, gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemset(call, 0, sizeof(unsigned long long)));
    initial.assign(size_t(c.world * l.floats), 0.0f);
    for (int r = 0; r < c.world; ++r)
      std::copy(h.wnorm.begin(), h.wnorm.end(), initial.begin() + r * l.floats + l.wnorm);
    reset();
  }
  ~DeviceCase() {
    for (void* p : {static_cast<void*>(a), static_cast<void*>(a_scale), static_cast<void*>(out), static_cast<void*>(w),
                    static_cast<void*>(records), static_cast<void*>(cells), static_cast<void*>(call)})
      (void)gpuFree(p);
  }
  void reset() {
    GPU_CHECK(gpuMemcpy(records, initial.data(), initial.size() * 4, gpuMemcpyHostToDevice));
    GPU_CHECK(gpuMemset(cells, 0xff, sizeof(cg::Cell) * size_t(c.world * c.world + 1)));
  }
  gg_sums_args sums_args(int rank) const {
    gg_sums_args s{};
    s.world = c.world;
    s.rank = rank;
    s.m = c.m;
    s.n = c.n;
    s.k = c.k;
    s.stride = int32_t(plan.config.stride);
    s.a_scale_kind = c.a_scale_kind;
    s.seed = kSeed;
    s.a = a;
    s.a_scale = a_scale;
    s.a_scale_k = c.a_scale_k;
    s.out = out;
    s.out_ld = c.n;
    s.w = w;
    s.record = records + rank * l.floats;
    s.wire_recipe = c.fp8_gather ? 0 : -1;
    s.call = call;
    return s;
  }
  gg_judge_args judge_args() const {
    gg_judge_args j{};
    j.world = c.world;
    j.stride = int32_t(plan.config.stride);
    j.m = c.m;
    j.n = c.n;
    j.records = records;
    const cg::Consts& k = plan.consts;
    j.consts = gg_consts{k.lambda, k.agg_threshold, k.det_pred, k.k_asq,     k.part2,      k.reduce,
                         k.out2,   k.wire_rel,      k.wire_sub, k.underflow, k.fp8_gather, k.recipe_known};
    j.cells = cells;
    j.call = nullptr;  // the rows stay those of call 0 across the timed calls
    return j;
  }
  // Every rank's sums, then the judge, by `s` (kinds: lab/guard/caller_guard_variants.hpp).
  void run(Subject s, gpuStream_t st, int kinds = kGuardAllKinds, bool judge = true) const {
    for (int r = 0; r < c.world; ++r) GEMMAR_CHECK(guard_sums(s, sums_args(r), kinds, st), "guard_sums: no launch");
    if (judge) GEMMAR_CHECK(guard_judge(s, judge_args(), st), "guard_judge: no launch");
  }
  std::vector<float> read_records() const {
    std::vector<float> v(initial.size());
    GPU_CHECK(gpuMemcpy(v.data(), records, v.size() * 4, gpuMemcpyDeviceToHost));
    return v;
  }
  std::vector<cg::Cell> read_cells() const {
    std::vector<cg::Cell> v(size_t(c.world * c.world));
    GPU_CHECK(gpuMemcpy(v.data(), cells, v.size() * sizeof(cg::Cell), gpuMemcpyDeviceToHost));
    return v;
  }
};

// The CPU's records of call 0 (reference::caller_rank_record) from the same operands.
std::vector<float> cpu_records(const DeviceCase& d, const HostOperands& h) {
  const GuardCase& c = d.c;
  const std::vector<int64_t> rows = reference::caller_rows(d.plan, kSeed, 0);
  std::vector<float> a_deq(size_t(d.l.L * c.k));
  std::vector<uint16_t> out(size_t(d.l.L * c.n));
  for (int64_t i = 0; i < d.l.L; ++i) {
    const int64_t row = rows[size_t(i)];
    for (int64_t k = 0; k < c.k; ++k)
      a_deq[size_t(i * c.k + k)] =
          nm::dequantize_operand(h.a[size_t(row * c.k + k)], a_scale_host(c, h.a_scale, row, k / c.a_scale_k), false);
    std::copy(h.out.begin() + row * c.n, h.out.begin() + (row + 1) * c.n, out.begin() + i * c.n);
  }
  reference::CallerWeights w;
  w.n = c.n;
  w.k = c.k;
  w.nb = d.l.nb;
  w.w = h.w;
  w.c_gemm.assign(h.wnorm.begin(), h.wnorm.begin() + d.l.nb);
  w.c_part.assign(h.wnorm.begin() + d.l.nb, h.wnorm.end());
  std::vector<float> all;
  for (int r = 0; r < c.world; ++r) {
    const std::vector<float> one = reference::caller_rank_record(d.plan, r, 0, a_deq, out, w);
    all.insert(all.end(), one.begin(), one.end());
  }
  return all;
}

// The device's records against the CPU's: each sum within its fp32 rounding (the CPU sums in double), the wire
// scales bit for bit. Returns the worst error over its allowance (<= 1 passes).
double record_error(const DeviceCase& d, const std::vector<float>& dev, const std::vector<float>& cpu) {
  const cg::Layout& l = d.l;
  double worst = 0;
  auto check = [&](int64_t at, double allowance) {
    const double e = std::fabs(double(dev[size_t(at)]) - double(cpu[size_t(at)]));
    worst = std::max(worst, allowance > 0 ? e / allowance : (e > 0 ? INFINITY : 0.0));
  };
  const double g_k = cg::gamma32(double(d.c.k)), g_n = cg::gamma32(double(cg::kBlockCols));
  for (int r = 0; r < d.c.world; ++r) {
    const int64_t o = r * l.floats;
    for (int64_t i = 0; i < l.L * l.nb; ++i) {
      check(o + l.pred + i, 2 * g_k * cpu[size_t(o + l.pabs + i)] + 1e-30);
      check(o + l.pabs + i, 2 * g_k * cpu[size_t(o + l.pabs + i)] + 1e-30);
      check(o + l.osum + i, 2 * g_n * cpu[size_t(o + l.oabs + i)] + 1e-30);
      check(o + l.osq + i, 2 * g_n * cpu[size_t(o + l.osq + i)] + 1e-30);
      check(o + l.oabs + i, 2 * g_n * cpu[size_t(o + l.oabs + i)] + 1e-30);
    }
    for (int64_t i = 0; i < l.L; ++i) check(o + l.asq + i, 2 * g_k * cpu[size_t(o + l.asq + i)] + 1e-30);
    if (d.plan.consts.recipe_known) {
      for (int64_t i = 0; i < l.Ls; ++i) {
        check(o + l.wscale + i, 0.0);
        double row_abs = 0;
        for (int b = 0; b < l.nb; ++b) row_abs += cpu[size_t(o + l.oabs + (r * l.Ls + i) * l.nb + b)];
        for (int b = 0; b < l.nb; ++b) check(o + l.wsum + i * l.nb + b, 4 * g_n * row_abs + 1e-30);
      }
    }
  }
  return worst;
}

bool same_cells(const std::vector<cg::Cell>& x, const std::vector<cg::Cell>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(cg::Cell)) == 0;
}

// A cell's aggregate sum on the device against the CPU's: a sum of non-negative terms, each addition one float
// rounding (at most 2^-24 of the final sum), the CPU's in index order and the device's in another (its threads' sums,
// then their merge: at most one rounding per check more); so the two differ by at most 2^-24 per rounding of either.
bool zsum_agrees(const cg::Cell& a, const cg::Cell& b) {
  if (a.zsum == b.zsum) return true;  // infinities too
  const double scale = std::max(std::fabs(double(a.zsum)), std::fabs(double(b.zsum)));
  return std::fabs(double(a.zsum) - double(b.zsum)) <= 0x1p-24 * 3.0 * double(b.checks + 1) * scale;
}

// The judge's verdict fields of the device's cells against the CPU's judge of the same records (the worst ratio to
// 1e-6: the device may fuse the double multiply-adds of the bound that the host rounds apart; zsum: zsum_agrees).
bool cells_agree(const std::vector<cg::Cell>& dev, const std::vector<cg::Cell>& cpu) {
  if (dev.size() != cpu.size()) return false;
  for (size_t i = 0; i < dev.size(); ++i) {
    const cg::Cell &a = dev[i], &b = cpu[i];
    if (a.checks != b.checks || a.pred_fail != b.pred_fail || a.nonfinite != b.nonfinite ||
        a.worst_idx != b.worst_idx || a.gather != b.gather || a.wire != b.wire || a.bypass != b.bypass ||
        a.gather_first != b.gather_first || a.wire_first != b.wire_first || a.other != b.other ||
        !(std::fabs(double(a.worst_ratio) - double(b.worst_ratio)) <= 1e-6 * std::fabs(double(b.worst_ratio))) ||
        !zsum_agrees(a, b))
      return false;
  }
  return true;
}

struct Times {
  double sums = 0, judge = 0, call_per_rank = 0, sums_cold = 0, call_per_rank_cold = 0;
  std::map<std::string, double> kinds, kinds_cold;
};

// Overwrites L2 on a stream: a memset of twice its size (outside the timed events).
struct L2Flush {
  uint8_t* buf = nullptr;
  size_t bytes = 0;
  L2Flush() {
    gpuDeviceProp prop{};
    GPU_CHECK(gpuGetDeviceProperties(&prop, 0));
    bytes = 2 * size_t(prop.l2CacheSize);
    buf = dalloc<uint8_t>(int64_t(bytes));
  }
  ~L2Flush() { (void)gpuFree(buf); }
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;
  void operator()(gpuStream_t s) const { GPU_CHECK(gpuMemsetAsync(buf, 0, bytes, s)); }
};

// One untimed call of fn, then the median over `iterations` of fn bracketed by events, L2 flushed before each.
template <typename Fn>
double timed_cold_median_us(gpuStream_t s, gpuEvent_t e0, gpuEvent_t e1, const L2Flush& flush, int iterations,
                            Fn&& fn) {
  return timed_median_after_us(
      s, e0, e1, iterations, [&] { flush(s); }, fn, 1);
}

Times time_subject(const DeviceCase& d, Subject s, gpuStream_t st, gpuEvent_t e0, gpuEvent_t e1, const L2Flush& flush) {
  Times t;
  const gg_sums_args rank0 = d.sums_args(0);
  t.sums = timed_median_us(st, e0, e1, kTimed, [&] { guard_sums(s, rank0, kGuardAllKinds, st); });
  t.sums_cold = timed_cold_median_us(st, e0, e1, flush, kTimed, [&] { guard_sums(s, rank0, kGuardAllKinds, st); });
  const std::pair<const char*, int> kinds[] = {{"predict", kGuardPredict}, {"view", kGuardView}, {"wire", kGuardWire}};
  for (const auto& kind : kinds) {
    const int k = kind.second;
    if (k != kGuardWire || d.c.fp8_gather) {
      t.kinds[kind.first] = timed_median_us(st, e0, e1, kTimed, [&] { guard_sums(s, rank0, k, st); });
      t.kinds_cold[kind.first] = timed_cold_median_us(st, e0, e1, flush, kTimed, [&] { guard_sums(s, rank0, k, st); });
    }
  }
  const gg_judge_args j = d.judge_args();
  t.judge = timed_median_us(st, e0, e1, kTimed, [&] { guard_judge(s, j, st); });
  t.call_per_rank = timed_median_us(st, e0, e1, kTimed, [&] { d.run(s, st); }) / d.c.world;
  t.call_per_rank_cold = timed_cold_median_us(st, e0, e1, flush, kTimed, [&] { d.run(s, st); }) / d.c.world;
  return t;
}

void run_case(const GuardCase& c, TestbedTally& tally) {
  GPU_CHECK(gpuSetDevice(0));
  const HostOperands h = make_operands(c, int((c.n + cg::kBlockCols - 1) / cg::kBlockCols));
  DeviceCase d(c, h);
  gpuStream_t st;
  gpuEvent_t e0, e1;
  GPU_CHECK(gpuStreamCreateWithFlags(&st, gpuStreamNonBlocking));
  GPU_CHECK(gpuEventCreate(&e0));
  GPU_CHECK(gpuEventCreate(&e1));
  const L2Flush flush;
  std::vector<float> product_records, cpu;
  std::vector<cg::Cell> product_cells;
  Times product;
  for (const Subject s : subjects_of(Concern::Guard)) {
    const SubjectInfo& info = subject_info(s);
    JsonLine j;
    j.add("concern", "guard").add("subject", info.name).add("case", c.name).add("world", c.world).add("m", c.m);
    j.add("n", c.n).add("k", c.k).add("stride", int(d.plan.config.stride)).add("fp8_gather", c.fp8_gather);
    ++tally.lines;
    d.reset();
    d.run(s, st);
    GPU_CHECK(gpuStreamSynchronize(st));
    const gpuError_t err = gpuGetLastError();
    if (err != gpuSuccess) {
      j.add("ran", false).add("error", gpuGetErrorString(err));
      ++tally.failed;
      j.print("TESTBED_JSON");
      continue;
    }
    ++tally.ran;
    const std::vector<float> records = d.read_records();
    const std::vector<cg::Cell> cells = d.read_cells();
    bool ok = true;
    if (!info.same_bits || s == Subject::GuardProduct) {  // against the CPU reference
      if (cpu.empty()) cpu = cpu_records(d, h);
      const double rec_err = record_error(d, records, cpu);
      const bool judge_ok = cells_agree(cells, reference::caller_judge(d.plan, records));
      j.add("record_error_over_allowance", rec_err).add("cells_equal_cpu_judge", judge_ok);
      ok = rec_err <= 1.0 && judge_ok;
      if (s == Subject::GuardProduct) {
        product_records = records;
        product_cells = cells;
      }
    } else {
      const bool rec_same = records.size() == product_records.size() &&
                            std::memcmp(records.data(), product_records.data(), records.size() * 4) == 0;
      const bool cells_same = same_cells(cells, product_cells);
      j.add("records_same_bits", rec_same).add("cells_same_bits", cells_same);
      ok = rec_same && cells_same;
    }
    j.add("ok", ok);
    if (!ok) {
      ++tally.failed;
      j.print("TESTBED_JSON");
      continue;
    }
    const Times t = time_subject(d, s, st, e0, e1, flush);
    if (s == Subject::GuardProduct) product = t;
    j.add("sums_us", t.sums).add("sums_kinds_us", t.kinds).add("judge_us", t.judge);
    j.add("call_per_rank_us", t.call_per_rank);
    j.add("sums_cold_us", t.sums_cold).add("sums_kinds_cold_us", t.kinds_cold);
    j.add("call_per_rank_cold_us", t.call_per_rank_cold);
    j.add("product_sums_us", product.sums).add("product_judge_us", product.judge);
    j.add("product_call_per_rank_us", product.call_per_rank).add("vs_product", product.call_per_rank / t.call_per_rank);
    j.add("product_call_per_rank_cold_us", product.call_per_rank_cold)
        .add("vs_product_cold", product.call_per_rank_cold / t.call_per_rank_cold);
    j.print("TESTBED_JSON");
  }
  GPU_CHECK(gpuEventDestroy(e0));
  GPU_CHECK(gpuEventDestroy(e1));
  GPU_CHECK(gpuStreamDestroy(st));
}

}  // namespace

void testbed_guard(TestbedTally& tally) {
  for (const GuardCase& c : guard_cases()) run_case(c, tally);
}

}  // namespace gemmar::lab
