#include "common/faults.hpp"

#include <cstdlib>
#include <sstream>

#include "common/errors.hpp"

namespace gemmar {

namespace {

// Where the faults act, read off the legs the emulation and the kernels run (effective_config: split-lsa's gather
// is always CU loads, gemm-only has no collective).
bool collective(const FaultScope& s) { return has_collective(s.config.mode); }
// Puts or remote stores carry the scatter: not split-lsa, whose first stage has each owner load its peers' inputs.
bool scatter_by_puts(const FaultScope& s) {
  const ModeTraits& t = traits(s.config.mode);
  return t.collective && (t.fused || t.scatter_by_copy_engine);
}
bool gather_by_copy_engine(const FaultScope& s) {
  const Config e = effective_config(s.config);
  return has_collective(e.mode) && e.gather_transport == Transport::Sdma;
}
// Replay faults read the previous replay's buffers: the warm-up replay runs iteration 0's inputs, so only a later
// iteration, on other inputs, is changed.
bool replayed(const FaultScope& s) { return collective(s) && s.iterations >= 2; }
bool always(const Faults&, const FaultScope&) { return true; }

}  // namespace

const std::vector<FaultClass>& fault_table() {
  static const std::vector<FaultClass> t{
      {"silent-puts", "a host library built without copy-engine queues: every put is a no-op", "SILENT_TRANSFER", false,
       "configs with puts: the scatter of split-sdma, fused-sdma, fused-lsa, or a --gather-transport sdma gather",
       [](const Faults& f) { return f.silent_scatter && f.silent_gather; },
       [](const Faults&, const FaultScope& s) { return scatter_by_puts(s) || gather_by_copy_engine(s); }},
      {"silent-scatter", "the scatter leg's puts (or fused-lsa's remote stores) never land", "SILENT_TRANSFER", false,
       "split-sdma, fused-sdma, fused-lsa (split-lsa's owners load their peers' inputs; gemm-only moves nothing)",
       [](const Faults& f) { return f.silent_scatter && !f.silent_gather; },
       [](const Faults&, const FaultScope& s) { return scatter_by_puts(s); }},
      {"silent-gather", "the gather leg's puts never land", "SILENT_TRANSFER", false,
       "a copy-engine gather: --gather-transport sdma on split-sdma, fused-sdma or fused-lsa",
       [](const Faults& f) { return f.silent_gather && !f.silent_scatter; },
       [](const Faults&, const FaultScope& s) { return gather_by_copy_engine(s); }},
      {"stale-output", "the output still holds a previous run's data", "SILENT_TRANSFER", false, "every config",
       [](const Faults& f) { return f.stale_output; }, always},
      // Caught twice: per-rank relL2 spread (RANK_DIVERGENCE) and, element by element, views that the collective
      // makes equal differing between ranks (RANK_DISAGREEMENT).
      {"no-release", "the copy engine reads the reduce's output before its stores are visible", "RANK_DIVERGENCE",
       false,
       "a copy-engine gather (--gather-transport sdma on split-sdma, fused-sdma or fused-lsa): the release orders the "
       "reduce's stores before the copy engine reads them; CU loads (lsa) need none",
       [](const Faults& f) { return f.no_release; },
       [](const Faults&, const FaultScope& s) { return gather_by_copy_engine(s); }},
      {"perturb-rank=R", "one rank computes a different partial (wrong scale, wrong operand)", "NUMERICS_ABOVE_FLOOR",
       false, "a rank R below --world, on every config", [](const Faults& f) { return f.perturbed_rank >= 0; },
       [](const Faults& f, const FaultScope& s) { return f.perturbed_rank < s.shape.world; }},
      {"pull-blocks=N", "the pull kernel launched with the wrong grid", "GRID_OFF_OPTIMUM", false,
       "the pull kernel (--gather-dtype fp8 --gather-transport lsa on split-sdma, fused-sdma or fused-lsa), with N "
       "other than the config's --pull-blocks",
       [](const Faults& f) { return f.pull_blocks.has_value(); },
       [](const Faults& f, const FaultScope& s) {
         return has_pull(s.config) && *f.pull_blocks != s.config.pull_blocks;
       }},
      {"wire-bypassed", "an fp8-wire run whose gather moved bf16: the fp8 wire never engaged", "WIRE_NOT_USED", false,
       "an fp8 wire (--gather-dtype fp8 on split-sdma, fused-sdma or fused-lsa)",
       [](const Faults& f) { return f.fp8_wire_bypassed; },
       [](const Faults&, const FaultScope& s) { return uses_fp8_wire(s.config); }},
      {"fnuz-as-fn", "e4m3fnuz operands (gfx942) read as e4m3fn: every value off by 2x, some NaN", "NOT_VALIDATED",
       false, "every config", [](const Faults& f) { return f.fnuz_read_as_fn; }, always},
      {"stale-replay",
       "a graph replay whose reduce reads the previous replay's partial: the scatter's ready flag is "
       "not reset between replays, so the last put to land is not waited for",
       "STALE_ITERATION", false, "a collective mode (not gemm-only) run for --iterations 2 or more",
       [](const Faults& f) { return f.stale_replay; }, [](const Faults&, const FaultScope& s) { return replayed(s); }},
      {"frozen-flag",
       "a host value baked into the graph capture (iteration 0's epoch): later replays' gathers pass "
       "their wait at once and copy the previous replay's reduced slice",
       "STALE_ITERATION", false, "a collective mode (not gemm-only) run for --iterations 2 or more",
       [](const Faults& f) { return f.frozen_flag; }, [](const Faults&, const FaultScope& s) { return replayed(s); }},
      {"flip-unsampled",
       "one flipped bit in one element of one rank's output, in a row the sampled check does not "
       "read (GPU only)",
       "COLLECTIVE_MISMATCH", /*gpu_only=*/true, "every config, on the GPU backend",
       [](const Faults& f) { return f.flip_unsampled; }, always},
  };
  return t;
}

namespace {

// The fault as the user spelled it: its item of Faults::label() ("perturb-rank=99").
std::string spelled(const FaultClass& c, const Faults& f) {
  const std::string name = std::string(c.spelling).substr(0, std::string(c.spelling).find('='));
  std::stringstream ss(f.label());
  for (std::string item; std::getline(ss, item, ',');)
    if (item.substr(0, item.find('=')) == name) return item;
  return c.spelling;
}

// The config nearest to `like`'s (fewest options changed, the mode weighing most) where the fault acts, as the
// options to change ("" when none: the value itself is out of range, or the iterations too few).
std::string config_where_it_acts(const FaultClass& c, const Faults& f, const FaultScope& like) {
  std::string best;
  int best_cost = 1 << 20;
  for (const ModeTraits& t : kModeTable)
    for (WireDtype w : {WireDtype::Bf16, WireDtype::Fp8})
      for (Transport tr : {Transport::Sdma, Transport::Lsa}) {
        FaultScope s = like;
        s.config.mode = t.mode;
        s.config.gather_dtype = w;
        s.config.gather_transport = tr;
        if ((w == WireDtype::Fp8 && !t.fp8_wire) || !c.acts(f, s)) continue;
        const bool mode = t.mode != like.config.mode, dtype = w != like.config.gather_dtype,
                   transport = tr != like.config.gather_transport;
        const int cost = 4 * mode + 2 * dtype + transport;
        if (cost >= best_cost) continue;
        best_cost = cost;
        best = (mode ? " --mode " + to_string(t.mode) : "") + (dtype ? " --gather-dtype " + to_string(w) : "") +
               (transport ? " --gather-transport " + to_string(tr) : "");
      }
  return best_cost == 0 || best.empty() ? "" : best.substr(1);
}

}  // namespace

void check_faults_act(const Faults& f, const std::vector<FaultScope>& scopes) {
  if (scopes.empty()) return;
  for (const FaultClass& c : fault_table()) {
    if (!c.present(f)) continue;
    bool acts = false;
    for (const FaultScope& s : scopes) acts = acts || c.acts(f, s);
    if (acts) continue;
    const FaultScope& s0 = scopes.front();
    std::string where =
        scopes.size() == 1 ? config_label(s0.config) : "any of the " + std::to_string(scopes.size()) + " runs";
    where += " at --world " + std::to_string(s0.shape.world) + ", --iterations " + std::to_string(s0.iterations);
    const std::string example = config_where_it_acts(c, f, s0);
    throw UsageError("--inject " + spelled(c, f) + ": does nothing on " + where + " (it acts on " + c.acts_on + ")" +
                     (example.empty() ? "" : "; e.g. " + example));
  }
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
