// Results files, the C++ side of what `gemmar report` and `gemmar check` read: Python-compatible JSON
// (NaN/Infinity tokens) parsed by parse_python_json, then run_record_from_json on the object itself and on
// every element of a "runs"/"results" array (validate's results.json, check --json). Records that parse are
// written back with dump_python_json and must parse again.
#include "fuzz_common.hpp"
#include "validate/record/run_record.hpp"

GEMMAR_FUZZ_TARGET(results) {
  using namespace gemmar;
  nlohmann::json doc;
  try {
    doc = parse_python_json(fuzz::as_string(data, size));
  } catch (const nlohmann::json::exception&) {
    return 0;  // the documented rejection of parse_python_json
  }
  auto one = [](const nlohmann::json& j) {
    fuzz::expect_only_gemmar_errors([&] {
      const RunRecord r = run_record_from_json(j, "fuzz:1");
      const std::string text = dump_python_json(run_record_to_json(r));
      (void)run_record_from_json(parse_python_json(text), "roundtrip:1");
    });
  };
  one(doc);
  if (doc.is_object()) {
    for (const char* key : {"runs", "results"}) {
      const auto it = doc.find(key);
      if (it != doc.end() && it->is_array())
        for (const auto& e : *it) one(e.is_object() && e.contains("record") ? e["record"] : e);
    }
  }
  (void)dump_python_json(doc);
  return 0;
}
