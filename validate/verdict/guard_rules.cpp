#include "validate/verdict/guard_rules.hpp"

#include <string>

namespace gemmar::verdict_rules {
namespace {

// What each code means for the engineer reading the verdict: which leg of the op the checksum pins.
std::string leg_of(const std::string& code) {
  if (code == "GUARD_REDUCE") return "the reduce-scatter (owner's sum of the partials)";
  if (code == "GUARD_GATHER") return "the all-gather (a rank's copy of a slice)";
  if (code == "GUARD_WIRE") return "the fp8 wire (quantize / what the gather moved)";
  if (code == "GUARD_GEMM") return "the GEMM (partial against the weights' checksum)";
  return "an unknown leg";
}

}  // namespace

std::vector<Finding> guard_findings(const RunRecord& r) {
  std::vector<Finding> out;
  if (!r.guard) return out;
  const GuardReport& g = *r.guard;
  if (g.calls == 0) {
    out.push_back({"GUARD_NO_CALLS", Severity::Warning,
                   "--guard was on but the guard checked no call: nothing is known about this run from it."});
    return out;
  }
  for (const auto& [code, c] : g.codes) {
    if (c.calls == 0) continue;
    out.push_back({code, Severity::Error,
                   "The per-call guard flagged " + std::to_string(c.calls) + " of " + std::to_string(g.calls) +
                       " calls in " + leg_of(code) + " (first: iteration " + std::to_string(c.first_iteration) +
                       "): " + c.message});
  }
  return out;
}

}  // namespace gemmar::verdict_rules
