#include "validate/record/phase_regex.hpp"

#include <re2/re2.h>

namespace gemmar {

namespace {

// RE2 accepts deep nesting (up to 1000); a phase pattern never needs more than a few levels, and a deep one
// is a fuzzer's or a typo. Counted outside character classes and escapes.
void check_nesting(const std::string& p) {
  int depth = 0;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      ++i;
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      continue;
    }
    if (c == '[') {
      in_class = true;
      if (i + 1 < p.size() && p[i + 1] == '^') ++i;
      if (i + 1 < p.size() && p[i + 1] == ']') ++i;  // a leading ']' is literal
    } else if (c == '(') {
      if (++depth > PhaseRegex::kMaxNesting)
        throw PhaseRegexError("groups nested deeper than " + std::to_string(PhaseRegex::kMaxNesting) + " at offset " +
                              std::to_string(i));
    } else if (c == ')') {
      if (depth > 0) --depth;
    }
  }
}

std::string explain(const re2::RE2& re) {
  std::string why = re.error();
  switch (re.error_code()) {
    case re2::RE2::ErrorBadPerlOp:
    case re2::RE2::ErrorBadNamedCapture:
      why += " (lookaround and other Perl groups are not supported: RE2 matches in linear time)";
      break;
    case re2::RE2::ErrorBadEscape:
      if (re.error_arg().size() >= 2 && re.error_arg()[1] >= '1' && re.error_arg()[1] <= '9')
        why += " (back-references are not supported: RE2 matches in linear time)";
      break;
    case re2::RE2::ErrorPatternTooLarge:
      why = "pattern too large (" + why + ")";
      break;
    default:
      break;
  }
  if (!re.error_arg().empty() && why.find(re.error_arg()) == std::string::npos) why += ": '" + re.error_arg() + "'";
  return why;
}

}  // namespace

PhaseRegex::PhaseRegex(const std::string& pattern) {
  check_nesting(pattern);
  re2::RE2::Options o;
  o.set_case_sensitive(false);
  o.set_log_errors(false);
  o.set_max_mem(int64_t(8) << 20);  // far above any kernel-name pattern; a bomb fails to compile instead
  re_ = std::make_unique<re2::RE2>(pattern, o);
  if (!re_->ok()) throw PhaseRegexError(explain(*re_));
  if (size_t(re_->ProgramSize()) > kMaxInstructions)
    throw PhaseRegexError("pattern too large: " + std::to_string(re_->ProgramSize()) + " instructions (limit " +
                          std::to_string(kMaxInstructions) + ")");
}

PhaseRegex::~PhaseRegex() = default;
PhaseRegex::PhaseRegex(PhaseRegex&&) noexcept = default;
PhaseRegex& PhaseRegex::operator=(PhaseRegex&&) noexcept = default;

bool PhaseRegex::search(const std::string& text) const { return re2::RE2::PartialMatch(text, *re_); }

size_t PhaseRegex::instructions() const { return size_t(re_->ProgramSize()); }

}  // namespace gemmar
