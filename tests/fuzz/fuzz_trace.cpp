// Kernel traces (rocprofv3 kernel-trace CSV or Chrome-trace JSON): read_trace takes a path, so the input is
// written to a temp file first; once as .csv and once as .json, since a reader may dispatch on either.
#include "fuzz_common.hpp"
#include "validate/record/trace_reader.hpp"

GEMMAR_FUZZ_TARGET(trace) {
  using namespace gemmar;
  const std::string text = fuzz::as_string(data, size);
  for (const char* suffix : {".csv", ".json"}) {
    const std::string path = fuzz::write_temp(text, suffix);
    fuzz::expect_only_gemmar_errors([&] { (void)read_trace(path, default_phase_patterns()); });
  }
  return 0;
}
