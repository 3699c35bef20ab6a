// What every test that drives the gemmar binary shares: run it (no shell: each argument is one argv entry),
// capture stdout and stderr apart, feed stdin, and the file helpers around it.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gemmar::test {

struct CliResult {
  int rc = -1;      // the exit code; -signal when killed by a signal
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs the gemmar binary under test (GEMMAR_BINARY) with `args`; `input` becomes its stdin (else /dev/null);
// `env` entries ("NAME=value") are added to the environment.
CliResult run_gemmar(const std::vector<std::string>& args, const std::optional<std::string>& input = std::nullopt,
                     const std::vector<std::string>& env = {});
// The same with the arguments split at spaces (for arguments without spaces).
CliResult run_gemmar(const std::string& args);
// Any program (an installed or unpacked gemmar, cmake) the same way; `unset` names variables removed from the
// inherited environment (e.g. GEMMAR_REPORTS_DIR, so that a binary's own lookup is what is tested).
CliResult run_program(const std::string& program, const std::vector<std::string>& args,
                      const std::optional<std::string>& input = std::nullopt, const std::vector<std::string>& env = {},
                      const std::vector<std::string>& unset = {});

std::string slurp(const std::filesystem::path&);
void write_text(const std::filesystem::path&, const std::string&);
// A fresh, empty directory under the system temp dir, unique to this process and tag.
std::filesystem::path scratch_dir(const std::string& tag);

}  // namespace gemmar::test
