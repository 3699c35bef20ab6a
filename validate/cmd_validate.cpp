// Placeholder until its issue lands: replaced by the owner of this subcommand.
#include "common/errors.hpp"
#include "validate/cli.hpp"

namespace gemmar::cli {
int cmd_validate(const Args&) { throw EnvironmentError("gemmar validate: not built yet"); }
}  // namespace gemmar::cli
