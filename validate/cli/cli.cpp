#include "validate/cli/cli.hpp"

#include <algorithm>
#include <iostream>

#include "common/config_fields.hpp"
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
  Config c;
  set_field_from_env(*find_config_field("pull_blocks"), c);
  return c.pull_blocks;
}

void add_config_options(po::options_description& d, const std::vector<std::string>& only) {
  const Config c;
  for (const ConfigField& f : config_fields()) {
    if (!only.empty() && std::find(only.begin(), only.end(), f.flag) == only.end()) continue;
    switch (f.kind) {
      case FieldKind::Enum:
        d.add_options()(f.flag, po::value<std::string>()->default_value(field_text(f, c)),
                        (f.spellings() + ": " + f.help).c_str());
        break;
      case FieldKind::Bool:
        d.add_options()(f.flag, po::bool_switch()->default_value(false), f.help);
        break;
      case FieldKind::Int:
        if (*f.env)  // the default is the environment's, read when the option is absent
          d.add_options()(f.flag, po::value<int64_t>(), f.help);
        else
          d.add_options()(f.flag, po::value<int64_t>()->default_value(f.get_int(c)), f.help);
        break;
    }
  }
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
  for (const ConfigField& f : config_fields()) {
    if (!vm.count(f.flag)) {
      set_field_from_env(f, c);
      continue;
    }
    if (f.kind == FieldKind::Int)
      set_field_option(f, c, vm[f.flag].as<int64_t>());
    else if (f.kind == FieldKind::Bool)
      set_field_option(f, c, vm[f.flag].as<bool>() ? "1" : "0");
    else
      set_field_option(f, c, vm[f.flag].as<std::string>());
  }
  GEMMAR_USAGE_CHECK(!c.fuse_reduce_push || effective_config(c).fuse_reduce_push,
                     "--fuse-reduce-push: needs a reduce feeding the bf16 gather over sdma (--gather-dtype bf16 "
                     "--gather-transport sdma, not gemm-only or split-lsa)");
  GEMMAR_USAGE_CHECK(!(c.fuse_quantize && c.gather_dtype != WireDtype::Fp8),
                     "--fuse-quantize: only meaningful with --gather-dtype fp8");
  validate_gather_wire(c);
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
