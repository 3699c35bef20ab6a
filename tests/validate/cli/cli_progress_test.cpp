// Long work shows its progress (issue 47): `run` and `validate` print one line per config and M on stderr as each
// finishes (none with --json; stdout unchanged), with an estimate of the time left once the work is longer than a
// few seconds; `check -` judges each record as it arrives, so a benchmark piping an hour-long sweep shows verdicts
// as they come, and `--tee` passes the benchmark's own lines through to stdout.
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/cli.hpp"
#include "validate/cli/progress.hpp"

extern char** environ;

namespace {

using gemmar::test::run_gemmar;
using gemmar::test::scratch_dir;

const std::string kShape = "--backend cpu -m 256 -n 1024 -k 256 --world 4 --check-rows 32";

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = 0; (p = text.find(what, p)) != std::string::npos; p += what.size()) ++n;
  return n;
}

TEST(CliProgress, RunPrintsOneLinePerConfigOnStderrAndNoneWithJson) {
  auto r = run_gemmar("run " + kShape + " --all-configs --m-list 256,512");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(count_of(r.err, "gemmar run: "), 22u) << r.err;
  EXPECT_NE(r.err.find("gemmar run: 1/22 gemm-only/blockscale M=256 pass"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gemmar run: 22/22 fused-lsa/blockscale/fp8/lsa M=512 pass"), std::string::npos) << r.err;
  EXPECT_EQ(count_of(r.out, "RESULT_JSON"), 22u);
  r = run_gemmar("run " + kShape + " --all-configs --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(CliProgress, ValidatePrintsItsConfigsAsTheyFinish) {
  const auto out = scratch_dir("progress_validate") / "out";
  const auto r = run_gemmar("validate --backend cpu -m 256 -n 1024 -k 256 --world 4 --no-report --out " + out.string());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(count_of(r.err, "gemmar validate: "), 11u) << r.err;
  EXPECT_NE(r.err.find("gemmar validate: 11/11 "), std::string::npos) << r.err;
}

TEST(CliProgress, TheEstimateOfTimeLeftFollowsTheUnitsFinished) {
  std::ostringstream out;
  // Three configs at each of two M: the first at each M also computes what the others share.
  std::vector<gemmar::cli::Progress::Unit> units{{1, 1}, {1, 0}, {1, 0}, {2, 2}, {2, 0}, {2, 0}};
  gemmar::cli::Progress p(&out, "gemmar run", units, /*terminal=*/false);
  gemmar::Verdict pass;
  p.finished(0, "a M=1", pass, 8.0);  // setup + run: no rate of a plain unit yet, so no estimate
  EXPECT_EQ(out.str().find("left"), std::string::npos) << out.str();
  p.finished(1, "b M=1", pass, 2.0);  // plain rate 2 s per unit: setup rate 6 s
  // Left: unit 2 (2 s) + unit 3 (2 x 2 + 2 x 6 = 16 s) + units 4, 5 (4 s each) = 26 s.
  EXPECT_NE(out.str().find("gemmar run: 2/6 b M=1 pass 2.0s, ~26 s left"), std::string::npos) << out.str();
  gemmar::Verdict fail;
  fail.pass = false;
  fail.findings.push_back({"SILENT_TRANSFER", gemmar::Severity::Error, "x"});
  p.finished(2, "c M=1", fail, 2.0);
  EXPECT_NE(out.str().find("gemmar run: 3/6 c M=1 FAIL SILENT_TRANSFER"), std::string::npos) << out.str();
  for (size_t i = 3; i < 6; ++i) p.finished(i, "d", pass, 0.01);
  EXPECT_EQ(out.str().substr(out.str().rfind("6/6")).find("left"), std::string::npos) << out.str();
}

// On a terminal the lines are columns under a header (the estimate spelled out); piped, one short line each: the
// same unit, verdict and estimate, shorter.
TEST(CliProgress, ATerminalGetsColumnsUnderAHeaderAndAPipeOneShortLine) {
  std::vector<gemmar::cli::Progress::Unit> units{{1, 0}, {1, 0}, {1, 0}};
  gemmar::Verdict pass;
  std::ostringstream tty, pipe;
  gemmar::cli::Progress on_tty(&tty, "gemmar run", units, /*terminal=*/true);
  gemmar::cli::Progress piped(&pipe, "gemmar run", units, /*terminal=*/false);
  for (size_t i = 0; i < 2; ++i) {
    on_tty.finished(i, "fused-sdma/blockscale/bf16/sdma M=2048", pass, 6.0);
    piped.finished(i, "fused-sdma/blockscale/bf16/sdma M=2048", pass, 6.0);
  }
  EXPECT_EQ(tty.str().find("gemmar run:\n#"), 0u) << tty.str();
  EXPECT_EQ(count_of(tty.str(), "seconds"), 1u) << tty.str();  // the header once
  EXPECT_NE(tty.str().find("2/3       fused-sdma/blockscale/bf16/sdma M=2048"), std::string::npos) << tty.str();
  EXPECT_NE(tty.str().find("about 6 s left)"), std::string::npos) << tty.str();
  EXPECT_EQ(pipe.str(),
            "gemmar run: 1/3 fused-sdma/blockscale/bf16/sdma M=2048 pass 6.0s, ~12 s left\n"
            "gemmar run: 2/3 fused-sdma/blockscale/bf16/sdma M=2048 pass 6.0s, ~6 s left\n");
  EXPECT_LT(pipe.str().size(), tty.str().size());
}

// A child with a pipe on stdin and pipes on stdout and stderr.
struct Child {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
};
Child spawn_check(const std::vector<std::string>& args) {
  int pin[2], pout[2], perr[2];
  EXPECT_EQ(pipe(pin), 0);
  EXPECT_EQ(pipe(pout), 0);
  EXPECT_EQ(pipe(perr), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
  posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
  posix_spawn_file_actions_adddup2(&fa, perr[1], 2);
  for (int fd : {pin[1], pout[0], perr[0]}) posix_spawn_file_actions_addclose(&fa, fd);
  std::vector<std::string> a{GEMMAR_BINARY};
  a.insert(a.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  Child c;
  EXPECT_EQ(posix_spawn(&c.pid, GEMMAR_BINARY, &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(pin[0]);
  close(pout[1]);
  close(perr[1]);
  c.in = pin[1];
  c.out = pout[0];
  c.err = perr[0];
  return c;
}

// Reads `fd` until `text` arrives or `seconds` pass; returns what was read.
std::string read_until(int fd, const std::string& text, double seconds, std::string& so_far) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (so_far.find(text) == std::string::npos && std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    so_far.append(buf, size_t(n));
  }
  return so_far;
}

void write_all(int fd, const std::string& s) { ASSERT_EQ(write(fd, s.data(), s.size()), ssize_t(s.size())); }

TEST(CliProgress, CheckFromAPipeJudgesEachRecordAsItArrivesAndTeesTheBenchmarksLines) {
  const auto run = run_gemmar("run " + kShape + " --all-configs");
  ASSERT_EQ(run.rc, 0) << run.err;
  std::vector<std::string> records;
  std::istringstream lines(run.out);
  for (std::string l; std::getline(lines, l);)
    if (l.rfind("RESULT_JSON", 0) == 0) records.push_back(l + "\n");
  ASSERT_GE(records.size(), 3u);

  Child c = spawn_check({"check", "-", "--tee", "--no-timing"});
  std::string err, out;
  write_all(c.in, "bench: starting sweep\n" + records[0]);
  // The pipe stays open: the verdict of the first record must come now, not at the end of the stream.
  read_until(c.err, "gemmar check: 1 stdin:2 gemm-only/blockscale M=256 pass\n", 60, err);
  EXPECT_NE(err.find("gemmar check: 1 stdin:2 gemm-only/blockscale M=256 pass"), std::string::npos) << err;
  read_until(c.out, "bench: starting sweep\nRESULT_JSON", 10, out);
  EXPECT_EQ(out.rfind("bench: starting sweep\nRESULT_JSON", 0), 0u) << out;
  write_all(c.in, "bench: point 2\n" + records[1]);
  read_until(c.err, "gemmar check: 2 stdin:4 split-sdma/blockscale/bf16/sdma M=256 pass\n", 60, err);
  EXPECT_NE(err.find("gemmar check: 2 stdin:4 split-sdma/blockscale/bf16/sdma M=256 pass"), std::string::npos) << err;
  close(c.in);
  read_until(c.out, "2 run(s): 2 pass, 0 fail\n", 60, out);
  int status = 0;
  waitpid(c.pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << err;
  EXPECT_NE(out.find("bench: point 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("2 run(s): 2 pass, 0 fail"), std::string::npos) << out;
  close(c.out);
  close(c.err);
}

TEST(CliProgress, TeeNeedsStdinAndNoJson) {
  auto r = run_gemmar({"check", "-", "--tee", "--json"}, std::string("x\n"));
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--tee"), std::string::npos) << r.err;
  r = run_gemmar({"check", std::string(GEMMAR_TEST_DATA_DIR) + "/check/crashed_mid_log.log", "--tee"});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--tee: copies stdin"), std::string::npos) << r.err;
}

}  // namespace
