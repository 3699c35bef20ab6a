// An interrupted `gemmar validate` (SIGKILL mid-run, no chance to clean up) must leave its --out directory
// either as it was or complete and new: never half written, never missing, and nothing that breaks the
// next run. The binary is spawned for real (GEMMAR_BINARY) and killed at several points of its run.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

extern char** environ;

namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

int wait_exit(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

// A complete out dir: results.json parses and names every run, runs.log holds one RESULT_JSON line per run.
void expect_complete(const fs::path& dir, const std::string& what) {
  ASSERT_TRUE(fs::is_directory(dir)) << what << ": " << dir << " is missing";
  const std::string text = slurp(dir / "results.json");
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(text)) << what << ": results.json is not complete JSON";
  ASSERT_TRUE(j.contains("runs") && j["runs"].is_array() && !j["runs"].empty()) << what;
  const std::string log = slurp(dir / "runs.log");
  size_t lines = 0;
  for (size_t p = 0; (p = log.find("RESULT_JSON ", p)) != std::string::npos; ++p) ++lines;
  EXPECT_EQ(lines, j["runs"].size()) << what << ": runs.log does not hold every run";
}

std::vector<std::string> validate_args(const fs::path& out, const std::string& m) {
  return {GEMMAR_BINARY, "validate", "--backend", "cpu",  "--out", out.string(), "--no-report", "--force",
          "-m",          m,          "-n",        "1024", "-k",    "256",        "--world",     "4"};
}

TEST(ReliabilityAtomicOutput, SigkilledValidateLeavesOldOrCompleteNewOutputAndTheNextRunWorks) {
  const fs::path base = fs::temp_directory_path() / ("gemmar_atomic_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  const fs::path out = base / "out";

  // The old contents: a complete small run.
  ASSERT_EQ(wait_exit(spawn(validate_args(out, "256"))), 0);
  expect_complete(out, "first run");
  const std::string old_results = slurp(out / "results.json");

  // Larger runs, killed at increasing delays: early (computing), later (maybe writing or renaming).
  int killed = 0;
  for (int delay_ms : {50, 150, 300, 500, 800, 1200}) {
    const pid_t pid = spawn(validate_args(out, "2048"));
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGKILL);
    const int rc = wait_exit(pid);
    if (rc == -SIGKILL) ++killed;
    const std::string what = "killed after " + std::to_string(delay_ms) + " ms (rc " + std::to_string(rc) + ")";
    expect_complete(out, what);
    const std::string now = slurp(out / "results.json");
    if (now != old_results) {
      // Replaced: must be the new run's (M = 2048), whole.
      EXPECT_NE(now.find("2048"), std::string::npos) << what;
    }
  }
  EXPECT_GT(killed, 0) << "no run was still going when killed: the test did not interrupt anything";

  // The next run after all those kills succeeds, replaces the output and cleans up the leftovers of the
  // killed runs (temp siblings named after the dead processes).
  ASSERT_EQ(wait_exit(spawn(validate_args(out, "512"))), 0);
  expect_complete(out, "run after the kills");
  std::vector<std::string> leftovers;
  for (const auto& e : fs::directory_iterator(base))
    if (e.path().filename() != "out") leftovers.push_back(e.path().filename().string());
  EXPECT_TRUE(leftovers.empty()) << "temp leftovers beside --out: " << leftovers.size() << " e.g. "
                                 << (leftovers.empty() ? "" : leftovers.front());
  fs::remove_all(base);
}

// --out never deletes what gemmar did not write: refused before any work, the user's files untouched.
TEST(ReliabilityAtomicOutput, ValidateRefusesAnOutThatGemmarDidNotWrite) {
  const fs::path base = fs::temp_directory_path() / ("gemmar_atomic_refuse_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "mine");
  std::ofstream(base / "mine" / "thesis.tex") << "years of work";
  std::ofstream(base / "file.txt") << "a file";
  for (const fs::path& out : {base / "mine", base / "file.txt"}) {
    for (const bool force : {false, true}) {
      std::vector<std::string> args = validate_args(out, "256");
      if (!force) args.erase(std::find(args.begin(), args.end(), "--force"));
      const auto t0 = std::chrono::steady_clock::now();
      EXPECT_EQ(wait_exit(spawn(args)), 2) << out << (force ? " --force" : "");
      // Before any work: far quicker than one emulated run.
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
    }
  }
  EXPECT_EQ(slurp(base / "mine" / "thesis.tex"), "years of work");
  EXPECT_EQ(slurp(base / "file.txt"), "a file");
  // A previous gemmar output is replaced only with --force.
  const fs::path out = base / "out";
  ASSERT_EQ(wait_exit(spawn(validate_args(out, "256"))), 0);
  EXPECT_TRUE(fs::is_regular_file(out / ".gemmar-output"));
  std::vector<std::string> no_force = validate_args(out, "256");
  no_force.erase(std::find(no_force.begin(), no_force.end(), "--force"));
  EXPECT_EQ(wait_exit(spawn(no_force)), 2);
  EXPECT_EQ(wait_exit(spawn(validate_args(out, "512"))), 0);
  EXPECT_NE(slurp(out / "results.json").find("512"), std::string::npos);
  fs::remove_all(base);
}

}  // namespace
