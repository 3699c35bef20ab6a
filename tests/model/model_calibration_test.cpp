// The model against every point of tests/data/mi355x_measured.json: standalone totals within 5%,
// in-server phases within 15% (the phases the model separates), the lower bound below every point.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "model/model.hpp"

using namespace gemmar;
using nlohmann::json;

namespace {

json measured() {
  std::ifstream in(GEMMAR_TEST_DATA_DIR "/mi355x_measured.json");
  EXPECT_TRUE(in.good());
  return json::parse(in);
}

Shape shape_at(int64_t m) {
  Shape s;
  s.m = m;
  return s;
}

Config config_of(const json& row) {
  Config c;
  c.mode = parse_mode(row.at("mode").get<std::string>());
  c.quant = parse_quant(row.value("quant", "blockscale"));
  c.gather_dtype = parse_wire(row.value("gather_dtype", "bf16"));
  c.gather_transport = parse_transport(row.value("gather_transport", "sdma"));
  return c;
}

struct Point {
  std::string what;
  double measured, predicted, lower_bound;
};

std::vector<Point> standalone_points() {
  const auto prof = model::load_profile("mi355x");
  const json d = measured();
  std::vector<Point> pts;
  auto add = [&](const std::string& what, const Shape& s, const Config& c, double t) {
    const auto pr = model::predict(prof, s, c);
    pts.push_back({what, t, pr.total_us, pr.lower_bound_us});
  };
  for (const auto& row : d.at("mode_totals_us")) {
    const std::string mode = row.at("mode");
    if (mode.rfind("unfused", 0) == 0) continue;  // RCCL baseline: not a mode of the op
    const Config c = config_of(row);
    add("mode_totals " + config_label(c), shape_at(row.at("m")), c, row.at("total_us"));
  }
  for (const auto& row : d.at("gather_wire_us")) {
    const Config c = config_of(row);
    add("gather_wire " + config_label(c), shape_at(row.at("m")), c, row.at("total_us"));
  }
  for (const auto& pt : d.at("pull_grid_us").at("points")) {
    Config c;
    c.gather_dtype = WireDtype::Fp8;
    c.gather_transport = Transport::Lsa;
    c.pull_blocks = pt.at("blocks");
    add("pull_grid " + std::to_string(c.pull_blocks), shape_at(16384), c, pt.at("total_us"));
  }
  return pts;
}

}  // namespace

TEST(ModelCalibration, EveryStandaloneTotalWithinFivePercent) {
  const auto pts = standalone_points();
  ASSERT_EQ(pts.size(), 4u + 3u + 3u);
  for (const auto& p : pts) {
    const double err = p.predicted / p.measured - 1.0;
    std::printf("%-50s measured %8.1f model %8.1f error %+6.2f%%\n", p.what.c_str(), p.measured, p.predicted,
                100 * err);
    EXPECT_LT(std::fabs(err), 0.05) << p.what;
  }
}

TEST(ModelCalibration, ModelBandCoversTheErrorPlusSpread) {
  const auto prof = model::load_profile("mi355x");
  double worst = 0;
  for (const auto& p : standalone_points()) worst = std::max(worst, std::fabs(p.predicted / p.measured - 1.0));
  EXPECT_GE(prof.model_band, worst + prof.run_to_run_spread);
  EXPECT_LE(prof.model_band, 0.10);  // a band this wide would hide real slowdowns
}

TEST(ModelCalibration, LowerBoundBelowEveryMeasuredPoint) {
  for (const auto& p : standalone_points()) {
    EXPECT_LT(p.lower_bound, p.measured) << p.what;
    EXPECT_GT(p.lower_bound, 0.25 * p.measured) << p.what << ": a bound this loose catches nothing";
  }
}

TEST(ModelCalibration, InServerPhasesWithinFifteenPercentAndLayerTotalsWithinFive) {
  const auto prof = model::load_profile("mi355x");
  const json ph = measured().at("phases_in_server_us");
  const std::vector<std::pair<WireDtype, Transport>> cols{
      {WireDtype::Bf16, Transport::Sdma}, {WireDtype::Fp8, Transport::Sdma}, {WireDtype::Fp8, Transport::Lsa}};
  int compared = 0;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    Config c;
    c.gather_dtype = cols[i].first;
    c.gather_transport = cols[i].second;
    const auto pr = model::predict(prof, shape_at(16384), c);
    for (const auto& p : pr.phases) {
      if (!ph.contains(p.name)) continue;
      const auto& v = ph.at(p.name).at(i);
      ASSERT_FALSE(v.is_null()) << p.name << " predicted for a column that has no such phase";
      const double m = v.get<double>(), err = p.us / m - 1.0;
      std::printf("in-server %-9s %-10s measured %7.1f model %7.1f error %+6.2f%%\n",
                  ph.at("columns").at(i).get<std::string>().c_str(), p.name.c_str(), m, p.us, 100 * err);
      EXPECT_LT(std::fabs(err), 0.15) << p.name << " column " << i;
      ++compared;
    }
    const double lt = ph.at("layer_total").at(i);
    std::printf("in-server %-9s layer      measured %7.1f model %7.1f error %+6.2f%%\n",
                ph.at("columns").at(i).get<std::string>().c_str(), lt, pr.in_server_us,
                100 * (pr.in_server_us / lt - 1));
    EXPECT_LT(std::fabs(pr.in_server_us / lt - 1.0), 0.05);
  }
  EXPECT_EQ(compared, 4 + 6 + 6);
}

TEST(ModelCalibration, FusedQuantizePredictedSlowerAsMeasured) {
  // observations: 977.1 us folded against 957.4 us separate, fp8/lsa, M=16384 (not used to calibrate).
  const auto prof = model::load_profile("mi355x");
  Config c;
  c.gather_dtype = WireDtype::Fp8;
  c.gather_transport = Transport::Lsa;
  const double sep = model::predict(prof, shape_at(16384), c).total_us;
  c.fuse_quantize = true;
  const double fused = model::predict(prof, shape_at(16384), c).total_us;
  EXPECT_GT(fused, sep);
  EXPECT_LT(std::fabs(fused / 977.1 - 1.0), 0.05);
  EXPECT_LT(std::fabs(sep / 957.4 - 1.0), 0.05);
}
