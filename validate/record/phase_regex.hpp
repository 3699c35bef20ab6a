// The matcher behind phase patterns (--phase-map, --phase-pattern): RE2 (Debian libre2-dev), whose search time
// is linear in the kernel name for every pattern by design, so a user pattern such as (a+)+b cannot hang
// `gemmar check` on a long templated kernel name the way a backtracking std::regex does (the fuzzer found
// exactly that). Patterns are case-insensitive and searched anywhere in the name.
//
// Syntax: RE2's (https://github.com/google/re2/wiki/Syntax), which covers what kernel-name patterns use:
// literals, ., classes, \d \w \s, \b, ^ $, groups, (?: ), |, * + ? {m,n} (n <= 1000) and their lazy forms.
// Rejected with a message naming what is wrong: back-references and lookaround (RE2 refuses both, being
// linear-time), malformed patterns, groups nested deeper than kMaxNesting and programs larger than
// kMaxInstructions.
#pragma once
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

namespace re2 {
class RE2;
}

namespace gemmar {

// Thrown by PhaseRegex's constructor; what() says what is wrong (and where, when the offset is known).
class PhaseRegexError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PhaseRegex {
 public:
  static constexpr size_t kMaxInstructions = 20000;
  static constexpr int kMaxNesting = 64;
  static constexpr int kMaxRepeat = 1000;

  explicit PhaseRegex(const std::string& pattern);
  ~PhaseRegex();
  PhaseRegex(PhaseRegex&&) noexcept;
  PhaseRegex& operator=(PhaseRegex&&) noexcept;
  // True when the pattern matches somewhere in `text`; linear time, no recursion.
  bool search(const std::string& text) const;
  // RE2's program size (its measure of the compiled automaton).
  size_t instructions() const;

 private:
  std::unique_ptr<re2::RE2> re_;
};

}  // namespace gemmar
