#include "validate/cli/run_options.hpp"

#include <filesystem>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "model/model.hpp"
#include "reference/guard_sample.hpp"
#include "validate/cli/baseline.hpp"
#include "validate/cli/data_dir.hpp"

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

// --dump DIR: checked as --out is, before any work (an existing file, a user's directory, a previous dump without
// --force are refused); --force without --dump would do nothing.
void check_dump_option(const po::variables_map& vm, RunRequest& req) {
  const bool force = vm["force"].as<bool>();
  if (req.dump_dir.empty()) {
    GEMMAR_USAGE_CHECK(!force, "--force: only with --dump DIR (it lets a previous gemmar dump there be replaced)");
    return;
  }
  std::filesystem::path dir = std::filesystem::path(req.dump_dir).lexically_normal();
  if (!dir.has_filename() && dir.has_parent_path()) dir = dir.parent_path();
  OutputDirCheck oc;
  oc.option = "--dump";
  oc.force = force;
  if (vm.count("baseline"))
    for (const auto& b : vm["baseline"].as<std::vector<std::string>>()) oc.inputs.emplace_back(b);
  check_output_dir(dir, oc);
  req.dump_dir = dir.string();
}

// --backend python's options (docs/python.md).
void add_python_options(po::options_description& d, RunCommand cmd) {
  d.add_options()("impl", po::value<std::string>(),
                  "--backend python: the implementation, MODULE:CALLABLE, FILE.py:CALLABLE or mori (mori's public op, "
                  "python/gemmar_mori_impl.py)")(
      "python", po::value<std::string>()->default_value("python3"),
      "--backend python: the interpreter that runs it (with torch; with mori for --impl mori)")(
      "launcher", po::value<std::string>()->default_value("auto"),
      "--backend python, one rank per process: torchrun (python -m torch.distributed.run) or direct (gemmar starts "
      "the W processes with torchrun's variables); auto: torchrun where the interpreter has torch")(
      "spawn", po::value<std::string>()->default_value("auto"),
      "--backend python: once (every run in one start of the runner) or per-run (one start per run: one M per "
      "process, mori's measurement discipline); auto: per-run for one rank per process, else once")(
      "queue-wait", po::value<double>(),
      "--backend python: seconds from the end of one start of the runner to the next (default: the "
      "implementation's queue_wait_s: mori 10, its README's wait for the SDMA queues; else 0)")(
      "run-timeout", po::value<double>()->default_value(900),
      "--backend python: a runner silent this many seconds (no run started or finished) is stopped and its run failed")(
      "warmup", po::value<int>()->default_value(10),
      "--backend python: untimed calls, then untimed graph replays, before the --iterations timed replays (mori's "
      "bench --warmup)");
  if (cmd == RunCommand::Validate)
    d.add_options()("keep-dumps", po::bool_switch()->default_value(false),
                    "--backend python: keep every run's tensor dump in OUT/dumps (default: each is removed once "
                    "verified; a dump at M=16384 N=7168 W=8 is about 4 GB)");
}

// Options that act on gemmar's own backends only: refused with --backend python, which runs the implementation as
// it is (a faulty implementation is the fault).
void refuse_for_python(const po::variables_map& vm) {
  GEMMAR_USAGE_CHECK(vm["inject"].as<std::string>() == "none",
                     "--inject: not with --backend python (the implementation runs as it is; give a faulty "
                     "implementation as --impl instead)");
  GEMMAR_USAGE_CHECK(vm["straggle"].as<double>() == 0, "--straggle: not with --backend python");
  GEMMAR_USAGE_CHECK(!vm["guard"].as<bool>(),
                     "--guard: not with --backend python (python/gemmar_guard.py guards a "
                     "serving process: docs/guard.md)");
  GEMMAR_USAGE_CHECK(vm["gemm-impl"].as<std::string>() == "gemmar", "--gemm-impl: not with --backend python");
  GEMMAR_USAGE_CHECK(vm["ranks-per-device"].as<int>() == 0,
                     "--ranks-per-device: not with --backend python (the implementation places its ranks)");
  GEMMAR_USAGE_CHECK(!vm.count("check-every"),
                     "--check-every: not with --backend python (one call is dumped and checked; the timed replays "
                     "are compared with it bit for bit)");
}

// validate --backend python: every fused-sdma candidate also with mori's fp8 scatter (the public op takes
// scatter_dtype, op.py @f3bff0ae GemmAllReduceOp.__init__), where N allows its 256-column scales; the
// implementation's supports() keeps those it runs.
void add_fp8_scatter_candidates(std::vector<Config>& configs, int64_t n) {
  if (n % 256 != 0) return;
  const size_t count = configs.size();
  for (size_t i = 0; i < count; ++i) {
    if (configs[i].mode != Mode::FusedSdma || configs[i].scatter_dtype == WireDtype::Fp8) continue;
    Config c = configs[i];
    c.scatter_dtype = WireDtype::Fp8;
    configs.push_back(c);
  }
}

// --backend python: the options, then the implementation asked what it runs (W, M values, configs).
void read_python_plan(const po::variables_map& vm, RunCommand cmd, RunPlan& p) {
  GEMMAR_USAGE_CHECK(vm.count("impl") && !vm["impl"].as<std::string>().empty(),
                     "--impl: required with --backend python (MODULE:CALLABLE, FILE.py:CALLABLE or mori)");
  refuse_for_python(vm);
  PythonOptions& o = p.python.options;
  o.impl = vm["impl"].as<std::string>();
  o.python = vm["python"].as<std::string>();
  o.launcher = vm["launcher"].as<std::string>();
  o.spawn = vm["spawn"].as<std::string>();
  GEMMAR_USAGE_CHECK(o.launcher == "auto" || o.launcher == "torchrun" || o.launcher == "direct",
                     "--launcher: unknown value '", o.launcher, "' (accepted: auto|torchrun|direct)");
  GEMMAR_USAGE_CHECK(o.spawn == "auto" || o.spawn == "once" || o.spawn == "per-run", "--spawn: unknown value '",
                     o.spawn, "' (accepted: auto|once|per-run)");
  if (vm.count("queue-wait")) o.queue_wait_s = vm["queue-wait"].as<double>();
  GEMMAR_USAGE_CHECK(!o.queue_wait_s || (*o.queue_wait_s >= 0 && *o.queue_wait_s <= 3600),
                     "--queue-wait: must be in [0, 3600] s");
  o.run_timeout_s = vm["run-timeout"].as<double>();
  GEMMAR_USAGE_CHECK(o.run_timeout_s > 0 && o.run_timeout_s <= 86400, "--run-timeout: must be in (0, 86400] s");
  o.warmup = vm["warmup"].as<int>();
  GEMMAR_USAGE_CHECK(o.warmup >= 0 && o.warmup <= 1000, "--warmup: must be in [0, 1000]");
  o.keep_dumps = cmd == RunCommand::Validate && vm["keep-dumps"].as<bool>();
  const DataLocation py = locate(DataItem::Python);
  o.runner = py.path / "gemmar_runner.py";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(o.runner, ec))
    throw EnvironmentError("--backend python: " + o.runner.string() + " not found (chosen by " + py.chosen_by +
                           "; install gemmar with cmake --install or its .deb)");
  if (vm["world"].defaulted()) p.request.shape.world = 0;  // the implementation's: the visible devices, or 8
  const bool m_given = vm.count("m-list") || (cmd == RunCommand::Run ? true : vm.count("m") > 0);
  std::vector<int64_t> m_values = m_given ? p.m_values : std::vector<int64_t>{};
  if (cmd == RunCommand::Validate) add_fp8_scatter_candidates(p.configs, p.request.shape.n);
  describe_python_impl(p.python, p.request.shape, p.configs, m_values, p.m_values, Shape{}.world);
  p.m_values = m_values;
  p.request.shape.m = p.m_values.front();
  std::string declined;
  for (const Config& c : p.python.declined) declined += (declined.empty() ? "" : ", ") + config_label(c);
  GEMMAR_USAGE_CHECK(!p.configs.empty(), "--impl ", o.impl, ": its supports() declines every config asked (", declined,
                     ") at W=", p.request.shape.world, ", N=", p.request.shape.n, ", K=", p.request.shape.k);
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
                    "one file per rank, for `gemmar verify DIR` (docs/verify.md); DIR follows --out's rules: new, "
                    "empty, or a previous gemmar dump with --force")(
        "force", po::bool_switch()->default_value(false),
        "with --dump: replace DIR when it holds a previous gemmar dump (only the files gemmar listed there)");
  } else {
    // validate runs every config at its own shape; the shape and the quant/grid stay settable.
    d.add_options()("m,m", po::value<int64_t>(), "rows (default: 2048 on cpu; 4096 and 16384 on gpu)")(
        "n,n", po::value<int64_t>(), "columns (default: 2048 on cpu, 7168 on gpu)")(
        "k,k", po::value<int64_t>(), "reduction length per rank (default: 512 on cpu, 2048 on gpu)")(
        "world", po::value<int>()->default_value(Shape{}.world), "ranks (W)");
    add_config_options(d, {"quant", "pull-blocks"});
  }
  d.add_options()("backend", po::value<std::string>(),
                  "gpu|cpu|python (default: gpu in a GPU build, else cpu = the CPU emulation; python: an "
                  "implementation in Python, --impl)")("m-list", po::value<std::string>(),
                                                       "comma-separated M values (overrides -m), e.g. 4096,16384")(
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
      "record's device says which ran; default: graph); --backend python: the implementation's calls timed "
      "without a graph (the record's timing \"eager\")")(
      "baseline", po::value<std::vector<std::string>>(),
      "FILE: earlier runs (a previous validate's results.json or runs.log, or a benchmark log); a run slower "
      "than the baseline's of the same shape and config beyond the run-to-run spread fails with REGRESSION, "
      "whatever the profile (repeatable; default: none)");
  add_python_options(d, cmd);
}

RunPlan read_run_plan(const po::variables_map& vm, RunCommand cmd) {
  RunPlan p;
  RunRequest& req = p.request;
  if (vm.count("backend")) {
    p.backend = vm["backend"].as<std::string>();
    GEMMAR_USAGE_CHECK(p.backend == "cpu" || p.backend == "gpu" || p.backend == "python", "--backend: unknown value '",
                       p.backend, "' (accepted: gpu|cpu|python)");
  } else {
    p.backend = gpu_backend_built() ? "gpu" : "cpu";
  }
  GEMMAR_USAGE_CHECK(p.backend == "python" || !vm.count("impl"), "--impl: only with --backend python");
  // A Python implementation runs on a device: the GPU's defaults (shape, M values, rows checked).
  const bool gpu = p.backend == "gpu" || p.backend == "python";
  if (cmd == RunCommand::Run) {
    req.shape = read_shape(vm);
    if (vm["all-configs"].as<bool>()) {
      // all_configs sets these per config: given with --all-configs they would do nothing.
      for (const char* o : {"mode", "gather-dtype", "gather-transport", "fuse-quantize"})
        GEMMAR_USAGE_CHECK(
            vm[o].defaulted(), "--", o,
            ": does nothing with --all-configs, which runs every mode, "
            "wire and transport (--quant, --pull-blocks and the shape still apply); give one or the other");
    }
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
  // Python: mori's bench --iters (51 timed replays).
  req.iterations = vm.count("iterations") ? vm["iterations"].as<int>() : (p.backend == "python" ? 51 : gpu ? 11 : 4);
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
  GEMMAR_USAGE_CHECK(!req.eager || gpu,
                     "--eager: only the GPU backend and a Python implementation launch kernels (--backend gpu|python)");
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
  if (p.backend == "python") read_python_plan(vm, cmd, p);
  if (cmd == RunCommand::Run) check_dump_option(vm, req);
  validate_plan(p);
  return p;
}

}  // namespace gemmar::cli
