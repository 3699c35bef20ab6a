// `gemmar run --guard` on the CPU backend for the guard's tests: a request for a config label
// ("fused-sdma/fp8/sdma") and a fault list, every row checked, and the guard report of its run.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "validate/harness/run_driver.hpp"

namespace gemmar::guard_test {

inline RunRequest request(const std::string& label, const std::string& faults, int iterations = 4) {
  RunRequest req;
  req.shape = Shape{1024, 1024, 128, 8};
  Config c;
  std::vector<std::string> parts;
  std::string cur;
  for (char ch : label + "/") {
    if (ch == '/') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  c.mode = parse_mode(parts.at(0));
  if (parts.size() > 1) c.gather_dtype = parse_wire(parts[1]);
  if (parts.size() > 2) c.gather_transport = parse_transport(parts[2]);
  req.config = c;
  req.inject = parse_faults(faults);
  req.iterations = iterations;
  req.check_rows = 0;
  req.guard = true;
  return req;
}

inline GuardReport guard_of(const RunRequest& req) {
  auto be = make_cpu_backend();
  const RunOutcome o = run_and_check(*be, req);
  EXPECT_TRUE(o.record.guard.has_value());
  return o.record.guard.value_or(GuardReport{});
}

}  // namespace gemmar::guard_test
