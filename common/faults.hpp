// The faults gemmar can inject on purpose (`--inject`), so that detection is shown rather than assumed. One
// struct for every layer: the CPU emulation (reference/emulation.hpp), the GPU kernels (kernels/gemm_ar.hpp)
// and the harness read the same fields. The table below names each class, what it imitates, and the finding
// code that must catch it (docs/reliability.md's detection matrix runs every row).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"

namespace gemmar {

struct Faults {
  bool silent_scatter = false;     // scatter-leg puts (and fused-lsa remote stores) do nothing
  bool silent_gather = false;      // gather-leg puts do nothing
  bool stale_output = false;       // the output keeps a previous run's contents
  bool no_release = false;         // the reduce's output is handed to the copy engine without a release
  int perturbed_rank = -1;         // this rank's partial is perturbed (its B scales scaled)
  std::optional<int> pull_blocks;  // the pull kernel launched with this grid instead of the config's
  bool fp8_wire_bypassed = false;  // an fp8-wire run whose gather actually moved bf16
  bool fnuz_read_as_fn = false;    // operands encoded e4m3fnuz, read as e4m3fn
  // Replay faults (docs/reliability.md): state carried from one iteration (graph replay) to the next. Both leave the
  // first replay right: only a check of later iterations, on inputs that change between iterations, catches them.
  bool stale_replay = false;  // the scatter leg's ready flag is not reset between replays: the reduce does
                              // not wait for the last put, whose rows still hold the previous replay's partial
  bool frozen_flag = false;   // the gather's wait value was baked into the capture (iteration 0's epoch):
                              // from the second replay on the gather copies the previous replay's result
  // One bit of one element of the last rank's output flipped after every replay, in a row the sampled check
  // does not read (kernels/pipeline/legs_check.cu): only a check of every element catches it. GPU only: the CPU
  // emulation holds the sampled rows alone, so there the fault has no element to act on.
  bool flip_unsampled = false;
  // "none" or the comma list parse_faults() reads back.
  std::string label() const;
};

// One run as a fault sees it: the config (as given: the predicates take its effective_config), the shape and the
// iterations (graph replays).
struct FaultScope {
  Config config;
  Shape shape;
  int iterations = 1;
};

struct FaultClass {
  const char* spelling;       // as --inject takes it ("perturb-rank=R" takes a value)
  const char* imitates;       // the real failure it stands for
  const char* expected_code;  // the finding that must catch it
  // Injectable only by the GPU kernels: the CPU emulation holds the sampled rows alone, so the fault would have
  // nothing to act on there, and the CPU backend refuses it rather than report a clean run.
  bool gpu_only = false;
  // Where it changes what the op does, in words (the refusal quotes it), and as a predicate: the emulation
  // (reference/emulation.cpp) and the kernels (kernels/pipeline/) apply it there and nowhere else, which
  // tests/reliability/reliability_fault_scope_slow_test.cpp checks row by row against the emulation's outputs.
  const char* acts_on = "every config";
  bool (*present)(const Faults&) = nullptr;  // this class is in a parsed set
  bool (*acts)(const Faults&, const FaultScope&) = nullptr;
};
const std::vector<FaultClass>& fault_table();
// "silent-puts, silent-scatter, ..." for help texts and error messages.
std::string fault_names_help();

// Parses a comma list of fault_table() spellings ("none" and empty items are skipped). UsageError naming
// --inject otherwise.
Faults parse_faults(const std::string& spec);

// A fault that acts on none of the runs would do nothing, and the runs would pass as if it had been caught
// missing: UsageError naming --inject, where it acts (the table's acts_on) and, when one exists, a config of the
// same shape where it does. Returns normally when every fault of `f` acts on at least one scope.
void check_faults_act(const Faults& f, const std::vector<FaultScope>& scopes);

}  // namespace gemmar
