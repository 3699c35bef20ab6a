// Replays every fuzz seed (tests/fuzz/corpus/<target>/) and every input a fuzzer once crashed or hung on
// (tests/fuzz/regressions/<target>/) through the same entry points the fuzz build runs, so a fixed crash
// stays fixed in the ordinary test tiers and under the asan preset, without libFuzzer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

int gemmar_fuzz_log_line(const uint8_t* data, size_t size);
int gemmar_fuzz_trace(const uint8_t* data, size_t size);
int gemmar_fuzz_profile(const uint8_t* data, size_t size);
int gemmar_fuzz_results(const uint8_t* data, size_t size);
int gemmar_fuzz_phase_map(const uint8_t* data, size_t size);
int gemmar_fuzz_safetensors(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;
const fs::path kFuzzDir = fs::path(GEMMAR_TEST_DATA_DIR).parent_path() / "fuzz";

struct Target {
  const char* name;
  int (*run)(const uint8_t*, size_t);
};
const Target kTargets[] = {{"log_line", gemmar_fuzz_log_line},   {"trace", gemmar_fuzz_trace},
                           {"profile", gemmar_fuzz_profile},     {"results", gemmar_fuzz_results},
                           {"phase_map", gemmar_fuzz_phase_map}, {"safetensors", gemmar_fuzz_safetensors}};

// A hang is what libFuzzer's -timeout=10 flags; here, with no sanitizer slowdown budgeted, a fifth of it.
constexpr double kSecondsPerInput = 2.0;

int replay(const Target& t, const fs::path& dir) {
  int n = 0;
  if (!fs::is_directory(dir)) return 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream f(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string bytes = ss.str();
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_NO_THROW(t.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()))
        << t.name << " on " << entry.path();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, kSecondsPerInput) << t.name << " on " << entry.path() << " took " << s << " s";
    ++n;
  }
  return n;
}

void remove_temp_files() {
  const char* t = std::getenv("TMPDIR");
  const fs::path dir = t && *t ? t : "/tmp";
  const std::string prefix = "gemmar_fuzz_" + std::to_string(::getpid());
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) fs::remove(e.path(), ec);
}

TEST(ReliabilityFuzzReplay, EverySeedRunsCleanThroughItsTarget) {
  for (const auto& t : kTargets) EXPECT_GT(replay(t, kFuzzDir / "corpus" / t.name), 0) << t.name << ": no seeds";
  remove_temp_files();
}

TEST(ReliabilityFuzzReplay, EveryPastCrashOrHangInputRunsCleanAndFast) {
  int n = 0;
  for (const auto& t : kTargets) n += replay(t, kFuzzDir / "regressions" / t.name);
  EXPECT_GE(n, 5);  // tests/fuzz/regressions/ holds the inputs CI's fuzz job found (docs/reliability.md)
  remove_temp_files();
}

}  // namespace
