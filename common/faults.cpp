#include "common/faults.hpp"

#include <cstdlib>
#include <sstream>

#include "common/errors.hpp"

namespace gemmar {

const std::vector<FaultClass>& fault_table() {
  static const std::vector<FaultClass> t{
      {"silent-puts", "a host library built without copy-engine queues: every put is a no-op", "SILENT_TRANSFER"},
      {"silent-scatter", "the scatter leg's puts (or fused-lsa's remote stores) never land", "SILENT_TRANSFER"},
      {"silent-gather", "the gather leg's puts never land", "SILENT_TRANSFER"},
      {"stale-output", "the output still holds a previous run's data", "SILENT_TRANSFER"},
      // Caught twice: per-rank relL2 spread (RANK_DIVERGENCE) and, element by element, views that the collective
      // makes equal differing between ranks (RANK_DISAGREEMENT).
      {"no-release", "the copy engine reads the reduce's output before its stores are visible", "RANK_DIVERGENCE"},
      {"perturb-rank=R", "one rank computes a different partial (wrong scale, wrong operand)", "NUMERICS_ABOVE_FLOOR"},
      {"pull-blocks=N", "the pull kernel launched with the wrong grid", "GRID_OFF_OPTIMUM"},
      {"wire-bypassed", "an fp8-wire run whose gather moved bf16: the fp8 wire never engaged", "WIRE_NOT_USED"},
      {"fnuz-as-fn", "e4m3fnuz operands (gfx942) read as e4m3fn: every value off by 2x, some NaN", "NOT_VALIDATED"},
      {"stale-replay",
       "a graph replay whose reduce reads the previous replay's partial: the scatter's ready flag is "
       "not reset between replays, so the last put to land is not waited for",
       "STALE_ITERATION"},
      {"frozen-flag",
       "a host value baked into the graph capture (iteration 0's epoch): later replays' gathers pass "
       "their wait at once and copy the previous replay's reduced slice",
       "STALE_ITERATION"},
      {"flip-unsampled",
       "one flipped bit in one element of one rank's output, in a row the sampled check does not "
       "read (GPU only)",
       "COLLECTIVE_MISMATCH", /*gpu_only=*/true},
  };
  return t;
}

std::string fault_names_help() {
  std::string s;
  for (const auto& f : fault_table()) s += (s.empty() ? "" : ", ") + std::string(f.spelling);
  return s;
}

std::string Faults::label() const {
  std::vector<std::string> parts;
  if (silent_scatter && silent_gather) {
    parts.push_back("silent-puts");
  } else {
    if (silent_scatter) parts.push_back("silent-scatter");
    if (silent_gather) parts.push_back("silent-gather");
  }
  if (stale_output) parts.push_back("stale-output");
  if (no_release) parts.push_back("no-release");
  if (perturbed_rank >= 0) parts.push_back("perturb-rank=" + std::to_string(perturbed_rank));
  if (pull_blocks) parts.push_back("pull-blocks=" + std::to_string(*pull_blocks));
  if (fp8_wire_bypassed) parts.push_back("wire-bypassed");
  if (fnuz_read_as_fn) parts.push_back("fnuz-as-fn");
  if (stale_replay) parts.push_back("stale-replay");
  if (frozen_flag) parts.push_back("frozen-flag");
  if (flip_unsampled) parts.push_back("flip-unsampled");
  if (parts.empty()) return "none";
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ",") + p;
  return s;
}

Faults parse_faults(const std::string& spec) {
  Faults f;
  std::stringstream ss(spec);
  std::string item;
  auto int_after = [](const std::string& it, size_t prefix) {
    const std::string v = it.substr(prefix);
    char* end = nullptr;
    const long x = std::strtol(v.c_str(), &end, 10);
    GEMMAR_USAGE_CHECK(!v.empty() && end && *end == '\0' && x >= 0 && x <= 65536, "--inject: '", it,
                       "' needs a non-negative integer after '='");
    return int(x);
  };
  while (std::getline(ss, item, ',')) {
    if (item == "none" || item.empty()) continue;
    if (item == "silent-puts") {
      f.silent_scatter = f.silent_gather = true;
    } else if (item == "silent-scatter") {
      f.silent_scatter = true;
    } else if (item == "silent-gather") {
      f.silent_gather = true;
    } else if (item == "stale-output") {
      f.stale_output = true;
    } else if (item == "no-release") {
      f.no_release = true;
    } else if (item.rfind("perturb-rank=", 0) == 0) {
      f.perturbed_rank = int_after(item, 13);
    } else if (item.rfind("pull-blocks=", 0) == 0) {
      f.pull_blocks = int_after(item, 12);
      GEMMAR_USAGE_CHECK(*f.pull_blocks >= 1, "--inject: pull-blocks must be >= 1");
    } else if (item == "wire-bypassed") {
      f.fp8_wire_bypassed = true;
    } else if (item == "fnuz-as-fn") {
      f.fnuz_read_as_fn = true;
    } else if (item == "stale-replay") {
      f.stale_replay = true;
    } else if (item == "frozen-flag") {
      f.frozen_flag = true;
    } else if (item == "flip-unsampled") {
      f.flip_unsampled = true;
    } else {
      throw UsageError("--inject: unknown fault '" + item + "' (accepted: " + fault_names_help() + ")");
    }
  }
  return f;
}

}  // namespace gemmar
