// The transport self-test's pieces shared by `gemmar selftest` and `gemmar validate` (its first step).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/harness/run_driver.hpp"

namespace gemmar::cli {

// Every collective config of all_configs(base) (gemm-only moves nothing), one self-test each.
std::vector<SelftestResult> selftest_all(Backend&, const Shape&, const Config& base, const Faults&);
// The self-test's shape: one BLOCK_M of rows per rank, N 1024, K 128.
Shape selftest_shape(int world, Quant);
std::string selftest_report(const std::vector<SelftestResult>&);  // one line per config (+ the leg on failure)
nlohmann::json selftest_json(const std::vector<SelftestResult>&);

}  // namespace gemmar::cli
