#include "validate/record/run_record.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <type_traits>
#include <variant>

#include "common/config_fields.hpp"
#include "common/errors.hpp"
#include "validate/record/python_json.hpp"

namespace gemmar {

namespace {

[[noreturn]] void bad_field(const std::string& source, const std::string& field, const std::string& what) {
  throw UsageError(source + ": field '" + field + "' " + what);
}

const char* type_name(const nlohmann::json& v) { return v.type_name(); }

std::string number_text(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  std::ostringstream os;
  os << v;
  return os.str();
}

double get_number(const nlohmann::json& j, const std::string& key, const std::string& source) {
  const auto& v = j.at(key);
  if (!v.is_number()) bad_field(source, key, std::string("must be a number, got ") + type_name(v));
  return v.get<double>();
}

int64_t get_int(const nlohmann::json& j, const std::string& key, const std::string& source) {
  const auto& v = j.at(key);
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return int64_t(d);
  }
  bad_field(source, key, std::string("must be an integer, got ") + (v.is_number() ? v.dump() : type_name(v)));
}

std::string get_string(const nlohmann::json& j, const std::string& key, const std::string& source) {
  const auto& v = j.at(key);
  if (!v.is_string()) bad_field(source, key, std::string("must be a string, got ") + type_name(v));
  return v.get<std::string>();
}

bool get_bool(const nlohmann::json& j, const std::string& key, const std::string& source) {
  const auto& v = j.at(key);
  if (v.is_boolean()) return v.get<bool>();
  // Python writes bools as true/false, but hand-edited logs use 0/1.
  if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) return v.get<int64_t>() == 1;
  bad_field(source, key, std::string("must be a boolean, got ") + (v.is_number() ? v.dump() : type_name(v)));
}

std::vector<double> get_number_array(const nlohmann::json& j, const std::string& key, const std::string& source) {
  const auto& v = j.at(key);
  if (!v.is_array()) bad_field(source, key, std::string("must be an array of numbers, got ") + type_name(v));
  std::vector<double> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number())
      bad_field(source, key + "[" + std::to_string(i) + "]", std::string("must be a number, got ") + type_name(v[i]));
    out.push_back(v[i].get<double>());
  }
  return out;
}

bool present(const nlohmann::json& j, const char* key) { return j.contains(key) && !j.at(key).is_null(); }

// A time a run took: finite and positive, else the record cannot describe a real run.
void check_time(double t, const std::string& source, const std::string& field) {
  if (std::isnan(t)) bad_field(source, field, "is NaN: a time must be a finite positive number of us");
  if (!std::isfinite(t)) bad_field(source, field, "is infinite: a time must be a finite positive number of us");
  if (t <= 0) bad_field(source, field, "is " + number_text(t) + ": a time must be a finite positive number of us");
}

std::optional<int> optional_int(const nlohmann::json& j, const char* key, const std::string& source, int64_t lo,
                                int64_t hi) {
  if (!present(j, key)) return std::nullopt;
  const int64_t v = get_int(j, key, source);
  if (v < lo || v > hi)
    bad_field(source, key,
              "is " + std::to_string(v) + ", not in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return int(v);
}

// Knobs gemmar keeps in raw only, type-checked so a record that claims them is well-formed.
void check_knob(const nlohmann::json& j, const char* key, const std::string& source, bool allow_string, bool allow_bool,
                bool allow_int, bool allow_int_array) {
  if (!present(j, key)) return;
  const auto& v = j.at(key);
  if (allow_string && v.is_string()) return;
  if (allow_bool && v.is_boolean()) return;
  if (allow_int && v.is_number_integer()) return;
  if (allow_int_array && v.is_array()) {
    for (const auto& x : v)
      if (!x.is_number_integer()) bad_field(source, key, std::string("must be an array of integers, got ") + v.dump());
    return;
  }
  std::string want;
  auto add = [&](bool on, const char* what) {
    if (on) want += (want.empty() ? "" : " or ") + std::string(what);
  };
  add(allow_string, "a string");
  add(allow_bool, "a boolean");
  add(allow_int, "an integer");
  add(allow_int_array, "an array of integers");
  bad_field(source, key, "must be " + want + ", got " + (v.is_number() ? v.dump() : type_name(v)));
}

nlohmann::json guard_to_json(const GuardReport& g) {
  nlohmann::json codes = nlohmann::json::object();
  for (const auto& [code, c] : g.codes)
    codes[code] = {{"calls", c.calls}, {"first_iteration", c.first_iteration}, {"message", c.message}};
  nlohmann::json j = {{"calls", g.calls}, {"flagged_calls", g.flagged_calls}, {"codes", codes}};
  if (g.sample > 0) j["sample"] = g.sample;
  if (g.rows_per_call > 0) j["rows_per_call"] = g.rows_per_call;
  return j;
}

GuardReport guard_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) bad_field(source, "guard", std::string("must be an object, got ") + type_name(j));
  GuardReport g;
  auto count = [&](const nlohmann::json& o, const char* key, const std::string& where) {
    if (!present(o, key)) return 0;
    const int64_t v = get_int(o, key, source);
    if (v < 0 || v > (int64_t(1) << 30)) bad_field(source, where + "." + key, "must be a count in [0, 2^30]");
    return int(v);
  };
  g.calls = count(j, "calls", "guard");
  g.flagged_calls = count(j, "flagged_calls", "guard");
  g.sample = count(j, "sample", "guard");
  g.rows_per_call = count(j, "rows_per_call", "guard");
  if (present(j, "codes")) {
    const auto& c = j.at("codes");
    if (!c.is_object()) bad_field(source, "guard.codes", std::string("must be an object, got ") + type_name(c));
    for (const auto& [code, v] : c.items()) {
      const std::string where = "guard.codes." + code;
      if (!v.is_object()) bad_field(source, where, std::string("must be an object, got ") + type_name(v));
      GuardCode gc;
      gc.calls = count(v, "calls", where);
      gc.first_iteration = count(v, "first_iteration", where);
      if (present(v, "message")) gc.message = get_string(v, "message", source);
      g.codes[code] = gc;
    }
  }
  return g;
}

}  // namespace

std::string racy_publish_reason(const RunRecord& r) {
  const ModeTraits& t = traits(r.config.mode);
  if (!t.fused || !t.scatter_by_copy_engine) return "";
  if (r.fence && r.fence->rfind("raw-wt", 0) == 0)
    return "fence=" + *r.fence +
           " is a write-through fence bench_gemm_ar.py keeps only to reproduce its race "
           "(its docstring: \"Every raw-wt fence mode is known-racy\")";
  if (r.chunks && *r.chunks > 1 && !r.quant_inference.empty())  // quant not printed: a pre-fix version
    return "chunks=" + std::to_string(*r.chunks) +
           " on a benchmark version from before the --quant flag, when "
           "chunks > 1 \"produced wrong output about 3 runs in 10\" (aiter's under-counted s_waitcnt, fixed with "
           "the switch to 8 chunks: mori python/mori/ops/gemm_ar/README.md, \"The chunks race\")";
  return "";
}

namespace {
// Keys only bench_gemm_ar.py prints (ROCm/mori benchmark/cco/flydsl/gemm_ar/bench_gemm_ar.py, every version).
bool has_benchmark_keys(const nlohmann::json& j) {
  for (const char* k : {"per_rank_time_us", "critical_rank", "chunks", "fence", "tile_order", "block_m"})
    if (j.contains(k)) return true;
  return false;
}

// The steps of run_record_from_json, in the order it reads the fields (a record with several faults is told
// the first).

// mode, m, n, k (required) and world_size (or its alias world; the reader's default when neither is printed).
void read_shape_and_mode(const nlohmann::json& j, const std::string& source, const RecordDefaults& defaults,
                         RunRecord& r) {
  for (const char* key : {"mode", "m", "n", "k"})
    if (!present(j, key)) bad_field(source, key, "is missing (required: mode, m, n, k)");

  r.shape.m = get_int(j, "m", source);
  r.shape.n = get_int(j, "n", source);
  r.shape.k = get_int(j, "k", source);
  // Older benchmark versions print no world_size; `world` is the same field under gemmar's option name.
  std::optional<int64_t> world;
  for (const char* key : {"world_size", "world"}) {
    if (!present(j, key)) continue;
    const int64_t w = get_int(j, key, source);
    if (world && *world != w)
      bad_field(source, key, "is " + std::to_string(w) + " but world_size is " + std::to_string(*world));
    if (w < 1 || w > 512) bad_field(source, key, "is " + std::to_string(w) + ", not in [1, 512]");
    world = w;
  }
  if (!world) {
    world = defaults.world;
    r.world_assumed = true;
  }
  r.shape.world = int(*world);
}

// Every config key through the field table (common/config_fields.hpp), old keys too; then quant when not
// printed (inferred from the benchmark's own keys, or unknown). `chunks` is the resolved count: read_benchmark_run.
void read_config(const nlohmann::json& j, const std::string& source, RunRecord& r) {
  config_from_json(j, source, r.config, {"chunks"});
  if (present(j, "pull_blocks")) r.pull_blocks = r.config.pull_blocks;
  if (present(j, "quant")) return;
  if (has_benchmark_keys(j)) {
    r.config.quant = Quant::Ptpc;
    r.quant_inference =
        "quant not printed: ptpc inferred (bench_gemm_ar.py before its --quant flag, e.g. ROCm/mori "
        "@0b26ebf8, made only per-token/per-channel operands)";
  } else {
    r.quant_known = false;
    r.quant_inference =
        "quant not printed and not inferable from the record's keys: quant unknown (floors taken "
        "at blockscale; no baseline matches it)";
  }
}

// max_rank_time_us, per_rank_time_us (one per rank, its maximum max_rank_time_us) and critical_rank (the slowest).
void read_times(const nlohmann::json& j, const std::string& source, RunRecord& r) {
  if (present(j, "max_rank_time_us")) {
    r.max_rank_time_us = get_number(j, "max_rank_time_us", source);
    check_time(*r.max_rank_time_us, source, "max_rank_time_us");
  }
  if (present(j, "per_rank_time_us")) {
    r.per_rank_time_us = get_number_array(j, "per_rank_time_us", source);
    for (size_t i = 0; i < r.per_rank_time_us.size(); ++i)
      check_time(r.per_rank_time_us[i], source, "per_rank_time_us[" + std::to_string(i) + "]");
    if (int64_t(r.per_rank_time_us.size()) != r.shape.world)
      bad_field(source, "per_rank_time_us",
                "has " + std::to_string(r.per_rank_time_us.size()) + " entries but world_size is " +
                    std::to_string(r.shape.world) +
                    (r.world_assumed ? " (assumed: the record has none; --world sets it)" : "") +
                    ": one time per rank");
    const double mx = *std::max_element(r.per_rank_time_us.begin(), r.per_rank_time_us.end());
    if (r.max_rank_time_us && std::fabs(mx - *r.max_rank_time_us) > 1e-6 * std::max(mx, *r.max_rank_time_us))
      bad_field(source, "per_rank_time_us",
                "has maximum " + number_text(mx) + " but max_rank_time_us is " + number_text(*r.max_rank_time_us));
  }
  r.critical_rank = optional_int(j, "critical_rank", source, 0, r.shape.world - 1);
  if (r.critical_rank && !r.per_rank_time_us.empty()) {
    const double mx = *std::max_element(r.per_rank_time_us.begin(), r.per_rank_time_us.end());
    if (r.per_rank_time_us[size_t(*r.critical_rank)] != mx)
      bad_field(source, "critical_rank",
                "is " + std::to_string(*r.critical_rank) + " but rank " + std::to_string(*r.critical_rank) + " took " +
                    number_text(r.per_rank_time_us[size_t(*r.critical_rank)]) + " us, not the slowest " +
                    number_text(mx));
  }
}

// A string field that is one of `accepted`, or absent.
std::optional<std::string> choice_field(const nlohmann::json& j, const char* key, const std::string& source,
                                        std::initializer_list<const char*> accepted) {
  if (!present(j, key)) return std::nullopt;
  const std::string s = get_string(j, key, source);
  std::string list;
  for (const char* a : accepted) {
    if (s == a) return s;
    list += (list.empty() ? "" : "|") + std::string(a);
  }
  bad_field(source, key, "is '" + s + "' (accepted: " + list + ")");
}

// The benchmark's own check (rel_l2, validated), how it timed (timing, stop_after) and its kernel knobs.
void read_benchmark_run(const nlohmann::json& j, const std::string& source, RunRecord& r) {
  if (j.contains("rel_l2")) {
    // Python writes float('nan') as NaN, but a None (no check ran) as null: both mean "not validated".
    r.rel_l2 = j.at("rel_l2").is_null() ? std::numeric_limits<double>::quiet_NaN() : get_number(j, "rel_l2", source);
    if (*r.rel_l2 < 0)
      bad_field(source, "rel_l2", "is " + number_text(*r.rel_l2) + ": a relative error cannot be negative");
  }
  if (present(j, "validated")) r.validated = get_bool(j, "validated", source);
  if (present(j, "timing")) {
    r.timing = get_string(j, "timing", source);
    // gemmar's CPU emulation writes "none (...)": no kernel times at all.
    if (r.timing != "graph" && r.timing != "eager" && r.timing.rfind("none", 0) != 0)
      bad_field(source, "timing", "is '" + r.timing + "' (accepted: graph|eager|none)");
  }
  r.stop_after = choice_field(j, "stop_after", source, {"all", "scatter"});
  r.chunks = optional_int(j, "chunks", source, 1, 4096);
  // The model's chunk pipeline (fused-sdma's overlap) follows the run's own pushes per destination.
  if (r.chunks) apply_resolved_chunks(r.config, *r.chunks);
  if (present(j, "fence")) r.fence = get_string(j, "fence", source);
  r.block_m = optional_int(j, "block_m", source, 1, 1 << 16);
  r.block_n = optional_int(j, "block_n", source, 1, 1 << 16);
  r.tile_order = choice_field(j, "tile_order", source, {"auto", "rotated", "linear"});
  check_knob(j, "swap_ab", source, false, true, true, false);
  check_knob(j, "permlane", source, true, true, true, false);
  check_knob(j, "tile", source, true, false, true, true);
}

// gemmar's optional fields that need more than a type check, each read when present (not null).
void read_per_rank_rel_l2(const nlohmann::json& j, const std::string& source, RunRecord& r) {
  r.per_rank_rel_l2 = get_number_array(j, "per_rank_rel_l2", source);
  for (size_t i = 0; i < r.per_rank_rel_l2.size(); ++i)
    if (r.per_rank_rel_l2[i] < 0)
      bad_field(source, "per_rank_rel_l2[" + std::to_string(i) + "]",
                "is " + number_text(r.per_rank_rel_l2[i]) + ": a relative error cannot be negative");
}

// A slice with no real row (all padding: M = 1000 of mxfp8's 256-row tiles at W = 8 leaves ranks 4-7 none) has no
// relL2: gemmar writes NaN, which JSON spells null; read back as NaN, never judged off.
void read_per_slice_rel_l2(const nlohmann::json& j, const std::string& source, RunRecord& r) {
  const auto& v = j.at("per_slice_rel_l2");
  if (!v.is_array())
    bad_field(source, "per_slice_rel_l2", std::string("must be an array of numbers, got ") + type_name(v));
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number() && !v[i].is_null())
      bad_field(source, "per_slice_rel_l2[" + std::to_string(i) + "]",
                std::string("must be a number (or null: a slice of padding only), got ") + type_name(v[i]));
    r.per_slice_rel_l2.push_back(v[i].is_null() ? std::nan("") : v[i].get<double>());
  }
}

void read_phases(const nlohmann::json& j, const std::string& source, RunRecord& r) {
  const auto& p = j.at("phases_us");
  if (!p.is_object()) bad_field(source, "phases_us", std::string("must be an object name -> us, got ") + p.type_name());
  for (auto it = p.begin(); it != p.end(); ++it) {
    if (it->is_null()) continue;  // the benchmark's table has null for phases a wire does not run
    if (!it->is_number())
      bad_field(source, "phases_us." + it.key(), std::string("must be a number, got ") + it->type_name());
    const double t = it->get<double>();
    if (!std::isfinite(t) || t < 0)
      bad_field(source, "phases_us." + it.key(), "is " + number_text(t) + ": a phase time must be finite and >= 0");
    r.phases_us[it.key()] = t;
  }
}

void read_seed(const nlohmann::json& j, const std::string& source, RunRecord& r) {
  const auto& v = j.at("seed");
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    bad_field(source, "seed",
              std::string("must be a non-negative integer, got ") + (v.is_number() ? v.dump() : type_name(v)));
  r.seed = v.get<uint64_t>();
}

void read_wrong_per_iteration(const nlohmann::json& j, const std::string& source, RunRecord& r) {
  for (double v : get_number_array(j, "wrong_elements_per_iteration", source)) {
    if (!(v >= 0 && v < 9e15 && v == std::floor(v)))
      bad_field(source, "wrong_elements_per_iteration", "must hold non-negative integers");
    r.wrong_elements_per_iteration.push_back(int64_t(v));
  }
}

void read_guard(const nlohmann::json& j, const std::string& source, RunRecord& r) {
  r.guard = guard_from_json(j.at("guard"), source);
}

void read_nondeterministic(const nlohmann::json& j, const std::string& source, RunRecord& r) {
  const auto& v = j.at("nondeterministic_iterations");
  if (!v.is_array())
    bad_field(source, "nondeterministic_iterations", std::string("must be an array, got ") + type_name(v));
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string where = "nondeterministic_iterations[" + std::to_string(i) + "]";
    if (!v[i].is_object()) bad_field(source, where, std::string("must be an object, got ") + type_name(v[i]));
    NondeterministicIteration nd;
    if (present(v[i], "iteration"))
      nd.iteration = int(std::clamp<int64_t>(get_int(v[i], "iteration", source), 0, 1 << 30));
    if (present(v[i], "repeat_of"))
      nd.repeat_of = int(std::clamp<int64_t>(get_int(v[i], "repeat_of", source), 0, 1 << 30));
    if (present(v[i], "ranks"))
      for (double x : get_number_array(v[i], "ranks", source)) nd.ranks.push_back(int(std::clamp(x, -1.0, 1e6)));
    r.nondeterministic_iterations.push_back(nd);
  }
}

// How one of gemmar's optional fields is read into its member: a string, a number, a time (finite and
// positive), a count (negative: the old "not checked" spelling, read as absent), a number of iterations
// (clamped to [0, 2^30]), or a reader of its own.
using TextField = std::optional<std::string> RunRecord::*;
using NumberField = std::optional<double> RunRecord::*;
struct TimeField {
  std::optional<double> RunRecord::*member;
};
using CountField = std::optional<int64_t> RunRecord::*;
using IterationsField = std::optional<int> RunRecord::*;
using FieldReader = void (*)(const nlohmann::json&, const std::string& source, RunRecord&);
struct OptionalField {
  const char* key;
  std::variant<TextField, NumberField, TimeField, CountField, IterationsField, FieldReader> read;
};

// In the order they are read. Any producer may add them; absent or null leaves the member unset.
constexpr OptionalField kOptionalFields[] = {
    {"per_rank_rel_l2", &read_per_rank_rel_l2},
    {"per_slice_rel_l2", &read_per_slice_rel_l2},
    {"phases_us", &read_phases},
    {"profile", &RunRecord::profile},
    {"backend", &RunRecord::backend},
    {"wrong_elements", &RunRecord::wrong_elements},
    {"checked_rows", &RunRecord::checked_rows},
    {"poisoned_elements", &RunRecord::poisoned_elements},
    {"checked_elements", &RunRecord::checked_elements},
    {"nonfinite_elements", &RunRecord::nonfinite_elements},
    {"disagreeing_elements", &RunRecord::disagreeing_elements},
    {"wire_recipe", &RunRecord::wire_recipe},
    {"wrong_elements_basis", &RunRecord::wrong_elements_basis},
    {"operand_dtype", &RunRecord::operand_dtype},
    {"first_wrong_element", &RunRecord::first_wrong_element},
    {"full_compare_us", &RunRecord::full_compare_us},
    {"full_compare_bytes", &RunRecord::full_compare_bytes},
    {"rel_l2_all_views", &RunRecord::rel_l2_all_views},
    {"rel_l2_all_views_stderr", &RunRecord::rel_l2_all_views_stderr},
    {"seed", &read_seed},
    {"inject", &RunRecord::inject},
    {"device", &RunRecord::device},
    {"gemm_impl", &RunRecord::gemm_impl},
    {"unfused_baseline", &RunRecord::unfused_baseline},
    {"unfused_baseline_us", TimeField{&RunRecord::unfused_baseline_us}},
    {"iterations_checked", &RunRecord::iterations_checked},
    {"check_every", &RunRecord::check_every},
    {"wrong_elements_per_iteration", &read_wrong_per_iteration},
    {"stale_elements", &RunRecord::stale_elements},
    {"guard", &read_guard},
    {"nondeterministic_iterations", &read_nondeterministic},
    {"straggle_us", &RunRecord::straggle_us},
};

void read_optional_field(const nlohmann::json& j, const OptionalField& f, const std::string& source, RunRecord& r) {
  std::visit(
      [&](auto read) {
        using T = decltype(read);
        if constexpr (std::is_same_v<T, TextField>) {
          r.*read = get_string(j, f.key, source);
        } else if constexpr (std::is_same_v<T, NumberField>) {
          r.*read = get_number(j, f.key, source);
        } else if constexpr (std::is_same_v<T, TimeField>) {
          r.*read.member = get_number(j, f.key, source);
          check_time(*(r.*read.member), source, f.key);
        } else if constexpr (std::is_same_v<T, CountField>) {
          const int64_t v = get_int(j, f.key, source);
          if (v >= 0) r.*read = v;
        } else if constexpr (std::is_same_v<T, IterationsField>) {
          r.*read = int(std::clamp<int64_t>(get_int(j, f.key, source), 0, 1 << 30));
        } else {
          read(j, source, r);
        }
      },
      f.read);
}

// The sizes and combinations the op itself rejects mean the record cannot describe a real run.
void check_runnable(const std::string& source, const RunRecord& r) {
  try {
    validate_shape_config(r.shape, r.config, false);
    validate_gather_wire(r.config);
  } catch (const UsageError& e) {
    throw UsageError(source + ": " + e.what());
  }
}

}  // namespace

RunRecord run_record_from_json(const nlohmann::json& j, const std::string& source, const RecordDefaults& defaults) {
  if (!j.is_object()) throw UsageError(source + ": a run record must be a JSON object, got " + j.type_name());
  RunRecord r;
  r.source = source;
  r.raw = j;
  read_shape_and_mode(j, source, defaults, r);
  read_config(j, source, r);
  read_times(j, source, r);
  read_benchmark_run(j, source, r);
  for (const OptionalField& f : kOptionalFields)
    if (present(j, f.key)) read_optional_field(j, f, source, r);
  check_runnable(source, r);
  return r;
}

nlohmann::json run_record_to_json(const RunRecord& r) {
  nlohmann::json j = r.raw.is_object() ? r.raw : nlohmann::json::object();
  // Every config field under its key (the table: common/config_fields.hpp), but quant when it was not known and
  // chunks, which a record holds as the resolved count (mori's: the fused modes' pushes per destination, null
  // otherwise).
  for (const ConfigField& f : config_fields())
    if (std::string(f.key) != "chunks" && (r.quant_known || std::string(f.key) != "quant"))
      j[f.key] = field_json(f, r.config);
  if (r.chunks)
    j["chunks"] = *r.chunks;
  else if (traits(r.config.mode).fused && r.quant_known)  // chunks beside no quant would read as a ptpc-era log
    j["chunks"] = effective_chunks(r.shape, r.config);
  j["world_size"] = r.shape.world;
  j["m"] = r.shape.m;
  j["n"] = r.shape.n;
  j["k"] = r.shape.k;
  if (r.max_rank_time_us) j["max_rank_time_us"] = *r.max_rank_time_us;
  if (!r.per_rank_time_us.empty()) j["per_rank_time_us"] = r.per_rank_time_us;
  if (r.rel_l2) j["rel_l2"] = *r.rel_l2;
  if (r.validated) j["validated"] = *r.validated;
  if (!r.timing.empty()) j["timing"] = r.timing;
  j["pull_blocks"] = r.pull_blocks.value_or(r.config.pull_blocks);
  if (!r.per_rank_rel_l2.empty()) j["per_rank_rel_l2"] = r.per_rank_rel_l2;
  if (!r.per_slice_rel_l2.empty()) j["per_slice_rel_l2"] = r.per_slice_rel_l2;
  if (!r.phases_us.empty()) {
    nlohmann::json p = nlohmann::json::object();
    for (const auto& [name, us] : r.phases_us) p[name] = us;
    j["phases_us"] = p;
  }
  if (r.profile) j["profile"] = *r.profile;
  if (r.backend) j["backend"] = *r.backend;
  if (r.stop_after) j["stop_after"] = *r.stop_after;
  if (r.critical_rank) j["critical_rank"] = *r.critical_rank;
  if (r.wrong_elements) j["wrong_elements"] = *r.wrong_elements;
  if (r.checked_rows) j["checked_rows"] = *r.checked_rows;
  if (r.poisoned_elements) j["poisoned_elements"] = *r.poisoned_elements;
  if (r.checked_elements) j["checked_elements"] = *r.checked_elements;
  if (r.nonfinite_elements) j["nonfinite_elements"] = *r.nonfinite_elements;
  if (r.disagreeing_elements) j["disagreeing_elements"] = *r.disagreeing_elements;
  if (r.wire_recipe) j["wire_recipe"] = *r.wire_recipe;
  if (r.wrong_elements_basis) j["wrong_elements_basis"] = *r.wrong_elements_basis;
  if (r.operand_dtype) j["operand_dtype"] = *r.operand_dtype;
  if (r.first_wrong_element) j["first_wrong_element"] = *r.first_wrong_element;
  if (r.full_compare_us) j["full_compare_us"] = *r.full_compare_us;
  if (r.full_compare_bytes) j["full_compare_bytes"] = *r.full_compare_bytes;
  if (r.rel_l2_all_views) j["rel_l2_all_views"] = *r.rel_l2_all_views;
  if (r.rel_l2_all_views_stderr) j["rel_l2_all_views_stderr"] = *r.rel_l2_all_views_stderr;
  if (r.seed) j["seed"] = *r.seed;
  if (r.inject) j["inject"] = *r.inject;
  if (r.device) j["device"] = *r.device;
  if (r.gemm_impl) j["gemm_impl"] = *r.gemm_impl;
  if (r.unfused_baseline) j["unfused_baseline"] = *r.unfused_baseline;
  if (r.iterations_checked) j["iterations_checked"] = *r.iterations_checked;
  if (r.check_every) j["check_every"] = *r.check_every;
  if (!r.wrong_elements_per_iteration.empty()) j["wrong_elements_per_iteration"] = r.wrong_elements_per_iteration;
  if (r.stale_elements) j["stale_elements"] = *r.stale_elements;
  if (!r.nondeterministic_iterations.empty()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& nd : r.nondeterministic_iterations)
      a.push_back({{"iteration", nd.iteration}, {"repeat_of", nd.repeat_of}, {"ranks", nd.ranks}});
    j["nondeterministic_iterations"] = a;
  }
  if (r.straggle_us) j["straggle_us"] = *r.straggle_us;
  if (r.guard) j["guard"] = guard_to_json(*r.guard);
  if (r.unfused_baseline_us) {
    j["unfused_baseline_us"] = *r.unfused_baseline_us;
    if (r.max_rank_time_us && *r.max_rank_time_us > 0)
      j["fused_vs_unfused"] = *r.unfused_baseline_us / *r.max_rank_time_us;
  }
  return j;
}

}  // namespace gemmar
