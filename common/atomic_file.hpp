// Outputs are written to a temp file beside the target and renamed into place, so an interrupted run
// never leaves a half-written file (POSIX rename is atomic within one filesystem).
//
// Output directories (--out of `gemmar report` and `gemmar validate`) never destroy what gemmar did not
// write: every directory gemmar writes carries a manifest file, `.gemmar-output`, and check_output_dir
// refuses (exit 2, before any work) an existing regular file, a path that is or holds an input, and a
// non-empty directory without that manifest; a previous gemmar output is replaced only with --force.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace gemmar {

// Throws EnvironmentError naming the path when the write or the rename fails.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

// The manifest file written into every output directory gemmar creates.
inline constexpr const char* kOutputManifest = ".gemmar-output";

struct OutputDirCheck {
  std::string option = "--out";               // named in the one-line error
  bool force = false;                         // --force: a previous gemmar output may be replaced
  std::vector<std::filesystem::path> inputs;  // files the command reads: --out may not be or hold one
};

// Throws UsageError "OPTION PATH: why" when writing the directory `out` could delete what gemmar did not
// write (see the header comment). Returns normally when `out` is absent, an empty directory, or (with
// force) a directory holding kOutputManifest.
void check_output_dir(const std::filesystem::path& out, const OutputDirCheck& check);

// Build a directory in a temp sibling and rename it over `final_dir` once complete. The temp directory
// starts with the manifest kOutputManifest naming `written_by` (e.g. "gemmar report").
class AtomicDirectory {
 public:
  explicit AtomicDirectory(std::filesystem::path final_dir, const std::string& written_by = "gemmar");
  ~AtomicDirectory();  // removes the temp directory unless commit() succeeded
  AtomicDirectory(const AtomicDirectory&) = delete;
  AtomicDirectory& operator=(const AtomicDirectory&) = delete;
  const std::filesystem::path& path() const { return temp_; }
  // Renames the temp directory over final_dir. An existing final_dir is replaced only when it is empty or
  // holds kOutputManifest (checked again here, so a directory that appeared meanwhile is not destroyed).
  void commit();

 private:
  std::filesystem::path final_;
  std::filesystem::path temp_;
  bool committed_ = false;
};

}  // namespace gemmar
