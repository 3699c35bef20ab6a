// The CLI's shared parts: one option vocabulary (docs/spec.md section 4) used by every subcommand, and the
// subcommand entry points. Each subcommand lives in its own validate/cli/cmd_*.cpp.
#pragma once
#include <boost/program_options.hpp>
#include <iosfwd>
#include <string>
#include <vector>

#include "common/config.hpp"

namespace gemmar::cli {

namespace po = boost::program_options;

using Args = std::vector<std::string>;

// Adds -m -n -k --world with the defaults of docs/spec.md section 4.
void add_shape_options(po::options_description&);
// Adds one option per row of the config field table (common/config_fields.hpp): --mode --quant --gather-dtype
// --gather-transport --pull-blocks --fuse-quantize --fuse-reduce-push --gather-bands --publish --scatter-dtype
// --chunk-rule --schedule --chunks --chunk-bands --relaxed-rows --logical-m --sdma-queues, or only the flags in
// `only`. The pull-blocks default comes from MORI_GEMM_AR_PULL_BLOCKS when set (as in the benchmark), else 64.
void add_config_options(po::options_description&, const std::vector<std::string>& only = {});
// Adds --json and --help.
void add_common_options(po::options_description&);

Shape read_shape(const po::variables_map&);
// The config of the options add_config_options added (the others keep Config{}'s defaults), with the checks
// that need no shape; validate_shape_config (common/config.hpp) checks the rest before any work.
Config read_config(const po::variables_map&);
// MORI_GEMM_AR_PULL_BLOCKS, validated; 64 when unset. Throws UsageError naming the variable.
int pull_blocks_from_env();

// Parses args against desc (positional names optional); unknown options and bad values become UsageError
// naming the option. Returns false when --help was given (help already printed to `out`).
bool parse(const Args& args, const po::options_description& desc, po::variables_map& vm, std::ostream& out,
           const std::string& usage_line, const po::positional_options_description* positional = nullptr);

// Subcommands: each returns the process exit code; errors are thrown (gemmar::Error).
int cmd_reference(const Args&);
int cmd_model(const Args&);
int cmd_check(const Args&);
int cmd_run(const Args&);
int cmd_report(const Args&);
int cmd_validate(const Args&);
int cmd_verify(const Args&);
int cmd_selftest(const Args&);
// gemmar --version [--json] (validate/cli/version.cpp, linked into the executable only).
int cmd_version(const Args&);

}  // namespace gemmar::cli
