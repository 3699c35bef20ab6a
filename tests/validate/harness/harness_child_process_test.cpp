// The Python backend's process layer (validate/harness/child_process.hpp): children write into their log files,
// LogTail returns only complete lines (a line still being written waits), exit codes and signals are reported,
// stop() ends the whole process group (a child's own children too), and a program that cannot start is an
// EnvironmentError naming it.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "common/errors.hpp"
#include "support/cli.hpp"
#include "validate/harness/child_process.hpp"

namespace {

namespace fs = std::filesystem;
using gemmar::ChildGroup;
using gemmar::ChildSpec;
using gemmar::LogTail;

void wait_for(ChildGroup& g) {
  while (g.poll()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

TEST(HarnessChildProcess, LogTailReturnsCompleteLinesOnlyAndTheRestAtTheEnd) {
  const fs::path log = gemmar::test::scratch_dir("tail") / "a.log";
  LogTail tail(log);
  EXPECT_TRUE(tail.read_lines().empty()) << "no file yet";
  std::ofstream(log, std::ios::app) << "one\ntw";
  EXPECT_EQ(tail.read_lines(), std::vector<std::string>{"one"});
  std::ofstream(log, std::ios::app) << "o\nthree";
  EXPECT_EQ(tail.read_lines(), std::vector<std::string>{"two"});
  EXPECT_EQ(tail.read_rest(), std::vector<std::string>{"three"});
  EXPECT_TRUE(tail.read_rest().empty());
}

TEST(HarnessChildProcess, ChildrenWriteTheirLogsWithTheirEnvironmentAndExitCodes) {
  const fs::path dir = gemmar::test::scratch_dir("children");
  ChildGroup g({ChildSpec{{"sh", "-c", "echo rank=$RANK; exit 3"}, {"RANK=7"}, dir / "a.log"},
                ChildSpec{{"sh", "-c", "echo out; echo err >&2"}, {}, dir / "b.log"}});
  wait_for(g);
  EXPECT_EQ(g.exit_codes(), (std::vector<int>{3, 0}));
  LogTail a(dir / "a.log"), b(dir / "b.log");
  EXPECT_EQ(a.read_lines(), std::vector<std::string>{"rank=7"});
  EXPECT_EQ(b.read_lines(), (std::vector<std::string>{"out", "err"}));
}

TEST(HarnessChildProcess, StopEndsTheWholeGroupIncludingGrandchildren) {
  const fs::path dir = gemmar::test::scratch_dir("stop");
  const fs::path pidfile = dir / "grandchild.pid";
  // The child starts a grandchild (as torchrun starts its workers) and waits for it.
  ChildGroup g({ChildSpec{{"sh", "-c", "sleep 300 & echo $! > " + pidfile.string() + "; wait"}, {}, dir / "c.log"}});
  for (int i = 0; i < 500 && !fs::exists(pidfile); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(pidfile));
  const auto t0 = std::chrono::steady_clock::now();
  g.stop(2.0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_EQ(g.exit_codes(), std::vector<int>{-15}) << "SIGTERM";
  int pid = 0;
  std::ifstream(pidfile) >> pid;
  ASSERT_GT(pid, 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::kill(pid, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "the grandchild " << pid << " outlived the group";
}

TEST(HarnessChildProcess, ProgramThatCannotStartIsAnEnvironmentErrorNamingIt) {
  const fs::path dir = gemmar::test::scratch_dir("nostart");
  try {
    ChildGroup g({ChildSpec{{"no-such-program-for-gemmar"}, {}, dir / "x.log"}});
    FAIL() << "started";
  } catch (const gemmar::EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-program-for-gemmar"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not found on PATH"), std::string::npos) << e.what();
  }
}

TEST(HarnessChildProcess, FreeLocalPortIsAUsablePortNumber) {
  const int p = gemmar::free_local_port();
  EXPECT_GT(p, 0);
  EXPECT_LT(p, 65536);
}

}  // namespace
