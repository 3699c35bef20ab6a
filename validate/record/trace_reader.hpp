// Phase timings from a kernel trace: rocprofv3's kernel-trace CSV (Kernel_Name, Start_Timestamp,
// End_Timestamp in ns) or a Chrome-trace JSON as torch's profiler writes it ("ph":"X" events, ts/dur in us).
// Kernels are mapped to phases by name with ordered regexes: the first pattern that matches wins.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace gemmar {

struct PhasePattern {
  std::string phase;
  std::string regex;  // validate/record/phase_regex.hpp syntax (linear time), case-insensitive, searched anywhere
};

// The documented defaults (docs/check.md), most specific first.
const std::vector<PhasePattern>& default_phase_patterns();
// A phase map file: a JSON object {"phase": "regex", ...} (in file order) or lines "phase=REGEX"
// ('#' comments). UsageError naming the file and line on a bad entry or an invalid regex.
std::vector<PhasePattern> load_phase_map(const std::string& path);
// "phase=REGEX" (--phase-pattern): replaces that phase's pattern, or is tried first when the phase is new.
void apply_phase_override(std::vector<PhasePattern>& patterns, const std::string& spec);

struct TracePhases {
  std::string format;                       // "rocprofv3-csv" | "chrome-trace"
  std::map<std::string, double> phases_us;  // per iteration, max over devices
  int iterations = 0;                       // gemm launches per device (1 when the trace has no gemm)
  int devices = 0;
  int kernels_matched = 0, kernels_unmatched = 0;
  std::vector<std::string> unmatched_names;  // the first few, for the message
};

// UsageError naming the file (and line for CSV) when it cannot be read or has neither format.
TracePhases read_trace(const std::string& path, const std::vector<PhasePattern>& patterns);

// One kernel of a trace, on its own clock: rocprofv3's Agent_Id / Queue_Id and Start_Timestamp (ns, read as us),
// a Chrome trace's pid / tid and ts (us). `phase` is the first matching pattern's ("" when none matched).
struct TraceKernel {
  std::string device, stream, name, phase;
  double start_us = 0, dur_us = 0;
};
// The same, and every kernel (matched or not) in file order into `kernels` (gemmar report's timeline).
TracePhases read_trace(const std::string& path, const std::vector<PhasePattern>& patterns,
                       std::vector<TraceKernel>* kernels);

}  // namespace gemmar
