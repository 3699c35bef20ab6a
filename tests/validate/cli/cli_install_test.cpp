// cmake --install of this build into a temporary prefix, then the installed binary on its own: the layout
// (bin/gemmar, share/gemmar/{reports,python,profiles}), `gemmar validate` drawing its report from the installed
// package after the prefix was moved (GEMMAR_REPORTS_DIR unset), exit 3 naming its own data directory (never a
// fallback to the source tree) when that package is gone, the GEMMAR_REPORTS_DIR override, and no path into the
// source or build tree compiled into the binary. The .deb is checked by scripts/package_check.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace {

namespace fs = std::filesystem;
using gemmar::test::CliResult;
using gemmar::test::run_program;
using gemmar::test::scratch_dir;
using gemmar::test::slurp;
using gemmar::test::write_text;

const fs::path kSource = GEMMAR_TEST_SOURCE_DIR;

// cmake --install BUILD --prefix <fresh dir>/prefix; the prefix.
fs::path install_prefix(const std::string& tag) {
  const fs::path prefix = scratch_dir(tag) / "prefix";
  const CliResult r = run_program(GEMMAR_CMAKE_COMMAND, {"--install", GEMMAR_BUILD_DIR, "--prefix", prefix.string()});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  return prefix;
}

// The installed binary with the caller's variables and without GEMMAR_REPORTS_DIR, so that its own lookup runs.
CliResult run_installed(const fs::path& prefix, const std::vector<std::string>& args,
                        const std::vector<std::string>& env = {}) {
  return run_program((prefix / "bin" / "gemmar").string(), args, std::nullopt, env, {"GEMMAR_REPORTS_DIR"});
}

// File names (relative) under dir with the given extension, recursively.
std::set<std::string> files_with(const fs::path& dir, const std::string& ext) {
  std::set<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ext) names.insert(e.path().lexically_relative(dir).string());
  return names;
}

// The validate shape of the CLI tests (its floors derived by the ctest fixture), 2 iterations: the report is
// what is tested here, not the emulation.
const std::vector<std::string> kSmallValidate = {"validate", "-m", "1024",         "-n", "1024",         "-k", "256",
                                                 "--world",  "4",  "--iterations", "2",  "--check-rows", "64"};

TEST(CliInstall, PutsTheBinaryReportPackagePythonModulesAndProfilesUnderThePrefix) {
  const fs::path p = install_prefix("install_layout");
  EXPECT_TRUE(fs::is_regular_file(p / "bin" / "gemmar"));
  const fs::path data = p / "share" / "gemmar";
  EXPECT_EQ(files_with(data / "reports", ".py"), files_with(kSource / "reports", ".py"));
  EXPECT_EQ(files_with(data / "python", ".py"), files_with(kSource / "python", ".py"));
  const auto profiles = files_with(kSource / "model" / "profiles", ".json");
  ASSERT_FALSE(profiles.empty());
  EXPECT_EQ(files_with(data / "profiles", ".json"), profiles);
  for (const auto& f : profiles)
    EXPECT_EQ(slurp(data / "profiles" / f), slurp(kSource / "model" / "profiles" / f)) << f;
  for (const auto& e : fs::recursive_directory_iterator(p)) EXPECT_NE(e.path().filename(), "__pycache__") << e.path();
}

TEST(CliInstall, MovedPrefixRunsValidateWithItsReportFromItsOwnShareDirectory) {
  const fs::path installed = install_prefix("install_moved");
  // Moved after installing: nothing may point back at where it was installed or built.
  const fs::path p = installed.parent_path() / "moved";
  fs::rename(installed, p);
  const fs::path out = p.parent_path() / "validate";
  auto args = kSmallValidate;
  args.insert(args.end(), {"--out", out.string()});
  const CliResult r = run_installed(p, args);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  for (const char* f : {"results.json", "runs.log", "report/index.html", "report/runs.html", "report/manifest.json",
                        "report/phases_by_mode.png"})
    EXPECT_TRUE(fs::is_regular_file(out / f)) << f;
  EXPECT_NE(slurp(out / "report" / "index.html").find("<html"), std::string::npos);

  const CliResult v = run_installed(p, {"--version", "--json"});
  ASSERT_EQ(v.rc, 0) << v.err;
  const auto j = nlohmann::json::parse(v.out);
  EXPECT_EQ(fs::path(j["data_dir"].get<std::string>()), fs::canonical(p) / "share" / "gemmar");
  EXPECT_TRUE(j["reports_found"].get<bool>());
  EXPECT_EQ(j["reports_dir_chosen_by"], "<exe>/../share/gemmar");
}

TEST(CliInstall, WithoutItsReportPackageItFailsWithExit3NamingItsOwnDataDirectoryUntilGemmarReportsDirIsSet) {
  const fs::path p = install_prefix("install_noreports");
  const fs::path work = p.parent_path();
  const CliResult model = run_installed(p, {"model", "--json"});
  ASSERT_EQ(model.rc, 0) << model.err;
  write_text(work / "model.json", model.out);
  fs::remove_all(p / "share" / "gemmar" / "reports");

  const CliResult missing =
      run_installed(p, {"report", (work / "model.json").string(), "--out", (work / "r1").string()});
  EXPECT_EQ(missing.rc, 3) << missing.err;
  EXPECT_NE(missing.err.find((p / "share" / "gemmar" / "reports").string()), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("GEMMAR_REPORTS_DIR"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(work / "r1"));

  const CliResult overridden =
      run_installed(p, {"report", (work / "model.json").string(), "--out", (work / "r2").string()},
                    {"GEMMAR_REPORTS_DIR=" + (kSource / "reports").string()});
  EXPECT_EQ(overridden.rc, 0) << overridden.err;
  EXPECT_TRUE(fs::is_regular_file(work / "r2" / "index.html"));
}

TEST(CliInstall, InstalledProfileFileIsReadByModel) {
  const fs::path p = install_prefix("install_profile");
  const CliResult r =
      run_installed(p, {"model", "--profile", (p / "share/gemmar/profiles/h200.json").string(), "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out)["total_us"].get<double>(), 0.0);
}

// The only ways a lookup could reach the trees: their data directories, by absolute path. (Debug information may
// name the source files and the build directory; it never names these.)
TEST(CliInstall, InstalledBinaryHoldsNoPathToTheSourceOrBuildTreeData) {
  const fs::path p = install_prefix("install_paths");
  const std::string bin = slurp(p / "bin" / "gemmar");
  ASSERT_GT(bin.size(), 100000u);
  for (const fs::path& d :
       {kSource / "reports", kSource / "python", kSource / "model" / "profiles", fs::path(GEMMAR_BUILD_DIR) / "share"})
    EXPECT_EQ(bin.find(d.string()), std::string::npos) << d;
}

}  // namespace
