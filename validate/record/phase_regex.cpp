#include "validate/record/phase_regex.hpp"

#include <algorithm>
#include <cctype>

namespace gemmar {

namespace {

using CharSet = std::bitset<256>;

CharSet range_set(int lo, int hi) {
  CharSet s;
  for (int c = lo; c <= hi; ++c) s.set(size_t(c));
  return s;
}
CharSet digit_set() { return range_set('0', '9'); }
CharSet word_set() { return range_set('a', 'z') | range_set('A', 'Z') | digit_set() | range_set('_', '_'); }
CharSet space_set() {
  CharSet s;
  for (char c : {' ', '\t', '\n', '\r', '\f', '\v'}) s.set(static_cast<unsigned char>(c));
  return s;
}
CharSet fold_case(CharSet s) {
  for (int c = 'a'; c <= 'z'; ++c)
    if (s[size_t(c)] || s[size_t(c - 'a' + 'A')]) s.set(size_t(c)).set(size_t(c - 'a' + 'A'));
  return s;
}
bool is_word(unsigned char c) { return std::isalnum(c) || c == '_'; }

size_t saturating_add(size_t a, size_t b) { return std::min(a + b, PhaseRegex::kMaxInstructions + 1); }
size_t saturating_mul(size_t a, size_t b) {
  if (a != 0 && b > (PhaseRegex::kMaxInstructions + 1) / a) return PhaseRegex::kMaxInstructions + 1;
  return std::min(a * b, PhaseRegex::kMaxInstructions + 1);
}

}  // namespace

// Pattern -> syntax tree -> program. The tree is kept so a bounded repeat can emit its body m..n times; every
// node carries its program size (saturated) so an oversized pattern is rejected before anything is emitted.
class PhaseRegexCompiler {
 public:
  PhaseRegexCompiler(const std::string& pattern, PhaseRegex& out) : p_(pattern), out_(out) {}

  void compile() {
    const int root = parse_alternation(0);
    if (pos_ < p_.size()) fail("unmatched ')'");
    if (nodes_[size_t(root)].size > PhaseRegex::kMaxInstructions)
      fail("pattern too large (more than " + std::to_string(PhaseRegex::kMaxInstructions) +
           " NFA instructions; lower the {m,n} counts)");
    emit(root);
    out_.program_.push_back({PhaseRegex::Op::kMatch});
  }

 private:
  enum class Kind { kClass, kEmpty, kConcat, kAlternation, kRepeat, kAssertion };
  struct Node {
    explicit Node(Kind k) : kind(k) {}
    Kind kind;
    uint32_t value = 0;      // kClass: class index; kAssertion: the Op
    std::vector<int> kids;   // kConcat, kAlternation; kRepeat: one
    int min = 0, max = 0;    // kRepeat; max < 0 = unbounded
    size_t size = 0;
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw PhaseRegexError(what + " at offset " + std::to_string(std::min(pos_, p_.size())));
  }
  bool at_end() const { return pos_ >= p_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < p_.size() ? p_[pos_ + ahead] : '\0'; }

  int add(Node n) {
    nodes_.push_back(std::move(n));
    return int(nodes_.size() - 1);
  }
  int add_class(const CharSet& s) {
    out_.classes_.push_back(s);
    Node n(Kind::kClass);
    n.value = uint32_t(out_.classes_.size() - 1);
    n.size = 1;
    return add(n);
  }
  int add_assertion(PhaseRegex::Op op) {
    Node n(Kind::kAssertion);
    n.value = uint32_t(op);
    n.size = 1;
    return add(n);
  }

  int parse_alternation(int depth) {
    std::vector<int> alts{parse_concatenation(depth)};
    while (peek() == '|' && !at_end()) {
      ++pos_;
      alts.push_back(parse_concatenation(depth));
    }
    if (alts.size() == 1) return alts[0];
    Node n(Kind::kAlternation);
    n.size = 0;
    for (int a : alts) n.size = saturating_add(n.size, nodes_[size_t(a)].size + 2);
    n.kids = std::move(alts);
    return add(n);
  }

  int parse_concatenation(int depth) {
    Node n(Kind::kConcat);
    while (!at_end() && peek() != '|' && peek() != ')') {
      const int atom = parse_quantified(depth);
      n.size = saturating_add(n.size, nodes_[size_t(atom)].size);
      n.kids.push_back(atom);
    }
    if (n.kids.empty()) return add(Node(Kind::kEmpty));
    if (n.kids.size() == 1) return n.kids[0];
    return add(n);
  }

  // {m}, {m,} or {m,n} at pos_: true (and the counts) when it is one, leaving pos_ after it.
  bool parse_braces(int& min, int& max) {
    size_t i = pos_ + 1;
    auto number = [&](int& v) {
      const size_t start = i;
      long long x = 0;
      while (i < p_.size() && std::isdigit(static_cast<unsigned char>(p_[i]))) {
        x = std::min<long long>(x * 10 + (p_[i] - '0'), 1LL << 40);
        ++i;
      }
      v = int(std::min<long long>(x, 1LL << 30));
      return i > start;
    };
    if (!number(min)) return false;
    max = min;
    if (i < p_.size() && p_[i] == ',') {
      ++i;
      if (!number(max)) max = -1;
    }
    if (i >= p_.size() || p_[i] != '}') return false;
    pos_ = i + 1;
    return true;
  }

  int parse_quantified(int depth) {
    const int atom = parse_atom(depth);
    int min = 0, max = 0;
    const char c = peek();
    if (at_end()) return atom;
    if (c == '*') {
      min = 0, max = -1, ++pos_;
    } else if (c == '+') {
      min = 1, max = -1, ++pos_;
    } else if (c == '?') {
      min = 0, max = 1, ++pos_;
    } else if (c == '{') {
      const size_t at = pos_;
      if (!parse_braces(min, max)) return atom;
      if (max >= 0 && min > max) {
        pos_ = at;
        fail("repeat count {m,n} with m > n");
      }
      if (min > PhaseRegex::kMaxRepeat || max > PhaseRegex::kMaxRepeat) {
        pos_ = at;
        fail("repeat count above " + std::to_string(PhaseRegex::kMaxRepeat));
      }
    } else {
      return atom;
    }
    if (nodes_[size_t(atom)].kind == Kind::kAssertion) fail("nothing to repeat (an anchor or \\b)");
    if (peek() == '?' && !at_end()) ++pos_;  // lazy: the same yes/no answer
    if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?')) fail("nothing to repeat (a quantifier follows a quantifier)");
    Node n(Kind::kRepeat);
    n.kids = {atom};
    n.min = min;
    n.max = max;
    const size_t body = nodes_[size_t(atom)].size;
    n.size = saturating_mul(body, size_t(min));
    n.size = saturating_add(n.size, max < 0 ? body + 2 : saturating_mul(body + 1, size_t(max - min)));
    return add(n);
  }

  int parse_atom(int depth) {
    const char c = p_[pos_];
    switch (c) {
      case '(': {
        if (depth + 1 > PhaseRegex::kMaxNesting)
          fail("groups nested deeper than " + std::to_string(PhaseRegex::kMaxNesting));
        ++pos_;
        if (peek() == '?') {
          if (peek(1) == ':') {
            pos_ += 2;
          } else if (peek(1) == '=' || peek(1) == '!' || peek(1) == '<') {
            fail("lookaround (?=, (?!, (?<) is not supported");
          } else {
            fail("unknown group '(?" + std::string(1, peek(1)) + "'");
          }
        }
        const int inner = parse_alternation(depth + 1);
        if (peek() != ')' || at_end()) fail("missing ')'");
        ++pos_;
        return inner;
      }
      case '[':
        return parse_class();
      case '.':
        ++pos_;
        return add_class(~(range_set('\n', '\n') | range_set('\r', '\r')));
      case '^':
        ++pos_;
        return add_assertion(PhaseRegex::Op::kLineStart);
      case '$':
        ++pos_;
        return add_assertion(PhaseRegex::Op::kLineEnd);
      case '*':
      case '+':
      case '?':
        fail(std::string("nothing to repeat before '") + c + "'");
      case '{': {
        int mn = 0, mx = 0;
        const size_t at = pos_;
        if (parse_braces(mn, mx)) {
          pos_ = at;
          fail("nothing to repeat before '{'");
        }
        ++pos_;
        return add_class(fold_case(range_set('{', '{')));
      }
      case '\\':
        return parse_escape();
      default:
        ++pos_;
        return add_class(fold_case(range_set(static_cast<unsigned char>(c), static_cast<unsigned char>(c))));
    }
  }

  // One escaped character (the part after '\\'), shared by atoms and classes: true and `out` for a
  // character, false and `set` for \d \w \s \D \W \S.
  bool parse_escaped_char(bool in_class, int& out, CharSet& set) {
    if (at_end()) fail("trailing backslash");
    const char e = p_[pos_++];
    switch (e) {
      case 'd': set = digit_set(); return false;
      case 'D': set = ~digit_set(); return false;
      case 'w': set = word_set(); return false;
      case 'W': set = ~word_set(); return false;
      case 's': set = space_set(); return false;
      case 'S': set = ~space_set(); return false;
      case 't': out = '\t'; return true;
      case 'n': out = '\n'; return true;
      case 'r': out = '\r'; return true;
      case 'f': out = '\f'; return true;
      case 'v': out = '\v'; return true;
      case '0': out = 0; return true;
      case 'b':
        if (in_class) {
          out = '\b';
          return true;
        }
        break;
      case 'x': {
        auto hex = [&](char h) { return std::isxdigit(static_cast<unsigned char>(h)) != 0; };
        if (!hex(peek()) || !hex(peek(1))) fail("\\x needs two hex digits");
        out = std::stoi(p_.substr(pos_, 2), nullptr, 16);
        pos_ += 2;
        return true;
      }
      default:
        break;
    }
    if (e >= '1' && e <= '9') fail("back-references are not supported");
    if (std::isalnum(static_cast<unsigned char>(e))) fail(std::string("unknown escape '\\") + e + "'");
    out = static_cast<unsigned char>(e);
    return true;
  }

  int parse_escape() {
    ++pos_;  // the backslash
    if (peek() == 'b' && !at_end()) {
      ++pos_;
      return add_assertion(PhaseRegex::Op::kWordBoundary);
    }
    if (peek() == 'B' && !at_end()) {
      ++pos_;
      return add_assertion(PhaseRegex::Op::kNotWordBoundary);
    }
    int c = 0;
    CharSet set;
    if (parse_escaped_char(false, c, set)) return add_class(fold_case(range_set(c, c)));
    return add_class(fold_case(set));
  }

  int parse_class() {
    const size_t open = pos_++;
    bool negate = false;
    if (peek() == '^' && !at_end()) {
      negate = true;
      ++pos_;
    }
    CharSet set;
    // One class member: a character (returned) or a \d-style set (merged, -1 returned).
    auto member = [&]() -> int {
      const char c = p_[pos_];
      if (c != '\\') {
        ++pos_;
        return static_cast<unsigned char>(c);
      }
      ++pos_;
      int ch = 0;
      CharSet s;
      if (parse_escaped_char(true, ch, s)) return ch;
      set |= s;
      return -1;
    };
    while (true) {
      if (at_end()) {
        pos_ = open;
        fail("missing ']'");
      }
      if (p_[pos_] == ']') break;
      const int lo = member();
      if (!at_end() && p_[pos_] == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        const int hi = member();
        if (lo < 0 || hi < 0) fail("a class escape (\\d, \\w, \\s) cannot bound a range");
        if (lo > hi) fail("range out of order in character class");
        set |= range_set(lo, hi);
      } else if (lo >= 0) {
        set.set(size_t(lo));
      }
    }
    ++pos_;  // ']'
    set = fold_case(set);
    return add_class(negate ? ~set : set);
  }

  void emit(int id) {
    const Node& n = nodes_[size_t(id)];
    auto& prog = out_.program_;
    using Op = PhaseRegex::Op;
    switch (n.kind) {
      case Kind::kEmpty:
        return;
      case Kind::kClass:
        prog.push_back({Op::kClass, n.value});
        return;
      case Kind::kAssertion:
        prog.push_back({Op(n.value)});
        return;
      case Kind::kConcat:
        for (int k : n.kids) emit(k);
        return;
      case Kind::kAlternation: {
        std::vector<size_t> jumps;
        for (size_t i = 0; i < n.kids.size(); ++i) {
          if (i + 1 < n.kids.size()) {
            const size_t split = prog.size();
            prog.push_back({Op::kSplit, uint32_t(split + 1), 0});
            emit(n.kids[i]);
            jumps.push_back(prog.size());
            prog.push_back({Op::kJump});
            prog[split].y = uint32_t(prog.size());
          } else {
            emit(n.kids[i]);
          }
        }
        for (size_t j : jumps) prog[j].x = uint32_t(prog.size());
        return;
      }
      case Kind::kRepeat: {
        const int body = n.kids[0];
        for (int i = 0; i < n.min; ++i) emit(body);
        if (n.max < 0) {
          const size_t loop = prog.size();
          prog.push_back({Op::kSplit, uint32_t(loop + 1), 0});
          emit(body);
          prog.push_back({Op::kJump, uint32_t(loop)});
          prog[loop].y = uint32_t(prog.size());
        } else {
          std::vector<size_t> splits;
          for (int i = n.min; i < n.max; ++i) {
            splits.push_back(prog.size());
            prog.push_back({Op::kSplit, uint32_t(prog.size() + 1), 0});
            emit(body);
          }
          for (size_t s : splits) prog[s].y = uint32_t(prog.size());
        }
        return;
      }
    }
  }

  const std::string& p_;
  PhaseRegex& out_;
  size_t pos_ = 0;
  std::vector<Node> nodes_;
};

PhaseRegex::PhaseRegex(const std::string& pattern) { PhaseRegexCompiler(pattern, *this).compile(); }

bool PhaseRegex::search(const std::string& text) const {
  const size_t n = text.size(), np = program_.size();
  // Two sparse sets of program counters (the current and the next step's threads) and a stack for the
  // epsilon closure, so neither the pattern nor the text can recurse.
  std::vector<uint32_t> current, next, stack;
  std::vector<size_t> seen(np, SIZE_MAX);  // seen[pc] == step: pc already in that step's set
  current.reserve(np);
  next.reserve(np);
  // Adds pc and everything reachable from it without consuming a character at text position `at`; true
  // when that reaches kMatch.
  auto add_closure = [&](std::vector<uint32_t>& set, uint32_t start, size_t at, size_t step) {
    stack.assign(1, start);
    while (!stack.empty()) {
      const uint32_t pc = stack.back();
      stack.pop_back();
      if (seen[pc] == step) continue;
      seen[pc] = step;
      const Instruction& ins = program_[pc];
      const bool before_word = at > 0 && is_word(static_cast<unsigned char>(text[at - 1]));
      const bool after_word = at < n && is_word(static_cast<unsigned char>(text[at]));
      switch (ins.op) {
        case Op::kMatch: return true;
        case Op::kClass: set.push_back(pc); break;
        case Op::kJump: stack.push_back(ins.x); break;
        case Op::kSplit:
          stack.push_back(ins.y);
          stack.push_back(ins.x);
          break;
        case Op::kLineStart: if (at == 0) stack.push_back(pc + 1); break;
        case Op::kLineEnd: if (at == n) stack.push_back(pc + 1); break;
        case Op::kWordBoundary: if (before_word != after_word) stack.push_back(pc + 1); break;
        case Op::kNotWordBoundary: if (before_word == after_word) stack.push_back(pc + 1); break;
      }
    }
    return false;
  };
  for (size_t at = 0; at <= n; ++at) {
    if (add_closure(current, 0, at, at)) return true;  // a match may start at every position
    if (at == n) break;
    next.clear();
    const auto c = static_cast<unsigned char>(text[at]);
    for (uint32_t pc : current)
      if (classes_[program_[pc].x][c] && add_closure(next, pc + 1, at + 1, at + 1)) return true;
    std::swap(current, next);
  }
  return false;
}

}  // namespace gemmar
