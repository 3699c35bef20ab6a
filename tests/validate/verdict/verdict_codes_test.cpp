// One list of finding codes: the judge's rule table (validate/verdict/rules.cpp) is it, and the fault table
// (common/faults.cpp), docs/check.md's findings table and the detection matrix
// (tests/reliability/reliability_detection_matrix_slow_test.cpp) must name only codes in it; docs/check.md must
// list every one of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "common/faults.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar {
namespace {

const std::string kSourceRoot = std::string(GEMMAR_TEST_DATA_DIR) + "/../..";

std::string read_text(const std::string& relative) {
  std::ifstream in(kSourceRoot + "/" + relative);
  EXPECT_TRUE(in.good()) << relative;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A finding code's spelling: upper case with underscores (environment variables, GEMMAR_*, are not codes).
bool is_code(const std::string& s) {
  if (s.size() < 6 || s.rfind("GEMMAR_", 0) == 0) return false;
  for (char c : s)
    if (!(std::isupper(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// The codes of docs/check.md's findings table: the first cell of every row under "## Findings", "A / B" split.
std::set<std::string> documented_codes() {
  const std::string doc = read_text("docs/check.md");
  const size_t start = doc.find("## Findings");
  EXPECT_NE(start, std::string::npos);
  std::set<std::string> codes;
  std::istringstream lines(doc.substr(start));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line) && line.rfind("##", 0) != 0) {
    if (line.rfind("| ", 0) != 0) continue;
    std::istringstream cell(line.substr(2, line.find(" |", 2) - 2));
    for (std::string word; cell >> word;)
      if (is_code(word)) codes.insert(word);
  }
  return codes;
}

// Every quoted "CODE" (or "A|B") in the detection matrix's source.
std::set<std::string> matrix_codes() {
  const std::string src = read_text("tests/reliability/reliability_detection_matrix_slow_test.cpp");
  std::set<std::string> codes;
  for (size_t q = src.find('"'); q != std::string::npos; q = src.find('"', q + 1)) {
    const size_t end = src.find('"', q + 1);
    if (end == std::string::npos) break;
    std::istringstream alts(src.substr(q + 1, end - q - 1));
    for (std::string c; std::getline(alts, c, '|');)
      if (is_code(c)) codes.insert(c);
    q = end;
  }
  return codes;
}

TEST(VerdictCodes, TableListsEachCodeWithItsSeverity) {
  const std::vector<std::string> codes = finding_codes();
  EXPECT_TRUE(std::is_sorted(codes.begin(), codes.end()));
  EXPECT_EQ(std::set<std::string>(codes.begin(), codes.end()).size(), codes.size());
  for (const auto& r : rule_table()) {
    EXPECT_TRUE(is_code(r.code)) << r.code;
    EXPECT_FALSE(std::string(r.judged_on).empty()) << r.code;
  }
  for (const char* code : {"SLOWER_THAN_MODEL", "FASTER_THAN_PHYSICS", "REGRESSION", "RANK_DIVERGENCE",
                           "BENCHMARK_FAILED", "INVALID_RECORD"})
    EXPECT_TRUE(std::count(codes.begin(), codes.end(), code)) << code;
}

TEST(VerdictCodes, DocsCheckMdListsExactlyTheTablesCodes) {
  const std::vector<std::string> codes = finding_codes();
  EXPECT_EQ(documented_codes(), std::set<std::string>(codes.begin(), codes.end()));
}

TEST(VerdictCodes, FaultTableAndDetectionMatrixNameOnlyTableCodes) {
  const std::vector<std::string> list = finding_codes();
  const std::set<std::string> codes(list.begin(), list.end());
  for (const auto& f : fault_table()) {
    std::istringstream alts(f.expected_code);
    for (std::string c; std::getline(alts, c, '|');) EXPECT_TRUE(codes.count(c)) << f.spelling << ": " << c;
  }
  const std::set<std::string> matrix = matrix_codes();
  EXPECT_FALSE(matrix.empty());
  for (const auto& c : matrix) EXPECT_TRUE(codes.count(c)) << "detection matrix: " << c;
}

}  // namespace
}  // namespace gemmar
