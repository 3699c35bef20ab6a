#include "validate/verdict/across_runs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "validate/verdict/judge_basis.hpp"

namespace gemmar {

std::string repeat_key(const RunRecord& r, int pull_blocks) {
  std::ostringstream os;
  os << r.shape.m << ',' << r.shape.n << ',' << r.shape.k << ',' << r.shape.world << '|' << config_label(r.config)
     << "|pull=" << pull_blocks << '|' << r.gemm_impl.value_or("-") << '|' << (r.timing.empty() ? "graph" : r.timing)
     << '|' << r.stop_after.value_or("all") << verdict_detail::time_knobs(r);
  if (r.raw.is_object())
    for (const char* knob : {"block_m", "block_n", "tile_order", "tile", "chunks", "fence", "swap_ab", "permlane",
                             "atomic", "quant", "fp8_format", "seed", "inject", "backend", "device"})
      if (r.raw.contains(knob)) os << '|' << knob << '=' << r.raw[knob].dump();
  return os.str();
}

namespace {

std::string listed(const std::vector<Verdict>& verdicts, const std::vector<size_t>& idx) {
  std::string list;
  for (size_t n = 0; n < idx.size() && n < 10; ++n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %.9g", *verdicts[idx[n]].record.rel_l2);
    list += (n ? ", " : "") + verdicts[idx[n]].source + buf;
  }
  if (idx.size() > 10) list += ", ...";
  return list;
}

// Clean repeats that differ beyond pytest.approx(first, rel=1e-6): an error on each.
void clean_repeats_differ(std::vector<Verdict>& verdicts, const std::vector<size_t>& clean) {
  const double first = *verdicts[clean.front()].record.rel_l2;
  double worst = 0;
  for (size_t i : clean) worst = std::max(worst, std::fabs(*verdicts[i].record.rel_l2 - first));
  if (!(worst > verdict_rules::kNondeterministicRel * std::fabs(first))) return;
  char spread[64];
  std::snprintf(spread, sizeof spread, "%.3g", worst / std::fabs(first));
  const std::string msg =
      "The same config passed " + std::to_string(clean.size()) + " times in this log with different rel_l2 (" +
      listed(verdicts, clean) + "; relative difference " + spread +
      ", beyond mori's own tolerance for repeats, pytest.approx(rel=1e-6) in test_fused_is_stable_across_repeats): "
      "the reduce order is fixed, so a difference is an ordering race that happened to pass the threshold; do not "
      "trust any of these runs until repeats agree.";
  for (size_t i : clean) {
    verdicts[i].findings.push_back({"NONDETERMINISTIC", Severity::Error, msg});
    verdicts[i].pass = false;
  }
}

// Clean repeats of a config that also failed on its own elsewhere in the log: a warning naming the failures.
void clean_beside_failed(std::vector<Verdict>& verdicts, const std::vector<size_t>& clean,
                         const std::vector<size_t>& failed) {
  const std::string msg = "The same config failed on its own elsewhere in this log (" + listed(verdicts, failed) +
                          "): this pass does not show the config is stable; the failing repeat is the finding.";
  for (size_t i : clean) verdicts[i].findings.push_back({"NONDETERMINISTIC", Severity::Warning, msg});
}

}  // namespace

void judge_repeats(std::vector<Verdict>& verdicts) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    const Verdict& v = verdicts[i];
    if (v.context.invalid) continue;
    const auto& r = v.record;
    if (!r.rel_l2 || !std::isfinite(*r.rel_l2)) continue;
    // test_gemm_ar_bench.py prints relL2 with 3 significant digits: it cannot show mori's 1e-6 tolerance.
    if (r.raw.is_object() && r.raw.contains("printed_by")) continue;
    groups[repeat_key(r, v.context.pull_blocks)].push_back(i);
  }
  for (const auto& [key, idx] : groups) {
    if (idx.size() < 2) continue;
    std::vector<size_t> clean, failed;
    for (size_t i : idx) (verdicts[i].pass ? clean : failed).push_back(i);
    if (clean.size() >= 2) clean_repeats_differ(verdicts, clean);
    if (!failed.empty() && !clean.empty()) clean_beside_failed(verdicts, clean, failed);
  }
}

}  // namespace gemmar
