// The memory estimate before `gemmar run`, `validate` and `verify` start: a job that needs more than the machine has
// is refused up front (exit 2) with the estimate and an option that fits, instead of running for minutes and being
// killed by the OOM killer (issue 47: `run -m 16384 --check-rows 0` on the 24 GB machine). The estimates:
// harness/run_plan.hpp plan_memory_bytes, and verify_memory_bytes below (docs/reliability.md "Memory").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "validate/harness/run_plan.hpp"

namespace gemmar::cli {

struct AvailableMemory {
  int64_t bytes = 0;
  std::string source;  // "MemAvailable", "the cgroup's memory.max", "GEMMAR_MEMORY_LIMIT"
};
// GEMMAR_MEMORY_LIMIT when set (bytes, or with a K, M, G or T suffix: powers of 1024; UsageError naming the
// variable otherwise); else /proc/meminfo's MemAvailable, or the cgroup's limit less its usage where lower.
AvailableMemory available_memory();

// "28.9 GiB", "512 MiB".
std::string memory_text(int64_t bytes);

// UsageError when the plan's estimate exceeds the memory available, naming both and the largest --check-rows
// (a power of two) that fits.
void require_plan_memory(const RunPlan& plan);

// What `gemmar verify` holds for one run of W rank files of N x K (B), `rows` of them in the relL2 (0: every row
// the files hold, `file_rows`): 64 MiB + 5 W N K (each rank's B, its codes and their fp32 values) + 16 W min(rows,
// 512) N (a block of the streamed relL2 and the element checks' chunks). Measured peaks lie below it
// (docs/reliability.md "Memory").
int64_t verify_memory_bytes(int world, int64_t n, int64_t k, int64_t file_rows, int64_t check_rows);
// UsageError when verifying the groups would need more than the memory available.
void require_verify_memory(const std::vector<std::vector<std::string>>& groups, int64_t check_rows);

}  // namespace gemmar::cli
