// `gemmar run --dump DIR` follows --out's rules, checked before any work (issue 47): rank files are never written
// among a user's files, an existing rank0.safetensors is never overwritten (a previous gemmar dump only with
// --force), a DIR that is a file is refused up front rather than after the whole job. gemmar_dump.dump
// always writes DIR/rank<R>.safetensors, creating DIR, so the README's `GEMMAR_DUMP=dump BENCH && gemmar verify
// dump` works; and verify names the likely cause when it finds fewer rank files than the world.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/cli.hpp"

namespace {

namespace fs = std::filesystem;
using gemmar::test::run_gemmar;
using gemmar::test::run_program;
using gemmar::test::scratch_dir;
using gemmar::test::slurp;
using gemmar::test::write_text;

const std::string kDims = "-m 512 -n 1024 -k 256 --world 4";
const std::string kShape = kDims + " --check-rows 64";

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(CliDumpDir, ADumpIsNeverWrittenAmongTheUsersFiles) {
  const fs::path d = scratch_dir("dump_user");
  write_text(d / "rank0.safetensors", "my own dump from last week");
  write_text(d / "notes.txt", "mine");
  for (const char* force : {"", " --force"}) {
    // The reference shape (minutes on the CPU): refused before any of that work.
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_gemmar("run --backend cpu --dump " + d.string() + force);
    EXPECT_EQ(r.rc, 2) << force << r.err;
    EXPECT_LT(seconds_since(t0), 5.0);
    EXPECT_NE(r.err.find("--dump " + d.string() + ": is a non-empty directory that gemmar did not write"),
              std::string::npos)
        << r.err;
  }
  EXPECT_EQ(slurp(d / "rank0.safetensors"), "my own dump from last week");
  EXPECT_EQ(slurp(d / "notes.txt"), "mine");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 2);
}

TEST(CliDumpDir, ADumpOntoAFileIsRefusedBeforeAnyWork) {
  const fs::path d = scratch_dir("dump_file");
  write_text(d / "out.bin", "a file");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_gemmar("run --backend cpu --dump " + (d / "out.bin").string());
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_NE(r.err.find("is an existing file"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(d / "out.bin"), "a file");
}

TEST(CliDumpDir, APreviousGemmarDumpIsReplacedOnlyWithForce) {
  const fs::path d = scratch_dir("dump_prev") / "dump";
  auto r = run_gemmar("run " + kShape + " --dump " + d.string());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(d / ".gemmar-output"));
  EXPECT_TRUE(fs::is_regular_file(d / ".gemmar-manifest"));
  const std::string before = slurp(d / "rank0.safetensors");
  r = run_gemmar("run " + kShape + " --dump " + d.string() + " --seed 7");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("give --force"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(d / "rank0.safetensors"), before);
  r = run_gemmar("run " + kShape + " --dump " + d.string() + " --seed 7 --force");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(slurp(d / "rank0.safetensors"), before);
  EXPECT_EQ(run_gemmar("verify " + d.string()).rc, 0);
  // A user's file put into it is kept, --force or not.
  write_text(d / "why.txt", "mine");
  r = run_gemmar("run " + kShape + " --dump " + d.string() + " --force");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("why.txt"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(d / "why.txt"), "mine");
}

TEST(CliDumpDir, ForceWithoutADumpWouldDoNothingAndIsRefused) {
  const auto r = run_gemmar("run " + kShape + " --force");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--force: only with --dump"), std::string::npos) << r.err;
}

// What a benchmark does with the README's line: GEMMAR_DUMP=dump on every rank, each calling dump("dump", rank,
// ...) on a directory that does not exist yet. Debian's python3 with numpy, no torch (the torch-free path).
TEST(CliDumpDir, PythonDumpWritesOneFilePerRankIntoANewDirectory) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no /usr/bin/python3 with numpy";
  const fs::path src = scratch_dir("dump_py_src");
  ASSERT_EQ(run_gemmar("run " + kDims + " --check-rows 0 --dump " + src.string()).rc, 0);
  const fs::path work = scratch_dir("dump_py");
  const fs::path py = fs::path(GEMMAR_TEST_DATA_DIR).parent_path().parent_path() / "python";
  // Each rank's tensors read back from gemmar's own dump as numpy arrays, then dumped as a benchmark would.
  write_text(work / "bench.py", R"PY(
import json, os, struct, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import gemmar_dump
src, dest = sys.argv[2], sys.argv[3]
np_dtype = {"F8_E4M3": np.uint8, "U8": np.uint8, "F32": np.float32, "BF16": np.uint16, "I64": np.int64}
for r in range(4):
    b = open("%s/rank%d.safetensors" % (src, r), "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n]); meta = h.pop("__metadata__")
    t = {}
    for k, v in h.items():
        raw = b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
        if v["dtype"] in ("F8_E4M3", "BF16"):
            t[k] = gemmar_dump.Raw(v["dtype"], v["shape"], raw)  # numpy has no fp8 or bf16 dtype
        else:
            t[k] = np.frombuffer(raw, dtype=np_dtype[v["dtype"]]).reshape(v["shape"])
    gemmar_dump.dump(dest, r, 4, t["a"], t["b"], t["a_scale"], t["b_scale"], t["out"], partial=t["partial"],
                     quant=meta["quant"], mode=meta["mode"], gather_dtype=meta["gather_dtype"],
                     gather_transport=meta["gather_transport"], fp8_format="e4m3fn")
for bad in (os.path.join(dest, "rank0.safetensors"), os.path.join(dest, "..", "one.safetensors")):
    try:
        gemmar_dump.dump(bad, 0, 4, t["a"], t["b"], t["a_scale"], t["b_scale"], t["out"], fp8_format="e4m3fn")
    except ValueError as e:
        print("refused:", e)
    else:
        print("written:", bad)
)PY");
  const fs::path dest = work / "dump";  // does not exist yet, no trailing slash
  const auto py_run =
      run_program("/usr/bin/python3", {(work / "bench.py").string(), py.string(), src.string(), dest.string()});
  ASSERT_EQ(py_run.rc, 0) << py_run.err;
  EXPECT_EQ(std::count(py_run.out.begin(), py_run.out.end(), '\n'), 2) << py_run.out;
  EXPECT_EQ(py_run.out.find("written:"), std::string::npos) << py_run.out;
  for (int r = 0; r < 4; ++r) EXPECT_TRUE(fs::is_regular_file(dest / ("rank" + std::to_string(r) + ".safetensors")));
  EXPECT_FALSE(fs::exists(work / "one.safetensors"));
  const auto v = run_gemmar("verify " + dest.string());
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
}

TEST(CliDumpDir, VerifyNamesTheLikelyCauseOfTooFewRankFiles) {
  const fs::path d = scratch_dir("dump_few");
  ASSERT_EQ(run_gemmar("run " + kShape + " --dump " + (d / "run").string()).rc, 0);
  // Every rank wrote one path: the last rank's file is all that is left.
  fs::create_directories(d / "one");
  fs::copy_file(d / "run" / "rank3.safetensors", d / "one" / "dump.safetensors");
  auto r = run_gemmar("verify " + (d / "one").string());
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("world=4 but 1 file(s)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 3's alone: every rank likely wrote the same file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ranks 0-2 did not dump"), std::string::npos) << r.err;
  fs::remove(d / "run" / "rank1.safetensors");
  fs::remove(d / "run" / "rank2.safetensors");
  r = run_gemmar("verify " + (d / "run").string());
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("ranks 1-2 are missing"), std::string::npos) << r.err;
}

}  // namespace
