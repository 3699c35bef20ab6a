// `gemmar verify` end to end through the binary: `gemmar run --dump` then `gemmar verify` (clean: exit 0; a fault:
// exit 1 with the run's code), several runs in one directory, the JSON document, python/gemmar_dump.py writing
// the same format, and bad files (truncated, wrong dtype, wrong shape or layout, a lying header, a missing rank)
// giving exit 2 with one line naming the file and the tensor.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace {

namespace fs = std::filesystem;
using gemmar::test::run_gemmar;
using gemmar::test::scratch_dir;
using gemmar::test::slurp;
using gemmar::test::write_text;

const std::string kShape = "-m 1024 -n 1024 -k 256 --world 4";

fs::path dump(const std::string& tag, const std::string& extra) {
  const fs::path d = scratch_dir(tag);
  const auto r = run_gemmar("run " + kShape + " --check-rows 0 " + extra + " --dump " + d.string());
  EXPECT_LE(r.rc, 1) << r.err;
  return d;
}

// The header of a safetensors file as JSON, and the file rewritten with another header (same data bytes).
nlohmann::json header_of(const fs::path& p) {
  const std::string b = slurp(p);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(b[size_t(i)]);
  return nlohmann::json::parse(b.substr(8, n));
}
void with_header(const fs::path& p, const nlohmann::json& h) {
  const std::string b = slurp(p);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(b[size_t(i)]);
  const std::string text = h.dump();
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[size_t(i)] = char(uint64_t(text.size()) >> (8 * i));
  write_text(p, len + text + b.substr(8 + n));
}

void expect_bad_input(const fs::path& dir, const std::string& file_fragment, const std::string& tensor,
                      const std::string& what) {
  const auto r = run_gemmar("verify " + dir.string());
  EXPECT_EQ(r.rc, 2) << what << "\n" << r.out << r.err;
  EXPECT_NE(r.err.find(file_fragment), std::string::npos) << what << ": " << r.err;
  EXPECT_NE(r.err.find(tensor), std::string::npos) << what << ": " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
}

TEST(CliVerify, RunDumpVerifiesCleanAndJsonIsOneDocument) {
  const fs::path d = dump("cli_verify_clean", "--gather-dtype fp8 --gather-transport lsa");
  auto r = run_gemmar("verify " + d.string());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("0 wrong elements"), std::string::npos) << r.out;
  r = run_gemmar("verify " + d.string() + " --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["runs"][0]["verdict"], "pass");
  EXPECT_EQ(j["runs"][0]["record"]["backend"], "tensors");
  EXPECT_EQ(j["verify"][0]["wrong_by_rank"].size(), 4u);
  EXPECT_EQ(j["verify"][0]["checked_rows"], 256);
  // The rank files named one by one are the same run.
  r = run_gemmar({"verify", (d / "rank0.safetensors").string(), (d / "rank1.safetensors").string(),
                  (d / "rank2.safetensors").string(), (d / "rank3.safetensors").string()});
  EXPECT_EQ(r.rc, 0) << r.err;
}

TEST(CliVerify, InjectedFaultFailsWithTheRunsCode) {
  for (const auto& [fault, code] : std::vector<std::pair<std::string, std::string>>{
           {"silent-gather", "SILENT_TRANSFER"}, {"perturb-rank=2", "NUMERICS_ABOVE_FLOOR"}}) {
    const fs::path d = scratch_dir("cli_verify_fault");
    const auto run = run_gemmar("run " + kShape + " --inject " + fault + " --dump " + d.string());
    EXPECT_EQ(run.rc, 1);
    EXPECT_NE(run.out.find(code), std::string::npos) << run.out;
    const auto r = run_gemmar("verify " + d.string());
    EXPECT_EQ(r.rc, 1) << r.out << r.err;
    EXPECT_NE(r.out.find(code), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("COLLECTIVE_MISMATCH"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("expected 0x"), std::string::npos) << r.out;  // the first mismatches are listed
  }
}

TEST(CliVerify, SeveralRunsDumpToSubdirectoriesAndVerifyJudgesEach) {
  const fs::path d = scratch_dir("cli_verify_all");
  const auto run = run_gemmar("run " + kShape + " --all-configs --check-rows 32 --dump " + d.string());
  ASSERT_EQ(run.rc, 0) << run.err;
  const auto r = run_gemmar("verify " + d.string() + " --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["runs"].size(), 11u);
  EXPECT_EQ(j["summary"]["pass"], 11);
  EXPECT_EQ(j["verify"][0]["row_subset"], true);
}

TEST(CliVerify, BadFilesExitTwoNamingFileAndTensor) {
  const fs::path base = dump("cli_verify_bad", "");
  auto fresh = [&](const std::string& tag) {
    const fs::path d = scratch_dir(tag);
    for (const auto& e : fs::directory_iterator(base)) fs::copy_file(e.path(), d / e.path().filename());
    return d;
  };
  {  // truncated: the last tensor's bytes are cut
    const fs::path d = fresh("bad_trunc");
    const fs::path f = d / "rank1.safetensors";
    fs::resize_file(f, fs::file_size(f) - 1000);
    expect_bad_input(d, "rank1.safetensors", "truncated", "truncated");
  }
  {  // wrong dtype: out declared F16
    const fs::path d = fresh("bad_dtype");
    auto h = header_of(d / "rank2.safetensors");
    h["out"]["dtype"] = "F16";
    with_header(d / "rank2.safetensors", h);
    expect_bad_input(d, "rank2.safetensors", "'out' has dtype F16", "dtype");
  }
  {  // wrong layout: blockscale A scales as the logical [M, K/128] (row-major)
    const fs::path d = fresh("bad_layout");
    auto h = header_of(d / "rank0.safetensors");
    h["a_scale"]["shape"] = {1024, 2};
    with_header(d / "rank0.safetensors", h);
    expect_bad_input(d, "rank0.safetensors", "'a_scale' has shape [1024, 2], expected [2, 1024]", "layout");
  }
  {  // wrong shape: b's K differs from a's
    const fs::path d = fresh("bad_shape");
    auto h = header_of(d / "rank3.safetensors");
    h["b"]["shape"] = {512, 512};
    with_header(d / "rank3.safetensors", h);
    expect_bad_input(d, "rank3.safetensors", "tensor 'b'", "shape");
  }
  {  // the header lies: a shape whose bytes differ from its offsets
    const fs::path d = fresh("bad_lie");
    auto h = header_of(d / "rank0.safetensors");
    h["out"]["shape"] = {1024, 1000};
    with_header(d / "rank0.safetensors", h);
    expect_bad_input(d, "rank0.safetensors", "tensor 'out'", "lie");
  }
  {  // metadata: world says 4, three files
    const fs::path d = fresh("bad_missing");
    fs::remove(d / "rank3.safetensors");
    expect_bad_input(d, "rank0.safetensors", "world=4", "missing rank");
  }
  {  // a tensor missing
    const fs::path d = fresh("bad_no_out");
    auto h = header_of(d / "rank1.safetensors");
    h["zzz"] = h["out"];
    h.erase("out");
    with_header(d / "rank1.safetensors", h);
    expect_bad_input(d, "rank1.safetensors", "no tensor 'out'", "no out");
  }
  {
    const auto r = run_gemmar("verify /nonexistent/dir");
    EXPECT_EQ(r.rc, 2);
  }
}

// python/gemmar_dump.py (stdlib only here: no torch, no numpy on the CI machine) rewrites a dump from Raw buffers in
// the file layout; the result must verify, and its tensors equal the originals byte for byte.
TEST(CliVerify, PythonDumperWritesTheSameFormat) {
  if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const fs::path d = dump("cli_verify_py", "--gather-dtype fp8");
  const fs::path out = scratch_dir("cli_verify_py_out");
  const fs::path py = fs::path(GEMMAR_TEST_DATA_DIR).parent_path().parent_path() / "python";
  const std::string script = R"PY(
import json, struct, sys
sys.path.insert(0, sys.argv[1])
import gemmar_dump
src, dst = sys.argv[2], sys.argv[3]
for r in range(4):
    b = open("%s/rank%d.safetensors" % (src, r), "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n]); meta = h.pop("__metadata__")
    t = {k: gemmar_dump.Raw(v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in h.items()}
    gemmar_dump.dump(dst + "/", int(meta["rank"]), int(meta["world"]), t["a"], t["b"], t["a_scale"], t["b_scale"], t["out"],
                     partial=t["partial"], quant=meta["quant"], mode=meta["mode"], gather_dtype=meta["gather_dtype"],
                     gather_transport=meta["gather_transport"], fp8_format="e4m3fn", pull_blocks=meta["pull_blocks"])
)PY";
  write_text(out / "conv.py", script);
  const std::string cmd =
      "python3 " + (out / "conv.py").string() + " " + py.string() + " " + d.string() + " " + (out / "dump").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto r = run_gemmar("verify " + (out / "dump").string() + " --json");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["runs"][0]["record"]["wrong_elements"], 0);
  const auto h0 = header_of(d / "rank0.safetensors"), h1 = header_of(out / "dump" / "rank0.safetensors");
  for (const char* t : {"a", "b", "a_scale", "b_scale", "out", "partial"}) {
    EXPECT_EQ(h0[t]["dtype"], h1[t]["dtype"]) << t;
    EXPECT_EQ(h0[t]["shape"], h1[t]["shape"]) << t;
  }
  EXPECT_EQ(h1["__metadata__"]["producer"], "gemmar_dump.py");
}

}  // namespace
