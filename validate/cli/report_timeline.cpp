#include "validate/cli/report_timeline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "common/atomic_file.hpp"
#include "validate/cli/report_model.hpp"

namespace gemmar::report {
namespace {
using json = nlohmann::json;

// Device and stream ids sort as numbers when they are ("10" after "9").
bool id_less(const std::string& a, const std::string& b) {
  const bool na = !a.empty() && a.find_first_not_of("0123456789") == std::string::npos && a.size() < 15;
  const bool nb = !b.empty() && b.find_first_not_of("0123456789") == std::string::npos && b.size() < 15;
  if (na && nb) return std::stoll(a) < std::stoll(b);
  if (na != nb) return na;
  return a < b;
}

struct DeviceKernels {
  std::vector<const TraceKernel*> kernels;  // by start
  std::vector<double> gemm_starts;          // iteration boundaries
};

std::map<std::string, DeviceKernels> by_device(const std::vector<TraceKernel>& ks) {
  std::map<std::string, DeviceKernels> out;
  for (const auto& k : ks) out[k.device].kernels.push_back(&k);
  for (auto& [dev, d] : out) {
    std::stable_sort(d.kernels.begin(), d.kernels.end(),
                     [](const TraceKernel* a, const TraceKernel* b) { return a->start_us < b->start_us; });
    for (const auto* k : d.kernels)
      if (k->phase == "gemm") d.gemm_starts.push_back(k->start_us);
  }
  return out;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// [begin, end) of iteration i on one device (the whole trace when it launched no GEMM).
std::pair<double, double> window(const DeviceKernels& d, size_t i) {
  if (d.gemm_starts.empty()) return {-kInf, kInf};
  return {d.gemm_starts[i], i + 1 < d.gemm_starts.size() ? d.gemm_starts[i + 1] : kInf};
}

}  // namespace

json trace_iteration(const std::vector<TraceKernel>& ks, const std::string& file, const std::string& format) {
  const auto devs = by_device(ks);
  size_t iterations = 0;
  for (const auto& [dev, d] : devs)
    if (!d.gemm_starts.empty())
      iterations = iterations ? std::min(iterations, d.gemm_starts.size()) : d.gemm_starts.size();
  auto in_iteration = [&](const DeviceKernels& d, size_t i, const TraceKernel* k) {
    const auto [b, e] = iterations ? window(d, i) : std::pair{-kInf, kInf};
    return k->start_us >= b && k->start_us < e;
  };
  // Each iteration's span over the devices: from its earliest kernel start to its latest kernel end.
  auto bounds = [&](size_t i) {
    double t0 = kInf, t1 = -kInf;
    for (const auto& [dev, d] : devs)
      for (const auto* k : d.kernels)
        if (in_iteration(d, i, k)) {
          t0 = std::min(t0, k->start_us);
          t1 = std::max(t1, k->start_us + k->dur_us);
        }
    return std::pair{t0, t1};
  };
  std::vector<std::pair<double, size_t>> spans;
  for (size_t i = 0; i < std::max<size_t>(iterations, 1); ++i) spans.push_back({bounds(i).second - bounds(i).first, i});
  std::sort(spans.begin(), spans.end());
  const size_t pick = spans[(spans.size() - 1) / 2].second;
  const double t0 = bounds(pick).first;
  std::vector<std::string> names;
  for (const auto& [dev, d] : devs) names.push_back(dev);
  std::sort(names.begin(), names.end(), id_less);
  json kernels = json::array(), devices = json::array();
  for (const auto& dev : names) {
    devices.push_back(dev);
    for (const auto* k : devs.at(dev).kernels)
      if (in_iteration(devs.at(dev), pick, k))
        kernels.push_back({k->device, k->stream, k->name, k->phase, k->start_us - t0, std::max(0.0, k->dur_us)});
  }
  return {{"file", file},      {"format", format},   {"iterations", std::max<size_t>(iterations, 1)},
          {"iteration", pick}, {"devices", devices}, {"kernels", kernels}};
}

json measured_lane(const json& phases, std::optional<double> total_us) {
  json lane = json::array();
  double t = 0;
  for (const auto& ph : phases) {
    const double us = ph[1].get<double>();
    lane.push_back({ph[0], t, us});
    t += us;
  }
  if (!phases.empty() && total_us && *total_us > t) lane.push_back({"unattributed", t, *total_us - t});
  return lane;
}

namespace {

// [start, end] of the named phase in a lane, when it is there.
std::optional<std::pair<double, double>> span_of(const json& lane, const char* name) {
  for (const auto& seg : lane)
    if (seg[0] == name) return std::pair{seg[1].get<double>(), seg[1].get<double>() + seg[2].get<double>()};
  return std::nullopt;
}

}  // namespace

json group_lanes(const json& measured, std::optional<double> total_us, const json& model, const std::string& profile,
                 const Shape& shape, const Config& cfg) {
  json out = {{"measured", measured_lane(measured, total_us)},
              {"model", json::array()},
              {"overlap", json::array()},
              {"overlap_label", ""}};
  if (!model.is_object() || !model.contains("phases")) return out;
  out["model"] = measured_lane(model.at("phases"), std::nullopt);
  const auto gemm = span_of(out["model"], "gemm");
  // Below the profile's fused_min_m the model runs the split pipeline (fused_engaged false): nothing overlaps.
  const bool engaged = !model.contains("fused_engaged") || model.at("fused_engaged") != false;
  if (!is_fused(cfg.mode) || !gemm || !engaged) return out;
  if (!traits(cfg.mode).scatter_by_copy_engine) {
    // fused-lsa: the epilogue stores each tile into its peer as it goes; the model's GEMM phase includes them.
    out["overlap"].push_back({"scatter", gemm->first, gemm->second - gemm->first});
    out["overlap_label"] = "epilogue: stores to the peers (inside the GEMM)";
    return out;
  }
  // fused-sdma: the puts move what the split scatter moves, at its rate; they end when the drain ends.
  Config split = cfg;
  split.mode = Mode::SplitSdma;
  const ModelResult sr = model_for(profile, shape, split);
  const auto drain = span_of(out["model"], "drain");
  if (sr.model.is_null() || !drain) return out;
  const auto scatter = span_of(measured_lane(sr.model.at("phases"), std::nullopt), "scatter");
  if (!scatter) return out;
  const double begin = std::max(gemm->first, drain->second - (scatter->second - scatter->first));
  out["overlap"].push_back({"scatter", begin, drain->second - begin});
  out["overlap_label"] = "copy engines: the scatter's puts (split-sdma's leg, ending with the drain)";
  return out;
}

namespace {

struct Tracks {
  json events = json::array();
  void process(int pid, const std::string& name) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}});
    events.push_back(
        {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", pid}}}});
  }
  void thread(int pid, int tid, const std::string& name) {
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
  }
  void slice(int pid, int tid, const std::string& name, const std::string& cat, double ts, double dur,
             json args = json::object()) {
    events.push_back({{"ph", "X"},
                      {"name", name},
                      {"cat", cat},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", std::round(ts * 1e3) / 1e3},  // ns resolution: the traces' own
                      {"dur", std::round(std::max(0.0, dur) * 1e3) / 1e3},
                      {"args", std::move(args)}});
  }
  void lane(int pid, int tid, const json& segs, const std::string& cat) {
    for (const auto& s : segs) slice(pid, tid, s[0].get<std::string>(), cat, s[1].get<double>(), s[2].get<double>());
  }
};

// The trace's kernels: one process per device (per rank when there is one device per rank), one thread per stream.
int trace_tracks(Tracks& t, const json& trace, int world) {
  const json& devices = trace.at("devices");
  const bool per_rank = int(devices.size()) == world;
  std::map<std::string, std::map<std::string, int>> streams;  // device -> stream -> tid
  for (const auto& k : trace.at("kernels")) streams[k[0].get<std::string>()][k[1].get<std::string>()] = 0;
  for (size_t p = 0; p < devices.size(); ++p) {
    const std::string dev = devices[p].get<std::string>();
    t.process(int(p), per_rank ? "rank " + std::to_string(p) + " (trace device " + dev + ")"
                               : "device " + dev + " (" + std::to_string(world) + " ranks on " +
                                     std::to_string(devices.size()) + " device(s))");
    std::vector<std::string> ids;
    for (auto& [s, tid] : streams[dev]) ids.push_back(s);
    std::sort(ids.begin(), ids.end(), id_less);
    for (size_t i = 0; i < ids.size(); ++i) {
      streams[dev][ids[i]] = int(i);
      t.thread(int(p), int(i), "stream " + ids[i]);
    }
  }
  for (const auto& k : trace.at("kernels")) {
    const std::string dev = k[0].get<std::string>(), phase = k[3].get<std::string>();
    const auto pos = std::find(devices.begin(), devices.end(), json(dev)) - devices.begin();
    t.slice(int(pos), streams[dev][k[1].get<std::string>()], phase.empty() ? k[2].get<std::string>() : phase,
            phase.empty() ? "kernel (no phase)" : "measured kernel", k[4].get<double>(), k[5].get<double>(),
            {{"kernel", k[2]}, {"phase", phase}});
  }
  return int(devices.size());
}

}  // namespace

json run_timeline(const json& doc, size_t index) {
  const json& run = doc.at("runs").at(index);
  const json& group = doc.at("groups").at(run.at("group").get<size_t>());
  const int world = run.at("world").get<int>();
  Tracks t;
  int pid = 0;
  const json& per_rank = run.at("per_rank_time_us");
  if (run.contains("trace") && run.at("trace").is_object()) {
    pid = trace_tracks(t, run.at("trace"), world);
  } else if (int(per_rank.size()) == world) {
    // Without a trace each rank's track holds its measured total (per_rank_time_us).
    for (; pid < world; ++pid) {
      t.process(pid, "rank " + std::to_string(pid));
      t.thread(pid, 0, "run (start to the rank's last event)");
      if (per_rank[size_t(pid)].is_number())
        t.slice(pid, 0, "rank " + std::to_string(pid) + " total", "measured", 0, per_rank[size_t(pid)].get<double>());
    }
  }
  const std::optional<double> total =
      run.at("time_us").is_number() ? std::optional<double>(run.at("time_us").get<double>()) : std::nullopt;
  const json measured = measured_lane(run.at("phases_us"), total);
  if (!measured.empty() || total) {
    t.process(pid, "measured phases (max over ranks per phase)");
    t.thread(pid, 0, "phases end to end, then what they leave unattributed");
    if (!measured.empty()) t.lane(pid, 0, measured, "measured");
    if (measured.empty() && total) t.slice(pid, 0, "total (no phases measured)", "measured", 0, *total);
    ++pid;
  }
  const json& lanes = group.at("lanes");
  if (!lanes.at("model").empty()) {
    const json& model = group.at("model");
    t.process(pid, "model (profile " + model.value("profile", std::string("?")) + ")");
    t.thread(pid, 0, "phases in stream order");
    t.lane(pid, 0, lanes.at("model"), "model");
    if (!lanes.at("overlap").empty()) {
      t.thread(pid, 1, lanes.at("overlap_label").get<std::string>());
      t.lane(pid, 1, lanes.at("overlap"), "model overlap");
    }
  }
  return {{"traceEvents", t.events},
          {"otherData",
           {{"source", run.at("source")},
            {"config", run.at("config")},
            {"shape", {{"m", run.at("m")}, {"n", run.at("n")}, {"k", run.at("k")}, {"world", world}}},
            {"machine", run.at("machine")},
            {"profile", run.at("profile")},
            {"written_by", "gemmar report (docs/report.md, Timelines)"}}}};
}

void write_timelines(const json& doc, const std::filesystem::path& dir) {
  const auto& runs = doc.at("runs");
  if (runs.empty()) return;
  std::filesystem::create_directories(dir / "timeline");
  for (size_t i = 0; i < runs.size(); ++i)
    write_file_atomic(dir / runs[i].at("timeline").get<std::string>(), run_timeline(doc, i).dump() + "\n");
}

}  // namespace gemmar::report
