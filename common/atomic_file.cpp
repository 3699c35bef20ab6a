#include "common/atomic_file.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <system_error>

#include "common/errors.hpp"

namespace gemmar {
namespace fs = std::filesystem;

namespace {
fs::path temp_sibling(const fs::path& target) {
  fs::path parent = target.parent_path();
  if (parent.empty()) parent = ".";
  return parent / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
}
}  // namespace

void write_file_atomic(const fs::path& path, const std::string& content) {
  const fs::path tmp = temp_sibling(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw EnvironmentError("cannot write " + tmp.string() + " (for " + path.string() + ")");
    out.write(content.data(), std::streamsize(content.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw EnvironmentError("write failed: " + path.string());
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw EnvironmentError("cannot rename into place: " + path.string() + ": " + ec.message());
  }
}

AtomicDirectory::AtomicDirectory(fs::path final_dir) : final_(std::move(final_dir)), temp_(temp_sibling(final_)) {
  std::error_code ec;
  if (!final_.parent_path().empty()) fs::create_directories(final_.parent_path(), ec);
  fs::remove_all(temp_, ec);
  if (!fs::create_directories(temp_, ec) || ec)
    throw EnvironmentError("cannot create directory " + temp_.string() + ": " + ec.message());
}

AtomicDirectory::~AtomicDirectory() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(temp_, ec);
  }
}

void AtomicDirectory::commit() {
  std::error_code ec;
  // An existing output directory is replaced whole: first moved aside, then removed.
  fs::path old;
  if (fs::exists(final_)) {
    old = temp_sibling(final_).string() + ".old";
    fs::remove_all(old, ec);
    fs::rename(final_, old, ec);
    if (ec) throw EnvironmentError("cannot replace " + final_.string() + ": " + ec.message());
  }
  fs::rename(temp_, final_, ec);
  if (ec) throw EnvironmentError("cannot rename " + temp_.string() + " to " + final_.string() + ": " + ec.message());
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace gemmar
