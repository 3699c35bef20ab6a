// Child processes of the Python backend (python_runner.hpp): started without a shell, all of one call in a new
// process group, each writing its stdout and stderr to a log file that gemmar reads as it grows (a file, not a
// pipe: a child that prints much never blocks on gemmar, and the whole log stays on disk); stopped as a group.
#pragma once
#include <sys/types.h>

#include <climits>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gemmar {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH when it holds no '/'
  std::vector<std::string> env;   // NAME=value, added to (or replacing in) the inherited environment
  std::filesystem::path log;      // stdout and stderr, appended
};

class ChildGroup {
 public:
  static constexpr int kRunning = INT_MIN;
  // Starts every child (stdin /dev/null) in one new process group. EnvironmentError naming argv[0] when one cannot
  // be started; those already started are stopped first.
  explicit ChildGroup(const std::vector<ChildSpec>& children);
  ~ChildGroup();
  ChildGroup(const ChildGroup&) = delete;
  ChildGroup& operator=(const ChildGroup&) = delete;
  // Reaps the children that exited; true while any still runs.
  bool poll();
  // SIGTERM to the group, up to `grace_s` for it to exit, then SIGKILL; every child reaped.
  void stop(double grace_s = 5.0);
  // Per child: its exit code, -signal when a signal ended it, kRunning while it runs.
  const std::vector<int>& exit_codes() const { return codes_; }

 private:
  std::vector<pid_t> pids_;
  std::vector<int> codes_;
  pid_t group_ = 0;
};

// The complete lines a growing file gained since the last call (a line still being written waits for its newline).
class LogTail {
 public:
  explicit LogTail(std::filesystem::path path) : path_(std::move(path)) {}
  std::vector<std::string> read_lines();
  // What read_lines returns, plus an unterminated last line: once the writer has exited.
  std::vector<std::string> read_rest();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  uint64_t offset_ = 0;
  std::string partial_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (for torch.distributed's MASTER_PORT).
int free_local_port();

}  // namespace gemmar
