// Issue 50: the docs describe the present. The current measured table (docs/kernels.md) and the README's status line
// are generated from the latest record under docs/results by scripts/current_results.py, never edited by hand; every
// link and repo path in README.md and docs/*.md resolves (scripts/check_doc_links.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/cli.hpp"

namespace fs = std::filesystem;
using gemmar::test::CliResult;
using gemmar::test::run_program;
using gemmar::test::slurp;
using gemmar::test::write_text;

namespace {

const fs::path kSourceDir = fs::path(GEMMAR_TEST_DATA_DIR).parent_path().parent_path();

CliResult script(const std::string& name, const std::vector<std::string>& args) {
  std::vector<std::string> all{(kSourceDir / "scripts" / name).string()};
  all.insert(all.end(), args.begin(), args.end());
  return run_program("/usr/bin/python3", all);
}

std::string markers(const std::string& name, const std::string& inside) {
  return "<!-- current-results:" + name + " begin (generated) -->\n" + inside + "<!-- current-results:" + name +
         " end -->\n";
}

// A scratch repository holding two real records (the older one's end-to-end documents gzipped) and docs whose
// generated blocks are stale.
fs::path scratch_with_records(const std::string& tag) {
  const fs::path root = gemmar::test::scratch_dir(tag);
  const fs::path results = kSourceDir / "docs" / "results";
  fs::create_directories(root / "docs" / "results" / "old");
  fs::create_directories(root / "docs" / "results" / "new");
  fs::copy(results / "h100-1gpu-2026-12-06-pull" / "call3" / "record", root / "docs" / "results" / "old" / "record",
           fs::copy_options::recursive);
  fs::copy(results / "h100-1gpu-2026-12-06-release" / "call3" / "record", root / "docs" / "results" / "new" / "record",
           fs::copy_options::recursive);
  write_text(root / "docs" / "kernels.md", "# kernels\n\n" + markers("table", "a stale table\n") + "\nafter\n");
  write_text(root / "README.md", "# readme\n" + markers("status", "") + "end\n");
  return root;
}

// write_text into a directory made first.
void put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  gemmar::test::write_text(path, text);
}

}  // namespace

TEST(ValidateDocs, TheCurrentResultsInTheDocsAreWhatTheLatestRecordGives) {
  const CliResult r = script("current_results.py", {"--check"});
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.rc, 0) << "run scripts/current_results.py --write after adding a record";
}

// The check above passes when the docs hold what the script writes, so the script must see a stale block, take the
// latest of two records, and write the numbers of that record's files.
TEST(ValidateDocs, TheCheckFailsOnAStaleTableAndWriteTakesTheLatestRecord) {
  const fs::path root = scratch_with_records("current_results");
  CliResult r = script("current_results.py", {"--check", "--root", root.string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find((root / "docs" / "kernels.md").string() + ": the current-results table differs"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find((root / "README.md").string() + ": the current-results table differs"), std::string::npos)
      << r.err;
  r = script("current_results.py", {"--write", "--root", root.string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string table = slurp(root / "docs" / "kernels.md");
  // The release record (22:28 UTC), not the pull record (17:06 UTC): its blockscale.summary's medians and ranges.
  EXPECT_NE(table.find("[docs/results/new/record](results/new/record/): NVIDIA H100 80GB HBM3, 2026-12-06 22:28 UTC"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| blockscale (7168, 2048) | 1.209 (1.186-1.232) | 1.110 (1.094-1.125) | 1.063 (1.058-1.068) | "
                       "1.054 (1.041-1.068) |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| ptpc (7168, 2048) | 1.143 | 1.038 | 1.016 | 0.948 |"), std::string::npos) << table;
  EXPECT_NE(table.find("| blockscale 16384 x 7168 x 2048 | 11 of 11 | 0 | 0.986-0.990 | 0.998-0.999 | 0.982-0.983 | "
                       "1.180-1.201 |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("\nafter\n"), std::string::npos) << "the text after the block is kept";
  EXPECT_NE(slurp(root / "README.md").find("55 configs end to end, 0 wrong elements"), std::string::npos);
  r = script("current_results.py", {"--check", "--root", root.string()});
  EXPECT_EQ(r.rc, 0) << r.err;
  // Without the newer record the older one is the latest, its gzipped end-to-end documents read.
  fs::remove_all(root / "docs" / "results" / "new");
  ASSERT_EQ(script("current_results.py", {"--write", "--root", root.string()}).rc, 0);
  EXPECT_NE(slurp(root / "docs" / "kernels.md").find("2026-12-06 17:06 UTC"), std::string::npos);
  EXPECT_NE(slurp(root / "README.md").find("55 configs end to end"), std::string::npos);
  fs::remove_all(root);
}

TEST(ValidateDocs, ADocWithoutItsMarkersOrARootWithoutARecordIsAnError) {
  const fs::path root = scratch_with_records("current_results_markers");
  write_text(root / "README.md", "# readme without markers\n");
  CliResult r = script("current_results.py", {"--check", "--root", root.string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("README.md: no `<!-- current-results:status begin -->`"), std::string::npos) << r.err;
  fs::remove_all(root / "docs" / "results");
  r = script("current_results.py", {"--root", root.string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no record under"), std::string::npos) << r.err;
  fs::remove_all(root);
}

TEST(ValidateDocs, EveryLinkAndRepoPathInTheReadmeAndDocsResolves) {
  const CliResult r = script("check_doc_links.py", {kSourceDir.string()});
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "") << "FILE:LINE: each link or path that names nothing";
  EXPECT_EQ(r.rc, 0);
}

TEST(ValidateDocs, TheLinkCheckFindsAMissingFileAMissingAnchorAndAStalePath) {
  const fs::path root = gemmar::test::scratch_dir("doc_links");
  put(root / "validate" / "kept.cpp", "");
  put(root / "docs" / "a.md", "# Page A\n\n## Current measurements\n\n[up](../README.md), [self](#page-a)\n");
  put(root / "README.md",
      "# R\n[a](docs/a.md#current-measurements) [web](https://example.org/x.md) `validate/kept.cpp`\n"
      "[gone](docs/gone.md) [anchor](docs/a.md#no-such-heading) ![img](docs/img.png)\n"
      "see validate/gone.cpp and validate/kept.{cpp,hpp}\n");
  const CliResult r = script("check_doc_links.py", {root.string()});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(r.out,
            "README.md:3: link docs/gone.md: no such file\n"
            "README.md:3: link docs/a.md#no-such-heading: no heading with that anchor\n"
            "README.md:3: link docs/img.png: no such file\n"
            "README.md:4: path validate/gone.cpp: no such file\n"
            "README.md:4: path validate/kept.{cpp,hpp}: no such file\n");
  fs::remove_all(root);
}
