// The caller guard (reference/guard_caller.hpp) on the CPU emulation at mori's targets' N and K (slow tier): V4-Pro
// (blockscale, W = 8, N = 7168, K = 2048) and V4-Flash (mxfp8, W = 4, N = 5120, K = 2048), the benchmark's data and
// scales, one row in 32 as the serving guard reads them; every scatter x gather pair: clean calls with new inputs
// pass within the derived bounds (printed: the share of each bound they use), and every fault class is caught.
#include <gtest/gtest.h>

#include "guard_caller_fixture.hpp"

namespace {

using namespace gemmar;
using namespace gemmar::guard_caller_test;

const Target kPro{"V4-Pro", {2048, 7168, 2048, 8}, Quant::Blockscale, 32};
const Target kFlash{"V4-Flash", {2048, 5120, 2048, 4}, Quant::Mxfp8, 32};

TEST(ReferenceGuardCallerSlow, CleanCallsPassAtMorisTargets) {
  for (const Target& t : {kPro, kFlash})
    for (bool fp8_scatter : {false, true})
      for (bool fp8_gather : {false, true}) expect_clean_calls_pass(t, fp8_scatter, fp8_gather, 2);
}

TEST(ReferenceGuardCallerSlow, EveryFaultClassIsCaughtAtMorisTargets) {
  for (const Target& t : {kPro, kFlash})
    for (bool fp8_scatter : {false, true})
      for (bool fp8_gather : {false, true}) expect_every_fault_caught(t, fp8_scatter, fp8_gather);
}

}  // namespace
