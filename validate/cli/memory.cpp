#include "validate/cli/memory.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "common/errors.hpp"
#include "validate/harness/verify_files.hpp"

namespace gemmar::cli {

namespace {

std::optional<int64_t> read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  char* end = nullptr;
  const long long v = std::strtoll(word.c_str(), &end, 10);
  if (!end || *end || v < 0) return std::nullopt;
  return int64_t(v);
}

// The tightest limit of this process's cgroup and its ancestors (v2), or of the v1 memory controller: limit less usage.
std::optional<int64_t> cgroup_room() {
  std::optional<int64_t> room;
  auto consider = [&](const std::string& limit, const std::string& usage) {
    const auto l = read_number(limit), u = read_number(usage);
    if (l && u && *l < (int64_t(1) << 50)) room = std::min(room.value_or(*l - *u), std::max<int64_t>(0, *l - *u));
  };
  std::ifstream cg("/proc/self/cgroup");
  for (std::string line; std::getline(cg, line);) {
    if (line.rfind("0::", 0) != 0) continue;
    for (std::string dir = line.substr(3);; dir = dir.substr(0, dir.rfind('/'))) {
      consider("/sys/fs/cgroup" + dir + "/memory.max", "/sys/fs/cgroup" + dir + "/memory.current");
      if (dir.empty() || dir == "/") break;
    }
  }
  consider("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes");
  return room;
}

// "17179869184", "16G", "16GiB", "512M".
int64_t parse_limit(const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  std::string unit = end ? end : "?";
  for (const char* tail : {"iB", "B"})
    if (unit.size() > std::string(tail).size() && unit.substr(1) == tail) unit = unit.substr(0, 1);
  const size_t at = unit.size() == 1 ? std::string("KMGT").find(char(std::toupper(unit[0]))) : 0;
  GEMMAR_USAGE_CHECK(x > 0 && unit.size() <= 1 && at != std::string::npos, "GEMMAR_MEMORY_LIMIT: '", v,
                     "' is not a size (bytes, or with K, M, G, T: e.g. 512M, 16G)");
  const size_t power = unit.empty() ? 0 : at + 1;
  return int64_t(x * double(int64_t(1) << (10 * power)));
}

}  // namespace

AvailableMemory available_memory() {
  if (const char* v = std::getenv("GEMMAR_MEMORY_LIMIT"); v && *v) return {parse_limit(v), "GEMMAR_MEMORY_LIMIT"};
  AvailableMemory a{std::numeric_limits<int64_t>::max(), ""};
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    int64_t kib = 0;
    meminfo >> kib;
    if (key == "MemAvailable:") a = {kib * 1024, "MemAvailable"};
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  if (const auto room = cgroup_room(); room && *room < a.bytes) a = {*room, "the cgroup's memory limit"};
  return a;
}

std::string memory_text(int64_t bytes) {
  char buf[32];
  if (bytes >= (int64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(int64_t(1) << 30));
  else
    std::snprintf(buf, sizeof buf, "%.0f MiB", double(bytes) / double(1 << 20));
  return buf;
}

void require_plan_memory(const RunPlan& plan) {
  const int64_t need = plan_memory_bytes(plan);
  const AvailableMemory avail = available_memory();
  if (need <= avail.bytes) return;
  std::string fits = "no --check-rows fits: a smaller -n, -k or --world, or a machine with more memory";
  RunPlan smaller = plan;
  const int64_t m = *std::max_element(plan.m_values.begin(), plan.m_values.end());
  const int64_t now = plan.request.check_rows == 0 ? m : std::min(plan.request.check_rows, m);
  int64_t rows = 1;
  while (rows * 2 < now) rows *= 2;
  for (; rows >= 1; rows /= 2) {
    smaller.request.check_rows = rows;
    const int64_t est = plan_memory_bytes(smaller);
    if (est > avail.bytes) continue;
    fits = "--check-rows " + std::to_string(rows) + " fits (about " + memory_text(est) + ")";
    break;
  }
  throw UsageError("needs about " + memory_text(need) + " of memory (--check-rows " +
                   std::to_string(plan.request.check_rows) + (plan.request.check_rows == 0 ? ": every row" : "") +
                   " at M=" + std::to_string(m) + ", N=" + std::to_string(plan.request.shape.n) +
                   ", W=" + std::to_string(plan.request.shape.world) + "), more than the " + memory_text(avail.bytes) +
                   " available (" + avail.source + "); " + fits);
}

int64_t verify_memory_bytes(int world, int64_t n, int64_t k, int64_t file_rows, int64_t check_rows) {
  const double W = world, N = double(n), K = double(k);
  const double rows = double(std::min<int64_t>(check_rows == 0 ? file_rows : std::min(check_rows, file_rows), 512));
  return int64_t((64 << 20) + 5 * W * N * K + 16 * W * rows * N);
}

void require_verify_memory(const std::vector<std::vector<std::string>>& groups, int64_t check_rows) {
  int64_t need = 0;
  std::string at;
  for (const auto& g : groups) {
    const dump::DumpRun run = dump::open_run(g);
    const dump::RankFile& f = run.rank(0);
    const int64_t est = verify_memory_bytes(f.world, f.n, f.k, f.file_rows, check_rows);
    if (est > need) {
      need = est;
      at = f.file.path();
    }
  }
  const AvailableMemory avail = available_memory();
  if (need <= avail.bytes) return;
  throw UsageError(at + ": verifying it needs about " + memory_text(need) + " of memory, more than the " +
                   memory_text(avail.bytes) + " available (" + avail.source +
                   "); a smaller --check-rows lowers it only below 512 rows, the rest is every rank's B");
}

}  // namespace gemmar::cli
