// The matcher behind phase patterns (--phase-map, --phase-pattern): a Thompson-NFA (Pike VM) regex whose
// search time is linear in the kernel name for every pattern, so a user pattern such as (a+)+b cannot hang
// `gemmar check` on a long templated kernel name the way a backtracking std::regex does (the fuzzer found
// exactly that). Patterns are case-insensitive and searched anywhere in the name.
//
// Syntax (the ECMAScript subset kernel-name patterns use): literals; . ; [abc] [^a-z] classes with ranges
// and \d \w \s inside; \d \w \s \D \W \S; \b \B; ^ $; ( ) and (?: ); |; * + ? and {m} {m,} {m,n} (m, n <=
// 1000), lazy forms (*? +? ?? {..}?) accepted and equivalent for a yes/no search; \t \n \r \f \v \0 \xHH
// and \ before any punctuation. Rejected with a message: back-references, lookaround, and patterns that
// compile to more than kMaxInstructions or nest groups deeper than kMaxNesting.
#pragma once
#include <bitset>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gemmar {

// Thrown by PhaseRegex's constructor; what() says what is wrong and at which pattern offset.
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
  // True when the pattern matches somewhere in `text`; O(text.size() * instructions) time, no recursion.
  bool search(const std::string& text) const;
  size_t instructions() const { return program_.size(); }

  enum class Op : uint8_t { kClass, kSplit, kJump, kMatch, kLineStart, kLineEnd, kWordBoundary, kNotWordBoundary };
  struct Instruction {
    Op op;
    uint32_t x = 0, y = 0;  // kClass: x = class index; kSplit: x, y targets; kJump: x target
  };

 private:
  std::vector<Instruction> program_;
  std::vector<std::bitset<256>> classes_;
  friend class PhaseRegexCompiler;
};

}  // namespace gemmar
