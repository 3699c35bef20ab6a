#include "validate/verdict/across_runs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace gemmar {

std::string repeat_key(const RunRecord& r, int pull_blocks) {
  std::ostringstream os;
  os << r.shape.m << ',' << r.shape.n << ',' << r.shape.k << ',' << r.shape.world << '|' << config_label(r.config)
     << "|pull=" << pull_blocks << '|' << r.gemm_impl.value_or("-") << '|' << (r.timing.empty() ? "graph" : r.timing)
     << '|' << r.stop_after.value_or("all");
  if (r.raw.is_object())
    for (const char* knob : {"block_m", "block_n", "tile_order", "tile", "chunks", "fence", "swap_ab", "permlane",
                             "atomic", "quant", "fp8_format", "seed", "inject", "backend", "device"})
      if (r.raw.contains(knob)) os << '|' << knob << '=' << r.raw[knob].dump();
  return os.str();
}

void judge_repeats(std::vector<Verdict>& verdicts) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    const Verdict& v = verdicts[i];
    if (v.context.invalid) continue;
    const auto& r = v.record;
    if (!r.rel_l2 || !std::isfinite(*r.rel_l2)) continue;
    groups[repeat_key(r, v.context.pull_blocks)].push_back(i);
  }
  for (const auto& [key, idx] : groups) {
    if (idx.size() < 2) continue;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i : idx) {
      lo = std::min(lo, *verdicts[i].record.rel_l2);
      hi = std::max(hi, *verdicts[i].record.rel_l2);
    }
    if (!(hi - lo > verdict_rules::kNondeterministicRel * hi)) continue;
    std::string list;
    for (size_t n = 0; n < idx.size() && n < 10; ++n) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %.9g", *verdicts[idx[n]].record.rel_l2);
      list += (n ? ", " : "") + verdicts[idx[n]].source + buf;
    }
    if (idx.size() > 10) list += ", ...";
    char spread[64];
    std::snprintf(spread, sizeof spread, "%.3g", (hi - lo) / hi);
    for (size_t i : idx) {
      Verdict& v = verdicts[i];
      v.findings.push_back(
          {"NONDETERMINISTIC", Severity::Error,
           "The same config ran " + std::to_string(idx.size()) + " times in this log with different rel_l2 (" + list +
               "; relative spread " + spread +
               "): the reduce order is fixed, so the op is deterministic and a difference is a race that happened "
               "to pass the threshold; do not trust any of these runs until repeats agree to the last digit."});
      v.pass = false;
    }
  }
}

}  // namespace gemmar
