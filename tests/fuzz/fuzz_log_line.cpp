// RESULT_JSON logs: parse_log_line on single lines and read_log on the whole input (streamed, with a small
// line cap so over-long lines are exercised too); every valid record is written back and re-read, and every
// entry is printed as check --json prints it.
#include <sstream>

#include "common/json_text.hpp"
#include "fuzz_common.hpp"
#include "validate/record/log_reader.hpp"
#include "validate/record/run_record.hpp"

GEMMAR_FUZZ_TARGET(log_line) {
  using namespace gemmar;
  const std::string text = fuzz::as_string(data, size);
  auto roundtrip = [](const LogEntry& e) {
    // What `gemmar check --json` prints for every entry (the error quotes the line's bytes) must be JSON.
    const std::string shown = json_text(nlohmann::json{{"source", e.source}, {"error", e.error}, {"raw", e.raw}});
    if (!nlohmann::json::accept(shown)) __builtin_trap();
    if (!e.record) return;
    const std::string line = dump_python_json(run_record_to_json(*e.record));
    const auto again = parse_log_line("RESULT_JSON " + line, "roundtrip:1");
    if (!again || !again->record) __builtin_trap();  // what gemmar writes it must read back
  };
  fuzz::expect_only_gemmar_errors([&] {
    const std::string first = text.substr(0, text.find('\n'));
    if (auto e = parse_log_line(first, "fuzz:1")) roundtrip(*e);
  });
  fuzz::expect_only_gemmar_errors([&] {
    std::istringstream in(text);
    LogReadOptions opt;
    opt.max_line_bytes = 512;
    read_log(
        in, "fuzz", [&](LogEntry&& e) { roundtrip(e); }, opt);
  });
  return 0;
}
