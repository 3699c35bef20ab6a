// Nothing the user wrote is ever lost (issue 47): a gemmar output directory lists what gemmar wrote
// (.gemmar-manifest beside the .gemmar-output marker); --force replaces only that, and refuses (exit 2, naming them)
// a folder holding anything else: a user's notes.txt or my_traces/ put inside an earlier output, a file written
// there while a run works, a folder whose marker gemmar did not write. scripts/bootstrap.sh passes --force on every
// run, so a rerun over its own output must keep working.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "support/cli.hpp"

namespace {

namespace fs = std::filesystem;
using gemmar::test::run_gemmar;
using gemmar::test::scratch_dir;
using gemmar::test::slurp;
using gemmar::test::write_text;

std::vector<std::string> validate_args(const fs::path& out, const std::string& m = "256") {
  return {"validate", "--backend", "cpu",  "--out", out.string(), "--no-report", "--force", "-m",
          m,          "-n",        "1024", "-k",    "256",        "--world",     "4"};
}

// An earlier output, with the user's notes and traces put inside it.
fs::path output_with_user_files(const std::string& tag) {
  const fs::path base = scratch_dir(tag);
  const fs::path out = base / "out";
  const auto r = run_gemmar(validate_args(out));
  EXPECT_EQ(r.rc, 0) << r.err;
  write_text(out / "notes.txt", "what I saw on Tuesday");
  fs::create_directories(out / "my_traces");
  write_text(out / "my_traces" / "kernel_trace.csv", "name,start,end\n");
  return out;
}

TEST(ReliabilityUserFiles, TheManifestListsEveryFileGemmarWrote) {
  const fs::path out = scratch_dir("user_files_manifest") / "out";
  auto args = validate_args(out);
  args.erase(std::find(args.begin(), args.end(), "--no-report"));
  const auto r = run_gemmar(args);
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto marker = nlohmann::json::parse(slurp(out / gemmar::kOutputMarker));
  EXPECT_EQ(marker["written_by"], "gemmar validate");
  const auto manifest = nlohmann::json::parse(slurp(out / gemmar::kOutputManifest));
  std::vector<std::string> listed = manifest["entries"];
  std::vector<std::string> present;
  for (auto it = fs::recursive_directory_iterator(out); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = it->path().lexically_relative(out).generic_string();
    if (rel == gemmar::kOutputMarker || rel == gemmar::kOutputManifest) continue;
    present.push_back(it->is_directory() ? rel + "/" : rel);
  }
  std::sort(present.begin(), present.end());
  EXPECT_EQ(listed, present);
  EXPECT_NE(std::find(listed.begin(), listed.end(), "report/index.html"), listed.end());
}

TEST(ReliabilityUserFiles, ForceRefusesAnOutputHoldingTheUsersFilesAndNamesThem) {
  const fs::path out = output_with_user_files("user_files_force");
  const std::string results = slurp(out / "results.json");
  const auto r = run_gemmar(validate_args(out, "512"));
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("notes.txt"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("my_traces/"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(slurp(out / "notes.txt"), "what I saw on Tuesday");
  EXPECT_TRUE(fs::is_regular_file(out / "my_traces" / "kernel_trace.csv"));
  EXPECT_EQ(slurp(out / "results.json"), results) << "the earlier output was replaced";
  // Moved out, the output is gemmar's alone again: --force replaces it (what bootstrap.sh does on every rerun).
  fs::remove(out / "notes.txt");
  fs::remove_all(out / "my_traces");
  const auto again = run_gemmar(validate_args(out, "512"));
  EXPECT_EQ(again.rc, 0) << again.err;
  EXPECT_NE(slurp(out / "results.json").find("512"), std::string::npos);
}

TEST(ReliabilityUserFiles, AFileInsideAListedFolderIsTheUsersToo) {
  const fs::path out = scratch_dir("user_files_nested") / "out";
  auto args = validate_args(out);
  args.erase(std::find(args.begin(), args.end(), "--no-report"));
  ASSERT_EQ(run_gemmar(args).rc, 0);
  write_text(out / "report" / "my_annotations.html", "mine");
  const auto r = run_gemmar(args);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("report/my_annotations.html"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(out / "report" / "my_annotations.html"), "mine");
}

TEST(ReliabilityUserFiles, AMarkerGemmarDidNotWriteIsNotGemmars) {
  const fs::path base = scratch_dir("user_files_marker");
  for (const std::string& marker : {std::string("garbage\n"), std::string("{}\n"),
                                    std::string("{\"written_by\": \"someone else\", \"format\": 2}\n"),
                                    std::string("{\"written_by\": \"gemmar validate\", \"format\": 99}\n")}) {
    const fs::path out = base / ("out" + std::to_string(marker.size()));
    fs::create_directories(out);
    write_text(out / gemmar::kOutputMarker, marker);
    write_text(out / "thesis.tex", "years of work");
    const auto r = run_gemmar(validate_args(out));
    EXPECT_EQ(r.rc, 2) << marker << r.err;
    EXPECT_NE(r.err.find("gemmar did not write"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(out / "thesis.tex"), "years of work");
    EXPECT_EQ(slurp(out / gemmar::kOutputMarker), marker);
  }
}

TEST(ReliabilityUserFiles, AGemmarMarkerWithoutItsManifestIsNotReplaced) {
  const fs::path out = scratch_dir("user_files_no_manifest") / "out";
  ASSERT_EQ(run_gemmar(validate_args(out)).rc, 0);
  fs::remove(out / gemmar::kOutputManifest);
  auto r = run_gemmar(validate_args(out));
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("missing"), std::string::npos) << r.err;
  write_text(out / gemmar::kOutputManifest, "{\"entries\": [\"../../etc/passwd\"]}");
  r = run_gemmar(validate_args(out));
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("damaged"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_regular_file(out / "results.json"));
}

// An output of gemmar before the manifest (marker format 1): its fixed layout is replaced, anything else refused.
TEST(ReliabilityUserFiles, AnOutputOfAnEarlierGemmarIsReplacedByItsKnownLayoutOnly) {
  const fs::path base = scratch_dir("user_files_legacy");
  auto legacy = [&](const std::string& name) {
    const fs::path out = base / name;
    fs::create_directories(out / "report");
    write_text(out / gemmar::kOutputMarker, "{\"written_by\": \"gemmar validate\", \"format\": 1}\n");
    write_text(out / "results.json", "{}");
    write_text(out / "runs.log", "");
    write_text(out / "report" / gemmar::kOutputMarker, "{\"written_by\": \"gemmar report\", \"format\": 1}\n");
    for (const char* f : {"index.html", "runs.html", "report.json", "manifest.json", "pull_grid.png"})
      write_text(out / "report" / f, "x");
    return out;
  };
  const fs::path clean = legacy("clean");
  EXPECT_EQ(run_gemmar(validate_args(clean)).rc, 0);
  EXPECT_NE(slurp(clean / "results.json"), "{}");
  const fs::path mine = legacy("mine");
  write_text(mine / "report" / "notes.md", "mine");
  const auto r = run_gemmar(validate_args(mine));
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("report/notes.md"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(mine / "report" / "notes.md"), "mine");
}

// A file written into the old output while a run works (after the check before any work) survives: the rename
// checks again and refuses, and the old output stays as it was.
TEST(ReliabilityUserFiles, AFileWrittenIntoTheOutputDuringTheRunSurvives) {
  const fs::path base = scratch_dir("user_files_race");
  const fs::path out = base / "out";
  ASSERT_EQ(run_gemmar(validate_args(out)).rc, 0);
  const std::string results = slurp(out / "results.json");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::vector<std::string> args = validate_args(out, "2048");
    std::vector<char*> argv{const_cast<char*>(GEMMAR_BINARY)};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    freopen((base / "stderr").c_str(), "w", stderr);
    execv(GEMMAR_BINARY, argv.data());
    _exit(127);
  }
  // The temp sibling appears once the check passed and the work began.
  bool started = false;
  for (int i = 0; i < 2000 && !started; ++i) {
    for (const auto& e : fs::directory_iterator(base))
      started = started || e.path().filename().string().rfind(".out.tmp.", 0) == 0;
    if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  write_text(out / "notes.txt", "written while gemmar ran");
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(started) << "the run never started its temp directory";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << slurp(base / "stderr");
  EXPECT_NE(slurp(base / "stderr").find("notes.txt"), std::string::npos) << slurp(base / "stderr");
  EXPECT_EQ(slurp(out / "notes.txt"), "written while gemmar ran");
  EXPECT_EQ(slurp(out / "results.json"), results);
}

// The last step alone: whatever stands at the final path when the new output is renamed into place is inspected
// again, and of the old output only what its manifest lists is removed.
TEST(ReliabilityUserFiles, CommitRemovesOnlyWhatTheOldManifestListed) {
  const fs::path base = scratch_dir("user_files_commit");
  const fs::path out = base / "out";
  {
    gemmar::AtomicDirectory d(out, "gemmar test");
    write_text(d.path() / "a.txt", "old");
    fs::create_directories(d.path() / "sub");
    write_text(d.path() / "sub" / "b.txt", "old");
    d.commit();
  }
  {
    gemmar::AtomicDirectory d(out, "gemmar test");
    write_text(d.path() / "c.txt", "new");
    d.commit();
  }
  EXPECT_FALSE(fs::exists(out / "a.txt"));
  EXPECT_FALSE(fs::exists(out / "sub"));
  EXPECT_EQ(slurp(out / "c.txt"), "new");
  {
    gemmar::AtomicDirectory d(out, "gemmar test");
    write_text(d.path() / "d.txt", "newer");
    write_text(out / "user.txt", "mine");  // appears after the check, before the commit
    EXPECT_THROW(d.commit(), gemmar::UsageError);
  }
  EXPECT_EQ(slurp(out / "user.txt"), "mine");
  EXPECT_EQ(slurp(out / "c.txt"), "new");
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(base)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"out"}) << "temp directories left beside the output";
}

}  // namespace
