// safetensors files (`gemmar verify`'s tensor dumps, validate/record/safetensors.hpp): the input is written to a temp
// file and opened; a file the reader accepts must have every tensor's bytes inside the mapping (each is read).
#include "fuzz_common.hpp"
#include "validate/record/safetensors.hpp"

GEMMAR_FUZZ_TARGET(safetensors) {
  using namespace gemmar;
  const std::string path = fuzz::write_temp(fuzz::as_string(data, size), ".safetensors");
  fuzz::expect_only_gemmar_errors([&] {
    const safetensors::File f = safetensors::File::open(path);
    volatile uint8_t sink = 0;
    for (const auto& name : f.names()) {
      const auto& t = f.tensor(name);
      const uint8_t* p = f.data(t);
      for (uint64_t i = 0; i < t.end - t.begin; ++i) sink = uint8_t(sink ^ p[i]);
    }
    (void)sink;
  });
  return 0;
}
