// The one table of Config's fields (docs/spec.md section 4, "Config fields"): each field's JSON key as mori's
// RESULT_JSON spells it (bench_gemm_ar.py @d5443336 :561-604), older keys still read, its command-line flag, its
// default (Config{}'s) and how it reads and writes as text and JSON. Every reader and writer of a config goes
// through it: the CLI (validate/cli/cli.cpp), run records (validate/record/run_record.cpp), config documents
// (`gemmar model --json`, report inputs), dump metadata (validate/harness/{dump_write,verify_files}.cpp) and the
// calibration's RESULT_JSON lines; python/gemmar_dump.py's CONFIG mirrors the keys and defaults
// (tests/common/common_config_fields_test.cpp checks it). A new knob is a Config member plus one row here.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/config.hpp"

namespace gemmar {

enum class FieldKind { Enum, Int, Bool };

struct ConfigField {
  const char* key;                    // JSON and dump-metadata key
  std::vector<const char*> old_keys;  // read too (a record holding two of them must agree)
  const char* flag;                   // command-line option, without "--"
  FieldKind kind;
  const char* help;        // --help text (enums: the spellings are appended)
  int64_t lo = 0, hi = 0;  // Int: the accepted range
  const char* note = "";   // Int: what the range's special value means, for the out-of-range message
  const char* env = "";    // an environment variable that gives the command-line default, or ""
  // Enum: the spellings ("bf16|fp8"), parse (a UsageError naming `option`) and print.
  std::string (*spellings)() = nullptr;
  void (*set_text)(Config&, const std::string& text, const std::string& option) = nullptr;
  std::string (*get_text)(const Config&) = nullptr;
  // Int and Bool (as 0/1).
  void (*set_int)(Config&, int64_t) = nullptr;
  int64_t (*get_int)(const Config&) = nullptr;
};

// In the order a reader applies them (a field's checks may read the fields before it).
const std::vector<ConfigField>& config_fields();
// The row of `key` (a JSON key); nullptr when none.
const ConfigField* find_config_field(const std::string& key);

// The field's value as text: the enum's spelling, the integer, "1"/"0" for a bool (dump metadata, CLI defaults).
std::string field_text(const ConfigField&, const Config&);
// The field's value as JSON: a string, an integer or a boolean.
nlohmann::json field_json(const ConfigField&, const Config&);

// Command line: `text` of an enum or bool option, or `value` of an int option, into the field; a UsageError names
// "--flag" (int: "--flag: V is out of range [lo, hi]").
void set_field_option(const ConfigField&, Config&, const std::string& text);
void set_field_option(const ConfigField&, Config&, int64_t value);
// The field's default from its environment variable, when it has one and the variable is set (a UsageError names
// the variable); false when not set.
bool set_field_from_env(const ConfigField&, Config&);

// JSON: every field present and not null in `j` (its key or an old key), in table order, except those in `skip`.
// Errors: "<source>: field '<key>' must be an integer, got ..." / "... is V, not in [lo, hi]" / "<source>: field
// <key>: unknown value ..." (the record reader's wording).
void config_from_json(const nlohmann::json& j, const std::string& source, Config&,
                      const std::vector<std::string>& skip = {});
// Every field under its key (a config document; run records write the same keys).
nlohmann::json config_to_json(const Config&);

// A RESULT_JSON's "chunks" is the count the bench resolved (`chunks if fused else None`, bench_gemm_ar.py :572),
// not the asked --chunks. Under the bench rule without chunk_bands it resolves to itself, so it becomes the
// config's chunks; otherwise it is derived from the other fields (chunk_plan) and the config keeps 0.
void apply_resolved_chunks(Config&, int resolved);

// Dump metadata (string -> string): every field whose key is present. Errors: "<path>: metadata <key>='v' is not an
// integer in [lo, hi]" / "... is not a boolean (0|1|true|false)" / "<path>: metadata <key>: unknown value ...".
void config_from_metadata(const std::map<std::string, std::string>& meta, const std::string& path, Config&);
std::map<std::string, std::string> config_to_metadata(const Config&);

}  // namespace gemmar
