// gemmar report end to end through the binary: every input kind of tests/data/report renders, every
// expected figure is a real PNG of a sensible size referenced by index.html, missing data is explained,
// bad input exits 2 naming the file and line, a missing interpreter exits 3, and output is reproducible.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(GEMMAR_TEST_DATA_DIR) / "report";

struct Result {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the gemmar binary with `env` prefixed (VAR=value ...), capturing stdout and stderr separately.
Result run_gemmar(const std::vector<std::string>& args, const std::string& env = "") {
  static int counter = 0;
  const fs::path tmp = fs::temp_directory_path() /
                       ("gemmar_report_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::string cmd = env.empty() ? "" : "env " + env + " ";
  cmd += shell_quote(GEMMAR_BINARY);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote(tmp.string() + ".out") + " 2>" + shell_quote(tmp.string() + ".err");
  const int status = std::system(cmd.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(tmp.string() + ".out");
  r.err = slurp(tmp.string() + ".err");
  fs::remove(tmp.string() + ".out");
  fs::remove(tmp.string() + ".err");
  return r;
}

bool python_has_matplotlib() {
  static const bool has = std::system("/usr/bin/python3 -I -c 'import matplotlib, numpy' >/dev/null 2>&1") == 0;
  return has;
}

struct PngInfo {
  bool valid = false;
  uint32_t width = 0, height = 0;
};

uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) | (uint32_t(uint8_t(s[at + 2])) << 8) |
         uint32_t(uint8_t(s[at + 3]));
}

// Signature, then the IHDR chunk first with length 13 (PNG spec), then an IEND at the end.
PngInfo read_png(const fs::path& p) {
  const std::string s = slurp(p);
  PngInfo info;
  static const std::string sig("\x89PNG\r\n\x1a\n", 8);
  if (s.size() < 8 + 25 + 12 || s.compare(0, 8, sig) != 0) return info;
  if (be32(s, 8) != 13 || s.compare(12, 4, "IHDR") != 0) return info;
  if (s.compare(s.size() - 8, 4, "IEND") != 0) return info;
  info.width = be32(s, 16);
  info.height = be32(s, 20);
  info.valid = true;
  return info;
}

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!python_has_matplotlib()) {
      // In CI a missing matplotlib is a broken environment, not a reason to pass quietly.
      const char* ci = std::getenv("CI");
      if (ci && std::string(ci) == "true") GTEST_FAIL() << "CI=true and /usr/bin/python3 lacks matplotlib";
      GTEST_SKIP() << "/usr/bin/python3 lacks matplotlib (python3-matplotlib)";
    }
    root_ = fs::temp_directory_path() / ("gemmar_report_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }
  static std::string data(const std::string& name) { return (kData / name).string(); }

  void expect_figures(const fs::path& out, const std::vector<std::string>& figures) {
    const std::string html = slurp(out / "index.html");
    ASSERT_FALSE(html.empty()) << out / "index.html";
    for (const auto& f : figures) {
      const PngInfo png = read_png(out / f);
      EXPECT_TRUE(png.valid) << f << " is not a valid PNG";
      EXPECT_GE(png.width, 400u) << f;
      EXPECT_GE(png.height, 300u) << f;
      EXPECT_LE(png.width, 4000u) << f;
      EXPECT_NE(html.find("src=\"" + f + "\""), std::string::npos) << "index.html does not show " << f;
    }
  }

  fs::path root_;
};

const std::vector<std::string> kAllFigures{"phases_by_mode.png", "total_vs_m.png", "pull_grid.png",
                                           "rel_l2_vs_floor.png", "rank_spread.png"};

TEST_F(ReportTest, AllInputKindsTogetherDrawEveryFigure) {
  const fs::path out = root_ / "all";
  const Result r = run_gemmar({"report", data("bench_mi355x.log"), data("gemmar_run.log"), data("check.json"),
                               data("model.json"), data("model_sweep.json"), "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_figures(out, kAllFigures);
  const std::string html = slurp(out / "index.html");
  // Each finding's sentence reaches the verdict table, with its code.
  EXPECT_NE(html.find("SILENT_TRANSFER"), std::string::npos);
  EXPECT_NE(html.find("the copy-engine puts moved nothing"), std::string::npos);
  EXPECT_NE(html.find("RANK_DIVERGENCE"), std::string::npos);
  EXPECT_NE(html.find("Failed runs ("), std::string::npos);
  EXPECT_NE(html.find("<span class=\"fail\">1</span>"), std::string::npos) << "a group's fail count";
  // Every run's config, and the profile, are shown; nothing is fetched from elsewhere.
  EXPECT_NE(html.find("fused-sdma/blockscale/fp8/lsa"), std::string::npos);
  EXPECT_NE(html.find("<code>mi355x</code>"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // Human output lists the figures; nothing half-written is left beside --out.
  EXPECT_NE(r.out.find("phases_by_mode.png"), std::string::npos);
  for (const auto& e : fs::directory_iterator(root_))
    EXPECT_EQ(e.path().filename(), "all") << "left behind: " << e.path();
}

TEST_F(ReportTest, BenchmarkLogAloneDrawsModelBarsPhaseTablesAndTimelines) {
  const fs::path out = root_ / "bench";
  const Result r = run_gemmar({"report", data("bench_mi355x.log"), "--out", out.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No model given and no phases printed: gemmar's model of each run draws the phase figure.
  expect_figures(out, {"phases_by_mode.png", "total_vs_m.png", "rel_l2_vs_floor.png", "rank_spread.png"});
  EXPECT_FALSE(fs::exists(out / "pull_grid.png"));
  const std::string html = slurp(out / "index.html");
  EXPECT_NE(html.find("model phases (hatched; no measured phases in the inputs)"), std::string::npos);
  EXPECT_NE(html.find("<code>pull_grid.png</code> not drawn: no pull-grid sweep"), std::string::npos);
  // The phase table per config: model, ceiling, bus bandwidth, TFLOP/s, and the speedup against split.
  const std::string phases = slurp(out / "phases.html");
  EXPECT_NE(html.find("href=\"phases.html\""), std::string::npos);
  EXPECT_NE(phases.find("<th>busbw (GB/s)</th>"), std::string::npos);
  EXPECT_NE(phases.find("reduce-scatter"), std::string::npos);
  EXPECT_NE(phases.find("GEMM TFLOP/s per device"), std::string::npos);
  EXPECT_NE(phases.find("vs split-sdma/blockscale/bf16/sdma: 1.28x"), std::string::npos) << "1472.9 / 1150.7";
  // A timeline per run, linked from index.html, each a Trace Event Format document.
  for (int i = 0; i < 21; ++i) {
    const fs::path t = out / "timeline" / ("run-" + std::to_string(i) + ".json");
    const auto j = nlohmann::json::parse(slurp(t), nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << t;
    EXPECT_TRUE(j["traceEvents"].is_array() && !j["traceEvents"].empty()) << t;
  }
  EXPECT_NE(html.find("href=\"timeline/run-0.json\""), std::string::npos);
  EXPECT_EQ(html.find("src=\"pull_grid.png\""), std::string::npos);
  // --json: one document on stdout naming what was drawn and what was skipped.
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_NE(r.out.find("\"skipped\""), std::string::npos);
  EXPECT_NE(r.out.find("\"figure\": \"pull_grid.png\""), std::string::npos);
  EXPECT_NE(r.out.find("\"runs\": 21"), std::string::npos);
}

TEST_F(ReportTest, CpuValidateResultsSkipTimingFiguresWithReasons) {
  const fs::path out = root_ / "validate";
  const Result r = run_gemmar({"report", data("results.json"), "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The CPU emulation has numerics, model phases and a sweep but no GPU times.
  expect_figures(out, {"phases_by_mode.png", "pull_grid.png", "rel_l2_vs_floor.png"});
  EXPECT_FALSE(fs::exists(out / "total_vs_m.png"));
  EXPECT_FALSE(fs::exists(out / "rank_spread.png"));
  const std::string html = slurp(out / "index.html");
  EXPECT_NE(html.find("<code>total_vs_m.png</code> not drawn: no run carries a time"), std::string::npos);
  EXPECT_NE(html.find("<code>rank_spread.png</code> not drawn: no run carries per_rank_time_us"), std::string::npos);
  EXPECT_NE(html.find("model phases (hatched; no measured phases in the inputs)"), std::string::npos);
  EXPECT_NE(html.find("WIRE_NOT_USED"), std::string::npos);
  EXPECT_NE(html.find("validate results"), std::string::npos);
  EXPECT_NE(html.find("h200-1gpu"), std::string::npos);  // the profile object of results.json
}

TEST_F(ReportTest, ModelDocumentsAloneDrawModelBarsAndSweep) {
  const fs::path out = root_ / "model";
  const Result r = run_gemmar({"report", data("model.json"), data("model_sweep.json"), "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_figures(out, {"phases_by_mode.png", "pull_grid.png"});
  const std::string html = slurp(out / "index.html");
  EXPECT_NE(html.find("No runs in the inputs"), std::string::npos);
  EXPECT_NE(html.find("only the model curve is drawn"), std::string::npos);
}

TEST_F(ReportTest, SameInputsGiveByteIdenticalFigures) {
  const fs::path a = root_ / "a", b = root_ / "b";
  ASSERT_EQ(run_gemmar({"report", data("gemmar_run.log"), data("model_sweep.json"), "--out", a.string()}).exit_code, 0);
  ASSERT_EQ(run_gemmar({"report", data("gemmar_run.log"), data("model_sweep.json"), "--out", b.string()}).exit_code, 0);
  for (const auto& f : {"phases_by_mode.png", "pull_grid.png", "rel_l2_vs_floor.png", "rank_spread.png"}) {
    const std::string pa = slurp(a / f), pb = slurp(b / f);
    EXPECT_FALSE(pa.empty()) << f;
    EXPECT_TRUE(pa == pb) << f << " differs between two renders of the same input";
    EXPECT_EQ(pa.find("matplotlib"), std::string::npos) << f << " carries a Software metadata chunk";
  }
}

// Replaced only with --force, and then only what gemmar listed in it (.gemmar-manifest): a file the user put there
// is never deleted (issue 47), a figure of the old report that the new one does not draw is.
TEST_F(ReportTest, PreviousReportIsReplacedWholeOnlyWithForce) {
  const fs::path out = root_ / "replace";
  ASSERT_EQ(run_gemmar({"report", data("results.json"), "--out", out.string()}).exit_code, 0);
  EXPECT_TRUE(fs::is_regular_file(out / ".gemmar-output"));
  EXPECT_TRUE(fs::is_regular_file(out / ".gemmar-manifest"));
  Result r = run_gemmar({"report", data("gemmar_run.log"), "--out", out.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--out " + out.string() + ": holds a previous gemmar output; give --force"), std::string::npos)
      << r.err;
  std::ofstream(out / "mine.png") << "the user's";
  r = run_gemmar({"report", data("gemmar_run.log"), "--out", out.string(), "--force"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("holds what gemmar did not write: mine.png"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(out / "mine.png"), "the user's");
  fs::remove(out / "mine.png");
  r = run_gemmar({"report", data("gemmar_run.log"), "--out", out.string(), "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(slurp(out / "index.html").find("gemmar_run.log"), std::string::npos);
  std::set<std::string> after;
  // The manifest spells a directory with a trailing '/' (timeline/).
  for (const auto& e : fs::directory_iterator(out))
    after.insert(e.path().filename().string() + (e.is_directory() ? "/" : ""));
  const auto manifest = nlohmann::json::parse(slurp(out / ".gemmar-manifest"));
  for (const auto& f : after) {
    if (f == ".gemmar-output" || f == ".gemmar-manifest") continue;
    EXPECT_NE(std::find(manifest["entries"].begin(), manifest["entries"].end(), f), manifest["entries"].end()) << f;
  }
}

// --out never deletes what gemmar did not write: each refusal is exit 2, one line naming --out and the path,
// and the user's files are untouched, with or without --force.
TEST_F(ReportTest, OutRefusesFilesInputsAndForeignDirectories) {
  const fs::path mine = root_ / "mine";
  fs::create_directories(mine);
  std::ofstream(mine / "notes.md") << "keep me";
  const fs::path file = root_ / "file.txt";
  std::ofstream(file) << "a file";
  const fs::path input_dir = root_ / "inputs";
  fs::create_directories(input_dir);
  fs::copy_file(data("gemmar_run.log"), input_dir / "run.log");
  std::ofstream(input_dir / ".gemmar-output") << "{}\n";  // even a directory that looks like gemmar's
  const std::string in = (input_dir / "run.log").string();
  const std::vector<std::pair<std::string, std::string>> cases{
      {mine.string(), "not replaced"},
      {file.string(), "is an existing file"},
      {in, "is an input"},
      {input_dir.string(), "holds the input"},
  };
  for (const auto& [out, why] : cases) {
    for (const bool force : {false, true}) {
      std::vector<std::string> args{"report", in, "--out", out};
      if (force) args.push_back("--force");
      const Result r = run_gemmar(args);
      EXPECT_EQ(r.exit_code, 2) << out;
      EXPECT_NE(r.err.find("--out " + out + ": "), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
  }
  EXPECT_EQ(slurp(mine / "notes.md"), "keep me");
  EXPECT_EQ(slurp(file), "a file");
  EXPECT_EQ(slurp(in), slurp(data("gemmar_run.log")));
  // An empty directory is fine.
  const fs::path empty = root_ / "empty";
  fs::create_directories(empty);
  EXPECT_EQ(run_gemmar({"report", in, "--out", empty.string() + "/"}).exit_code, 0);
  EXPECT_TRUE(fs::exists(empty / "index.html"));
}

TEST_F(ReportTest, BadRecordsAreSkippedAndListedOnThePage) {
  const fs::path out = root_ / "bad";
  const Result r = run_gemmar({"report", data("bad_field.log"), data("bad_json.log"), "--out", out.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = slurp(out / "index.html");
  EXPECT_NE(html.find("bad_field.log:3</code>"), std::string::npos);
  EXPECT_NE(html.find("field &#x27;m&#x27; must be an integer"), std::string::npos) << "the reason names the field";
  EXPECT_NE(html.find("bad_json.log:2</code>"), std::string::npos);
  EXPECT_NE(html.find("not a valid JSON object"), std::string::npos);
  EXPECT_NE(slurp(out / "runs.html").find("bad_json.log:2"), std::string::npos);
  EXPECT_NE(r.out.find("\"skipped_records\""), std::string::npos);
  // The good lines of both files are drawn.
  expect_figures(out, {"rel_l2_vs_floor.png"});
}

TEST_F(ReportTest, ModelDocumentBesideBenchmarkLogDrawsTheModelBarOfItsConfig) {
  const fs::path out = root_ / "bench_model";
  const Result r = run_gemmar({"report", data("bench_mi355x.log"), data("model.json"), "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_figures(out, {"phases_by_mode.png"});
  const std::string html = slurp(out / "index.html");
  EXPECT_NE(html.find("the model of 1 config group(s)"), std::string::npos);
  // The benchmark has no measured phases: the caption (the figure's title) says model only.
  EXPECT_NE(html.find("model phases (hatched; no measured phases in the inputs)"), std::string::npos);
  EXPECT_EQ(html.find("measured (solid) beside model"), std::string::npos);
  // And the config's row carries the model total.
  EXPECT_NE(html.find("<td class=\"num\">819.5</td>"), std::string::npos);
}

TEST_F(ReportTest, ThousandRunsGiveBoundedFiguresAndOneRowPerConfig) {
  const fs::path log = root_ / "sweep.log";
  {
    std::ofstream f(log);
    const char* modes[] = {"split-sdma", "fused-sdma", "fused-lsa"};
    for (int i = 0; i < 1000; ++i) {
      const int m = 2048 << (i % 4);
      const double t = 50 + 0.07 * m + (i % 7);
      f << "[rank" << (i % 8) << "]: RESULT_JSON {\"mode\": \"" << modes[(i / 4) % 3]
        << "\", \"world_size\": 8, \"m\": " << m << ", \"n\": 7168, \"k\": 2048, \"max_rank_time_us\": " << t
        << ", \"per_rank_time_us\": [" << t << ", " << t - 1 << ", " << t - 2 << ", " << t - 0.5 << ", " << t - 1.5
        << ", " << t - 0.25 << ", " << t - 2.5 << ", " << t - 0.75 << "], "
        << "\"rel_l2\": " << 0.00235 + 1e-6 * (i % 11) << ", \"phases_us\": {\"gemm\": " << t / 2
        << ", \"gather\": " << t / 2 << "}, \"n_iter\": " << i << "}\n";
    }
  }
  const fs::path out = root_ / "big";
  const Result r = run_gemmar({"report", log.string(), "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& f : {"phases_by_mode.png", "total_vs_m.png", "rel_l2_vs_floor.png", "rank_spread.png"}) {
    const PngInfo png = read_png(out / f);
    ASSERT_TRUE(png.valid) << f;
    EXPECT_LE(png.width, 1600u) << f;
    EXPECT_LE(png.height, 1000u) << f;
  }
  const std::string html = slurp(out / "index.html");
  size_t rows = 0;
  for (size_t p = 0; (p = html.find("<a href=\"phases.html#g", p)) != std::string::npos; ++p) ++rows;
  EXPECT_EQ(rows, 12u) << "3 configs x 4 values of M";
  EXPECT_LT(html.size(), 200000u);
  EXPECT_NE(html.find("<b>1000</b> run(s) in <b>12</b>"), std::string::npos);
  // Every run is in the detail page.
  EXPECT_NE(slurp(out / "runs.html").find("sweep.log:1000</code>"), std::string::npos);
}

TEST_F(ReportTest, UnreadableFilesExitTwoNamingThem) {
  const fs::path f = root_ / "no_mode.log";
  std::ofstream(f) << "RESULT_JSON {\"world_size\": 8, \"m\": 4096, \"n\": 7168, \"k\": 2048}\n";
  Result r = run_gemmar({"report", f.string(), "--out", (root_ / "o").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no readable run"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no_mode.log:1: field 'mode' is missing"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(root_ / "o")) << "a failed report must leave nothing at --out";

  const fs::path g = root_ / "notes.txt";
  std::ofstream(g) << "just a log line\nanother one\n";
  r = run_gemmar({"report", data("gemmar_run.log"), g.string(), "--out", (root_ / "o").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("notes.txt: no RESULT_JSON lines"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line expected: " << r.err;
  EXPECT_EQ(r.err.find("gemmar report: gemmar report"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());

  r = run_gemmar({"report", (root_ / "absent.log").string(), "--out", (root_ / "o").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("absent.log: no such file"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(root_ / "o"));
  for (const auto& e : fs::directory_iterator(root_))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) ADD_FAILURE() << "left behind: " << e.path();
}

TEST_F(ReportTest, NanRelL2IsAcceptedAndMarked) {
  const fs::path f = root_ / "nan.log";
  std::ofstream(f) << "RESULT_JSON {\"mode\": \"fused-sdma\", \"world_size\": 8, \"m\": 16384, \"n\": 7168, "
                      "\"k\": 2048, \"gather_dtype\": \"fp8\", \"gather_transport\": \"lsa\", "
                      "\"max_rank_time_us\": 961.2, \"rel_l2\": NaN, \"validated\": false}\n";
  const fs::path out = root_ / "nan";
  const Result r = run_gemmar({"report", f.string(), "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_figures(out, {"rel_l2_vs_floor.png"});
  EXPECT_NE(slurp(out / "index.html").find("NaN"), std::string::npos);
}

TEST_F(ReportTest, UsageErrorsNameTheOption) {
  Result r = run_gemmar({"report", data("results.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  r = run_gemmar({"report", "--out", (root_ / "o").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("RESULTS"), std::string::npos) << r.err;
}

// Not skipped without matplotlib: the interpreter check comes before any drawing.
TEST(ReportEnvironmentTest, MissingInterpreterExitsThree) {
  const fs::path out = fs::temp_directory_path() / ("gemmar_report_nopy_" + std::to_string(::getpid()));
  const Result r =
      run_gemmar({"report", (kData / "results.json").string(), "--out", out.string()}, "GEMMAR_PYTHON=/nonexistent");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("/nonexistent"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(ReportEnvironmentTest, InterpreterWithoutMatplotlibExitsThree) {
  // A python3 that cannot import matplotlib: a wrapper that hides every site directory.
  const fs::path dir = fs::temp_directory_path() / ("gemmar_report_nompl_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path wrapper = dir / "python3";
  {
    std::ofstream w(wrapper);
    w << "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n";
  }
  fs::permissions(wrapper, fs::perms::owner_all);
  if (std::system(("'" + wrapper.string() + "' -c 'import matplotlib' >/dev/null 2>&1").c_str()) == 0) {
    fs::remove_all(dir);
    GTEST_SKIP() << "matplotlib importable even without site-packages";
  }
  const Result r = run_gemmar({"report", (kData / "results.json").string(), "--out", (dir / "out").string()},
                              "GEMMAR_PYTHON=" + wrapper.string());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("matplotlib"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("gemmar report: gemmar report"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
  fs::remove_all(dir);
}

TEST_F(ReportTest, RunsOfTwoMachinesAreTwoRowsNeverOneMedian) {
  const fs::path out = root_ / "two";
  const Result r = run_gemmar({"report", data("bench_mi355x.log"), data("h200_1gpu_runs.log"), "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_figures(out, {"phases_by_mode.png", "total_vs_m.png"});
  const std::string html = slurp(out / "index.html");
  // gemm-only at M=16384: 369.4 us on the MI355X, 17563 us on the H200, each its own row and median.
  EXPECT_NE(html.find("MI355X (mi355x)"), std::string::npos);
  EXPECT_NE(html.find("NVIDIA H200 (h200-1gpu)"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">369.4</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">17563.0</td>"), std::string::npos);
  EXPECT_EQ(html.find("[369"), std::string::npos) << "a range spanning both machines";
  EXPECT_NE(html.find("<h2>Machines and profiles</h2>"), std::string::npos);
  EXPECT_NE(html.find("named by the log at "), std::string::npos);
  // The figures name the machine beside the config when there are two.
  EXPECT_NE(slurp(out / "phases.html").find("gemm-only/blockscale @ NVIDIA H200 (h200-1gpu)"), std::string::npos);
}

TEST_F(ReportTest, TraceBecomesItsRunsTimelineLinkedFromTheIndex) {
  const fs::path out = root_ / "trace";
  const std::string trace = (kData.parent_path() / "check" / "rocprof_fused_sdma_bf16.csv").string();
  const Result r = run_gemmar({"report", data("gemmar_run.log"), "--trace", trace, "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = slurp(out / "index.html");
  const size_t at = html.find("the kernels of iteration 1 of 3 of <code>" + trace + "</code> on 8 device(s)");
  ASSERT_NE(at, std::string::npos) << "the traced run is listed under Timelines";
  const size_t href = html.rfind("href=\"timeline/run-", at);
  ASSERT_NE(href, std::string::npos);
  const std::string file = html.substr(href + 6, html.find('"', href + 6) - href - 6);
  const auto t = nlohmann::json::parse(slurp(out / file));
  size_t ranks = 0, kernels = 0;
  for (const auto& e : t["traceEvents"]) {
    ranks +=
        e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"].get<std::string>().rfind("rank ", 0) == 0;
    kernels += e["ph"] == "X" && e["cat"] == "measured kernel";
  }
  EXPECT_EQ(ranks, 8u);
  EXPECT_EQ(kernels, 32u) << "4 phases on each of 8 devices, one iteration";
  // A trace that fits no run is exit 2 naming it, and nothing is written.
  const Result bad =
      run_gemmar({"report", data("bench_mi355x.log"), "--trace", "nope.csv", "--out", (root_ / "bad").string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--trace nope.csv: cannot open"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(root_ / "bad"));
}

// gemmar validate draws its report from its own results: the model beside each run is that run's shape's.
TEST_F(ReportTest, ValidateReportModelsTheShapeItRan) {
  const fs::path out = root_ / "val";
  const Result r = run_gemmar({"validate", "--backend", "cpu", "-m", "512", "-n", "1024", "-k", "256", "--world", "4",
                               "--iterations", "1", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto doc = nlohmann::json::parse(slurp(out / "report" / "report.json"));
  ASSERT_EQ(doc["groups"].size(), 11u);
  for (const auto& g : doc["groups"]) {
    EXPECT_EQ(g["shape"], (nlohmann::json{{"m", 512}, {"n", 1024}, {"k", 256}, {"world", 4}}));
    ASSERT_TRUE(g["model"].is_object()) << g["series"];
    EXPECT_NE(g["model"]["from"].get<std::string>().find("gemmar's model"), std::string::npos);
    EXPECT_FALSE(g["model"]["phases"].empty());
  }
  const auto results = nlohmann::json::parse(slurp(out / "results.json"));
  for (const auto& p : results["model_predictions"])
    EXPECT_EQ(p["shape"], (nlohmann::json{{"m", 512}, {"n", 1024}, {"k", 256}, {"world", 4}}));
  EXPECT_TRUE(read_png(out / "report" / "phases_by_mode.png").valid);
  EXPECT_EQ(slurp(out / "report" / "index.html").find("match no run"), std::string::npos);
}

}  // namespace
