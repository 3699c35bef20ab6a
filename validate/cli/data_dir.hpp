// Where gemmar's data lives: the report package (reports/), the Python modules (python/) and the hardware
// profiles (model/profiles/). One rule for every binary: <directory of the running executable>/<relative
// path chosen at configure time>, "../share/gemmar" by default. An installed binary (PREFIX/bin/gemmar) reads
// PREFIX/share/gemmar; the build-tree binary (<build>/validate/gemmar) reads <build>/share/gemmar, whose entries
// CMake links into the source tree (validate/CMakeLists.txt), so the sources being edited are what it runs.
// No absolute path of the build machine is compiled in: a copied tree or an unpacked .deb finds its own data.
#pragma once
#include <filesystem>
#include <string>

namespace gemmar::cli {

enum class DataItem { Reports, Python, Profiles };

struct DataLocation {
  std::filesystem::path path;  // may not exist: the caller says what it needed from it
  std::string chosen_by;       // "GEMMAR_REPORTS_DIR" or "<exe>/../share/gemmar": named in error messages
};

// The running executable (/proc/self/exe, links resolved). Throws EnvironmentError when it cannot be read.
std::filesystem::path executable_path();
// The data directory beside the executable: <exe dir>/../share/gemmar (lexically normal; may not exist).
std::filesystem::path data_dir();
// Where one item lives: its environment override when set and non-empty (GEMMAR_REPORTS_DIR for the reports,
// GEMMAR_PYTHON_DIR for the Python modules), else data_dir()/<item>.
DataLocation locate(DataItem item);

}  // namespace gemmar::cli
