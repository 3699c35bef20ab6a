#include "validate/harness/child_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "common/errors.hpp"

extern char** environ;

namespace gemmar {

namespace {

// The inherited environment with `add` applied (a NAME=value replaces NAME).
std::vector<std::string> child_environment(const std::vector<std::string>& add) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& a : add) replaced = replaced || a.substr(0, a.find('=')) == name;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), add.begin(), add.end());
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// One child in process group `group` (0: a new group led by the child). Returns its pid; throws on failure.
pid_t spawn_child(const ChildSpec& spec, pid_t group) {
  GEMMAR_CHECK(!spec.argv.empty(), "spawn_child: empty argv");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, spec.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, group);
  std::vector<std::string> argv = spec.argv, env = child_environment(spec.env);
  std::vector<char*> cargv = c_strings(argv), cenv = c_strings(env);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, cargv[0], &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    throw EnvironmentError("cannot start '" + spec.argv[0] + "': " + std::strerror(rc) +
                           (rc == ENOENT && spec.argv[0].find('/') == std::string::npos ? " (not found on PATH)" : ""));
  return pid;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

}  // namespace

ChildGroup::ChildGroup(const std::vector<ChildSpec>& children) {
  for (const ChildSpec& c : children) {
    try {
      const pid_t pid = spawn_child(c, group_);
      if (group_ == 0) group_ = pid;
      pids_.push_back(pid);
      codes_.push_back(kRunning);
    } catch (...) {
      stop(0.5);
      throw;
    }
  }
}

ChildGroup::~ChildGroup() {
  try {
    if (poll()) stop(1.0);
  } catch (...) {  // a destructor must not throw; the children were signalled
  }
}

bool ChildGroup::poll() {
  bool any = false;
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (codes_[i] != kRunning) continue;
    int status = 0;
    const pid_t r = ::waitpid(pids_[i], &status, WNOHANG);
    if (r == pids_[i]) {
      codes_[i] = decode_status(status);
    } else if (r < 0 && errno == ECHILD) {
      codes_[i] = -1;  // reaped elsewhere: nothing more to learn
    } else {
      any = true;
    }
  }
  return any;
}

void ChildGroup::stop(double grace_s) {
  if (group_ == 0 || !poll()) return;
  // The group: torchrun's workers and anything a child started go too.
  ::kill(-group_, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (poll() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (poll()) ::kill(-group_, SIGKILL);
  while (poll()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

std::vector<std::string> LogTail::read_lines() {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(in.tellg());
  if (size > offset_) {
    in.seekg(std::streamoff(offset_));
    std::string chunk(size - offset_, '\0');
    in.read(chunk.data(), std::streamsize(chunk.size()));
    partial_ += chunk.substr(0, size_t(in.gcount()));
    offset_ += uint64_t(in.gcount());
  }
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(partial_.substr(start, nl - start));
  partial_.erase(0, start);
  return lines;
}

std::vector<std::string> LogTail::read_rest() {
  std::vector<std::string> lines = read_lines();
  if (!partial_.empty()) lines.push_back(std::move(partial_));
  partial_.clear();
  return lines;
}

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw EnvironmentError(std::string("cannot open a socket for MASTER_PORT: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) throw EnvironmentError(std::string("cannot find a free port for MASTER_PORT: ") + std::strerror(errno));
  return ntohs(addr.sin_port);
}

}  // namespace gemmar
