// The lab's one table (lab/variants.hpp) and the testbed's cases (lab/testbed_plan.hpp): every subject has its row,
// every lab variant and every product subject runs at least one testbed case, the GEMM cases cover every quant x
// every K of kWgmma4KBlocks x the edge M, and each concern's launcher (lab/gemm/variants.cu,
// lab/convert/widen_variants.cu, lab/pipeline_variants.cu, lab/guard/caller_guard_variants.cu) names every variant of
// its concern, so none is enumerated without a kernel behind it. Plain C++ on the CPU.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/gemm/heuristics.hpp"
#include "lab/testbed_plan.hpp"
#include "lab/variants.hpp"

namespace {

using gemmar::lab::Concern;
using gemmar::lab::Subject;
using gemmar::lab::SubjectInfo;

std::string read_source(const std::string& rel) {
  std::ifstream in(std::filesystem::path(GEMMAR_TEST_SOURCE_DIR) / rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The enumerators of lab/variants.hpp's Subject, in declaration order (the last is kCount).
std::vector<std::string> enumerators() {
  const std::string hpp = read_source("lab/variants.hpp");
  std::vector<std::string> names;
  std::istringstream in(hpp.substr(hpp.find("enum class Subject {")));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && line.find("};") == std::string::npos) {
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos || line.compare(first, 2, "//") == 0) continue;
    size_t end = first;
    while (end < line.size() && (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_')) ++end;
    if (end > first) names.push_back(line.substr(first, end - first));
  }
  return names;
}

TEST(KernelsLabTestbed, EverySubjectHasOneRowInOrderWithAUniqueName) {
  const auto& all = gemmar::lab::subjects();
  ASSERT_EQ(all.size(), size_t(Subject::kCount));
  ASSERT_EQ(enumerators().size(), all.size() + 1) << "lab/variants.hpp's enumerators, then kCount";
  std::set<std::string> names;
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(int(all[i].id), int(i));
    EXPECT_TRUE(names.insert(all[i].name).second) << all[i].name;
    Subject found;
    ASSERT_TRUE(gemmar::lab::find_subject(all[i].name, &found));
    EXPECT_EQ(found, all[i].id);
  }
  Subject none;
  EXPECT_FALSE(gemmar::lab::find_subject("wgmma4l0", &none)) << "the environment spellings are history, not names";
}

TEST(KernelsLabTestbed, TheGemmCasesCoverEveryQuantEveryTunedKAndTheEdgeM) {
  const auto cases = gemmar::lab::gemm_cases();
  for (const gemmar::QuantTraits& q : gemmar::kQuantTable)
    for (const int kb : gemmar::kernels::dev::kWgmma4KBlocks)
      for (const int64_t m : {int64_t(128), int64_t(1000), gemmar::kernels::dev::kShareBFromRows}) {
        bool found = false;
        for (const auto& c : cases) found |= c.quant == q.quant && c.k == int64_t(kb) * 128 && c.m == m;
        EXPECT_TRUE(found) << q.name << " K=" << kb * 128 << " M=" << m;
      }
}

TEST(KernelsLabTestbed, TheGuardCasesCoverMorisTwoTargetsOnBothGathersWithTheirScaleLayoutsAndTheCostGoalsM) {
  // V4-Pro: blockscale, W = 8, 7168 x 2048, mori's flat fp32 [K/128, M] A scales (gg_a_scale_kind 0); V4-Flash:
  // mxfp8, W = 4, 5120 x 2048, mori's packed e8m0 (3). docs/guard.md's cost goal is stated at M = 4096 and 16384.
  bool pro_bf16_4096 = false, pro_bf16_16384 = false, pro_fp8 = false, flash_bf16 = false, flash_fp8 = false;
  for (const auto& c : gemmar::lab::guard_cases()) {
    const bool pro = c.world == 8 && c.n == 7168 && c.k == 2048 && c.a_scale_kind == 0 && c.a_scale_k == 128;
    const bool flash = c.world == 4 && c.n == 5120 && c.k == 2048 && c.a_scale_kind == 3 && c.a_scale_k == 32;
    EXPECT_TRUE(pro || flash) << c.name;
    EXPECT_EQ(c.m % (int64_t(c.world) * 32), 0) << c.name << ": M a multiple of world x the default sample stride";
    pro_bf16_4096 |= pro && !c.fp8_gather && c.m == 4096;
    pro_bf16_16384 |= pro && !c.fp8_gather && c.m == 16384;
    pro_fp8 |= pro && c.fp8_gather;
    flash_bf16 |= flash && !c.fp8_gather;
    flash_fp8 |= flash && c.fp8_gather;
  }
  EXPECT_TRUE(pro_bf16_4096 && pro_bf16_16384 && pro_fp8 && flash_bf16 && flash_fp8);
}

TEST(KernelsLabTestbed, EverySubjectRunsAtLeastOneTestbedCase) {
  std::set<Subject> runs;
  for (const auto& c : gemmar::lab::gemm_cases())
    for (const Subject s : gemmar::lab::subjects_of(Concern::Gemm))
      if (gemmar::lab::gemm_applies(s, c.quant, (c.m + 127) / 128 * 128, c.n, c.k)) runs.insert(s);
  if (!gemmar::lab::widen_cases().empty())
    for (const Subject s : gemmar::lab::subjects_of(Concern::Widen)) runs.insert(s);
  for (const auto& c : gemmar::lab::pipeline_cases()) {
    runs.insert(Subject::PipelineProduct);
    for (const Subject s : c.variants) {
      EXPECT_EQ(gemmar::lab::subject_info(s).concern, Concern::Pipeline) << gemmar::lab::subject_info(s).name;
      runs.insert(s);
    }
  }
  if (!gemmar::lab::guard_cases().empty())
    for (const Subject s : gemmar::lab::subjects_of(Concern::Guard)) runs.insert(s);
  for (const SubjectInfo& i : gemmar::lab::subjects()) EXPECT_TRUE(runs.count(i.id)) << i.name << " runs no case";
}

// Every pipeline case is a config gemmar runs (validate_shape_config), at an M the GPU engine takes: a multiple of
// W x 128, or (mori's relaxed rows, issue 45) of W with a full tile an owner; the relaxed cases straddle owners
// (S not a multiple of 128) on the bf16 wire, the fp8 scatter and the fp8 gather, and short-tail chunks.
TEST(KernelsLabTestbed, PipelineCasesIncludeRelaxedRowsAtShapesTheEngineTakes) {
  bool bf16 = false, fp8_scatter = false, fp8_gather = false, short_tail = false;
  for (const auto& c : gemmar::lab::pipeline_cases()) {
    EXPECT_NO_THROW(gemmar::validate_shape_config(c.shape, c.config)) << gemmar::config_label(c.config);
    const int64_t m = gemmar::padded_m(c.shape, c.config), w = c.shape.world;
    EXPECT_EQ(m, c.shape.m) << gemmar::config_label(c.config);
    if (!c.config.relaxed_rows) {
      EXPECT_EQ(m % (w * 128), 0) << gemmar::config_label(c.config);
      continue;
    }
    EXPECT_EQ(m % w, 0);
    EXPECT_GE(m / w, 128);
    EXPECT_NE((m / w) % 128, 0) << "a relaxed case whose tiles never straddle two owners";
    EXPECT_FALSE(c.guard) << "the GPU refuses --guard with relaxed rows";
    const auto cp = gemmar::chunk_plan(c.shape, c.config);
    bf16 |= c.config.scatter_dtype == gemmar::WireDtype::Bf16 && c.config.gather_dtype == gemmar::WireDtype::Bf16;
    fp8_scatter |= c.config.scatter_dtype == gemmar::WireDtype::Fp8;
    fp8_gather |= c.config.gather_dtype == gemmar::WireDtype::Fp8;
    short_tail |= cp.tail_bands < cp.chunk_bands;
  }
  EXPECT_TRUE(bf16 && fp8_scatter && fp8_gather && short_tail);
}

TEST(KernelsLabTestbed, EachConcernsLauncherNamesEveryOneOfItsVariants) {
  const std::pair<Concern, const char*> launchers[] = {{Concern::Gemm, "lab/gemm/variants.cu"},
                                                       {Concern::Widen, "lab/convert/widen_variants.cu"},
                                                       {Concern::Pipeline, "lab/pipeline_variants.cu"},
                                                       {Concern::Guard, "lab/guard/caller_guard_variants.cu"}};
  const std::vector<std::string> names = enumerators();
  for (const auto& [concern, file] : launchers) {
    const std::string src = read_source(file);
    ASSERT_FALSE(src.empty()) << file;
    for (const Subject s : gemmar::lab::subjects_of(concern)) {
      if (s == Subject::PipelineProduct) continue;  // the op's pipeline: no plug-in to name
      const std::string& name = names[size_t(s)];
      EXPECT_NE(src.find("Subject::" + name), std::string::npos) << file << " never names Subject::" << name;
    }
  }
}

TEST(KernelsLabTestbed, EveryLabVariantSaysWhatItWasCalledInTheRecords) {
  for (const SubjectInfo& i : gemmar::lab::subjects()) {
    EXPECT_GT(std::string(i.what).size(), 10u) << i.name;
    if (!i.product) {
      EXPECT_GT(std::string(i.was).size(), 0u) << i.name;
    }
  }
}

}  // namespace
