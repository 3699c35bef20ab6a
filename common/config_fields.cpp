#include "common/config_fields.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "common/errors.hpp"

namespace gemmar {
namespace {

using nlohmann::json;

template <typename E, E Config::*M, E (*Parse)(const std::string&, const std::string&)>
ConfigField enum_field(const char* key, std::vector<const char*> old_keys, const char* flag, const char* help) {
  ConfigField f{key, std::move(old_keys), flag, FieldKind::Enum, help};
  f.spellings = [] { return enum_spellings<E>(); };
  f.set_text = [](Config& c, const std::string& t, const std::string& option) { c.*M = Parse(t, option); };
  f.get_text = [](const Config& c) { return to_string(c.*M); };
  return f;
}

template <typename T, T Config::*M>
ConfigField int_field(const char* key, const char* flag, const char* help, int64_t lo, int64_t hi,
                      const char* note = "", const char* env = "") {
  ConfigField f{key, {}, flag, FieldKind::Int, help, lo, hi, note, env};
  f.set_int = [](Config& c, int64_t v) { c.*M = T(v); };
  f.get_int = [](const Config& c) { return int64_t(c.*M); };
  return f;
}

template <bool Config::*M>
ConfigField bool_field(const char* key, const char* flag, const char* help) {
  ConfigField f{key, {}, flag, FieldKind::Bool, help};
  f.set_int = [](Config& c, int64_t v) { c.*M = v != 0; };
  f.get_int = [](const Config& c) { return int64_t(c.*M); };
  return f;
}

std::vector<ConfigField> make_fields() {
  return {
      enum_field<Mode, &Config::mode, parse_mode>("mode", {}, "mode", "the pipeline"),
      enum_field<Quant, &Config::quant, parse_quant>("quant", {}, "quant", "the operands' quantization"),
      // gemm_ar_schedule_worker.py's RESULT_JSON @f3bff0ae :191-208 names the legs "scatter" and "gather".
      enum_field<WireDtype, &Config::gather_dtype, parse_wire>("gather_dtype", {"gather"}, "gather-dtype",
                                                               "the all-gather leg's wire"),
      enum_field<Transport, &Config::gather_transport, parse_transport>(
          "gather_transport", {}, "gather-transport", "who moves the fp8 gather (copy engines or CU pull)"),
      int_field<int, &Config::pull_blocks>("pull_blocks", "pull-blocks",
                                           "pull kernel grid per rank (default: $MORI_GEMM_AR_PULL_BLOCKS, else 64)", 1,
                                           65536, "", "MORI_GEMM_AR_PULL_BLOCKS"),
      bool_field<&Config::fuse_quantize>("fuse_quantize", "fuse-quantize", "fold the fp8 narrowing into the reduce"),
      bool_field<&Config::fuse_reduce_push>(
          "fuse_reduce_push", "fuse-reduce-push",
          "the reduce fires the bf16 gather's copy-engine puts band by band (bf16 gather over sdma)"),
      int_field<int, &Config::gather_bands>("gather_bands", "gather-bands", "bands of --fuse-reduce-push", 1, 4096),
      enum_field<Publish, &Config::publish, parse_publish>("publish", {}, "publish",
                                                           "how --fuse-reduce-push releases a band to the copy engine"),
      // The table's order is the reading order: the chunk rule and schedule before the counts they constrain.
      enum_field<WireDtype, &Config::scatter_dtype, parse_scatter_wire>(
          "scatter_dtype", {"scatter"}, "scatter-dtype",
          "the reduce-scatter leg's wire: fp8 is mori's lossy fp8 scatter experiment (fused-sdma only)"),
      enum_field<ChunkRule, &Config::chunk_rule, parse_chunk_rule>(
          "chunk_rule", {}, "chunk-rule",
          "fused-sdma's pushes per destination when --chunk-bands is 0: bench (8, or --chunks, halved until it "
          "divides the bands per destination) or op (the public op's largest divisor <= 8 of them)"),
      enum_field<Schedule, &Config::schedule, parse_schedule>(
          "schedule", {}, "schedule",
          "the public op's row planner: wo_b maps measured logical M to a padded M, chunk_bands and relaxed rows "
          "(needs --chunk-rule op)"),
      int_field<int, &Config::chunks>("chunks", "chunks",
                                      "fused-sdma: asked pushes per destination (mori's --chunks; 0: mori's default 8, "
                                      "halved until it divides the M-tiles per destination)",
                                      0, 4096, "0: mori's default"),
      int_field<int, &Config::chunk_bands>(
          "chunk_bands", "chunk-bands",
          "fused-sdma: row bands per push, the last push short (mori's --chunk-bands; 0: the chunk rule decides)", 0,
          4096, "0: the chunk rule decides"),
      bool_field<&Config::relaxed_rows>(
          "relaxed_rows", "relaxed-rows",
          "fused-sdma with --chunk-bands: M a multiple of W with a full BLOCK_M tile per rank, not padded (both "
          "backends; the gpu refuses it with --guard)"),
      int_field<int64_t, &Config::logical_m>(
          "logical_m", "logical-m",
          "the op's logical M: -m is then the physical M and must be the row plan's padded M of it (0: -m is the "
          "logical M)",
          0, int64_t(1) << 20, "0: -m is the logical M"),
      int_field<int, &Config::sdma_queues>("sdma_queues", "sdma-queues",
                                           "SDMA queues per (source, destination) pair (the bench's 8; the op's 1)", 1,
                                           64),
  };
}

std::string int_text(int64_t v) { return std::to_string(v); }

// A JSON integer (or an integral float, as Python's json may write one) in the field's range.
int64_t json_int(const ConfigField& f, const json& v, const std::string& source, const std::string& key) {
  int64_t x = 0;
  if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()) &&
             std::fabs(v.get<double>()) < 9e15) {
    x = int64_t(v.get<double>());
  } else {
    throw UsageError(source + ": field '" + key + "' must be an integer, got " +
                     (v.is_number() ? v.dump() : v.type_name()));
  }
  if (x < f.lo || x > f.hi)
    throw UsageError(source + ": field '" + key + "' is " + int_text(x) + ", not in [" + int_text(f.lo) + ", " +
                     int_text(f.hi) + "]");
  return x;
}

// The field's value from JSON `v` (not null) into `c`.
void field_from_json(const ConfigField& f, const json& v, const std::string& source, const std::string& key,
                     Config& c) {
  switch (f.kind) {
    case FieldKind::Enum:
      if (!v.is_string()) throw UsageError(source + ": field '" + key + "' must be a string, got " + v.type_name());
      try {
        f.set_text(c, v.get<std::string>(), key);
      } catch (const UsageError& e) {
        throw UsageError(source + ": field " + e.what());
      }
      return;
    case FieldKind::Int:
      f.set_int(c, json_int(f, v, source, key));
      return;
    case FieldKind::Bool:
      // Python writes bools as true/false, but hand-edited logs use 0/1.
      if (v.is_boolean()) return f.set_int(c, v.get<bool>());
      if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1))
        return f.set_int(c, v.get<int64_t>());
      throw UsageError(source + ": field '" + key + "' must be a boolean, got " +
                       (v.is_number() ? v.dump() : v.type_name()));
  }
}

bool present(const json& j, const char* key) { return j.contains(key) && !j.at(key).is_null(); }

}  // namespace

const std::vector<ConfigField>& config_fields() {
  static const std::vector<ConfigField> fields = make_fields();
  return fields;
}

const ConfigField* find_config_field(const std::string& key) {
  for (const ConfigField& f : config_fields()) {
    if (key == f.key) return &f;
    for (const char* k : f.old_keys)
      if (key == k) return &f;
  }
  return nullptr;
}

std::string field_text(const ConfigField& f, const Config& c) {
  return f.kind == FieldKind::Enum ? f.get_text(c) : int_text(f.get_int(c));
}

json field_json(const ConfigField& f, const Config& c) {
  switch (f.kind) {
    case FieldKind::Enum:
      return f.get_text(c);
    case FieldKind::Int:
      return f.get_int(c);
    case FieldKind::Bool:
      return f.get_int(c) != 0;
  }
  return nullptr;
}

void set_field_option(const ConfigField& f, Config& c, const std::string& text) {
  if (f.kind == FieldKind::Enum) return f.set_text(c, text, std::string("--") + f.flag);
  GEMMAR_CHECK(f.kind == FieldKind::Bool, "--", f.flag, " is an integer option");
  GEMMAR_USAGE_CHECK(text == "0" || text == "1" || text == "true" || text == "false", "--", f.flag, ": '", text,
                     "' is not a boolean (0|1|true|false)");
  f.set_int(c, text == "1" || text == "true");
}

void set_field_option(const ConfigField& f, Config& c, int64_t v) {
  GEMMAR_CHECK(f.kind == FieldKind::Int, "--", f.flag, " is not an integer option");
  GEMMAR_USAGE_CHECK(v >= f.lo && v <= f.hi, "--", f.flag, ": ", v, " is out of range [", f.lo, ", ", f.hi, "]",
                     *f.note ? std::string(" (") + f.note + ")" : "");
  f.set_int(c, v);
}

bool set_field_from_env(const ConfigField& f, Config& c) {
  if (!*f.env) return false;
  const char* v = std::getenv(f.env);
  if (!v || !*v) return false;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  GEMMAR_USAGE_CHECK(end && *end == '\0' && !errno && x >= f.lo && x <= f.hi, f.env, ": '", v,
                     "' is not an integer in [", f.lo, ", ", f.hi, "]");
  f.set_int(c, x);
  return true;
}

void config_from_json(const json& j, const std::string& source, Config& c, const std::vector<std::string>& skip) {
  if (!j.is_object()) throw UsageError(source + ": a config must be a JSON object, got " + j.type_name());
  for (const ConfigField& f : config_fields()) {
    bool skipped = false;
    for (const std::string& s : skip) skipped = skipped || s == f.key;
    if (skipped) continue;
    std::string seen;  // the key read, so an old key that says otherwise is told
    Config first = c;
    for (std::size_t i = 0; i <= f.old_keys.size(); ++i) {
      const char* key = i == 0 ? f.key : f.old_keys[i - 1];
      if (!present(j, key)) continue;
      Config here = c;
      field_from_json(f, j.at(key), source, key, here);
      if (!seen.empty() && field_text(f, here) != field_text(f, first))
        throw UsageError(source + ": field '" + key + "' is " + field_text(f, here) + " but " + seen + " is " +
                         field_text(f, first));
      if (seen.empty()) {
        seen = key;
        first = here;
      }
    }
    if (!seen.empty()) c = first;
  }
}

json config_to_json(const Config& c) {
  json j = json::object();
  for (const ConfigField& f : config_fields()) j[f.key] = field_json(f, c);
  return j;
}

void apply_resolved_chunks(Config& c, int resolved) {
  if (c.chunk_rule == ChunkRule::Bench && c.chunk_bands == 0) c.chunks = resolved;
}

void config_from_metadata(const std::map<std::string, std::string>& meta, const std::string& path, Config& c) {
  for (const ConfigField& f : config_fields()) {
    const auto it = meta.find(f.key);
    if (it == meta.end()) continue;
    const std::string& t = it->second;
    const std::string at = path + ": metadata " + f.key + "='" + t + "'";
    if (f.kind == FieldKind::Enum) {
      try {
        f.set_text(c, t, f.key);
      } catch (const UsageError& e) {
        throw UsageError(path + ": metadata " + e.what());
      }
    } else if (f.kind == FieldKind::Bool) {
      const bool on = t == "1" || t == "true" || t == "True", off = t == "0" || t == "false" || t == "False";
      if (!on && !off) throw UsageError(at + " is not a boolean (0|1|true|false)");
      f.set_int(c, on);
    } else {
      char* end = nullptr;
      errno = 0;
      const long long x = std::strtoll(t.c_str(), &end, 10);
      if (t.empty() || !end || *end || errno || x < f.lo || x > f.hi)
        throw UsageError(at + " is not an integer in [" + int_text(f.lo) + ", " + int_text(f.hi) + "]");
      f.set_int(c, x);
    }
  }
}

std::map<std::string, std::string> config_to_metadata(const Config& c) {
  std::map<std::string, std::string> m;
  for (const ConfigField& f : config_fields()) m[f.key] = field_text(f, c);
  return m;
}

}  // namespace gemmar
