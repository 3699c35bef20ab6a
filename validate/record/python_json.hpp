// JSON as Python's json module writes it: the benchmark prints RESULT_JSON with json.dumps, which writes
// float('nan') and float('inf') as the bare tokens NaN, Infinity and -Infinity (not JSON; nlohmann rejects
// them). Every reader and writer of run records goes through these two functions.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace gemmar {

// Accepts NaN, Infinity and -Infinity outside strings. Throws nlohmann::json::exception: parse_error for
// bad syntax, out_of_range (406) for a number beyond a double (1e999); catch the base class.
nlohmann::json parse_python_json(const std::string& text);
// Writes non-finite numbers back as those tokens (nlohmann would write null); ", " and ": " separators as
// json.dumps does.
std::string dump_python_json(const nlohmann::json&);

}  // namespace gemmar
