// `gemmar reference floors | quant-study | gemm-bench` (docs/spec.md section 4): the CPU reference's numbers.
#include <cmath>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/errors.hpp"
#include "common/json_text.hpp"
#include "reference/floors.hpp"
#include "reference/formats.hpp"
#include "reference/gemm.hpp"
#include "reference/numerics_inline.hpp"
#include "reference/operands.hpp"
#include "validate/cli/cli.hpp"

namespace gemmar::cli {
namespace {

using nlohmann::json;
namespace ref = gemmar::reference;

constexpr const char* kUsage =
    "gemmar reference floors|quant-study|gemm-bench [options]\n"
    "  floors       emulate the pipeline on sampled rows; predicted relL2 of every scatter x gather wire pair\n"
    "  quant-study  e4m3 quantize-dequantize of a standard normal payload, one amax scale per column group\n"
    "  gemm-bench   GFLOP/s of the fp32 reference GEMM (Eigen) on this machine";

ref::DataKind parse_data(const std::string& s) {
  if (s == "normal") return ref::DataKind::Normal;
  if (s == "bench") return ref::DataKind::Bench;
  throw UsageError("--data: unknown value '" + s + "' (accepted: normal|bench)");
}

// Every scatter x gather pair, with mori's published relL2 beside where mori published one (docs/reference.md).
json pairs_json(const ref::FloorRequest& req, const ref::FloorResult& r) {
  json pairs = json::array();
  for (WireDtype scatter : {WireDtype::Bf16, WireDtype::Fp8})
    for (WireDtype gather : {WireDtype::Bf16, WireDtype::Fp8}) {
      const ref::PairFloor f = r.pair(scatter, gather);
      json p{
          {"scatter", to_string(scatter)}, {"gather", to_string(gather)}, {"rel_l2", f.value}, {"stderr", f.stderr_}};
      if (const auto m = ref::published_floor(req.shape, req.quant, scatter, gather)) {
        p["mori_published"] = m->value;
        p["mori_ratio"] = f.value / m->value;
        p["mori_source"] = m->source;
      }
      pairs.push_back(p);
    }
  return pairs;
}

void print_floors_text(std::ostream& os, const ref::FloorRequest& req, const ref::FloorResult& r,
                       const std::string& data, WireDtype chosen) {
  os << "predicted relL2 floors, " << to_string(req.quant) << ", data " << data << ", M=" << req.shape.m
     << " N=" << req.shape.n << " K=" << req.shape.k << " W=" << req.shape.world << ", " << r.rows_evaluated
     << " sampled rows (" << std::fixed << std::setprecision(1) << r.seconds << " s)\n";
  const char* source = nullptr;
  os << "  scatter  gather  relL2        stderr       mori (published, x predicted/published)\n";
  for (WireDtype scatter : {WireDtype::Bf16, WireDtype::Fp8})
    for (WireDtype gather : {WireDtype::Bf16, WireDtype::Fp8}) {
      const ref::PairFloor f = r.pair(scatter, gather);
      os << (scatter == chosen ? "* " : "  ") << std::left << std::setw(9) << to_string(scatter) << std::setw(8)
         << to_string(gather) << std::right << std::scientific << std::setprecision(3) << f.value << "    "
         << f.stderr_;
      if (const auto m = ref::published_floor(req.shape, req.quant, scatter, gather)) {
        os << "    " << m->value << " (x" << std::fixed << std::setprecision(3) << f.value / m->value << ")";
        source = m->source;
      }
      os << "\n";
    }
  os << "  (* --scatter-dtype " << to_string(chosen) << ": the pairs of the \"floors\" object)\n";
  if (source) os << "  mori: " << source << "; rank 0's view on the benchmark's data\n";
}

int floors(const Args& args) {
  po::options_description d("gemmar reference floors");
  add_shape_options(d);
  d.add_options()("quant", po::value<std::string>()->default_value("blockscale"), "blockscale|ptpc|mxfp8")(
      "scatter-dtype", po::value<std::string>()->default_value("bf16"),
      "bf16|fp8: the scatter leg of the \"floors\" object (every pair is printed)")(
      "data", po::value<std::string>()->default_value("normal"), "normal|bench")(
      "rows", po::value<int64_t>()->default_value(256), "sampled output rows (stratified over the slices)")(
      "seed", po::value<uint64_t>()->default_value(1234), "operand seed")(
      "fp8-format", po::value<std::string>()->default_value("e4m3fn"), "e4m3fn|e4m3fnuz (mxfp8: e4m3fn only)");
  add_common_options(d);
  po::variables_map vm;
  if (!parse(args, d, vm, std::cout,
             "gemmar reference floors [-m -n -k --world] [--quant] [--scatter-dtype bf16|fp8] [--data normal|bench] "
             "[--rows R] [--seed S] [--fp8-format] [--json]"))
    return kExitOk;
  ref::FloorRequest req;
  req.shape = read_shape(vm);
  req.quant = parse_quant(vm["quant"].as<std::string>());
  const WireDtype scatter = parse_scatter_wire(vm["scatter-dtype"].as<std::string>());
  req.data = parse_data(vm["data"].as<std::string>());
  req.rows = vm["rows"].as<int64_t>();
  req.seed = vm["seed"].as<uint64_t>();
  req.fp8_format = parse_fp8_format(vm["fp8-format"].as<std::string>());
  validate_fp8_format(req.quant, req.fp8_format);
  // Floors evaluate the fp8 wires (fused-sdma), so their constraints (N a multiple of 1024) apply.
  Config c;
  c.quant = req.quant;
  c.gather_dtype = WireDtype::Fp8;
  c.scatter_dtype = WireDtype::Fp8;
  validate_shape_config(req.shape, c);
  GEMMAR_USAGE_CHECK(req.rows >= req.shape.world, "--rows: ", req.rows, " must be at least --world (", req.shape.world,
                     ")");
  GEMMAR_USAGE_CHECK(req.rows <= req.shape.m, "--rows: ", req.rows, " exceeds -m (", req.shape.m, ")");
  GEMMAR_USAGE_CHECK(req.rows <= (int64_t(1) << 16), "--rows: ", req.rows, " is absurd (limit 65536)");

  const ref::FloorResult r = ref::predict_floors(req);
  if (vm["json"].as<bool>()) {
    const ref::PairFloor bf16 = r.pair(scatter, WireDtype::Bf16), fp8 = r.pair(scatter, WireDtype::Fp8);
    json j;
    j["floors"] = {{"bf16", bf16.value}, {"fp8", fp8.value}};  // by gather wire, for --scatter-dtype
    j["stderr"] = {{"bf16", bf16.stderr_}, {"fp8", fp8.stderr_}};
    j["scatter_dtype"] = to_string(scatter);
    j["pairs"] = pairs_json(req, r);
    j["rows_evaluated"] = r.rows_evaluated;
    j["shape"] = {{"m", req.shape.m}, {"n", req.shape.n}, {"k", req.shape.k}, {"world", req.shape.world}};
    j["quant"] = to_string(req.quant);
    j["data"] = vm["data"].as<std::string>();
    j["fp8_format"] = to_string(req.fp8_format);
    j["seed"] = req.seed;
    j["compared_against"] = "fp32 sum over ranks of the dequantized partials, every rank's view";
    j["seconds"] = r.seconds;
    std::cout << json_text(j) << "\n";
  } else {
    print_floors_text(std::cout, req, r, vm["data"].as<std::string>(), scatter);
  }
  return kExitOk;
}

std::vector<int64_t> parse_groups(const std::string& s) {
  std::vector<int64_t> g;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    GEMMAR_USAGE_CHECK(!item.empty() && end && *end == '\0' && v >= 1, "--groups: '", item,
                       "' is not a positive integer");
    g.push_back(v);
  }
  GEMMAR_USAGE_CHECK(!g.empty(), "--groups: empty list");
  return g;
}

int quant_study(const Args& args) {
  po::options_description d("gemmar reference quant-study");
  d.add_options()("rows", po::value<int64_t>()->default_value(2048), "payload rows")(
      "cols", po::value<int64_t>()->default_value(7168), "payload columns")(
      "groups", po::value<std::string>()->default_value("7168,512,256,128,32"), "columns per scale, comma list")(
      "seed", po::value<uint64_t>()->default_value(1234), "payload seed")(
      "fp8-format", po::value<std::string>()->default_value("e4m3fn"), "e4m3fn|e4m3fnuz");
  add_common_options(d);
  po::variables_map vm;
  if (!parse(args, d, vm, std::cout,
             "gemmar reference quant-study [--rows R --cols C --groups G,...] [--seed S] [--json]"))
    return kExitOk;
  const int64_t rows = vm["rows"].as<int64_t>(), cols = vm["cols"].as<int64_t>();
  GEMMAR_USAGE_CHECK(rows >= 1 && rows <= (int64_t(1) << 20), "--rows: ", rows, " is out of range [1, 2^20]");
  GEMMAR_USAGE_CHECK(cols >= 1 && cols <= (int64_t(1) << 20), "--cols: ", cols, " is out of range [1, 2^20]");
  GEMMAR_USAGE_CHECK(rows * cols <= (int64_t(1) << 28), "--rows/--cols: payload of ", rows * cols,
                     " elements is too large (limit 2^28)");
  const std::vector<int64_t> groups = parse_groups(vm["groups"].as<std::string>());
  for (int64_t g : groups) GEMMAR_USAGE_CHECK(cols % g == 0, "--groups: ", g, " does not divide --cols ", cols);
  const uint64_t seed = vm["seed"].as<uint64_t>();
  const Fp8Format fmt = parse_fp8_format(vm["fp8-format"].as<std::string>());
  const bool fnuz = ref::is_fnuz(fmt);

  std::vector<float> x(size_t(rows * cols));
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      x[size_t(r * cols + c)] = float(ref::normal_sample(seed, 0, ref::Tensor::A, r, c));
  json out_rows = json::array();
  for (int64_t g : groups) {
    double e = 0, n = 0;
#pragma omp parallel for reduction(+ : e, n) schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c0 = 0; c0 < cols; c0 += g) {
        const float* v = x.data() + r * cols + c0;
        float amax = 0.0f;
        for (int64_t i = 0; i < g; ++i) amax = numerics::amax_step(amax, v[i]);
        const float scale = numerics::amax_scale(amax, fnuz), inv = numerics::amax_inv_scale(amax, fnuz);
        for (int64_t i = 0; i < g; ++i) {
          const float dq = numerics::dequantize_operand(numerics::quantize_scaled(v[i], inv, fnuz), scale, fnuz);
          const double diff = double(dq) - double(v[i]);
          e += diff * diff;
          n += double(v[i]) * double(v[i]);
        }
      }
    out_rows.push_back({{"group", g}, {"rel_l2", std::sqrt(e / n)}, {"scale_bytes_pct", 100.0 * 4.0 / double(g)}});
  }
  if (vm["json"].as<bool>()) {
    std::cout << json{{"rows", out_rows},
                      {"payload", {{"rows", rows}, {"cols", cols}}},
                      {"fp8_format", to_string(fmt)},
                      {"seed", seed}}
                     .dump()
              << "\n";
  } else {
    std::cout << "e4m3 (" << to_string(fmt) << ") quantize-dequantize, standard normal " << rows << " x " << cols
              << "\n  group   relL2       scale bytes\n";
    for (const auto& r : out_rows)
      std::cout << "  " << std::setw(6) << r["group"].get<int64_t>() << "  " << std::scientific << std::setprecision(3)
                << r["rel_l2"].get<double>() << "   " << std::fixed << std::setprecision(3)
                << r["scale_bytes_pct"].get<double>() << " %\n";
  }
  return kExitOk;
}

int gemm_bench(const Args& args) {
  po::options_description d("gemmar reference gemm-bench");
  d.add_options()("m,m", po::value<int64_t>()->default_value(2048), "rows")(
      "n,n", po::value<int64_t>()->default_value(2048), "columns")("k,k", po::value<int64_t>()->default_value(2048),
                                                                   "reduction length")(
      "repetitions", po::value<int>()->default_value(5), "timed repetitions (best is reported)");
  add_common_options(d);
  po::variables_map vm;
  if (!parse(args, d, vm, std::cout, "gemmar reference gemm-bench [-m -n -k] [--repetitions R] [--json]"))
    return kExitOk;
  const int64_t m = vm["m"].as<int64_t>(), n = vm["n"].as<int64_t>(), k = vm["k"].as<int64_t>();
  for (const auto& [name, v] : {std::pair{"-m", m}, {"-n", n}, {"-k", k}})
    GEMMAR_USAGE_CHECK(v >= 1 && v <= 16384, name, ": ", v, " is out of range [1, 16384]");
  const int reps = vm["repetitions"].as<int>();
  GEMMAR_USAGE_CHECK(reps >= 1 && reps <= 1000, "--repetitions: ", reps, " is out of range [1, 1000]");
  const ref::GemmBenchResult r = ref::bench_gemm_f32(m, n, k, reps);
  if (vm["json"].as<bool>()) {
    std::cout << json{{"m", r.m},
                      {"n", r.n},
                      {"k", r.k},
                      {"threads", r.threads},
                      {"repetitions", r.repetitions},
                      {"seconds_best", r.seconds_best},
                      {"gflops", r.gflops},
                      {"cpu_seconds_best", r.cpu_seconds_best},
                      {"gflops_per_cpu_second", r.gflops_per_cpu_second}}
                     .dump()
              << "\n";
  } else {
    std::cout << "fp32 GEMM (Eigen) " << m << " x " << n << " x " << k << ", " << r.threads
              << " threads: " << std::fixed << std::setprecision(1) << r.gflops << " GFLOP/s (best of " << reps << ", "
              << std::setprecision(4) << r.seconds_best << " s; " << std::setprecision(1) << r.gflops_per_cpu_second
              << " GFLOP per CPU-second)\n";
  }
  return kExitOk;
}

}  // namespace

int cmd_reference(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    if (args.empty()) throw UsageError(std::string("reference: missing sub-subcommand\nusage: ") + kUsage);
    std::cout << "usage: " << kUsage << "\n";
    return kExitOk;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "floors") return floors(rest);
  if (args[0] == "quant-study") return quant_study(rest);
  if (args[0] == "gemm-bench") return gemm_bench(rest);
  throw UsageError("reference: unknown sub-subcommand '" + args[0] + "' (accepted: floors|quant-study|gemm-bench)");
}

}  // namespace gemmar::cli
