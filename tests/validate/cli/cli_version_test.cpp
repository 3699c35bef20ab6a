// gemmar --version [--json]: the project version, the git commit (cmake/build_info.cmake: "unknown" outside a git
// checkout or inside another repository) and the build flags; the data directory the build-tree binary reads
// (<build>/share/gemmar, linked into the source tree) and the GEMMAR_REPORTS_DIR override; a stray argument.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace {

namespace fs = std::filesystem;
using gemmar::test::CliResult;
using gemmar::test::run_gemmar;
using gemmar::test::run_program;
using gemmar::test::scratch_dir;
using gemmar::test::slurp;
using gemmar::test::write_text;

TEST(CliVersion, TextNamesTheProjectVersionCommitAndBuildFlags) {
  const CliResult r = run_gemmar("--version");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind(std::string("gemmar ") + GEMMAR_PROJECT_VERSION + "\n", 0), 0u) << r.out;
  for (const char* line : {"\ncommit ", "\nbuild ", "\ncpu ", "\nsanitizers ", "\ngpu ", "\ndata ", "\nreports "})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " in\n" << r.out;
}

TEST(CliVersion, JsonIsOneDocumentWhoseFlagsMatchHowTheBuildWasConfigured) {
  const CliResult r = run_gemmar("--version --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version"], GEMMAR_PROJECT_VERSION);
  const std::string commit = j["commit"];
  const bool hex12 = commit.size() == 12 && commit.find_first_not_of("0123456789abcdef") == std::string::npos;
  EXPECT_TRUE(hex12 || commit == "unknown") << commit;
  // This test is built with the same options: the sanitizer and GPU macros are an independent witness (GCC
  // defines __SANITIZE_ADDRESS__, clang answers __has_feature).
#if defined(__SANITIZE_ADDRESS__)
#define GEMMAR_TEST_BUILT_WITH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GEMMAR_TEST_BUILT_WITH_ASAN 1
#endif
#endif
#if defined(GEMMAR_TEST_BUILT_WITH_ASAN)
  EXPECT_EQ(j["sanitizers"], nlohmann::json::array({"address", "undefined"}));
#else
  EXPECT_TRUE(j["sanitizers"].empty());
#endif
#if defined(GEMMAR_HAVE_GPU)
  EXPECT_NE(j["gpu"]["backend"], "none");
  EXPECT_FALSE(j["gpu"]["architectures"].empty());
#else
  EXPECT_EQ(j["gpu"]["backend"], "none");
  EXPECT_TRUE(j["gpu"]["architectures"].empty());
#endif
  EXPECT_EQ(fs::path(j["data_dir"].get<std::string>()), fs::canonical(GEMMAR_BUILD_DIR) / "share" / "gemmar");
  EXPECT_TRUE(j["reports_found"].get<bool>());
  EXPECT_EQ(j["reports_dir_chosen_by"], "<exe>/../share/gemmar");
}

TEST(CliVersion, GitCheckoutReportsItsCommit) {
  if (!fs::exists(fs::path(GEMMAR_TEST_SOURCE_DIR) / ".git")) GTEST_SKIP() << "source tree is not a git checkout";
  const auto j = nlohmann::json::parse(run_gemmar("--version --json").out);
  EXPECT_NE(j["commit"], "unknown");
}

TEST(CliVersion, GemmarReportsDirOverridesTheReportLookup) {
  const CliResult r = run_gemmar({"--version", "--json"}, std::nullopt, {"GEMMAR_REPORTS_DIR=/nonexistent/reports"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["reports_dir"], "/nonexistent/reports");
  EXPECT_EQ(j["reports_dir_chosen_by"], "GEMMAR_REPORTS_DIR");
  EXPECT_FALSE(j["reports_found"].get<bool>());
}

TEST(CliVersion, StrayArgumentIsExit2NamingIt) {
  const CliResult r = run_gemmar("--version extra");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("extra"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// The build-time script on a tree outside git, and on a tree inside another repository: both "unknown".
TEST(CliVersion, CommitIsUnknownOutsideAGitCheckoutOfTheSourceTree) {
  const fs::path d = scratch_dir("version_git");
  write_text(d / "in.cpp", "commit=@GEMMAR_GIT_COMMIT@ dirty=@GEMMAR_GIT_DIRTY@\n");
  const auto generate = [&](const fs::path& source) {
    const CliResult r =
        run_program(GEMMAR_CMAKE_COMMAND, {"-DSOURCE_DIR=" + source.string(), "-DIN=" + (d / "in.cpp").string(),
                                           "-DOUT=" + (d / "out.cpp").string(), "-P",
                                           std::string(GEMMAR_TEST_SOURCE_DIR) + "/cmake/build_info.cmake"});
    EXPECT_EQ(r.rc, 0) << r.err;
    return slurp(d / "out.cpp");
  };
  fs::create_directories(d / "tarball");
  EXPECT_EQ(generate(d / "tarball"), "commit=unknown dirty=false\n");
  // The same directory inside a repository of its own (git init needs no commit to make it one).
  if (run_program("/usr/bin/git", {"init", "-q", d.string()}).rc == 0) {
    EXPECT_EQ(generate(d / "tarball"), "commit=unknown dirty=false\n");
  }
  EXPECT_EQ(generate(GEMMAR_TEST_SOURCE_DIR).rfind("commit=", 0), 0u);
}

}  // namespace
