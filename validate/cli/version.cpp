// gemmar --version [--json]: what this binary is (validate/cli/build_info.hpp) and where it finds its data
// (validate/cli/data_dir.hpp). Built apart from gemmar_cli (validate/CMakeLists.txt): its generated part changes
// with every commit, and only the gemmar executable should relink then, not every test.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/json_text.hpp"
#include "validate/cli/build_info.hpp"
#include "validate/cli/cli.hpp"
#include "validate/cli/data_dir.hpp"

namespace gemmar::cli {
namespace {
namespace fs = std::filesystem;

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> v;
  size_t begin = 0;
  while (begin <= s.size()) {
    const size_t end = std::min(s.find_first_of(";,", begin), s.size());
    if (end > begin) v.push_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  return v;
}

std::string joined(const std::vector<std::string>& v, const char* none) {
  if (v.empty()) return none;
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

// The report package is the one thing a missing data directory breaks; say so here, not first in `report`.
bool reports_found(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "run_report.py", ec) &&
         fs::is_regular_file(dir / "gemmar_report" / "__init__.py", ec);
}

nlohmann::json version_document() {
  const BuildInfo& b = build_info();
  const DataLocation reports = locate(DataItem::Reports);
  return {{"version", b.version},
          {"commit", b.commit},
          {"commit_dirty", b.commit_dirty},
          {"build_type", b.build_type},
          {"compiler", b.compiler},
          {"cxx_flags", b.cxx_flags},
          {"march", b.march},
          {"sanitizers", split_list(b.sanitizers)},
          {"gpu",
           {{"backend", std::string(b.gpu_backend).empty() ? "none" : b.gpu_backend},
            {"architectures", split_list(b.gpu_archs)}}},
          {"executable", executable_path().string()},
          {"data_dir", data_dir().string()},
          {"reports_dir", reports.path.string()},
          {"reports_dir_chosen_by", reports.chosen_by},
          {"reports_found", reports_found(reports.path)}};
}

void print_text(const nlohmann::json& d) {
  const auto s = [&](const char* k) { return d[k].get<std::string>(); };
  std::cout << "gemmar " << s("version") << "\n"
            << "commit      " << s("commit") << (d["commit_dirty"].get<bool>() ? " (with uncommitted changes)" : "")
            << "\n"
            << "build       " << s("build_type") << ", " << s("compiler") << ", flags '" << s("cxx_flags") << "'\n"
            << "cpu         " << (s("march").empty() ? "the compiler's default -march" : "-march=" + s("march")) << "\n"
            << "sanitizers  " << joined(d["sanitizers"].get<std::vector<std::string>>(), "none") << "\n"
            << "gpu         " << d["gpu"]["backend"].get<std::string>()
            << (d["gpu"]["architectures"].empty() ? " (CPU-only build)" : "");
  if (!d["gpu"]["architectures"].empty())
    std::cout << " " << joined(d["gpu"]["architectures"].get<std::vector<std::string>>(), "");
  std::cout << "\n"
            << "data        " << s("data_dir") << "\n"
            << "reports     " << s("reports_dir") << " ("
            << (d["reports_found"].get<bool>() ? "found" : "missing: `gemmar report` needs it") << ", chosen by "
            << s("reports_dir_chosen_by") << ")\n";
}

}  // namespace

int cmd_version(const Args& args) {
  po::options_description desc("gemmar --version options");
  add_common_options(desc);
  // Named here: boost's own message for a stray word ("too many positional options") does not say which.
  for (const auto& a : args)
    GEMMAR_USAGE_CHECK(a == "--json" || a == "--help" || a == "-h", "unexpected argument '", a,
                       "' (usage: gemmar --version [--json])");
  po::variables_map vm;
  if (!parse(args, desc, vm, std::cout, "gemmar --version [--json]")) return kExitOk;
  const nlohmann::json d = version_document();
  if (vm["json"].as<bool>())
    std::cout << json_text(d, 2) << "\n";
  else
    print_text(d);
  return kExitOk;
}

}  // namespace gemmar::cli
