#include "validate/cli/run_options.hpp"

#include <sstream>

#include "common/errors.hpp"
#include "model/model.hpp"
#include "reference/guard_sample.hpp"
#include "validate/cli/baseline.hpp"

namespace gemmar::cli {

namespace {

// The embedded default of `gemmar validate` on the CPU: small enough that the emulation of all 11 configs
// finishes in well under a minute on 2 cores, large enough for 8 ranks with several 128-row blocks each and
// every wire's real rounding.
constexpr int64_t kCpuM = 2048, kCpuN = 2048, kCpuK = 512;

std::vector<int64_t> parse_int_list(const std::string& s, const std::string& option) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    GEMMAR_USAGE_CHECK(!item.empty() && end && *end == '\0' && v > 0, option, ": '", item,
                       "' is not a positive integer");
    out.push_back(v);
  }
  GEMMAR_USAGE_CHECK(!out.empty(), option, ": empty list");
  return out;
}

}  // namespace

void add_run_options(po::options_description& d, RunCommand cmd) {
  if (cmd == RunCommand::Run) {
    add_shape_options(d);
    add_config_options(d);
    d.add_options()("all-configs", po::bool_switch()->default_value(false),
                    "every mode, wire and transport instead of the one --mode/--gather-* config");
    d.add_options()("dump", po::value<std::string>(),
                    "write each run's tensors (operands, scales, output, partials; the checked rows) as safetensors, "
                    "one file per rank, for `gemmar verify DIR` (docs/verify.md)");
  } else {
    // validate runs every config at its own shape; the shape and the quant/grid stay settable.
    d.add_options()("m,m", po::value<int64_t>(), "rows (default: 2048 on cpu; 4096 and 16384 on gpu)")(
        "n,n", po::value<int64_t>(), "columns (default: 2048 on cpu, 7168 on gpu)")(
        "k,k", po::value<int64_t>(), "reduction length per rank (default: 512 on cpu, 2048 on gpu)")(
        "world", po::value<int>()->default_value(Shape{}.world), "ranks (W)");
    add_config_options(d, {"quant", "pull-blocks"});
  }
  d.add_options()("backend", po::value<std::string>(),
                  "gpu|cpu (default: gpu in a GPU build, else cpu = the CPU emulation)")(
      "m-list", po::value<std::string>(), "comma-separated M values (overrides -m), e.g. 4096,16384")(
      "inject", po::value<std::string>()->default_value("none"),
      ("fault to inject into every run, comma list: " + fault_names_help()).c_str())(
      "seed", po::value<uint64_t>()->default_value(1234), "operand seed (rank r uses seed + r)")(
      "check-rows", po::value<int64_t>(),
      "output rows checked against the reference, stratified over every rank's slice; 0 = every row "
      "(default: 256 for run, every row for validate on cpu, 512 for validate on gpu)")(
      "iterations", po::value<int>(),
      "iterations per config, each on changed inputs (odd iterations scale every rank's A scales by 2 or 1/2, so "
      "iteration i repeats i-2's inputs); GPU: graph replays, timed (median) (default: 4 on cpu, 11 on gpu; iterations "
      "1 and 3 are the first bit-identical repeat)")(
      "check-every", po::value<int>(),
      "read back and check every N-th iteration's output (0, N, 2N, ...) bit for bit, and repeats of the same "
      "inputs for identical bits (default: 1 = every iteration, on cpu and gpu)")(
      "straggle", po::value<double>()->default_value(0.0),
      "MAX_US: random per-rank delays in [0, MAX_US) before each launch and between phases, redrawn every "
      "iteration (GPU: spin kernels; CPU emulation: the order the peer loops visit ranks and which put lands last)")(
      "gemm-impl", po::value<std::string>()->default_value("gemmar"),
      "GPU: the GEMM of gemm-only and the split modes: gemmar|cublaslt (NVIDIA; fused modes keep gemmar's, whose "
      "epilogue pushes tiles); fused runs are also compared with the vendor GEMM + the split all-reduce")(
      "profile", po::value<std::string>()->default_value(""),
      ("model profile to judge against (" + model::profile_choices() +
       "|FILE; default: the profile whose \"devices\" name the device and its ranks per device, the fallback " +
       model::default_profile_for("cpu", "", 1) + " for the CPU emulation and unnamed devices)")
          .c_str())(
      "guard", po::bool_switch()->default_value(false),
      "also judge every checked call (GPU: every replay) by the per-call guard's checksums alone (docs/guard.md): "
      "GUARD_* findings")("guard-sample", po::value<int>()->default_value(32),
                          "G: the guard reads one row of every G consecutive rows, drawn anew on every call (1, 2, "
                          "4, ..., 128; 1 = every row, the full guard; docs/guard.md)")(
      "ranks-per-device", po::value<int>()->default_value(0),
      "GPU: ranks emulated per device (0: one per device when W devices exist, else all on one)")(
      "eager", po::bool_switch()->default_value(false),
      "GPU: launch every iteration eagerly instead of capturing the run once as a graph and replaying it (the "
      "record's device says which ran; default: graph)")(
      "baseline", po::value<std::vector<std::string>>(),
      "FILE: earlier runs (a previous validate's results.json or runs.log, or a benchmark log); a run slower "
      "than the baseline's of the same shape and config beyond the run-to-run spread fails with REGRESSION, "
      "whatever the profile (repeatable; default: none)");
}

RunPlan read_run_plan(const po::variables_map& vm, RunCommand cmd) {
  RunPlan p;
  RunRequest& req = p.request;
  if (vm.count("backend")) {
    p.backend = vm["backend"].as<std::string>();
    GEMMAR_USAGE_CHECK(p.backend == "cpu" || p.backend == "gpu", "--backend: unknown value '", p.backend,
                       "' (accepted: gpu|cpu)");
  } else {
    p.backend = gpu_backend_built() ? "gpu" : "cpu";
  }
  const bool gpu = p.backend == "gpu";
  if (cmd == RunCommand::Run) {
    req.shape = read_shape(vm);
    const Config base = read_config(vm);
    p.configs = vm["all-configs"].as<bool>() ? all_configs(base) : std::vector<Config>{base};
    p.m_values = {req.shape.m};
    req.check_rows = 256;
  } else {
    req.shape.n = vm.count("n") ? vm["n"].as<int64_t>() : (gpu ? 7168 : kCpuN);
    req.shape.k = vm.count("k") ? vm["k"].as<int64_t>() : (gpu ? 2048 : kCpuK);
    req.shape.world = vm["world"].as<int>();
    p.m_values = vm.count("m") ? std::vector<int64_t>{vm["m"].as<int64_t>()}
                               : (gpu ? std::vector<int64_t>{4096, 16384} : std::vector<int64_t>{kCpuM});
    req.shape.m = p.m_values.front();
    p.configs = all_configs(read_config(vm));
    req.check_rows = gpu ? 512 : 0;  // the CPU emulation checks every row; the GPU a stratified sample
  }
  if (vm.count("m-list")) p.m_values = parse_int_list(vm["m-list"].as<std::string>(), "--m-list");
  req.inject = parse_faults(vm["inject"].as<std::string>());
  req.seed = vm["seed"].as<uint64_t>();
  if (vm.count("check-rows")) req.check_rows = vm["check-rows"].as<int64_t>();
  GEMMAR_USAGE_CHECK(req.check_rows >= 0, "--check-rows: must be >= 0");
  req.iterations = vm.count("iterations") ? vm["iterations"].as<int>() : (gpu ? 11 : 4);
  GEMMAR_USAGE_CHECK(req.iterations >= 1 && req.iterations <= 1000, "--iterations: must be in [1, 1000]");
  req.check_every = vm.count("check-every") ? vm["check-every"].as<int>() : 1;
  GEMMAR_USAGE_CHECK(req.check_every >= 1 && req.check_every <= 1000, "--check-every: must be in [1, 1000]");
  req.straggle_us = vm["straggle"].as<double>();
  GEMMAR_USAGE_CHECK(req.straggle_us >= 0 && req.straggle_us <= 1e6, "--straggle: must be in [0, 1e6] us");
  req.profile = vm["profile"].as<std::string>();
  req.gemm_impl = parse_gemm_impl(vm["gemm-impl"].as<std::string>());
  req.ranks_per_device = vm["ranks-per-device"].as<int>();
  req.guard = vm["guard"].as<bool>();
  req.guard_sample = vm["guard-sample"].as<int>();
  GEMMAR_USAGE_CHECK(guard_sample::valid_stride(req.guard_sample), "--guard-sample: must divide ",
                     guard_sample::kMaxStride, " (1, 2, 4, ..., 128), got ", req.guard_sample);
  GEMMAR_USAGE_CHECK(req.ranks_per_device >= 0, "--ranks-per-device: must be >= 0");
  req.eager = vm["eager"].as<bool>();
  GEMMAR_USAGE_CHECK(!req.eager || gpu, "--eager: only the GPU backend launches kernels (--backend gpu)");
  if (vm.count("dump")) {
    req.dump_dir = vm["dump"].as<std::string>();
    GEMMAR_USAGE_CHECK(!req.dump_dir.empty(), "--dump: empty directory name");
  }
  if (vm.count("baseline")) {
    LogReadOptions ro;
    ro.defaults.world = req.shape.world;
    p.baseline = read_baseline_runs(vm["baseline"].as<std::vector<std::string>>(), ro,
                                    cmd == RunCommand::Run ? "gemmar run" : "gemmar validate");
  }
  validate_plan(p);
  return p;
}

}  // namespace gemmar::cli
