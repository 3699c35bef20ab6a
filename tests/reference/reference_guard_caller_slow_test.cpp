// The caller guard (reference/guard_caller.hpp) on the CPU emulation at mori's targets' N and K (slow tier): V4-Pro
// (blockscale, W = 8, N = 7168, K = 2048) and V4-Flash (mxfp8, W = 4, N = 5120, K = 2048), the benchmark's data and
// scales, one row in 32 as the serving guard reads them; every scatter x gather pair: clean calls with new inputs
// pass within the derived bounds (printed: the share of each bound they use), and every fault class is caught.
// M = 1024, the smallest M of both targets' row plans (W x BLOCK_M: 8 x 128 and 4 x 256): the bounds and the
// guard's reads depend on N and K; a fault class that checks every row emulates all M rows, which made M = 2048
// cost ~320 s per test on the 2-core CI machine. One test, so that the clean calls and the fault checks share
// each seed's weights (computed once per process: ctest runs each test in its own).
#include <gtest/gtest.h>

#include "guard_caller_fixture.hpp"

namespace {

using namespace gemmar;
using namespace gemmar::guard_caller_test;

const Target kPro{"V4-Pro", {1024, 7168, 2048, 8}, Quant::Blockscale, 32};
const Target kFlash{"V4-Flash", {1024, 5120, 2048, 4}, Quant::Mxfp8, 32};

TEST(ReferenceGuardCallerSlow, CleanCallsPassAndEveryFaultClassIsCaughtAtMorisTargets) {
  for (const Target& t : {kPro, kFlash})
    for (bool fp8_scatter : {false, true})
      for (bool fp8_gather : {false, true}) {
        expect_clean_calls_pass(t, fp8_scatter, fp8_gather, 2);
        expect_every_fault_caught(t, fp8_scatter, fp8_gather);
      }
}

}  // namespace
