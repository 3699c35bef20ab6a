#include "support/cli.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace gemmar::test {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

fs::path scratch_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  const fs::path d = fs::temp_directory_path() /
                     ("gemmar_test_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

CliResult run_gemmar(const std::vector<std::string>& args, const std::optional<std::string>& input,
                     const std::vector<std::string>& env) {
  return run_program(GEMMAR_BINARY, args, input, env);
}

CliResult run_program(const std::string& program, const std::vector<std::string>& args,
                      const std::optional<std::string>& input, const std::vector<std::string>& env,
                      const std::vector<std::string>& unset) {
  const fs::path dir = scratch_dir("cli");
  const fs::path in = dir / "stdin", out = dir / "stdout", err = dir / "stderr";
  write_text(in, input.value_or(""));
  std::vector<std::string> argv_s{program};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    const std::string entry(*e);
    const bool removed = std::any_of(unset.begin(), unset.end(),
                                     [&](const std::string& name) { return entry.rfind(name + "=", 0) == 0; });
    if (!removed) env_s.push_back(entry);
  }
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, input ? in.c_str() : "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  CliResult r;
  if (rc != 0) {
    r.err = "posix_spawn failed for " + argv_s[0];
    return r;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove_all(dir);
  return r;
}

CliResult run_gemmar(const std::string& args) {
  std::vector<std::string> v;
  std::istringstream ss(args);
  for (std::string a; ss >> a;) v.push_back(a);
  return run_gemmar(v);
}

}  // namespace gemmar::test
