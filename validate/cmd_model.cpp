// Placeholder until its issue lands: replaced by the owner of this subcommand.
#include "common/errors.hpp"
#include "validate/cli.hpp"

namespace gemmar::cli {
int cmd_model(const Args&) { throw EnvironmentError("gemmar model: not built yet"); }
}  // namespace gemmar::cli
