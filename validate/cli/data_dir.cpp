#include "validate/cli/data_dir.hpp"

#include <cstdlib>
#include <system_error>

#include "common/errors.hpp"

#ifndef GEMMAR_DATA_FROM_BIN
#error "GEMMAR_DATA_FROM_BIN (the data directory relative to the executable's) comes from validate/CMakeLists.txt"
#endif

namespace gemmar::cli {
namespace fs = std::filesystem;

fs::path executable_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw EnvironmentError("cannot read /proc/self/exe to find gemmar's data directory: " + ec.message());
  return exe;
}

fs::path data_dir() { return (executable_path().parent_path() / GEMMAR_DATA_FROM_BIN).lexically_normal(); }

DataLocation locate(DataItem item) {
  struct Entry {
    const char* subdir;
    const char* env;  // nullptr: no override
  };
  const Entry e = item == DataItem::Reports  ? Entry{"reports", "GEMMAR_REPORTS_DIR"}
                  : item == DataItem::Python ? Entry{"python", "GEMMAR_PYTHON_DIR"}
                                             : Entry{"profiles", nullptr};
  if (e.env) {
    const char* v = std::getenv(e.env);
    if (v && *v) return {fs::path(v), e.env};
  }
  return {data_dir() / e.subdir, "<exe>/" GEMMAR_DATA_FROM_BIN};
}

}  // namespace gemmar::cli
