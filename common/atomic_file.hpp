// Outputs are written to a temp file beside the target and renamed into place, so an interrupted run
// never leaves a half-written file (POSIX rename is atomic within one filesystem).
//
// Output directories (--out of `gemmar report` and `gemmar validate`, `gemmar run --dump`) never destroy what gemmar
// did not write: every directory gemmar writes carries a marker, `.gemmar-output` (a JSON object naming the gemmar
// command that wrote it), and beside it a manifest, `.gemmar-manifest`, listing every file and directory gemmar
// wrote there. check_output_dir refuses (exit 2, before any work) an existing regular file, a path that is or holds
// an input, a non-empty directory without a marker gemmar wrote (absent, or not gemmar's JSON), and a previous
// gemmar output without --force; with --force, one holding anything its manifest does not list (a user's notes
// put inside an earlier output), naming those entries. Replacing an output removes only what its manifest lists.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace gemmar {

// Throws EnvironmentError naming the path when the write or the rename fails.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

// The marker written into every output directory gemmar creates: {"written_by": "gemmar ...", "format": 2}.
inline constexpr const char* kOutputMarker = ".gemmar-output";
// Beside it, written when the directory is complete: {"format": 2, "entries": [...]}, every path below the
// directory gemmar wrote, relative, directories ending in '/' (the marker and the manifest themselves excepted).
inline constexpr const char* kOutputManifest = ".gemmar-manifest";

struct OutputDirCheck {
  std::string option = "--out";               // named in the one-line error
  bool force = false;                         // --force: a previous gemmar output may be replaced
  std::vector<std::filesystem::path> inputs;  // files the command reads: --out may not be or hold one
};

// Throws UsageError "OPTION PATH: why" when writing the directory `out` could delete what gemmar did not
// write (see the header comment). Returns normally when `out` is absent, an empty directory, or (with
// force) a gemmar output whose every entry its manifest lists.
void check_output_dir(const std::filesystem::path& out, const OutputDirCheck& check);

// What an existing directory is to gemmar.
struct OutputDirState {
  bool gemmars = false;              // a marker gemmar wrote (parsed, written_by "gemmar ...")
  std::string why_not;               // otherwise: why not (no marker, or what is wrong with it)
  std::vector<std::string> foreign;  // gemmar's: entries the manifest does not list (relative, dirs end in '/')
  std::vector<std::string> own;      // gemmar's: the entries its manifest lists that exist (what a replace removes)
};
OutputDirState inspect_output_dir(const std::filesystem::path& dir);

// Build a directory in a temp sibling and rename it over `final_dir` once complete. The temp directory
// starts with the marker kOutputMarker naming `written_by` (e.g. "gemmar report"); commit() lists what the temp
// directory then holds into kOutputManifest.
class AtomicDirectory {
 public:
  explicit AtomicDirectory(std::filesystem::path final_dir, const std::string& written_by = "gemmar");
  ~AtomicDirectory();  // removes the temp directory unless commit() succeeded
  AtomicDirectory(const AtomicDirectory&) = delete;
  AtomicDirectory& operator=(const AtomicDirectory&) = delete;
  const std::filesystem::path& path() const { return temp_; }
  // Renames the temp directory over final_dir. An existing final_dir is replaced only when it is empty or a
  // gemmar output holding nothing its manifest does not list (checked again here, so what appeared meanwhile is
  // not destroyed); of the old directory only the entries its manifest lists are removed.
  void commit();

 private:
  std::filesystem::path final_;
  std::filesystem::path temp_;
  bool committed_ = false;
};

}  // namespace gemmar
