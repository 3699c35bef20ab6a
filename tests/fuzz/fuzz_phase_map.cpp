// Phase maps (--phase-map FILE: a JSON object or "phase=REGEX" lines) and --phase-pattern overrides; a map
// that loads is then used to read a small real trace, so its regexes are compiled and searched too.
#include "fuzz_common.hpp"
#include "validate/record/trace_reader.hpp"

namespace {
const char* kTrace =
    "\"Kernel_Name\",\"Agent_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n"
    "\"_gemm_a8w8_blockscale_kernel<128, 256>\",1,1000,301000\n"
    "\"void mori::FusedReduceQuantize<__hip_bfloat16>(int, float*)\",1,301000,331000\n"
    "\"SdmaCopyKernel\",1,331000,341000\n"
    "\"gemm_ar_pull_dequant\",1,341000,381000\n";
}

GEMMAR_FUZZ_TARGET(phase_map) {
  using namespace gemmar;
  const std::string text = fuzz::as_string(data, size);
  const std::string map_path = fuzz::write_temp(text, ".phasemap");
  fuzz::expect_only_gemmar_errors([&] {
    std::vector<PhasePattern> p = load_phase_map(map_path);
    const std::string trace = fuzz::write_temp(kTrace, ".trace.csv");
    (void)read_trace(trace, p);
  });
  fuzz::expect_only_gemmar_errors([&] {
    std::vector<PhasePattern> p = default_phase_patterns();
    apply_phase_override(p, text.substr(0, text.find('\n')));
  });
  return 0;
}
