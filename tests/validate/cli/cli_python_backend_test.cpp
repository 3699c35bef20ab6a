// `gemmar validate|run --backend python` end to end on the CPU: Debian's python3 with numpy drives a gemm_ar written
// in numpy (tests/data/python/fake_gemm_ar.py) through python/gemmar_runner.py, every rank in one process or one
// process per rank (gemmar's direct launcher, the ranks meeting through the runner's file group). Covered: every
// supported config verified bit for bit and judged (one record, one verdict, the same as `gemmar check` gives for
// the RESULT_JSON line), a faulty implementation failing with its cause (rank and slice), the implementation's
// self-test ending validate, the queue-creation failure retried once and named, a hang stopped by --run-timeout,
// and what is missing (torch, the module, mori, the interpreter) as exit 3, a bad --impl or option as exit 2.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "common/config_fields.hpp"
#include "support/cli.hpp"
#include "validate/harness/python_runner.hpp"

namespace {

namespace fs = std::filesystem;
using gemmar::test::CliResult;
using gemmar::test::run_gemmar;
using gemmar::test::run_program;
using gemmar::test::scratch_dir;
using gemmar::test::slurp;

const std::string kPython = "/usr/bin/python3";  // Debian's, with numpy (the fake needs no torch)
const std::string kFake = std::string(GEMMAR_TEST_DATA_DIR) + "/python/fake_gemm_ar.py";
// The floors of N=1024 K=256 W=4 blockscale are derived by the test fixture (tests/support/derive_test_floors.cpp).
const std::vector<std::string> kShape{"-n", "1024", "-k", "256", "--world", "4"};

bool has_module(const std::string& module) { return run_program(kPython, {"-c", "import " + module}).rc == 0; }

#define REQUIRE_NUMPY() \
  if (!has_module("numpy")) GTEST_SKIP() << kPython << " has no numpy (python3-numpy)"

CliResult gemmar(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
  args.insert(args.end(), kShape.begin(), kShape.end());
  args.insert(args.end(), {"--python", kPython});
  return run_gemmar(args, std::nullopt, env);
}

std::vector<std::string> codes(const nlohmann::json& run) {
  std::vector<std::string> out;
  for (const auto& f : run["findings"])
    if (f["severity"] == "error") out.push_back(f["code"]);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Issue 47: the Python backend's runs show progress as the C++ backends' do: one stderr line per run as it is judged
// (the runner's own output goes to its log), and none with --json.
TEST(CliPythonBackend, ValidatePrintsOneProgressLinePerRunOnStderr) {
  REQUIRE_NUMPY();
  const fs::path out = scratch_dir("py_progress") / "out";
  const CliResult r = gemmar({"validate", "--backend", "python", "--impl", kFake + ":FakeGemmAr", "--m-list", "512",
                              "--out", out.string(), "--no-report"});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  for (int i = 1; i <= 5; ++i)
    EXPECT_NE(r.err.find("gemmar validate: " + std::to_string(i) + "/5 "), std::string::npos) << i << "\n" << r.err;
  EXPECT_NE(r.err.find("fused-sdma/blockscale/bf16/sdma/scatter-fp8 M=512 pass"), std::string::npos) << r.err;
  const fs::path out_json = scratch_dir("py_progress_json") / "out";
  const CliResult j = gemmar({"validate", "--backend", "python", "--impl", kFake + ":FakeGemmAr", "--m-list", "512",
                              "--out", out_json.string(), "--no-report", "--json"});
  ASSERT_EQ(j.rc, 0) << j.out << j.err;
  EXPECT_EQ(j.err.find("gemmar validate: 1/"), std::string::npos) << j.err;
}

TEST(CliPythonBackend, ValidateVerifiesEverySupportedConfigBitExactAndPasses) {
  REQUIRE_NUMPY();
  const fs::path out = scratch_dir("py_validate") / "out";
  const CliResult r = gemmar({"validate", "--backend", "python", "--impl", kFake + ":FakeGemmAr", "--m-list", "512",
                              "--out", out.string(), "--no-report", "--json"});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  // The fake supports gemm-only, split-sdma, split-lsa and fused-sdma on the bf16 gather, fused-sdma also with
  // mori's fp8 scatter (a candidate validate adds to every fused-sdma config: N = 1024 takes its 256-column
  // scales); the 9 other configs are declined.
  ASSERT_EQ(j["runs"].size(), 5u) << r.out;
  EXPECT_EQ(j["python"]["declined"].size(), 9u);
  EXPECT_EQ(j["python"]["placement"], "all");
  EXPECT_EQ(j["selftest"]["configs"].size(), 4u);  // the collective configs
  int fp8_scatter = 0;
  for (const auto& run : j["runs"]) fp8_scatter += run["record"]["scatter_dtype"] == "fp8";
  EXPECT_EQ(fp8_scatter, 1) << "fused-sdma with the fp8 scatter ran, its dump verified bit for bit";
  for (const auto& run : j["runs"]) {
    EXPECT_EQ(run["verdict"], "pass") << run.dump();
    const auto& rec = run["record"];
    EXPECT_EQ(rec["backend"], "python");
    EXPECT_EQ(rec["wrong_elements"], 0) << rec.dump();
    EXPECT_EQ(rec["checked_elements"], 512 * 1024 * 4) << "every element of every rank's view";
    EXPECT_EQ(rec["verify"]["partials"], true);
  }
  EXPECT_TRUE(fs::exists(out / "runner" / "runner.log"));
  EXPECT_FALSE(fs::exists(out / "dumps")) << "each dump is removed once verified (no --keep-dumps)";
  const std::string log = slurp(out / "runs.log");
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 5) << log;
}

TEST(CliPythonBackend, FaultyImplementationOneRankPerProcessFailsNamingRankAndSliceAndCheckAgrees) {
  REQUIRE_NUMPY();
  const CliResult r = gemmar(
      {"run", "--backend", "python", "--impl", kFake + ":skip_gather_per_rank", "-m", "512", "--mode", "split-sdma"});
  ASSERT_EQ(r.rc, 1) << r.out << r.err;
  const std::string line = r.out.substr(0, r.out.find('\n'));
  ASSERT_EQ(line.rfind("RESULT_JSON ", 0), 0u) << r.out;
  const nlohmann::json rec = nlohmann::json::parse(line.substr(12));
  // Rank 3 never receives slice 1 (W = 4): it keeps its own partial there.
  const auto c = codes(rec);
  for (const char* code : {"COLLECTIVE_MISMATCH", "RANK_DISAGREEMENT", "SILENT_TRANSFER", "NOT_VALIDATED"})
    EXPECT_TRUE(has(c, code)) << code << " in " << rec["findings"].dump();
  EXPECT_EQ(rec["first_wrong_element"].get<std::string>().rfind("rank 3, row 128", 0), 0u) << rec.dump();
  EXPECT_GT(rec["per_slice_rel_l2"][1].get<double>(), 0.4);
  EXPECT_LT(rec["per_slice_rel_l2"][0].get<double>(), 3e-3);
  EXPECT_EQ(rec["placement"], "one");
  // The same record through `gemmar check`: the same verdict and codes.
  const CliResult chk = run_gemmar({"check", "-", "--json"}, line + "\n");
  ASSERT_EQ(chk.rc, 1) << chk.out << chk.err;
  const nlohmann::json cj = nlohmann::json::parse(chk.out);
  ASSERT_EQ(cj["runs"].size(), 1u);
  auto c2 = codes(cj["runs"][0]);
  std::vector<std::string> c1 = c;
  std::sort(c1.begin(), c1.end());
  std::sort(c2.begin(), c2.end());
  EXPECT_EQ(c1, c2);
}

// An implementation that is asked for mori's fp8 scatter (the config's scatter_dtype) but reduces the bf16 partials:
// its outputs differ from the fp8 scatter re-emulated over its own partials, and its relL2 sits at the bf16 floor.
TEST(CliPythonBackend, FusedSdmaAskedForTheFp8ScatterButReducingBf16FailsWithWireNotUsed) {
  REQUIRE_NUMPY();
  const CliResult r = gemmar({"run", "--backend", "python", "--impl", kFake + ":scatter_not_narrowed", "-m", "512",
                              "--mode", "fused-sdma", "--scatter-dtype", "fp8"});
  ASSERT_EQ(r.rc, 1) << r.out << r.err;
  const std::string line = r.out.substr(0, r.out.find('\n'));
  ASSERT_EQ(line.rfind("RESULT_JSON ", 0), 0u) << r.out;
  const nlohmann::json rec = nlohmann::json::parse(line.substr(12));
  EXPECT_EQ(rec["scatter_dtype"], "fp8");
  const auto c = codes(rec);
  for (const char* code : {"COLLECTIVE_MISMATCH", "WIRE_NOT_USED"})
    EXPECT_TRUE(has(c, code)) << code << " in " << rec["findings"].dump();
}

TEST(CliPythonBackend, FailingSelfTestEndsValidateWithTheImplementationsMessage) {
  REQUIRE_NUMPY();
  const fs::path out = scratch_dir("py_selftest") / "out";
  const CliResult r = gemmar({"validate", "--backend", "python", "--impl", kFake + ":bad_self_test", "--m-list", "512",
                              "--out", out.string(), "--no-report"});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("the implementation's self_test failed: RuntimeError: gemm_ar self-test failed"),
            std::string::npos)
      << r.out;
  const nlohmann::json res = nlohmann::json::parse(slurp(out / "results.json"));
  EXPECT_TRUE(res["runs"].empty());
  EXPECT_EQ(res["selftest"]["pass"], false);
}

TEST(CliPythonBackend, QueueCreationFailureIsRetriedOnceAfterTheWaitAndNamed) {
  REQUIRE_NUMPY();
  const fs::path marker = scratch_dir("py_queue") / "failed-once";
  const CliResult r = gemmar({"run", "--backend", "python", "--impl", kFake + ":queue_fail_once", "-m", "512", "--mode",
                              "split-sdma", "--queue-wait", "1"},
                             {"FAKE_QUEUE_MARKER=" + marker.string()});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(marker)) << "the first start failed to create its queues";
  EXPECT_NE(r.err.find("SDMA queue creation failed (hsaKmtCreateQueueExt); retrying it once"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("waiting"), std::string::npos) << "the queue wait before the retry: " << r.err;
}

TEST(CliPythonBackend, QueueCreationFailingTwiceFailsTheRunWithItsCause) {
  REQUIRE_NUMPY();
  const CliResult r = gemmar({"run", "--backend", "python", "--impl", kFake + ":queue_fail_always", "-m", "512",
                              "--mode", "split-sdma", "--queue-wait", "0", "--json"});
  ASSERT_EQ(r.rc, 1) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 1u);
  ASSERT_EQ(codes(j["runs"][0]), std::vector<std::string>{"BENCHMARK_FAILED"});
  const std::string msg = j["runs"][0]["findings"][0]["message"];
  EXPECT_NE(msg.find("hsaKmtCreateQueueExt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("again after one retry"), std::string::npos) << msg;
}

TEST(CliPythonBackend, HangingImplementationIsStoppedAfterRunTimeout) {
  REQUIRE_NUMPY();
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = gemmar({"run", "--backend", "python", "--impl", kFake + ":hang", "-m", "512", "--mode",
                              "split-sdma", "--run-timeout", "2", "--json"});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_LT(s, 60) << "stopped, not waited for";
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(codes(j["runs"][0]), std::vector<std::string>{"BENCHMARK_FAILED"});
  EXPECT_NE(j["runs"][0]["findings"][0]["message"].get<std::string>().find("stopped after 2 s"), std::string::npos);
}

TEST(CliPythonBackend, MissingTorchModuleOrMoriIsExit3NamingWhatIsMissing) {
  REQUIRE_NUMPY();
  if (!has_module("torch")) {
    // The module name resolves in gemmar's python/ (the runner's directory).
    const CliResult t = gemmar({"validate", "--backend", "python", "--impl", "gemmar_torch_impl:TorchGemmAr", "--out",
                                (scratch_dir("py_torch") / "o").string()});
    EXPECT_EQ(t.rc, 3) << t.out << t.err;
    EXPECT_NE(t.err.find("cannot import 'torch'"), std::string::npos) << t.err;
    const CliResult m = gemmar({"run", "--backend", "python", "--impl", "mori"});
    EXPECT_EQ(m.rc, 3) << m.err;
    EXPECT_NE(m.err.find("needs torch"), std::string::npos) << m.err;
  }
  if (!has_module("mori")) {
    const CliResult m = gemmar({"run", "--backend", "python", "--impl", "mori"});
    EXPECT_EQ(m.rc, 3) << m.err;
    EXPECT_NE(m.err.find("mori"), std::string::npos) << m.err;
  }
  const CliResult nm = gemmar({"run", "--backend", "python", "--impl", "no_such_gemm_ar_module:Impl"});
  EXPECT_EQ(nm.rc, 3) << nm.err;
  EXPECT_NE(nm.err.find("cannot import 'no_such_gemm_ar_module'"), std::string::npos) << nm.err;
  const CliResult np =
      run_gemmar({"run", "--backend", "python", "--impl", kFake + ":FakeGemmAr", "--python", "/nonexistent/python3"});
  EXPECT_EQ(np.rc, 3) << np.err;
  EXPECT_NE(np.err.find("--python: cannot start '/nonexistent/python3'"), std::string::npos) << np.err;
}

TEST(CliPythonBackend, BadImplOrOptionIsExit2NamingIt) {
  REQUIRE_NUMPY();
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  const std::vector<Case> cases = {
      {{"run", "--backend", "python", "--impl", kFake + ":NoSuchCallable"}, "has no 'NoSuchCallable'"},
      {{"run", "--backend", "python"}, "--impl: required with --backend python"},
      {{"run", "--backend", "cpu", "--impl", "mori"}, "--impl: only with --backend python"},
      {{"run", "--backend", "python", "--impl", kFake + ":FakeGemmAr", "--inject", "silent-puts"}, "--inject:"},
      {{"run", "--backend", "python", "--impl", kFake + ":FakeGemmAr", "--spawn", "sometimes"}, "--spawn:"},
      {{"run", "--backend", "python", "--impl", kFake + ":FakeGemmAr", "--mode", "split-sdma", "--gather-dtype", "fp8"},
       "declines every config asked (split-sdma/blockscale/fp8/sdma)"},
  };
  for (const Case& c : cases) {
    const CliResult r = gemmar(c.args);
    EXPECT_EQ(r.rc, 2) << c.names << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << r.err;
  }
}

// The runner's numpy fp8 and bf16 conversions (what numpy implementations and their operands use): every finite
// e4m3fn code round-trips, ties go to the even code, beyond 464 is NaN; bf16 rounds to nearest even.
TEST(CliPythonBackend, RunnerNumpyConversionsRoundTripAndRoundToNearestEven) {
  REQUIRE_NUMPY();
  const std::string script = R"(
import sys; sys.path.insert(0, sys.argv[1])
import numpy as np, gemmar_runner as g
codes = np.array([c for c in range(256) if c & 0x7f != 0x7f], np.uint8)
assert (g.e4m3fn_encode(g.e4m3fn_decode(codes)) == codes).all()
# 1.0625 lies halfway between 1.0 (0x38) and 1.125 (0x39): the even code; 1.1875 between 0x39 and 0x3a: 0x3a
assert g.e4m3fn_encode(np.float32([1.0625, 1.1875, -1.0625, 470.0, 2.0 ** -10])).tolist() == [0x38, 0x3a, 0xb8, 0x7f, 0x00]
x = np.float32([1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, -2.5])
assert g.bf16_bits(x).tolist() == [0x3f80, 0x3f82, 0xc020]
assert (g.bf16_value(g.bf16_bits(x)) == np.float32([1.0, 1.015625, -2.5])).all()
print("ok")
)";
  const fs::path dir = fs::path(GEMMAR_TEST_DATA_DIR).parent_path().parent_path() / "python";
  const CliResult r = run_program(kPython, {"-c", script, dir.string()});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "ok\n");
}

// The plan's config reaches the runner as common/config_fields.hpp's table writes it, and comes back unchanged in
// the RESULT_JSON and in the dump's metadata, each read by the table's reader (config_from_json, as the record
// reader; config_from_metadata, as gemmar verify): every field, mori 2026-09's knobs included (scatter_dtype,
// chunk_rule, schedule, chunk_bands, relaxed_rows, logical_m, sdma_queues), each set away from its default. A field
// the runner dropped or respelled would come back default. (No one config sets them all validly: the readers'
// knob checks come after the table; the fp8 scatter's whole path is the validate test above.)
TEST(CliPythonBackend, RunnerCarriesEveryConfigFieldIntoRecordAndDumpMetadata) {
  REQUIRE_NUMPY();
  gemmar::Config c;
  c.mode = gemmar::Mode::SplitSdma;
  c.quant = gemmar::Quant::Ptpc;
  c.gather_dtype = gemmar::WireDtype::Fp8;
  c.gather_transport = gemmar::Transport::Lsa;
  c.pull_blocks = 96;
  c.fuse_quantize = true;
  c.fuse_reduce_push = true;
  c.gather_bands = 4;
  c.publish = gemmar::Publish::Fence;
  c.scatter_dtype = gemmar::WireDtype::Fp8;
  c.chunk_rule = gemmar::ChunkRule::Op;
  c.schedule = gemmar::Schedule::WoB;
  c.chunks = 3;
  c.chunk_bands = 2;
  c.relaxed_rows = true;
  c.logical_m = 500;
  c.sdma_queues = 2;
  const nlohmann::json asked = gemmar::python_config_json(c);
  for (const gemmar::ConfigField& f : gemmar::config_fields())
    ASSERT_NE(asked[f.key], gemmar::field_json(f, gemmar::Config{})) << f.key << " is left at its default";

  const fs::path dir = scratch_dir("py_fields");
  const nlohmann::json plan = {
      {"impl", kFake + ":FakeGemmAr"},
      {"shape", {{"n", 1024}, {"k", 256}, {"world", 4}}},
      {"seed", 1234},
      {"warmup", 0},
      {"iterations", 1},
      {"eager", false},
      {"runs", {{{"index", 1}, {"m", 512}, {"config", asked}, {"dump", (dir / "dump").string()}}}}};
  std::ofstream(dir / "plan.json") << plan.dump();
  const fs::path runner = fs::path(GEMMAR_TEST_DATA_DIR).parent_path().parent_path() / "python" / "gemmar_runner.py";
  const CliResult r = run_program(kPython, {runner.string(), "run", (dir / "plan.json").string()});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  const size_t at = r.out.find("RESULT_JSON ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const nlohmann::json result = nlohmann::json::parse(r.out.substr(at + 12, r.out.find('\n', at) - at - 12));
  // The record: every field as asked, but chunks, which a RESULT_JSON holds as the resolved count (null here).
  EXPECT_TRUE(result["chunks"].is_null()) << result.dump();
  gemmar::Config recorded;
  gemmar::config_from_json(result, "runner", recorded, {"chunks"});
  nlohmann::json got = gemmar::config_to_json(recorded), want = asked;
  got.erase("chunks");
  want.erase("chunks");
  EXPECT_EQ(got, want);
  // The dump's metadata (safetensors: an 8-byte little-endian header length, then the JSON header).
  std::ifstream f(dir / "dump" / "rank2.safetensors", std::ios::binary);
  uint64_t len = 0;
  ASSERT_TRUE(f.read(reinterpret_cast<char*>(&len), 8)) << "no dump of rank 2";
  std::string header(len, '\0');
  f.read(header.data(), std::streamsize(len));
  const nlohmann::json parsed = nlohmann::json::parse(header);
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : parsed.at("__metadata__").items()) meta[k] = v.get<std::string>();
  gemmar::Config dumped;
  gemmar::config_from_metadata(meta, "rank2.safetensors", dumped);
  EXPECT_EQ(gemmar::config_to_json(dumped), asked) << header;
}

}  // namespace
