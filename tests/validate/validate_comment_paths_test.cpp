// Issue 50: every repo path named in a comment of a source names something that exists
// (scripts/check_comment_paths.py). Six comments had named files that had moved; this keeps new ones out.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/cli.hpp"

namespace fs = std::filesystem;
using gemmar::test::CliResult;
using gemmar::test::run_program;

namespace {

const fs::path kSourceDir = fs::path(GEMMAR_TEST_DATA_DIR).parent_path().parent_path();

CliResult check_paths(const fs::path& root) {
  return run_program("/usr/bin/python3", {(kSourceDir / "scripts" / "check_comment_paths.py").string(), root.string()});
}

// write_text into a directory made first.
void put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  gemmar::test::write_text(path, text);
}

}  // namespace

TEST(ValidateCommentPaths, EveryRepoPathNamedInASourceCommentExists) {
  const CliResult r = check_paths(kSourceDir);
  ASSERT_EQ(r.err, "");
  EXPECT_EQ(r.out, "") << "FILE:LINE: PATH of each comment naming a path that does not exist; fix the comment";
  EXPECT_EQ(r.rc, 0);
}

// The check above passes on an empty answer, so the script must still find a stale path in each language's
// comments, and leave alone what is no comment, another repository's path, a glob or a brace list that matches.
TEST(ValidateCommentPaths, TheScriptListsAStalePathInEachLanguagesCommentsOnly) {
  const fs::path root = gemmar::test::scratch_dir("comment_paths");
  put(root / "docs" / "kept.md", "");
  put(root / "validate" / "a.hpp", "");
  put(root / "tests" / "t_test.cpp", "");  // tests/ is one of the tree's entries, tests/python/ mori's
  put(root / "validate" / "a.cpp",
      "// validate/a.hpp exists, validate/a.{hpp,cpp} both, validate/*.hpp matches\n"
      "// validate/gone.hpp is stale, docs/NAME.md a placeholder that matches, docs/README.md stale.\n"
      "const char* s = \"validate/in_a_string.hpp\";  // docs/kept.md\n"
      "/* a block: docs/gone.md,\n   and tests/python/cco/x.py is mori's */\n");
  put(root / "scripts" / "s.sh", "#!/bin/sh\necho \"# docs/not_a_comment.md\"  # scripts/gone.sh\n");
  put(root / "scripts" / "p.py",
      "\"\"\"Reads docs/kept.md and docs/gone_doc.md.\"\"\"\nx = 'docs/in_string.md'  # "
      "validate/py_gone.cpp\n");
  put(root / "CMakeLists.txt", "# validate/cmake_gone.cpp\nset(X \"docs/none.md\")\n");
  const CliResult r = check_paths(root);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(r.out,
            "CMakeLists.txt:1: validate/cmake_gone.cpp\n"
            "scripts/p.py:1: docs/gone_doc.md\n"
            "scripts/p.py:2: validate/py_gone.cpp\n"
            "scripts/s.sh:2: scripts/gone.sh\n"
            "validate/a.cpp:2: validate/gone.hpp\n"
            "validate/a.cpp:2: docs/README.md\n"
            "validate/a.cpp:4: docs/gone.md\n");
  fs::remove_all(root);
}

TEST(ValidateCommentPaths, AMissingRootIsBadUsage) {
  const CliResult r = check_paths(kSourceDir / "no-such-directory");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no-such-directory: no such directory"), std::string::npos) << r.err;
}
