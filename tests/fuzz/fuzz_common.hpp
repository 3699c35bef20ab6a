// Shared by the fuzz targets: what counts as an expected rejection, and a per-process temp file for the
// parsers that take a path.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"

// The entry point: libFuzzer's LLVMFuzzerTestOneInput in the fuzz build; with GEMMAR_FUZZ_REPLAY (the ctest
// suite tests/reliability/reliability_fuzz_replay_test.cpp links all five) a named function, so every seed and every
// past crash input in tests/fuzz/ is replayed by the ordinary test tiers and under ASan/UBSan too.
#ifdef GEMMAR_FUZZ_REPLAY
#define GEMMAR_FUZZ_TARGET(name) int gemmar_fuzz_##name(const uint8_t* data, size_t size)
#else
#define GEMMAR_FUZZ_TARGET(name) extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
#endif

namespace gemmar::fuzz {

inline std::string as_string(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// One file per process and suffix (libFuzzer's -jobs/-workers run several processes side by side).
inline std::string write_temp(const std::string& content, const std::string& suffix) {
  static const std::string dir = [] {
    const char* t = std::getenv("TMPDIR");
    return std::string(t && *t ? t : "/tmp");
  }();
  const std::string path = dir + "/gemmar_fuzz_" + std::to_string(::getpid()) + suffix;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), std::streamsize(content.size()));
  return path;
}

// gemmar::Error (and subclasses) is the contract for bad input; anything else escaping is a bug, so it is
// left to escape: libFuzzer reports an uncaught exception as a crash (abort via std::terminate).
template <typename F>
void expect_only_gemmar_errors(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
}

}  // namespace gemmar::fuzz
