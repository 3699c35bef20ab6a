// Outputs are written to a temp file beside the target and renamed into place, so an interrupted run
// never leaves a half-written file (POSIX rename is atomic within one filesystem).
#pragma once
#include <filesystem>
#include <string>

namespace gemmar {

// Throws EnvironmentError naming the path when the write or the rename fails.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

// Build a directory in a temp sibling and rename it over `final_dir` once complete.
class AtomicDirectory {
 public:
  explicit AtomicDirectory(std::filesystem::path final_dir);
  ~AtomicDirectory();  // removes the temp directory unless commit() succeeded
  AtomicDirectory(const AtomicDirectory&) = delete;
  AtomicDirectory& operator=(const AtomicDirectory&) = delete;
  const std::filesystem::path& path() const { return temp_; }
  void commit();

 private:
  std::filesystem::path final_;
  std::filesystem::path temp_;
  bool committed_ = false;
};

}  // namespace gemmar
