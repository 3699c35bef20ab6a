// gemmar report's timelines: where each phase ran in time, measured beside the model, overlap visible. Per group
// the lanes the phase figure draws; per run a Chrome-trace / Perfetto document in the Trace Event Format ("X"
// complete events, ts and dur in us, one process per rank, one thread per stream, "M" metadata events naming them)
// written to timeline/run-<i>.json of the report directory. docs/report.md, "Timelines".
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.hpp"
#include "validate/record/trace_reader.hpp"

namespace gemmar::report {

// One iteration of a kernel trace, every device and stream: the iteration whose span (first GEMM start to the last
// kernel's end, over the devices) is the median of the trace's iterations, which start at each device's GEMM
// launches (the whole trace when it has no GEMM). {file, format, iterations, iteration, devices: [...], kernels:
// [[device, stream, name, phase, ts, dur]]}, ts from the iteration's first GEMM start.
nlohmann::json trace_iteration(const std::vector<TraceKernel>&, const std::string& file, const std::string& format);

// The measured phases [[name, us]] laid end to end in pipeline order, then "unattributed" up to `total_us`
// when the phases leave a gap: [[name, start, dur]].
nlohmann::json measured_lane(const nlohmann::json& phases, std::optional<double> total_us);

// A group's lanes: {measured, model, overlap, overlap_label}. model: the model's phases end to end (its order);
// overlap: the part of a fused config's scatter that ran under the GEMM (fused-sdma: the split scatter's leg of the
// same model ending where the drain ends, never before the GEMM starts; fused-lsa: the epilogue's stores to the
// peers, the whole GEMM), on its own lane.
nlohmann::json group_lanes(const nlohmann::json& measured, std::optional<double> total_us, const nlohmann::json& model,
                           const std::string& profile, const Shape&, const Config&);

// The Trace Event Format document of run `index` of a report document (build_report_document's).
nlohmann::json run_timeline(const nlohmann::json& doc, size_t index);

// timeline/run-<i>.json for every run of `doc` under `dir` (the runs' "timeline" fields name them).
void write_timelines(const nlohmann::json& doc, const std::filesystem::path& dir);

}  // namespace gemmar::report
