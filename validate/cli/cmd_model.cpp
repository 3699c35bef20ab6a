// gemmar model [sweep]: the analytic timing model's phases for one config, or a pull-grid sweep (docs/spec.md 4).
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/config_fields.hpp"
#include "common/errors.hpp"
#include "common/json_text.hpp"
#include "model/model.hpp"
#include "validate/cli/cli.hpp"

namespace gemmar::cli {
namespace {

std::vector<int> parse_values(const std::string& text) {
  std::vector<int> v;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    std::size_t used = 0;
    int x = 0;
    try {
      x = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    GEMMAR_USAGE_CHECK(used > 0 && used == item.size(), "--values: '", item, "' is not an integer");
    v.push_back(x);
  }
  GEMMAR_USAGE_CHECK(!v.empty(), "--values: empty list");
  return v;
}

nlohmann::json shape_json(const Shape& s, Quant q) {
  return {{"m", s.m},
          {"n", s.n},
          {"k", s.k},
          {"world", s.world},
          {"m_padded", padded_m(s, q)},
          {"slice_rows", slice_rows(s, q)}};
}

// Every field of the table (common/config_fields.hpp) and the label.
nlohmann::json config_json(const Config& c) {
  nlohmann::json j = config_to_json(c);
  j["label"] = config_label(c);
  return j;
}

std::string fmt(const char* f, double a) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

void print_table(std::ostream& out, const model::Profile& prof, const Shape& s, const Config& c,
                 const model::Prediction& pr) {
  out << "gemmar model: profile " << prof.name << ", " << config_label(c) << ", M=" << s.m << " (padded "
      << padded_m(s, c.quant) << ") N=" << s.n << " K=" << s.k << " W=" << s.world << "\n";
  for (const auto& n : pr.notes) out << "note: " << n << "\n";
  out << "phase        time_us        MiB   GB/s_achieved  bound\n";
  for (const auto& ph : pr.phases) {
    char line[160];
    std::snprintf(line, sizeof line, "%-10s %9.1f %10.2f %s  %s\n", ph.name.c_str(), ph.us, ph.bytes / 1048576.0,
                  ph.bytes > 0 && ph.us > 0 ? fmt("%15.1f", ph.bytes / ph.us / 1e3).c_str() : "              -",
                  ph.bound.c_str());

    out << line;
  }
  out << fmt("total      %9.1f us (standalone benchmark: max over ranks)\n", pr.total_us);
  out << fmt("in-server  %9.1f us (without the cross-rank launch skew)\n", pr.in_server_us);
  out << fmt("lower bound %8.1f us (bytes at datasheet peak rates; a measurement below it moved no data)\n",
             pr.lower_bound_us);
}

// The pull grid only matters where there is a pull: the fp8 wire over CU loads (lsa). With no wire given,
// sweep that wire; a config without a pull is told so rather than shown a flat curve.
void choose_sweep_wire(const po::variables_map& vm, Config& c) {
  const bool wire_given = !vm["gather-dtype"].defaulted() || !vm["gather-transport"].defaulted();
  const bool pull = has_pull(c);
  if (!wire_given && !pull && has_collective(c.mode) && traits(c.mode).fp8_wire) {
    c.gather_dtype = WireDtype::Fp8;
    c.gather_transport = Transport::Lsa;
  } else if (!pull) {
    throw UsageError("--param pull-blocks: the pull grid has no effect on " + config_label(c) +
                     " (only an fp8 gather over lsa runs the pull kernel); give --gather-dtype fp8 "
                     "--gather-transport lsa with a fused or split-sdma mode");
  }
}

void print_sweep(const po::variables_map& vm, const model::Profile& prof, const Shape& s, const Config& c) {
  const std::string param = vm["param"].as<std::string>();
  GEMMAR_USAGE_CHECK(param == "pull-blocks", "--param: '", param, "' cannot be swept (accepted: pull-blocks)");
  const std::vector<int> values =
      vm.count("values") ? parse_values(vm["values"].as<std::string>()) : model::default_pull_grid();
  const model::Sweep sw = model::sweep_pull_blocks(prof, s, c, values);
  if (vm["json"].as<bool>()) {
    nlohmann::json j = model::to_json(sw);
    j["param"] = param;
    j["profile"] = prof.name;
    j["shape"] = shape_json(s, c.quant);
    j["config"] = config_json(c);
    std::cout << json_text(j, 2) << "\n";
    return;
  }
  std::cout << "gemmar model sweep: profile " << prof.name << ", " << config_label(c) << ", M=" << s.m << "\n";
  std::cout << "pull_blocks    total_us\n";
  for (const auto& pt : sw.points) {
    char line[96];
    std::snprintf(line, sizeof line, "%11d %11.1f%s\n", pt.value, pt.total_us,
                  pt.value == sw.optimum ? "  <- optimum" : "");
    std::cout << line;
  }
  std::cout << "optimum " << sw.optimum << " blocks, band [" << sw.band_lo << ", " << sw.band_hi
            << "] (within 1% of the best)\n";
}

}  // namespace

int cmd_model(const Args& args_in) {
  Args args = args_in;
  const bool sweep = !args.empty() && args.front() == "sweep";
  if (sweep) args.erase(args.begin());

  po::options_description desc(sweep ? "gemmar model sweep options" : "gemmar model options");
  desc.add_options()("profile", po::value<std::string>()->default_value(model::default_profile_for("cpu", "", 1)),
                     (model::profile_choices() + " or a profile JSON file").c_str());
  if (sweep)
    desc.add_options()("param", po::value<std::string>()->default_value("pull-blocks"), "swept parameter: pull-blocks")(
        "values", po::value<std::string>(), "comma-separated values (default 8,12,16,...,1024)");
  add_shape_options(desc);
  add_config_options(desc);
  add_common_options(desc);
  po::variables_map vm;
  const std::string usage = sweep ? "gemmar model sweep --param pull-blocks [--values 16,24,...] [options]"
                                  : "gemmar model [sweep] [--profile P] [shape] [config] [--json]";
  if (!parse(args, desc, vm, std::cout, usage)) return kExitOk;

  const Shape s = read_shape(vm);
  Config c = read_config(vm);
  if (sweep) choose_sweep_wire(vm, c);
  validate_shape_config(s, c);
  const model::Profile prof = model::load_profile(vm["profile"].as<std::string>());
  if (sweep) {
    print_sweep(vm, prof, s, c);
    return kExitOk;
  }

  const model::Prediction pr = model::predict(prof, s, c);
  if (vm["json"].as<bool>()) {
    nlohmann::json j = model::to_json(pr);
    j["profile"] = prof.name;
    j["shape"] = shape_json(s, c.quant);
    j["config"] = config_json(c);
    j["model_band"] = prof.model_band;
    std::cout << json_text(j, 2) << "\n";
  } else {
    print_table(std::cout, prof, s, c, pr);
  }
  return kExitOk;
}

}  // namespace gemmar::cli
