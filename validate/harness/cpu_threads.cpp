#include "validate/harness/cpu_threads.hpp"

#include <unistd.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

namespace gemmar {

namespace {

// Clock ticks (USER_HZ) since boot, summed over every CPU.
struct CpuTimes {
  double busy = 0;   // user, system, irq, softirq, steal: other processes' and this one's
  double niced = 0;  // nice: processes at a positive nice value
  double total = 0;  // every column (idle and iowait too)
  double self = 0;   // this process's utime + stime
  int cpus = 0;      // the cpuN lines
  std::chrono::steady_clock::time_point at;
  bool ok = false;
};

CpuTimes read_cpu_times() {
  CpuTimes t;
  t.at = std::chrono::steady_clock::now();
  std::ifstream stat("/proc/stat");
  std::string line;
  while (std::getline(stat, line)) {
    if (line.rfind("cpu", 0) != 0) break;
    if (line.rfind("cpu ", 0) != 0) {
      ++t.cpus;
      continue;
    }
    std::istringstream in(line.substr(4));
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    in >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    if (!in) return t;
    t.busy = user + system + irq + softirq + steal;
    t.niced = nice;
    t.total = t.busy + nice + idle + iowait;
  }
  // /proc/self/stat: "pid (comm) state ..."; utime and stime are fields 14 and 15, the 12th and 13th after ')'.
  std::ifstream self("/proc/self/stat");
  std::string s((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  const size_t close = s.rfind(')');
  if (close == std::string::npos) return t;
  std::istringstream in(s.substr(close + 1));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 1; i <= 13 && in >> field; ++i) {
    if (i == 12) utime = std::atof(field.c_str());
    if (i == 13) stime = std::atof(field.c_str());
  }
  t.self = utime + stime;
  t.ok = t.cpus > 0 && t.total > 0;
  return t;
}

}  // namespace

int fit_threads_to_free_cores() {
  const char* user = std::getenv("OMP_NUM_THREADS");
  if (user && *user) return 0;
  static std::mutex mutex;
  static CpuTimes last;
  std::lock_guard<std::mutex> lock(mutex);
  if (!last.ok) {
    last = read_cpu_times();
    if (!last.ok) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const CpuTimes now = read_cpu_times();
  if (!now.ok || now.total - last.total <= 0) return 0;
  const double ticks_per_cpu = (now.total - last.total) / now.cpus;
  // Every other process's time counts, niced or not: beside ~16 niced compiler processes on the 2-core machine
  // `gemmar validate` took 55-58 s on one thread and 73-78 s on two (2026-12-07), the second thread's share of a
  // crowded core costing more in barrier waits than it computes.
  const double others =
      std::max(0.0, (now.busy - last.busy) + (now.niced - last.niced) - (now.self - last.self)) / ticks_per_cpu;
  last = now;
  const int usable = std::max(1, omp_get_num_procs());
  const int threads = std::clamp(int(std::lround(now.cpus - others)), 1, usable);
  omp_set_num_threads(threads);
  return threads;
}

}  // namespace gemmar
