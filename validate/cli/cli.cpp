#include "validate/cli/cli.hpp"

#include <cstdlib>
#include <iostream>

#include "common/errors.hpp"

namespace gemmar::cli {

void add_shape_options(po::options_description& d) {
  const Shape s;
  d.add_options()("m,m", po::value<int64_t>()->default_value(s.m), "rows of the output (tokens)")(
      "n,n", po::value<int64_t>()->default_value(s.n), "columns of the output")(
      "k,k", po::value<int64_t>()->default_value(s.k), "reduction length per rank")(
      "world", po::value<int>()->default_value(s.world), "ranks (W)");
}

int pull_blocks_from_env() {
  const char* v = std::getenv("MORI_GEMM_AR_PULL_BLOCKS");
  if (!v || !*v) return Config{}.pull_blocks;
  char* end = nullptr;
  const long b = std::strtol(v, &end, 10);
  GEMMAR_USAGE_CHECK(end && *end == '\0' && b >= 1 && b <= 65536, "MORI_GEMM_AR_PULL_BLOCKS: '", v,
                     "' is not an integer in [1, 65536]");
  return int(b);
}

void add_config_options(po::options_description& d) {
  const Config c;
  d.add_options()("mode", po::value<std::string>()->default_value(to_string(c.mode)), mode_spellings())(
      "quant", po::value<std::string>()->default_value(to_string(c.quant)), quant_spellings())(
      "gather-dtype", po::value<std::string>()->default_value(to_string(c.gather_dtype)), "bf16|fp8")(
      "gather-transport", po::value<std::string>()->default_value(to_string(c.gather_transport)), "sdma|lsa")(
      "pull-blocks", po::value<int>(), "pull kernel grid per rank (default: $MORI_GEMM_AR_PULL_BLOCKS, else 64)")(
      "fuse-quantize", po::bool_switch()->default_value(false), "fold the fp8 narrowing into the reduce")(
      "fuse-reduce-push", po::bool_switch()->default_value(false),
      "the reduce fires the bf16 gather's copy-engine puts band by band (bf16 gather over sdma)")(
      "gather-bands", po::value<int>()->default_value(c.gather_bands), "bands of --fuse-reduce-push")(
      "publish", po::value<std::string>()->default_value(to_string(c.publish)),
      "writethrough|fence: how --fuse-reduce-push releases a band to the copy engine");
}

void add_common_options(po::options_description& d) {
  d.add_options()("json", po::bool_switch()->default_value(false), "one JSON document on stdout, nothing else")(
      "help,h", "this help");
}

Shape read_shape(const po::variables_map& vm) {
  Shape s;
  s.m = vm["m"].as<int64_t>();
  s.n = vm["n"].as<int64_t>();
  s.k = vm["k"].as<int64_t>();
  s.world = vm["world"].as<int>();
  return s;
}

Config read_config(const po::variables_map& vm) {
  Config c;
  c.mode = parse_mode(vm["mode"].as<std::string>());
  c.quant = parse_quant(vm["quant"].as<std::string>());
  c.gather_dtype = parse_wire(vm["gather-dtype"].as<std::string>());
  c.gather_transport = parse_transport(vm["gather-transport"].as<std::string>());
  c.pull_blocks = vm.count("pull-blocks") ? vm["pull-blocks"].as<int>() : pull_blocks_from_env();
  c.fuse_quantize = vm["fuse-quantize"].as<bool>();
  c.fuse_reduce_push = vm["fuse-reduce-push"].as<bool>();
  c.gather_bands = vm["gather-bands"].as<int>();
  c.publish = parse_publish(vm["publish"].as<std::string>());
  GEMMAR_USAGE_CHECK(!c.fuse_reduce_push || effective_config(c).fuse_reduce_push,
                     "--fuse-reduce-push: needs a reduce feeding the bf16 gather over sdma (--gather-dtype bf16 "
                     "--gather-transport sdma, not gemm-only or split-lsa)");
  GEMMAR_USAGE_CHECK(c.gather_bands >= 1 && c.gather_bands <= 4096, "--gather-bands: ", c.gather_bands,
                     " is out of range [1, 4096]");
  GEMMAR_USAGE_CHECK(!(has_collective(c.mode) && !traits(c.mode).fp8_wire && c.gather_dtype == WireDtype::Fp8),
                     "--gather-dtype: ", to_string(c.mode), " has no fp8 wire (a bf16-only all-reduce)");
  GEMMAR_USAGE_CHECK(!(c.fuse_quantize && c.gather_dtype != WireDtype::Fp8),
                     "--fuse-quantize: only meaningful with --gather-dtype fp8");
  return c;
}

bool parse(const Args& args, const po::options_description& desc, po::variables_map& vm, std::ostream& out,
           const std::string& usage_line, const po::positional_options_description* positional) {
  try {
    // Without a positional description boost ignores stray words; an empty one makes each an error.
    const po::positional_options_description none;
    auto parser = po::command_line_parser(args).options(desc).positional(positional ? *positional : none);
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string(e.what()) + " (see --help)");
  }
  if (vm.count("help")) {
    out << "usage: " << usage_line << "\n\n" << desc << "\n";
    return false;
  }
  return true;
}

}  // namespace gemmar::cli
