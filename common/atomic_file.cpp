#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

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
// Temp siblings of `target` left by runs that were killed (SIGKILL leaves no chance to clean up): named
// after a process that no longer exists. Removed so that interrupted runs do not accumulate.
void remove_dead_siblings(const fs::path& target) {
  fs::path parent = target.parent_path();
  if (parent.empty()) parent = ".";
  const std::string prefix = "." + target.filename().string() + ".tmp.";
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t digits = rest.find_first_not_of("0123456789");
    if (digits == 0 || rest.empty()) continue;
    const std::string tail = digits == std::string::npos ? "" : rest.substr(digits);
    if (!tail.empty() && tail != ".old") continue;
    const long pid = std::strtol(rest.substr(0, digits).c_str(), nullptr, 10);
    if (pid <= 0 || pid == long(::getpid())) continue;
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to judge)
    std::error_code rm;
    fs::remove_all(it->path(), rm);
  }
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

namespace {
// Lexically normal absolute form, symlinks of existing parents resolved: two spellings of one path compare equal.
fs::path canonical_form(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  if (ec) c = fs::absolute(p).lexically_normal();
  return c;
}

// `inner` is `outer` or lies below it.
bool is_within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

bool holds_manifest(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kOutputManifest, ec);
}

bool is_empty_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_empty(dir, ec) && !ec;
}
}  // namespace

void check_output_dir(const fs::path& out, const OutputDirCheck& check) {
  const std::string who = check.option + " " + out.string();
  if (out.empty()) throw UsageError(check.option + ": give a directory");
  const fs::path out_c = canonical_form(out);
  for (const auto& in : check.inputs) {
    if (in.empty() || in == "-") continue;
    const fs::path in_c = canonical_form(in);
    if (in_c == out_c) throw UsageError(who + ": is an input of this command; write the output to another directory");
    if (is_within(in_c, out_c))
      throw UsageError(who + ": holds the input " + in.string() + "; write the output to another directory");
  }
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(out, ec);
  if (ec || !fs::exists(st)) return;  // absent: created
  if (fs::is_symlink(st)) throw UsageError(who + ": is a symbolic link; give a real directory");
  if (fs::is_regular_file(st)) throw UsageError(who + ": is an existing file, not a directory; not replaced");
  if (!fs::is_directory(st)) throw UsageError(who + ": exists and is not a directory; not replaced");
  if (is_empty_dir(out)) return;
  if (!holds_manifest(out))
    throw UsageError(who + ": is a non-empty directory that gemmar did not write (no " + kOutputManifest +
                     "); not replaced, give a new or empty directory");
  if (!check.force) throw UsageError(who + ": holds a previous gemmar output; give --force to replace it");
}

AtomicDirectory::AtomicDirectory(fs::path final_dir, const std::string& written_by)
    : final_(std::move(final_dir)), temp_(temp_sibling(final_)) {
  std::error_code ec;
  if (!final_.parent_path().empty()) fs::create_directories(final_.parent_path(), ec);
  fs::remove_all(temp_, ec);
  remove_dead_siblings(final_);
  if (!fs::create_directories(temp_, ec) || ec)
    throw EnvironmentError("cannot create directory " + temp_.string() + ": " + ec.message());
  std::ofstream manifest(temp_ / kOutputManifest, std::ios::binary | std::ios::trunc);
  manifest << "{\"written_by\": \"" << written_by << "\", \"format\": 1}\n";
  if (!manifest) throw EnvironmentError("cannot write " + (temp_ / kOutputManifest).string());
}

AtomicDirectory::~AtomicDirectory() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(temp_, ec);
  }
}

void AtomicDirectory::commit() {
  std::error_code ec;
  {
    // The last guard: whatever stands at final_ now must be gemmar's (or empty) to be replaced.
    const fs::file_status st = fs::symlink_status(final_, ec);
    if (!ec && fs::exists(st) && !(fs::is_directory(st) && (is_empty_dir(final_) || holds_manifest(final_))))
      throw UsageError(final_.string() + ": exists and was not written by gemmar; not replaced");
    ec.clear();
  }
#ifdef RENAME_EXCHANGE
  // Linux: swap the new directory and the existing one in one step, so that no instant exists at which
  // final_ is missing (a kill between two renames would leave neither old nor new in place).
  if (fs::is_directory(final_, ec) &&
      ::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, final_.c_str(), RENAME_EXCHANGE) == 0) {
    committed_ = true;
    fs::remove_all(temp_, ec);  // now holds the old contents
    return;
  }
#endif
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
