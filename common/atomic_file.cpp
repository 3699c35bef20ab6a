#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

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

bool is_empty_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_empty(dir, ec) && !ec;
}

// 1: the marker alone (gemmar before the manifest); 2: marker and manifest.
constexpr int kOutputFormat = 2;

// A small JSON file gemmar wrote (marker or manifest); a discarded value when absent, not a regular file, too large
// or not JSON.
nlohmann::json read_small_json(const fs::path& p, size_t max_bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(p, ec)) || fs::file_size(p, ec) > max_bytes || ec)
    return nlohmann::json(nlohmann::json::value_t::discarded);
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

// The marker's writer ("gemmar validate") and format; written_by empty when the marker is absent or not gemmar's.
struct Marker {
  std::string written_by;
  int format = 0;
};
Marker read_marker(const fs::path& dir) {
  const nlohmann::json j = read_small_json(dir / kOutputMarker, 4096);
  Marker m;
  if (!j.is_object() || !j.contains("written_by") || !j["written_by"].is_string() || !j.contains("format") ||
      !j["format"].is_number_integer())
    return m;
  const std::string by = j["written_by"].get<std::string>();
  const int format = j["format"].get<int>();
  if (by.rfind("gemmar", 0) != 0 || format < 1 || format > kOutputFormat) return m;
  m.written_by = by;
  m.format = format;
  return m;
}

// A manifest entry names a path below the directory: relative, without "." or ".." components.
bool safe_entry(const std::string& e) {
  if (e.empty() || e.front() == '/') return false;
  for (const auto& part : fs::path(e)) {
    if (part == "." || part == "..") return false;
  }
  return true;
}

std::optional<std::set<std::string>> read_manifest(const fs::path& dir) {
  const nlohmann::json j = read_small_json(dir / kOutputManifest, size_t(64) << 20);
  if (!j.is_object() || !j.contains("entries") || !j["entries"].is_array()) return std::nullopt;
  std::set<std::string> listed;
  for (const auto& e : j["entries"]) {
    if (!e.is_string() || !safe_entry(e.get<std::string>())) return std::nullopt;
    listed.insert(e.get<std::string>());
  }
  return listed;
}

// Outputs of a gemmar before the manifest (marker format 1) hold a fixed layout per writer: those names only.
std::set<std::string> legacy_listed(const fs::path& dir, const std::string& written_by, const std::string& prefix) {
  std::set<std::string> listed;
  if (written_by == "gemmar report") {
    for (const char* f : {"index.html", "runs.html", "phases.html", "report.json", "manifest.json"})
      listed.insert(prefix + f);
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".png") listed.insert(prefix + it->path().filename().string());
    listed.insert(prefix + "timeline/");  // run-<i>.json, one per traced run
    for (fs::directory_iterator it(dir / "timeline", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.rfind("run-", 0) == 0 && it->path().extension() == ".json") listed.insert(prefix + "timeline/" + name);
    }
  } else if (written_by == "gemmar validate") {
    listed.insert({prefix + "results.json", prefix + "runs.log"});
    const Marker sub = read_marker(dir / "report");
    if (sub.written_by == "gemmar report" && sub.format == 1) {
      listed.insert({prefix + "report/", prefix + "report/" + kOutputMarker});
      for (const auto& e : legacy_listed(dir / "report", sub.written_by, prefix + "report/")) listed.insert(e);
    }
  }
  return listed;
}

// Every entry below `dir` (relative; directories end in '/'), split into those `listed` names and the others. An
// unlisted directory is one foreign entry (what it holds is not walked).
void sort_entries(const fs::path& dir, const std::set<std::string>& listed, OutputDirState& st) {
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(dir).generic_string();
    if (it.depth() == 0 && (rel == kOutputMarker || rel == kOutputManifest)) continue;
    std::error_code sec;
    const bool is_dir = fs::is_directory(it->symlink_status(sec));
    const std::string key = is_dir ? rel + "/" : rel;
    if (listed.count(key)) {
      st.own.push_back(key);
      continue;
    }
    st.foreign.push_back(key);
    if (is_dir) it.disable_recursion_pending();
  }
  if (ec) throw EnvironmentError("cannot list " + dir.string() + ": " + ec.message());
}

std::string foreign_list(const std::vector<std::string>& foreign) {
  std::string s;
  for (size_t i = 0; i < foreign.size() && i < 10; ++i) s += (i ? ", " : "") + foreign[i];
  if (foreign.size() > 10) s += ", ... (" + std::to_string(foreign.size()) + " in all)";
  return s;
}

// Why `dir` may not be replaced even with --force; "" when it may.
std::string replace_refusal(const fs::path& dir) {
  const OutputDirState st = inspect_output_dir(dir);
  if (!st.gemmars)
    return "is a non-empty directory that gemmar did not write (" + st.why_not +
           "); not replaced, give a new or empty directory";
  if (!st.foreign.empty())
    return "holds what gemmar did not write: " + foreign_list(st.foreign) +
           "; not replaced (--force replaces only what gemmar listed in " + kOutputManifest +
           "): move those out, or give another directory";
  return "";
}

// Removes the entries of `own` (deepest first: a reverse sort puts a directory's entries before it), the marker and
// the manifest, then `dir` when that left it empty. What is not listed stays: a directory holding it is kept.
void remove_listed(const fs::path& dir, std::vector<std::string> own) {
  std::sort(own.rbegin(), own.rend());
  std::error_code ec;
  for (const auto& e : own) fs::remove(dir / e, ec);  // a directory goes only when empty
  fs::remove(dir / kOutputManifest, ec);
  fs::remove(dir / kOutputMarker, ec);
  fs::remove(dir, ec);
}

// The old output, moved aside at `old`: its listed entries removed; anything else (written into it while this run
// was replacing it) kept under a name no cleanup removes, and said.
void dispose_old_output(const fs::path& old, const fs::path& final_dir, const std::vector<std::string>& own) {
  remove_listed(old, own);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(old, ec))) return;
  const fs::path kept = final_dir.string() + ".kept." + std::to_string(::getpid());
  fs::rename(old, kept, ec);
  std::cerr << "gemmar: " << final_dir.string() << " was replaced; what gemmar had not written in it is kept in "
            << (ec ? old : kept).string() << "\n";
}

// Everything below `dir` but its marker and manifest: what the manifest of a directory gemmar just built lists.
std::vector<std::string> list_entries(const fs::path& dir) {
  std::vector<std::string> all;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(dir).generic_string();
    if (it.depth() == 0 && (rel == kOutputMarker || rel == kOutputManifest)) continue;
    std::error_code sec;
    all.push_back(fs::is_directory(it->symlink_status(sec)) ? rel + "/" : rel);
  }
  if (ec) throw EnvironmentError("cannot list " + dir.string() + ": " + ec.message());
  std::sort(all.begin(), all.end());
  return all;
}
}  // namespace

OutputDirState inspect_output_dir(const fs::path& dir) {
  OutputDirState st;
  const Marker m = read_marker(dir);
  std::error_code ec;
  if (m.written_by.empty()) {
    st.why_not = fs::exists(fs::symlink_status(dir / kOutputMarker, ec))
                     ? std::string("its ") + kOutputMarker + " is not a marker gemmar wrote"
                     : std::string("no ") + kOutputMarker;
    return st;
  }
  std::set<std::string> listed;
  if (const auto manifest = read_manifest(dir)) {
    listed = *manifest;
  } else if (m.format == 1 && !fs::exists(fs::symlink_status(dir / kOutputManifest, ec))) {
    listed = legacy_listed(dir, m.written_by, "");
  } else {
    st.why_not = std::string("its ") + kOutputManifest + ", the list of what gemmar wrote there, is " +
                 (fs::exists(fs::symlink_status(dir / kOutputManifest, ec)) ? "damaged" : "missing");
    return st;
  }
  st.gemmars = true;
  sort_entries(dir, listed, st);
  std::sort(st.foreign.begin(), st.foreign.end());
  return st;
}

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
  const std::string refusal = replace_refusal(out);
  if (!refusal.empty()) throw UsageError(who + ": " + refusal);
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
  std::ofstream marker(temp_ / kOutputMarker, std::ios::binary | std::ios::trunc);
  marker << nlohmann::json{{"written_by", written_by}, {"format", kOutputFormat}}.dump() << "\n";
  if (!marker) throw EnvironmentError("cannot write " + (temp_ / kOutputMarker).string());
}

AtomicDirectory::~AtomicDirectory() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(temp_, ec);
  }
}

void AtomicDirectory::commit() {
  write_file_atomic(temp_ / kOutputManifest,
                    nlohmann::json{{"format", kOutputFormat}, {"entries", list_entries(temp_)}}.dump(1) + "\n");
  std::error_code ec;
  // The last guard: whatever stands at final_ now must be empty or gemmar's alone to be replaced; of it, only what
  // its manifest lists is removed.
  std::vector<std::string> old_own;
  const fs::file_status st = fs::symlink_status(final_, ec);
  const bool exists = !ec && fs::exists(st);
  ec.clear();
  if (exists) {
    if (!fs::is_directory(st)) throw UsageError(final_.string() + ": exists and is not a directory; not replaced");
    if (!is_empty_dir(final_)) {
      const std::string refusal = replace_refusal(final_);
      if (!refusal.empty()) throw UsageError(final_.string() + ": " + refusal);
      old_own = inspect_output_dir(final_).own;
    }
  }
#ifdef RENAME_EXCHANGE
  // Linux: swap the new directory and the existing one in one step, so that no instant exists at which
  // final_ is missing (a kill between two renames would leave neither old nor new in place).
  if (exists && ::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, final_.c_str(), RENAME_EXCHANGE) == 0) {
    committed_ = true;
    dispose_old_output(temp_, final_, old_own);  // temp_ now holds the old contents
    return;
  }
#endif
  // An existing output directory is first moved aside, then what it listed removed.
  fs::path old;
  if (exists) {
    old = temp_sibling(final_).string() + ".old";
    fs::remove_all(old, ec);
    fs::rename(final_, old, ec);
    if (ec) throw EnvironmentError("cannot replace " + final_.string() + ": " + ec.message());
  }
  fs::rename(temp_, final_, ec);
  if (ec) throw EnvironmentError("cannot rename " + temp_.string() + " to " + final_.string() + ": " + ec.message());
  committed_ = true;
  if (!old.empty()) dispose_old_output(old, final_, old_own);
}

}  // namespace gemmar
