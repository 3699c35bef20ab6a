// The options of the commands that run the op (`gemmar run`, `gemmar validate`; later `selftest`): declared
// once, read once into a RunPlan. The commands differ only in their defaults (RunCommand).
#pragma once
#include "validate/cli/cli.hpp"
#include "validate/harness/run_plan.hpp"

namespace gemmar::cli {

enum class RunCommand {
  Run,       // one config at the reference shape (16384 x 7168 x 2048), or --all-configs
  Validate,  // every config; 2048 x 2048 x 512 on the CPU emulation, 4096,16384 x 7168 x 2048 on a GPU
};

// Shape, config and plan options: -m -n -k --world, --mode ... --fuse-quantize, --backend --all-configs
// --m-list --inject --seed --check-rows --iterations --profile --ranks-per-device --baseline.
void add_run_options(po::options_description&, RunCommand);
// Validated (UsageError naming the option); shapes the op cannot run are rejected before any work.
RunPlan read_run_plan(const po::variables_map&, RunCommand);

}  // namespace gemmar::cli
