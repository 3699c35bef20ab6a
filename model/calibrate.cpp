// Least-squares calibration of a profile and its leave-one-out check (docs/model.md).
#include "model/calibrate.hpp"

#include <Eigen/Dense>
#include <atomic>
#include <cmath>
#include <exception>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/config_fields.hpp"
#include "common/errors.hpp"

namespace gemmar::model {
nlohmann::json::json_pointer value_pointer(const std::string& dotted) {
  std::string p;
  std::istringstream parts(dotted);
  for (std::string key; std::getline(parts, key, '.');) p += "/" + key;
  return nlohmann::json::json_pointer(p + "/value");
}

namespace {

// The profile with `x` in place of the fitted parameters; throws UsageError when x breaks a profile rule.
Profile with_values(const Profile& base, const std::vector<FitParam>& params, const Eigen::VectorXd& x) {
  Profile p = base;
  for (std::size_t i = 0; i < params.size(); ++i) p.source[value_pointer(params[i].path)] = x[Eigen::Index(i)];
  p.params = parse_params(p.source, p.origin);
  return p;
}

// The profile of every machine the points were measured on, built once per set of values.
std::map<std::string, Profile> machine_profiles(const Profile& p, const std::vector<const CalPoint*>& pts) {
  std::map<std::string, Profile> out;
  for (const CalPoint* pt : pts)
    if (!out.count(pt->machine)) out.emplace(pt->machine, machine_profile(p, pt->machine));
  return out;
}

// log(predicted / measured) per point; false when the values make a profile the parser refuses.
bool residuals(const Profile& base, const std::vector<FitParam>& params, const std::vector<const CalPoint*>& pts,
               const Eigen::VectorXd& x, Eigen::VectorXd& r) {
  std::map<std::string, Profile> by_machine;
  try {
    by_machine = machine_profiles(with_values(base, params, x), pts);
  } catch (const UsageError&) {
    return false;
  }
  r.resize(Eigen::Index(pts.size()));
  for (std::size_t i = 0; i < pts.size(); ++i)
    r[Eigen::Index(i)] = std::log(predicted_us(by_machine.at(pts[i]->machine), *pts[i]) / pts[i]->measured_us);
  return true;
}

Eigen::VectorXd clamp(Eigen::VectorXd x, const std::vector<FitParam>& params) {
  for (std::size_t i = 0; i < params.size(); ++i)
    x[Eigen::Index(i)] = std::clamp(x[Eigen::Index(i)], params[i].lo, params[i].hi);
  return x;
}

// One-sided differences, stepping inward at a bound.
Eigen::MatrixXd jacobian(const Profile& base, const std::vector<FitParam>& params,
                         const std::vector<const CalPoint*>& pts, const Eigen::VectorXd& x, const Eigen::VectorXd& r0) {
  Eigen::MatrixXd J(r0.size(), x.size());
  for (Eigen::Index j = 0; j < x.size(); ++j) {
    const FitParam& fp = params[std::size_t(j)];
    double h = 1e-5 * (fp.hi - fp.lo);
    if (x[j] + h > fp.hi) h = -h;
    Eigen::VectorXd xh = x, rh;
    xh[j] += h;
    if (!residuals(base, params, pts, xh, rh)) {
      J.col(j).setZero();
      continue;
    }
    J.col(j) = (rh - r0) / h;
  }
  return J;
}

FitResult fit_points(const Profile& start, const std::vector<const CalPoint*>& pts,
                     const std::vector<FitParam>& params) {
  Eigen::VectorXd x(Eigen::Index(params.size()));
  for (std::size_t i = 0; i < params.size(); ++i)
    x[Eigen::Index(i)] = start.source[value_pointer(params[i].path)].get<double>();
  x = clamp(x, params);
  Eigen::VectorXd r;
  GEMMAR_CHECK(residuals(start, params, pts, x, r), "the starting profile ", start.origin, " does not parse");
  double cost = r.squaredNorm(), lambda = 1e-3;
  int it = 0;
  for (; it < 200 && lambda < 1e12; ++it) {
    const Eigen::MatrixXd J = jacobian(start, params, pts, x, r);
    const Eigen::MatrixXd A = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * r;
    Eigen::MatrixXd D = A.diagonal().cwiseMax(1e-12).asDiagonal();
    const Eigen::VectorXd step = (A + lambda * D).ldlt().solve(-g);
    const Eigen::VectorXd xn = clamp(x + step, params);
    Eigen::VectorXd rn;
    if (residuals(start, params, pts, xn, rn) && rn.squaredNorm() < cost) {
      const double gain = cost - rn.squaredNorm();
      x = xn;
      r = rn;
      cost = r.squaredNorm();
      lambda = std::max(lambda / 3, 1e-9);
      if (gain < 1e-14 * std::max(cost, 1e-30)) break;
    } else {
      lambda *= 4;
    }
  }
  return {with_values(start, params, x), std::sqrt(cost / double(pts.size())), it};
}

}  // namespace

double predicted_us(const Profile& prof, const CalPoint& pt) {
  const Prediction pr = predict(prof, pt.shape, pt.config);
  if (pt.phase.empty()) return per_call_in_graph_us(pr, pt.graph_calls);
  if (pt.phase == "layer_total") return pr.in_server_us;
  for (const auto& ph : pr.phases)
    if (ph.name == pt.phase) return ph.us;
  throw UsageError(pt.source + ": the model has no phase '" + pt.phase + "' for " + config_label(pt.config));
}

Profile machine_profile(const Profile& prof, const std::string& machine) {
  if (machine.empty()) return prof;
  const auto machines = prof.source.find("machines");
  if (machines == prof.source.end() || !machines->contains(machine))
    throw UsageError(prof.origin + ": machines." + machine + ": missing (a calibration point was measured there)");
  Profile p = prof;
  // Every leaf {"value": factor, ...} under machines.<machine>, at the dotted path it stands at there.
  std::vector<std::pair<std::string, const nlohmann::json*>> stack{{"", &machines->at(machine)}};
  while (!stack.empty()) {
    const auto [path, node] = stack.back();
    stack.pop_back();
    if (!node->is_object()) continue;
    if (node->contains("value")) {
      const auto ptr = value_pointer(path);
      if (!p.source.contains(ptr) || !p.source[ptr].is_number() || !node->at("value").is_number())
        throw UsageError(prof.origin + ": machines." + machine + "." + path + ": scales no numeric parameter");
      p.source[ptr] = p.source[ptr].get<double>() * node->at("value").get<double>();
      continue;
    }
    for (const auto& [key, child] : node->items())
      if (child.is_object()) stack.emplace_back(path.empty() ? key : path + "." + key, &child);
  }
  p.params = parse_params(p.source, p.origin + " on machine " + machine);
  return p;
}

namespace {

CalPoint point(std::string source, Mode mode, Quant q, int64_t w, int64_t m, int64_t n, int64_t k, double us) {
  CalPoint p;
  p.source = std::move(source);
  p.shape.world = int(w);
  p.shape.m = m;
  p.shape.n = n;
  p.shape.k = k;
  p.config.mode = mode;
  p.config.quant = q;
  p.measured_us = us;
  return p;
}

std::ifstream open(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot read");
  return in;
}

// mori benchmark/cco/flydsl/gemm_ar/sweep_dsv41.jsonl: one RESULT_JSON object per line (bench_gemm_ar.py).
void sweep_jsonl(const std::string& path, const std::string& name, std::vector<CalPoint>& out) {
  std::ifstream in = open(path);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    const std::string src = name + ":" + std::to_string(line_no);
    try {
      const auto j = nlohmann::json::parse(line);
      CalPoint p = point(src, parse_mode(j.at("mode")), parse_quant(j.at("quant")), j.at("world_size"), j.at("m"),
                         j.at("n"), j.at("k"), j.at("max_rank_time_us"));
      // Every config key the line prints, through the field table; its chunks are the resolved count (null off the
      // fused modes), which the bench's rule resolves to itself.
      config_from_json(j, src, p.config, {"chunks"});
      if (j.contains("chunks") && !j.at("chunks").is_null()) apply_resolved_chunks(p.config, j.at("chunks").get<int>());
      out.push_back(p);
    } catch (const nlohmann::json::exception& e) {
      throw UsageError(path + ":" + std::to_string(line_no) + ": " + e.what());
    }
  }
}

// Each line of a whitespace-separated table but blanks and '#' comments, with its "path:line" for errors.
template <class Row>
void for_each_row(const std::string& path, const Row& row) {
  std::ifstream in = open(path);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    const std::string where = path + ":" + std::to_string(line_no);
    try {
      row(is, line_no);
    } catch (const UsageError& e) {
      throw UsageError(where + ": " + e.what());
    }
  }
}

// mori benchmark/cco/flydsl/gemm_ar/fused_mxfp8.txt: "M mode max_rank_time_us" (tune_mxfp8.sh's defaults:
// --quant mxfp8, N = 5120, K = 2048, 4 ranks; tests/data/model/README.md).
void mxfp8_txt(const std::string& path, const std::string& name, std::vector<CalPoint>& out) {
  for_each_row(path, [&](std::istringstream& is, int line_no) {
    int64_t m = 0;
    std::string mode;
    double us = 0;
    if (!(is >> m >> mode >> us) || m <= 0 || !(us > 0)) throw UsageError("expected 'M mode us'");
    out.push_back(point(name + ":" + std::to_string(line_no), parse_mode(mode), Quant::Mxfp8, 4, m, 5120, 2048, us));
  });
}

// phases_in_server_us: one point per phase and wire column (fused-sdma, the shape of the file), and the layer
// totals; the gather of fp8/lsa is a barrier only and the pull carries its data.
template <class Add>
void in_server_phases(const nlohmann::json& d, const Add& add) {
  const auto& ph = d.at("phases_in_server_us");
  const auto& cols = ph.at("columns");
  for (std::size_t c = 0; c < cols.size(); ++c) {
    const std::string col = cols[c];
    const bool fp8 = col != "bf16";
    const nlohmann::json row = {{"gather_dtype", fp8 ? "fp8" : "bf16"},
                                {"gather_transport", col == "fp8/lsa" ? "lsa" : "sdma"}};
    for (const char* name : {"gemm", "drain", "reduce", "quantize", "gather", "dequantize", "pull", "layer_total"}) {
      const auto& v = ph.at(name).at(c);
      if (v.is_null()) continue;
      CalPoint* p = add("phases_in_server_us " + std::string(name) + " " + col, row, v.get<double>());
      p->phase = name;
    }
  }
}

// fuse_reduce_push.txt: mori's README table, "gather_bands publish total_us" (the file's header says its shape).
void fuse_push_txt(const std::string& path, const std::string& name, std::vector<CalPoint>& out) {
  for_each_row(path, [&](std::istringstream& is, int line_no) {
    int bands = 0;
    std::string publish;
    double us = 0;
    if (!(is >> bands >> publish >> us) || bands < 1 || !(us > 0))
      throw UsageError("expected 'gather_bands publish us'");
    CalPoint p =
        point(name + ":" + std::to_string(line_no), Mode::FusedSdma, Quant::Blockscale, 8, 16384, 7168, 2048, us);
    p.config.fuse_reduce_push = true;
    p.config.gather_bands = bands;
    p.config.publish = parse_publish(publish, "publish");
    out.push_back(p);
  });
}

// headline_fc89289.txt: bench_gemm_ar.py's docstring table, "quant mode us" (the file's header says its shape).
void headline_txt(const std::string& path, const std::string& name, std::vector<CalPoint>& out) {
  for_each_row(path, [&](std::istringstream& is, int line_no) {
    std::string quant, mode;
    double us = 0;
    if (!(is >> quant >> mode >> us) || !(us > 0)) throw UsageError("expected 'quant mode us'");
    CalPoint p =
        point(name + ":" + std::to_string(line_no), parse_mode(mode), parse_quant(quant), 8, 16384, 7168, 2048, us);
    // The one ptpc GEMM alone of the data: it alone fixes ptpc's K-loop rate (its fused and split totals hide
    // the GEMM under the links).
    if (p.config.mode == Mode::GemmOnly && p.config.quant == Quant::Ptpc) {
      p.scored = false;
      p.identifies = "gemm.efficiency_ratio.ptpc";
    }
    out.push_back(p);
  });
}

// chunks_fc89289.txt: bench_gemm_ar.py's table at its --chunks default, "chunks us" (end-to-end, max over ranks;
// the file's header says its shape and quant).
void chunks_txt(const std::string& path, const std::string& name, std::vector<CalPoint>& out) {
  for_each_row(path, [&](std::istringstream& is, int line_no) {
    int chunks = 0;
    double us = 0;
    if (!(is >> chunks >> us) || chunks < 1 || chunks > 4096 || !(us > 0)) throw UsageError("expected 'chunks us'");
    CalPoint p = point(name + ":" + std::to_string(line_no), Mode::FusedSdma, Quant::Ptpc, 8, 16384, 7168, 2048, us);
    p.config.chunks = chunks;
    out.push_back(p);
  });
}

// readme_*.txt: one measured cell per row, key=value tokens (tests/data/model/README.md lists the keys). `use`
// selects the rows: "fit" the points, "check" the rows marked use=check; rows with dup= repeat another file's cell.
void readme_rows(const std::string& path, const std::string& name, const std::string& use, std::vector<CalPoint>& out) {
  for_each_row(path, [&](std::istringstream& is, int line_no) {
    std::map<std::string, std::string> kv;
    for (std::string tok; is >> tok;) {
      const auto eq = tok.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("'" + tok + "' is not key=value");
      if (!kv.emplace(tok.substr(0, eq), tok.substr(eq + 1)).second) throw UsageError("key '" + tok + "' twice");
    }
    const auto get = [&](const char* key) -> std::string {
      const auto it = kv.find(key);
      if (it == kv.end()) throw UsageError(std::string("no ") + key + "=");
      return it->second;
    };
    const auto num = [&](const char* key) -> int64_t {
      const std::string v = get(key);
      if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
        throw UsageError(std::string(key) + "=" + v + " is not a count");
      return std::stoll(v);
    };
    if (kv.count("dup")) return;
    if ((kv.count("use") && kv.at("use") == "check") != (use == "check")) return;
    double us = 0;
    try {
      us = std::stod(get("us"));
    } catch (const std::logic_error&) {
      throw UsageError("us=" + get("us") + " is not a number");
    }
    if (!(us > 0)) throw UsageError("us=" + get("us") + " is not a time");
    CalPoint p = point(name + ":" + std::to_string(line_no) + " (" + get("src") + ")", parse_mode(get("mode")),
                       parse_quant(get("quant")), num("world"), num("m"), num("n"), num("k"), us);
    Config& c = p.config;
    if (kv.count("gather")) c.gather_dtype = parse_wire(get("gather"));
    if (kv.count("transport")) c.gather_transport = parse_transport(get("transport"));
    if (kv.count("fq")) c.fuse_quantize = num("fq") == 1;
    if (kv.count("scatter")) c.scatter_dtype = parse_scatter_wire(get("scatter"));
    if (kv.count("chunks")) c.chunks = int(num("chunks"));
    if (kv.count("chunk_bands")) c.chunk_bands = int(num("chunk_bands"));
    if (kv.count("rule")) c.chunk_rule = parse_chunk_rule(get("rule"));
    if (kv.count("relaxed") && num("relaxed") == 1) {
      c.relaxed_rows = true;  // M as run: the relaxed rows' padded M, a multiple of W only
      p.shape.m = num("m_pad");
    }
    if (kv.count("machine")) p.machine = get("machine");
    const std::string timing = get("timing");
    if (timing != "graph1" && timing != "graph8")
      throw UsageError("timing=" + timing + " is neither graph1 nor graph8");
    p.graph_calls = timing == "graph8" ? 8 : 1;
    validate_shape_config(p.shape, c);
    // The padding the row says the run used must be the one the model computes.
    if (kv.count("m_pad") && padded_m(p.shape, c) != num("m_pad"))
      throw UsageError("m_pad=" + get("m_pad") + " but the row plan pads M=" + get("m") + " to " +
                       std::to_string(padded_m(p.shape, c)));
    out.push_back(p);
  });
}

void measured_json(const std::string& path, std::vector<CalPoint>& out) {
  std::ifstream in = open(path);
  const auto d = nlohmann::json::parse(in);
  const auto& sh = d.at("shape");
  const auto add = [&](const std::string& src, const nlohmann::json& row, double us) {
    CalPoint p = point("mi355x_measured.json: " + src, parse_mode(row.value("mode", "fused-sdma")),
                       parse_quant(row.value("quant", "blockscale")), sh.at("world"), row.value("m", 16384), sh.at("n"),
                       sh.at("k"), us);
    config_from_json(row, "mi355x_measured.json: " + src, p.config);
    out.push_back(p);
    return &out.back();
  };
  for (const auto& row : d.at("mode_totals_us")) {
    const std::string mode = row.at("mode");
    if (mode.rfind("unfused", 0) == 0) continue;  // the RCCL baseline is not a mode of the op
    add("mode_totals_us " + mode + "/" + row.value("gather_dtype", "-") + "/" + row.value("gather_transport", "sdma"),
        row, row.at("total_us"));
  }
  in_server_phases(d, add);
  for (const auto& row : d.at("gather_wire_us"))
    add("gather_wire_us " + row.value("gather_dtype", "bf16") + "/" + row.value("gather_transport", "sdma"), row,
        row.at("total_us"));
  for (const auto& pt : d.at("pull_grid_us").at("points")) {
    const nlohmann::json row = {{"gather_dtype", "fp8"}, {"gather_transport", "lsa"}};
    const int blocks = pt.at("blocks");
    CalPoint* p = add("pull_grid_us " + std::to_string(blocks) + " blocks", row, pt.at("total_us"));
    p->config.pull_blocks = blocks;
    p->scored = blocks == Config{}.pull_blocks;  // 16 and 512 alone fix the pull's latency and contention
    if (!p->scored) p->identifies = "the pull";
  }
}

}  // namespace

namespace {
const char* const kReadmeFiles[] = {"readme_d5443336.txt", "readme_f3bff0ae.txt", "readme_retest_v2015.txt"};
}  // namespace

std::vector<FitParam> fit_parameters(const Profile& prof) {
  std::vector<FitParam> v{
      {"gemm.tile_epilogue_us", 0, 30},
      {"gemm.achieved_efficiency", 0.05, 1},
      {"gemm.remote_store_tile_us", 0, 100},
      {"gemm.epilogue_slowdown", 0, 2},
      {"link.lsa_efficiency", 0.3, 1},
      {"link.remote_store_efficiency", 0.3, 1},
      {"standalone.rank_skew_us", 0, 100},
      {"sync.band_sync_us", 0, 100},
      {"sync.system_release_us", 0, 5},
      {"cache.miss_slowdown", 0, 3},
      {"link.lsa_bytes_in_flight", 1e5, 5e6},
      {"sdma_fp8.gather_handoff_us", 0, 100},
      {"sdma_fp8.dequantize_handoff_us", 0, 100},
      // the folded reduce + quantize's loads in flight per wave: 64 lanes x 16 B x 1 .. 16 outstanding
      {"reduce_quantize.bytes_in_flight_per_wave", 1024, 16384},
  };
  // Every quant's K loop against the base's that the profile lists (a new quant: its leaf in the profile).
  for (const auto& [q, _] : prof.params.gemm.efficiency_ratio)
    v.push_back({"gemm.efficiency_ratio." + to_string(q), 0.3, 3});
  if (prof.source.contains(value_pointer("gemm.epilogue_cu_gbps"))) v.push_back({"gemm.epilogue_cu_gbps", 2, 1000});
  if (prof.source.contains(value_pointer("gemm.relaxed_tile_us"))) v.push_back({"gemm.relaxed_tile_us", 0, 50});
  // Every factor of another machine's rates (machine_profile), within a factor of two of this one's.
  if (const auto m = prof.source.find("machines"); m != prof.source.end()) {
    std::vector<std::pair<std::string, const nlohmann::json*>> stack;
    for (const auto& [name, node] : m->items()) stack.emplace_back("machines." + name, &node);
    while (!stack.empty()) {
      const auto [path, node] = stack.back();
      stack.pop_back();
      if (!node->is_object()) continue;
      if (node->contains("value")) {
        v.push_back({path, 0.5, 2});
        continue;
      }
      for (const auto& [key, child] : node->items()) stack.emplace_back(path + "." + key, &child);
    }
  }
  return v;
}

std::vector<CalPoint> load_mi355x_points(const std::string& data_dir) {
  std::vector<CalPoint> pts;
  measured_json(data_dir + "/mi355x_measured.json", pts);
  sweep_jsonl(data_dir + "/model/sweep_dsv41.jsonl", "sweep_dsv41.jsonl", pts);
  mxfp8_txt(data_dir + "/model/fused_mxfp8.txt", "fused_mxfp8.txt", pts);
  fuse_push_txt(data_dir + "/model/fuse_reduce_push.txt", "fuse_reduce_push.txt", pts);
  headline_txt(data_dir + "/model/headline_fc89289.txt", "headline_fc89289.txt", pts);
  chunks_txt(data_dir + "/model/chunks_fc89289.txt", "chunks_fc89289.txt", pts);
  for (const char* f : kReadmeFiles) readme_rows(data_dir + "/model/" + f, f, "fit", pts);
  return pts;
}

std::vector<CalPoint> load_mi355x_check_points(const std::string& data_dir) {
  std::vector<CalPoint> pts;
  for (const char* f : kReadmeFiles) readme_rows(data_dir + "/model/" + f, f, "check", pts);
  return pts;
}

FitResult fit_profile(const Profile& start, const std::vector<CalPoint>& points, const std::vector<FitParam>& params) {
  std::vector<const CalPoint*> pts;
  for (const auto& p : points) pts.push_back(&p);
  return fit_points(start, pts, params);
}

std::vector<LooRow> leave_one_out(const Profile& start, const std::vector<CalPoint>& points,
                                  const std::vector<FitParam>& params, FitResult* full_fit, int stride) {
  GEMMAR_CHECK(stride >= 1, "leave_one_out: stride must be at least 1, got ", stride);
  const FitResult all = fit_profile(start, points, params);
  if (full_fit) *full_fit = all;
  std::vector<LooRow> rows;
  for (const auto& pt : points)
    rows.push_back({&pt, predicted_us(machine_profile(all.profile, pt.machine), pt) / pt.measured_us - 1.0,
                    std::numeric_limits<double>::quiet_NaN()});
  // Which scored points are refitted: every stride-th, counted over the scored points in order.
  std::vector<bool> refit(points.size(), false);
  for (std::size_t i = 0, scored = 0; i < points.size(); ++i)
    if (points[i].scored) refit[i] = scored++ % std::size_t(stride) == 0;
  // One refit per chosen point, each independent of the others: spread over the machine's cores.
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto work = [&] {
    for (std::size_t i; (i = next++) < points.size();) {
      const CalPoint& pt = points[i];
      if (!refit[i]) continue;
      try {
        std::vector<const CalPoint*> others;
        for (const auto& q : points)
          if (&q != &pt) others.push_back(&q);
        // Start from the full fit: the left-out point only moves the optimum, the optimum is what is scored.
        const FitResult f = fit_points(all.profile, others, params);
        rows[i].loo_error = predicted_us(machine_profile(f.profile, pt.machine), pt) / pt.measured_us - 1.0;
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < std::max(1u, std::thread::hardware_concurrency()); ++t) threads.emplace_back(work);
  work();
  for (auto& th : threads) th.join();
  if (failure) std::rethrow_exception(failure);
  return rows;
}

}  // namespace gemmar::model
