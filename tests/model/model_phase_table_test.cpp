// The mode table (common/config.cpp) and the model agree: for every mode, wire and transport, the phases the
// model predicts are the phases phase_names() says the config runs, in the same order (the model adds only
// the cross-rank "skew" and, on one device, gemm-only's "output" copy).
#include <gtest/gtest.h>

#include "common/config.hpp"
#include "common/faults.hpp"
#include "model/model.hpp"
#include "validate/harness/run_plan.hpp"

namespace {

using namespace gemmar;

TEST(ModelPhaseTable, EveryConfigPredictsExactlyThePhasesOfTheModeTable) {
  for (const std::string profile : {"mi355x", "h200-1gpu"}) {
    const model::Profile p = model::load_profile(profile);
    const std::vector<Config> configs = all_configs(Config{});
    EXPECT_EQ(configs.size(), 11u);  // gemm-only, 3 wires x 3 modes, split-lsa's bf16 all-reduce
    for (const Config& c : configs) {
      std::vector<std::string> predicted;
      for (const auto& ph : model::predict(p, Shape{}, c).phases)
        if (ph.name != "skew" && ph.name != "output") predicted.push_back(ph.name);
      EXPECT_EQ(predicted, phase_names(c)) << profile << " " << config_label(c);
      for (const auto& name : predicted)
        EXPECT_NE(std::find(all_phase_names().begin(), all_phase_names().end(), name), all_phase_names().end()) << name;
    }
  }
}

TEST(ModelPhaseTable, EveryFaultSpellingParsesAndItsLabelReadsBack) {
  for (const auto& f : fault_table()) {
    std::string spelling = f.spelling;
    if (spelling.back() == 'R' || spelling.back() == 'N') spelling = spelling.substr(0, spelling.size() - 1) + "3";
    const Faults parsed = parse_faults(spelling);
    EXPECT_NE(parsed.label(), "none") << spelling;
    EXPECT_EQ(parse_faults(parsed.label()).label(), parsed.label()) << spelling;
    EXPECT_NE(std::string(f.expected_code), "") << spelling;
  }
  EXPECT_EQ(parse_faults("none").label(), "none");
  EXPECT_THROW(parse_faults("silent-everything"), std::exception);
}

}  // namespace
