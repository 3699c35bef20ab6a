// The testbed's pipeline concern (lab/testbed.hpp): each pipeline case as the op runs it and as each of its
// variants, on one device, checked, then timed in alternation with the op.
#include <cmath>

#include "kernels/pipeline/hooks.hpp"
#include "lab/gemm_rig.hpp"
#include "lab/json_line.hpp"
#include "lab/testbed.hpp"
#include "lab/testbed_plan.hpp"
#include "reference/emulation.hpp"
#include "reference/operands.hpp"

namespace gemmar::lab {
namespace {

constexpr double kMaxRelErr = 4e-3;  // the partials' sampled rows against the CPU's GEMM (lab/testbed_gemm.cu)
constexpr int kRounds = 2;           // the op and each variant, alternating, this many runs each

struct CaseData {
  PipelineCase c;
  reference::OperandSpec spec;
  std::vector<kernels::RankOperands> ops;  // every rank's, generated once
  std::vector<int64_t> rows;
  reference::PartialsResult cpu;
};

CaseData case_data(const PipelineCase& c) {
  CaseData d;
  d.c = c;
  d.spec.shape = c.shape;
  d.spec.quant = c.config.quant;
  // The rows of the case's row plan (relaxed rows: M / W an owner, M not padded to W * BLOCK_M), the sampled rows
  // drawn from its slices.
  std::vector<int64_t> all(static_cast<size_t>(padded_m(c.shape, c.config)));
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  for (int r = 0; r < c.shape.world; ++r) d.ops.push_back(reference::make_rank_operands(d.spec, r, all));
  d.rows = reference::sample_rows(c.shape, c.config, 64, 7);
  reference::PartialsRequest preq;
  preq.operands = d.spec;
  preq.rows = d.rows;
  preq.with_reference = false;
  d.cpu = reference::compute_partials(preq);
  return d;
}

kernels::DeviceRun device_run(const CaseData& d) {
  kernels::DeviceRun run;
  run.shape = d.c.shape;
  run.config = d.c.config;
  run.iterations = 7;
  run.check_every = 1;
  run.rows = d.rows;
  run.guard = d.c.guard;
  return run;
}

// What one run's checks found: every output element against the collective recomputed on the device, the poison
// left, each rank's partial rows against the CPU's GEMM, and the sampled output rows against the CPU emulation of
// the collective (reference/emulation.hpp emulate_collective) on the run's own partials, bit for bit (as `gemmar run`
// checks a GPU run: the row plan, relaxed rows' owners, the fp8 wires).
struct Checks {
  int64_t wrong = 0, nonfinite = 0, unwritten = 0, emulation_diff = 0;
  double rel_err = 0;
  bool ok() const {
    return wrong == 0 && nonfinite == 0 && unwritten == 0 && emulation_diff == 0 && rel_err < kMaxRelErr;
  }
};

// Elements of the sampled output rows that differ from the emulation's collective on the run's partials (-1: the
// run returned no rows to compare).
int64_t emulation_diff(const CaseData& d, const kernels::RunOutput& o) {
  if (o.outputs.size() != size_t(d.c.shape.world) || o.partials.size() != o.outputs.size()) return -1;
  reference::CollectiveRequest cr;
  cr.shape = d.c.shape;
  cr.config = effective_config(d.c.config);
  cr.rows = d.rows;
  const reference::Bf16Outputs want = reference::emulate_collective(cr, o.partials);
  int64_t diff = 0;
  for (size_t r = 0; r < want.size(); ++r) {
    if (want[r].size() != o.outputs[r].size()) return -1;
    for (size_t i = 0; i < want[r].size(); ++i) diff += want[r][i] != o.outputs[r][i];
  }
  return diff;
}

Checks check(const CaseData& d, const kernels::RunOutput& o) {
  Checks c;
  for (const FullCompare& fc : o.full_compares) {
    for (const int64_t w : fc.wrong) c.wrong += w;
    for (const int64_t x : fc.nonfinite) c.nonfinite += x;
  }
  if (o.full_compares.empty()) c.wrong = -1;  // nothing compared: a failed check, never a silent pass
  c.unwritten = o.unwritten_outputs;
  c.emulation_diff = emulation_diff(d, o);
  for (size_t r = 0; r < o.partials.size() && r < d.cpu.partials.size(); ++r) {
    double err = 0, norm = 0;
    for (size_t i = 0; i < o.partials[r].size(); ++i) {
      const double x = double(o.partials[r][i]) - double(d.cpu.partials[r][i]);
      err += x * x;
      norm += double(d.cpu.partials[r][i]) * double(d.cpu.partials[r][i]);
    }
    const double e = std::sqrt(err / std::max(norm, 1e-300));
    c.rel_err = std::max(c.rel_err, std::isfinite(e) ? e : 1e30);
  }
  return c;
}

int64_t bits_differ(const kernels::RunOutput& a, const kernels::RunOutput& b) {
  if (a.outputs.size() != b.outputs.size()) return -1;
  int64_t diff = 0;
  for (size_t r = 0; r < a.outputs.size(); ++r)
    for (size_t i = 0; i < a.outputs[r].size() && i < b.outputs[r].size(); ++i)
      diff += a.outputs[r][i] != b.outputs[r][i];
  return diff;
}

double median_of(const std::vector<double>& v) { return kernels::median(v); }

std::map<std::string, double> median_phases(const std::vector<kernels::RunOutput>& runs) {
  std::map<std::string, std::vector<double>> all;
  for (const auto& o : runs)
    for (const auto& [name, us] : o.phases_us) all[name].push_back(us);
  std::map<std::string, double> out;
  for (const auto& [name, v] : all) out[name] = median_of(v);
  return out;
}

}  // namespace

void testbed_pipeline_case(const PipelineCase& pc, TestbedTally& tally) {
  const CaseData d = case_data(pc);
  const kernels::DeviceRun run = device_run(d);
  const kernels::OperandFn gen = [&d](int rank, kernels::RankOperands& dst) { dst = d.ops[size_t(rank)]; };
  std::vector<Subject> subjects = {Subject::PipelineProduct};
  subjects.insert(subjects.end(), pc.variants.begin(), pc.variants.end());
  std::vector<std::vector<kernels::RunOutput>> runs(subjects.size());
  for (int round = 0; round < kRounds; ++round)
    for (size_t i = 0; i < subjects.size(); ++i)
      runs[i].push_back(kernels::run_gemm_ar(run, gen, pipeline_hooks(subjects[i])));
  const kernels::RunOutput& product = runs[0][0];
  for (size_t i = 0; i < subjects.size(); ++i) {
    const SubjectInfo& info = subject_info(subjects[i]);
    JsonLine j;
    j.add("concern", "pipeline").add("subject", info.name).add("product", info.product);
    j.add("config", config_label(pc.config)).add("quant", to_string(pc.config.quant)).add("guard", pc.guard);
    j.add("chunk_bands", pc.config.chunk_bands).add("relaxed_rows", pc.config.relaxed_rows);
    j.add("m", pc.shape.m).add("n", pc.shape.n).add("k", pc.shape.k).add("world", pc.shape.world);
    j.add("applies", true).add("ran", true).add("device", product.device).add("launch", runs[i][0].launch);
    ++tally.lines;
    ++tally.ran;
    Checks worst;
    int64_t diff = 0;
    for (const auto& o : runs[i]) {
      const Checks c = check(d, o);
      worst.wrong = c.wrong < 0 || worst.wrong < 0 ? -1 : worst.wrong + c.wrong;
      worst.nonfinite += c.nonfinite;
      worst.unwritten += c.unwritten;
      worst.emulation_diff =
          c.emulation_diff < 0 || worst.emulation_diff < 0 ? -1 : worst.emulation_diff + c.emulation_diff;
      worst.rel_err = std::max(worst.rel_err, c.rel_err);
      const int64_t b = bits_differ(o, product);
      diff = b < 0 || diff < 0 ? -1 : diff + b;
    }
    const bool checked = worst.ok() && (!info.same_bits || diff == 0);
    tally.failed += !checked;
    j.add("wrong", worst.wrong).add("nonfinite", worst.nonfinite).add("unwritten", worst.unwritten);
    j.add("emulation_diff", worst.emulation_diff);
    j.add("partial_rel_err", worst.rel_err).add("bits_vs_product", diff).add("checked", checked);
    if (checked) {
      std::vector<double> totals, product_totals;
      for (const auto& o : runs[i]) totals.push_back(o.total_us);
      for (const auto& o : runs[0]) product_totals.push_back(o.total_us);
      const double us = median_of(totals), product_us = median_of(product_totals);
      j.add("total_us", us).add("product_total_us", product_us).add("vs_product", product_us / us);
      j.add("phases_us", median_phases(runs[i])).add("product_phases_us", median_phases(runs[0]));
    }
    j.print("TESTBED_JSON");
  }
}

void testbed_pipeline(TestbedTally& tally) {
  for (const PipelineCase& c : pipeline_cases()) testbed_pipeline_case(c, tally);
}

bool run_testbed(const std::vector<Concern>& concerns, const std::vector<Quant>& quants) {
  TestbedTally tally;
  for (const Concern c : concerns) {
    if (c == Concern::Gemm) testbed_gemm(tally, quants);
    if (c == Concern::Widen) testbed_widen(tally);
    if (c == Concern::Pipeline) testbed_pipeline(tally);
    if (c == Concern::Guard) testbed_guard(tally);
  }
  JsonLine j;
  j.add("lines", tally.lines).add("ran", tally.ran).add("failed", tally.failed).add("ok", tally.failed == 0);
  j.print("TESTBED_SUMMARY");
  return tally.failed == 0;
}

}  // namespace gemmar::lab
