// Errors carry the failing statement, file and line, and the exit code the CLI returns (docs/spec.md section 4).
// They are thrown, never exit()ed, so every caller can clean up (temp files) on the way out.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace gemmar {

enum ExitCode : int {
  kExitOk = 0,
  kExitCheckFailed = 1,
  kExitBadInput = 2,
  kExitEnvironment = 3,
};

class Error : public std::runtime_error {
 public:
  Error(int exit_code, std::string message, const char* file = nullptr, int line = 0)
      : std::runtime_error(std::move(message)), exit_code_(exit_code), file_(file ? file : ""), line_(line) {}
  int exit_code() const { return exit_code_; }
  const std::string& file() const { return file_; }
  int line() const { return line_; }

 private:
  int exit_code_;
  std::string file_;
  int line_;
};

// Bad usage or bad input: exit 2. The message must name the option, file or line.
struct UsageError : Error {
  explicit UsageError(std::string message, const char* file = nullptr, int line = 0)
      : Error(kExitBadInput, std::move(message), file, line) {}
};

// No GPU, missing toolchain, runtime failure of the environment: exit 3.
struct EnvironmentError : Error {
  explicit EnvironmentError(std::string message, const char* file = nullptr, int line = 0)
      : Error(kExitEnvironment, std::move(message), file, line) {}
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace gemmar

// GEMMAR_USAGE_CHECK(cond, parts...): throw UsageError (exit 2) with the message when cond is false.
#define GEMMAR_USAGE_CHECK(cond, ...)                                                                   \
  do {                                                                                                  \
    if (!(cond)) throw ::gemmar::UsageError(::gemmar::detail::concat(__VA_ARGS__), __FILE__, __LINE__); \
  } while (0)

// GEMMAR_CHECK(cond, parts...): an internal invariant; names the statement, file and line (exit 3). The
// trailing "" gives the message parts at least one argument without the GNU ", ##__VA_ARGS__" extension
// (the device sources are C++17, which has no __VA_OPT__).
#define GEMMAR_CHECK(...) GEMMAR_CHECK_IMPL(__VA_ARGS__, "")
#define GEMMAR_CHECK_IMPL(cond, ...)                                                                                  \
  do {                                                                                                                \
    if (!(cond))                                                                                                      \
      throw ::gemmar::Error(::gemmar::kExitEnvironment,                                                               \
                            ::gemmar::detail::concat("internal check failed: ", #cond, " (", __FILE__, ":", __LINE__, \
                                                     ") ", __VA_ARGS__),                                              \
                            __FILE__, __LINE__);                                                                      \
  } while (0)
