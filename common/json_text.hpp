// JSON text that cannot throw: j.dump(indent) with strings holding invalid UTF-8 (a kernel name from a trace, a
// log line's bytes quoted in an error message) written with U+FFFD instead of raising type_error 316. Every
// JSON gemmar prints or writes goes through this (or validate's dump_python_json, which uses it for leaves).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace gemmar {

inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace gemmar
