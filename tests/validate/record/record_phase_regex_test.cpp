// The phase-pattern matcher (validate/record/phase_regex.{hpp,cpp}, RE2): same yes/no answers as a case-insensitive
// ECMAScript std::regex_search on the syntax both share, linear time on patterns that make a backtracker
// explode, and a clear error on what it refuses (lookaround, back-references, hostile sizes).
#include <gtest/gtest.h>

#include <chrono>
#include <random>
// libstdc++'s regex automaton trips GCC 12's -Wmaybe-uninitialized under the asan preset (a false positive
// inside <regex>); std::regex is only the oracle here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>

#include "common/errors.hpp"
#include "validate/record/phase_regex.hpp"
#include "validate/record/trace_reader.hpp"

namespace gemmar {
namespace {

bool std_search(const std::string& pattern, const std::string& text) {
  return std::regex_search(text, std::regex(pattern, std::regex::ECMAScript | std::regex::icase));
}

const std::vector<std::string> kNames = {
    "_gemm_a8w8_blockscale_kernel<128, 256>",
    "void mori::FusedReduceQuantize<__hip_bfloat16>(int, float*)",
    "SdmaCopyKernel",
    "gemm_ar_pull_dequant",
    "GEMM_AR_scatter_epilogue",
    "gemma",
    "gemm",
    "gemm_",
    "gemm_a",
    "gemmar",
    "Cijk_Ailk_Bljk_F8BS_MT256x256",
    "sm90_xmma_gemm_e4m3e4m3_bf16f32_f32_tn_n_tilesize128x128x128_warpgroupsize2x1x1",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "two_stage_allreduce",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
    "",
    "a",
    "aaaa-bbbb_1234 x.y",
    "wait_puts_drain",
    "fp8_to_bf16 widen_local",
};

TEST(PhaseRegex, AgreesWithEcmaScriptStdRegexOnTheSupportedSyntax) {
  const std::vector<std::string> patterns = {"gemm",
                                             "GEMM",
                                             "^gemm",
                                             "gemm$",
                                             "^gemm$",
                                             "_gemm|matmul|Cijk_",
                                             "dequant|fp8_?to_?bf16|widen_local",
                                             "quantize|quant_|amax|bf16_?to_?fp8|narrow",
                                             "all_?reduce|two_?stage|rccl|nccl",
                                             "wait_(puts|scatter|signal)",
                                             "gemm($|[^_a]|_($|[^a]|a($|[^r]))|a($|[^r]))",
                                             "a+",
                                             "a{2}",
                                             "a{2,}",
                                             "a{1,3}b",
                                             "(ab|a)*b",
                                             "[a-c]+_",
                                             "[^a-z]",
                                             "\\d+",
                                             "\\D",
                                             "\\w+<",
                                             "\\s",
                                             "\\S+",
                                             "\\bgemm\\b",
                                             "\\Bemm",
                                             ".",
                                             "x.y",
                                             "\\.",
                                             "\\(int,",
                                             "<\\d+, \\d+>",
                                             "(?:gemm|GEMM)_ar",
                                             "(a|b|c|d)(e|f)?",
                                             "k(er)+nel",
                                             "[\\d_]+",
                                             "[-a]",
                                             "[a-]",
                                             "e{0}",
                                             "(a*)*b",
                                             "(|a)+",
                                             "()",
                                             "a|",
                                             "|",
                                             "x*",
                                             "\\x41",
                                             "[\\x30-\\x39]{3}",
                                             "sm90_.*tn",
                                             "[.]",
                                             "\\bx\\b",
                                             "ker+?nel",
                                             "a{1,2}?",
                                             "(((((g)))))emm",
                                             "bf16>>$",
                                             "Sum_bf16_RING",
                                             "\\$|\\^"};
  std::mt19937 rng(7);
  std::vector<std::string> texts = kNames;
  const std::string alphabet = "abgemrAB_-01 <>.,";
  for (int i = 0; i < 200; ++i) {
    std::string t;
    const int len = int(rng() % 12);
    for (int k = 0; k < len; ++k) t += alphabet[rng() % alphabet.size()];
    texts.push_back(t);
  }
  for (const auto& p : patterns) {
    const PhaseRegex re(p);
    for (const auto& t : texts) EXPECT_EQ(re.search(t), std_search(p, t)) << "pattern '" << p << "' text '" << t << "'";
  }
}

TEST(PhaseRegex, DefaultGemmPatternSkipsTheCollectivesKernels) {
  // The default replaced the lookahead gemm(?!_?ar): check the two agree on every name.
  const PhaseRegex ours("gemm($|[^_a]|_($|[^a]|a($|[^r]))|a($|[^r]))");
  for (const auto& t : kNames) EXPECT_EQ(ours.search(t), std_search("gemm(?!_?ar)", t)) << t;
  EXPECT_FALSE(ours.search("gemm_ar_pull"));
  EXPECT_FALSE(ours.search("GEMMAR"));
  EXPECT_TRUE(ours.search("gemm_a8w8"));
}

TEST(PhaseRegex, CatastrophicBacktrackingPatternsRunInLinearTime) {
  // A backtracker takes 2^n steps on these against n 'a's with no match; the NFA a few microseconds per char.
  const std::string text(20000, 'a');
  for (const std::string p : {"(a+)+b", "(a|a)*b", "(a*)*b", "(a|aa)+$x", "(.*a){20}b", "(a?){30}a{30}b"}) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(PhaseRegex(p).search(text)) << p;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 5.0) << p;
  }
  EXPECT_TRUE(PhaseRegex("(a+)+$").search(text));
}

TEST(PhaseRegex, UnsupportedOrMalformedPatternsThrowSayingWhy) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"(unclosed", "missing )"},
      {"a)", "unexpected )"},
      {"[abc", "missing ]"},
      {"*a", "no argument for repetition operator"},
      {"a**", "bad repetition operator"},
      {"a{3,2}", "invalid repetition size"},
      {"a{1001}", "invalid repetition size"},
      {"(a)\\1", "back-references are not supported"},
      {"gemm(?!_ar)", "lookaround"},
      {"(?<=x)y", "lookaround"},
      {"\\q", "invalid escape"},
      {"a\\", "trailing \\"},
      {"[z-a]", "invalid character class range"},
      {"(a{1000}){1000}", "invalid repetition size"},  // RE2 bounds nested repeats too
      {[] {
         std::string p;
         for (int i = 0; i < 21; ++i) p += "\\w{1000}";
         return p;
       }(),
       "instructions (limit 20000)"},
      {std::string(100, '(') + std::string(100, ')'), "nested deeper than 64 at offset 64"},
  };
  for (const auto& [p, why] : bad) {
    try {
      PhaseRegex re(p);
      ADD_FAILURE() << "accepted '" << p << "'";
    } catch (const PhaseRegexError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << p << " -> " << e.what();
    }
  }
}

TEST(PhaseRegex, TraceReaderRejectsAHostilePatternAsAUsageError) {
  auto p = default_phase_patterns();
  EXPECT_THROW(apply_phase_override(p, "gemm=(a{1000}){1000}"), UsageError);
  EXPECT_THROW(apply_phase_override(p, "gemm=gemm(?!_ar)"), UsageError);
}

}  // namespace
}  // namespace gemmar

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
