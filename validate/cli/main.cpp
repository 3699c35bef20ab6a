// gemmar: one binary, subcommands (docs/spec.md section 4). Exit codes: 0 pass, 1 a check failed,
// 2 bad usage or input, 3 environment error.
#include <iostream>
#include <map>
#include <string>

#include "common/errors.hpp"
#include "validate/cli/cli.hpp"

namespace {

constexpr const char* kUsage =
    "usage: gemmar <subcommand> [options]   (every subcommand takes --help and --json)\n"
    "       gemmar --version [--json]         version, git commit, build flags and the data directory\n"
    "\n"
    "  reference floors|quant-study   CPU emulation of the pipeline's rounding: predicted relL2 floors\n"
    "  model [sweep]                  analytic timing model: phases, lower bound, pull-grid sweep\n"
    "  check [FILE|-]...              verdicts on benchmark output (RESULT_JSON lines)\n"
    "  run                            run the op (GPU kernels, or the CPU emulation) and check it\n"
    "  report RESULTS... --out DIR    phase-breakdown report (HTML + PNG)\n"
    "  validate                       the main job: every mode and wire, checked, with a report\n"
    "  verify DIR|FILES...            check another implementation's dumped tensors (safetensors per rank)\n"

    "  selftest                       transport self-test: rank+1 windows, every element W(W+1)/2 exactly\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace gemmar;
  const std::map<std::string, int (*)(const cli::Args&)> subcommands{
      {"reference", cli::cmd_reference}, {"model", cli::cmd_model},
      {"check", cli::cmd_check},         {"run", cli::cmd_run},
      {"report", cli::cmd_report},       {"validate", cli::cmd_validate},
      {"verify", cli::cmd_verify},       {"selftest", cli::cmd_selftest},
      {"--version", cli::cmd_version},
  };
  if (argc < 2) {
    std::cerr << kUsage;
    return kExitBadInput;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  const auto it = subcommands.find(name);
  if (it == subcommands.end()) {
    std::cerr << "gemmar: unknown subcommand '" << name << "'\n" << kUsage;
    return kExitBadInput;
  }
  try {
    return it->second(cli::Args(argv + 2, argv + argc));
  } catch (const Error& e) {
    std::cerr << "gemmar " << name << ": " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "gemmar " << name << ": unexpected error: " << e.what() << "\n";
    return kExitEnvironment;
  }
}
