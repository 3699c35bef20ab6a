// The ctest fixture that derives, once per ctest run, the reference floors of every shape the judging tests
// use (the benchmark's 7168 x 2048 at W=8 for each quant, the CPU validate default 2048 x 512, the small
// shapes of the CLI tests) into GEMMAR_CACHE_DIR. A shape missing here is still derived on demand, only slower.
#include <cstdio>

#include "common/config.hpp"
#include "reference/floors.hpp"

int main() {
  using namespace gemmar;
  struct Case {
    int64_t n, k;
    int world;
    Quant quant;
  };
  const Case cases[] = {
      {7168, 2048, 8, Quant::Blockscale}, {7168, 2048, 8, Quant::Ptpc},      {7168, 2048, 8, Quant::Mxfp8},
      {2048, 512, 8, Quant::Blockscale},  {1024, 256, 4, Quant::Blockscale},
  };
  for (const Case& c : cases) {
    Shape s;
    s.n = c.n;
    s.k = c.k;
    s.world = c.world;
    s.m = 16384;  // verdict_rules::kFloorCanonicalM: the M every judged floor is derived at
    const auto& f = reference::cached_floors(s, c.quant);
    std::printf("N=%lld K=%lld W=%d %s: bf16 %.4g fp8 %.4g\n", (long long)c.n, (long long)c.k, c.world,
                to_string(c.quant).c_str(), f.bf16, f.fp8);
  }
  return 0;
}
