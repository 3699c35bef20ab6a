// gemmar verify's engine (validate/harness/verify.hpp) on dumps the tests write themselves: the CPU emulation run
// through run_and_check with --dump, clean and with every fault class injected. A dump must be judged exactly as
// the run that wrote it was (the same finding codes), each fault class found with its code; the diagnoses
// (format mix-up, ranks that disagree, the fp8 wire's legs) are checked on dumps edited here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/faults.hpp"
#include "reference/formats.hpp"
#include "reference/numerics_inline.hpp"
#include "reference/quant.hpp"
#include "support/cli.hpp"
#include "validate/harness/dump_write.hpp"
#include "validate/harness/output_check.hpp"
#include "validate/harness/run_driver.hpp"
#include "validate/harness/verify.hpp"
#include "validate/record/safetensors.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gemmar;

std::set<std::string> error_codes(const Verdict& v) {
  std::set<std::string> s;
  for (const auto& f : v.findings)
    if (f.severity == Severity::Error) s.insert(f.code);
  return s;
}

std::string codes_text(const std::set<std::string>& s) {
  std::string t;
  for (const auto& c : s) t += c + " ";
  return t;
}

RunRequest small(const Config& c, const std::string& inject, int64_t check_rows = 0) {
  RunRequest r;
  r.shape = {1024, 1024, 256, 4};
  r.config = c;
  r.inject = parse_faults(inject);
  r.check_rows = check_rows;
  r.seed = 77;
  // A dump holds one iteration's tensors: compare it with a one-iteration run (across iterations, run also
  // counts every iteration's wrong elements and sees stale data between them, which one dump cannot).
  r.iterations = 1;
  return r;
}

std::vector<std::string> files_of(const fs::path& dir) { return dump_groups({dir.string()}).at(0); }

Config cfg(WireDtype w, Transport t, Mode m = Mode::FusedSdma) {
  Config c;
  c.mode = m;
  c.gather_dtype = w;
  c.gather_transport = t;
  return c;
}

// Every fault class, on a config it applies to: the dump is judged as the run was, with the class's code.
TEST(HarnessVerify, EveryFaultClassIsFoundWithTheRunsCodes) {
  struct Case {
    std::string inject;
    Config config;
    std::string code;
  };
  const Config bf16 = cfg(WireDtype::Bf16, Transport::Sdma);
  const Config fp8_sdma = cfg(WireDtype::Fp8, Transport::Sdma);
  const Config fp8_lsa = cfg(WireDtype::Fp8, Transport::Lsa);
  const std::vector<Case> cases{
      {"none", bf16, ""},
      {"none", fp8_sdma, ""},
      {"none", fp8_lsa, ""},
      {"none", cfg(WireDtype::Bf16, Transport::Lsa, Mode::SplitLsa), ""},
      {"none", cfg(WireDtype::Bf16, Transport::Sdma, Mode::GemmOnly), ""},
      {"silent-puts", bf16, "SILENT_TRANSFER"},
      {"silent-scatter", fp8_lsa, "SILENT_TRANSFER"},
      {"silent-gather", fp8_sdma, "SILENT_TRANSFER"},
      {"stale-output", bf16, "SILENT_TRANSFER"},
      {"perturb-rank=1", bf16, "NUMERICS_ABOVE_FLOOR"},
      {"pull-blocks=2", fp8_lsa, "GRID_OFF_OPTIMUM"},
      {"wire-bypassed", fp8_sdma, "WIRE_NOT_USED"},
      {"fnuz-as-fn", bf16, "NOT_VALIDATED"},
      {"no-release", bf16, "RANK_DIVERGENCE"},
      {"no-release", fp8_sdma, "RANK_DISAGREEMENT"},
  };
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  for (const auto& c : cases) {
    const fs::path dir = test::scratch_dir("verify_fault");
    RunRequest req = small(c.config, c.inject);
    req.dump_dir = dir.string();
    const RunOutcome run = run_and_check(*cpu, req);
    VerifyOptions every_row;
    every_row.check_rows = 0;  // as the run: --check-rows 0
    const VerifyResult v = verify_dump(files_of(dir), every_row);
    const std::string what = c.inject + " on " + config_label(c.config);
    EXPECT_EQ(codes_text(error_codes(v.verdict)), codes_text(error_codes(run.verdict))) << what;
    EXPECT_EQ(v.verdict.pass, run.verdict.pass) << what;
    EXPECT_EQ(v.record.backend, "tensors");
    // run checks gemmar's own kernels bit for bit; verify judges another implementation's fp8 gather with mori's
    // tolerance, so a faulty fp8 gather may have fewer wrong elements there (those a scale within 1e-6 explains).
    if (c.config.gather_dtype == WireDtype::Fp8 && !c.code.empty()) {
      EXPECT_LE(v.record.wrong_elements.value_or(0), run.record.wrong_elements.value_or(0)) << what;
      EXPECT_EQ(v.record.wrong_elements.value_or(0) > 0, run.record.wrong_elements.value_or(0) > 0) << what;
    } else {
      EXPECT_EQ(v.record.wrong_elements, run.record.wrong_elements) << what;
    }
    EXPECT_EQ(v.record.checked_rows, run.record.checked_rows) << what;
    EXPECT_FALSE(v.row_subset) << what;  // --check-rows 0: every row was dumped
    if (c.code.empty()) {
      EXPECT_TRUE(v.verdict.pass) << what << ": " << codes_text(error_codes(v.verdict));
      EXPECT_EQ(v.record.wrong_elements.value_or(-1), 0) << what;
      EXPECT_TRUE(v.diagnoses.empty()) << what << ": " << v.diagnoses.front();
    } else {
      EXPECT_TRUE(error_codes(v.verdict).count(c.code)) << what << ": " << codes_text(error_codes(v.verdict));
    }
    if (c.inject == "fnuz-as-fn") {
      ASSERT_FALSE(v.diagnoses.empty());
      EXPECT_NE(v.diagnoses.front().find("fp8 format mix-up"), std::string::npos) << v.diagnoses.front();
    }
    if (c.inject == "stale-output" || c.inject == "perturb-rank=1") {
      ASSERT_FALSE(v.first_mismatches.empty()) << what;
      EXPECT_GT(v.record.wrong_elements.value_or(0), 0) << what;
    }
    if (c.inject == "no-release") {
      int64_t disagree = 0;
      for (int64_t x : v.disagreeing_by_rank) disagree += x;
      EXPECT_GT(disagree, 0) << what;
    }
    fs::remove_all(dir);
  }
}

// A sampled run dumps only its checked rows (a row-subset dump, tensor 'rows'); verify checks exactly those.
TEST(HarnessVerify, RowSubsetDumpIsCheckedOnItsRows) {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  const fs::path dir = test::scratch_dir("verify_subset");
  RunRequest req = small(cfg(WireDtype::Fp8, Transport::Lsa), "none", 64);
  req.dump_dir = dir.string();
  const RunOutcome run = run_and_check(*cpu, req);
  const VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
  EXPECT_TRUE(v.row_subset);
  EXPECT_EQ(v.rows.size(), 64u);
  EXPECT_TRUE(v.verdict.pass);
  EXPECT_EQ(v.record.per_rank_rel_l2, run.record.per_rank_rel_l2);
  EXPECT_EQ(v.record.per_slice_rel_l2, run.record.per_slice_rel_l2);
}

// Rewrites every rank file of `dir`, passing each tensor's bytes through `edit` (name, rank, bytes);
// returning false drops the tensor. Extra tensors come from `add` (rank -> list).
using Bytes = std::vector<uint8_t>;
void rewrite(const fs::path& dir, const std::function<bool(const std::string&, int, Bytes&)>& edit,
             const std::function<std::vector<std::pair<safetensors::TensorInfo, Bytes>>(int)>& add = {}) {
  for (const auto& path : files_of(dir)) {
    std::map<std::string, std::string> meta;
    std::vector<std::pair<safetensors::TensorInfo, Bytes>> kept;
    int rank = 0;
    {
      const safetensors::File f = safetensors::File::open(path);
      meta = f.metadata();
      rank = std::stoi(meta.at("rank"));
      for (const auto& name : f.names()) {
        const auto& t = f.tensor(name);
        Bytes b(f.data(t), f.data(t) + (t.end - t.begin));
        if (edit(name, rank, b)) kept.push_back({t, std::move(b)});
      }
    }
    if (add)
      for (auto& x : add(rank)) kept.push_back(std::move(x));
    std::vector<safetensors::TensorOut> out;
    for (const auto& [t, b] : kept) out.push_back({t.name, t.dtype, t.shape, b.data(), b.size()});
    safetensors::write_file(path, meta, out);
  }
}

fs::path clean_dump(const Config& c, const std::string& tag) {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  const fs::path dir = test::scratch_dir(tag);
  RunRequest req = small(c, "none");
  req.dump_dir = dir.string();
  (void)run_and_check(*cpu, req);
  return dir;
}

// The format mix-up in the other direction (bench-like data, no NaN): an output 4x the reference.
TEST(HarnessVerify, OutputFourTimesTheReferenceIsDiagnosedAsTheFormatMixUp) {
  const fs::path dir = clean_dump(cfg(WireDtype::Bf16, Transport::Sdma), "verify_x4");
  rewrite(dir, [](const std::string& name, int, Bytes& b) {
    if (name == "partial") return false;
    if (name == "out")
      for (size_t i = 0; i + 1 < b.size(); i += 2) {
        uint16_t h;
        std::memcpy(&h, &b[i], 2);
        h = reference::to_bf16(4.0f * reference::from_bf16(h));
        std::memcpy(&b[i], &h, 2);
      }
    return true;
  });
  const VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
  EXPECT_FALSE(v.has_partials);
  EXPECT_FALSE(v.record.wrong_elements.has_value());
  // The judge sees relL2 ~3 on every slice (SILENT_TRANSFER's "not this run's data" today); the diagnosis names
  // the cause.
  EXPECT_FALSE(v.verdict.pass);
  ASSERT_FALSE(v.diagnoses.empty());
  EXPECT_NE(v.diagnoses.front().find("e4m3fnuz codes read as e4m3fn"), std::string::npos) << v.diagnoses.front();
}

// Without partials, a rank whose view differs from the others' (a few elements) is named.
TEST(HarnessVerify, RanksThatDisagreeAreNamedWithoutPartials) {
  const fs::path dir = clean_dump(cfg(WireDtype::Bf16, Transport::Sdma), "verify_disagree");
  rewrite(dir, [](const std::string& name, int rank, Bytes& b) {
    if (name == "partial") return false;
    if (name == "out" && rank == 2)
      for (size_t i = 0; i < b.size(); i += 2 * 997) b[i] ^= 1;
    return true;
  });
  const VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
  ASSERT_EQ(v.disagreeing_by_rank.size(), 4u);
  EXPECT_GT(v.disagreeing_by_rank[2], 0);
  EXPECT_EQ(v.disagreeing_by_rank[0] + v.disagreeing_by_rank[1] + v.disagreeing_by_rank[3], 0);
  bool named = false;
  for (const auto& d : v.diagnoses) named = named || d.find("rank 2:") != std::string::npos;
  EXPECT_TRUE(named);
}

// The fp8 wire's tensors: the owner's codes and scales as the quantization of its rows; a wrong code is found.
TEST(HarnessVerify, WireTensorsCheckTheQuantizeAndGatherLegs) {
  const fs::path dir = clean_dump(cfg(WireDtype::Fp8, Transport::Sdma), "verify_wire");
  const int64_t S = 1024 / 4, N = 1024;
  std::map<int, Bytes> outs;
  rewrite(dir, [&](const std::string& name, int rank, Bytes& b) {
    if (name == "out") outs[rank] = b;
    return true;
  });
  auto add = [&](bool corrupt) {
    return [&, corrupt](int rank) {
      Bytes codes(size_t(S * N)), scales(size_t(S) * 4);
      for (int64_t i = 0; i < S; ++i) {
        const auto* row = reinterpret_cast<const uint16_t*>(outs[rank].data()) + (rank * S + i) * N;
        const float s = reference::wire_quantize_row(row, N, &codes[size_t(i * N)], Fp8Format::E4M3FN);
        std::memcpy(&scales[size_t(i) * 4], &s, 4);
      }
      if (corrupt && rank == 1) codes[5] ^= 0x08;
      std::vector<std::pair<safetensors::TensorInfo, Bytes>> v;
      safetensors::TensorInfo w, ws;
      w.name = "wire", w.dtype = "F8_E4M3", w.shape = {S, N};
      ws.name = "wire_scale", ws.dtype = "F32", ws.shape = {S};
      v.push_back({w, codes});
      v.push_back({ws, scales});
      return v;
    };
  };
  auto drop_wire = [](const std::string& name, int, Bytes&) { return name != "wire" && name != "wire_scale"; };
  rewrite(dir, drop_wire, add(false));
  VerifyOptions all;
  all.check_rows = 0;
  VerifyResult v = verify_dump(files_of(dir), all);
  EXPECT_TRUE(v.has_wire);
  EXPECT_EQ(v.wire_quantize_mismatches.value_or(-1), 0);
  EXPECT_EQ(v.wire_gather_mismatches.value_or(-1), 0);
  EXPECT_TRUE(v.verdict.pass);
  rewrite(dir, drop_wire, add(true));
  v = verify_dump(files_of(dir), all);
  EXPECT_EQ(v.wire_quantize_mismatches.value_or(-1), 1);
  EXPECT_GT(v.wire_gather_mismatches.value_or(-1), 0);  // the peers widened the codes the owner should have sent
}

// ---- issue 20: mori's fp8 wire, its named variants, and one wrong element anywhere ----------------------------

// A clean fp8-wire dump of the emulation (mori's recipe) passes at the default options with the recipe named.
TEST(HarnessVerify, MoriRecipeDumpPassesWithTheRecipeNamed) {
  for (Transport t : {Transport::Sdma, Transport::Lsa}) {
    const fs::path dir = clean_dump(cfg(WireDtype::Fp8, t), "verify_mori");
    const VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
    EXPECT_TRUE(v.verdict.pass) << codes_text(error_codes(v.verdict));
    EXPECT_EQ(v.record.wire_recipe.value_or(""), reference::to_string(reference::WireRecipe::Mori));
    EXPECT_EQ(v.wire_recipe.rfind("mori", 0), 0u) << v.wire_recipe;
    EXPECT_EQ(v.record.wrong_elements.value_or(-1), 0);
    EXPECT_EQ(v.record.disagreeing_elements.value_or(-1), 0);
    EXPECT_EQ(v.element_rows, 1024);  // every row, though relL2 samples 256
    EXPECT_EQ(v.rows.size(), 256u);
    EXPECT_NE(verify_text(v).find("fp8 wire recipe: mori"), std::string::npos) << verify_text(v);
    fs::remove_all(dir);
  }
}

// fuse_quantize: the amax from the reduce's fp32 accumulator (mori's sdma_reduce_quant) is what the emulation does
// and what is named.
TEST(HarnessVerify, FusedQuantizeDumpIsNamedAsTheAccumulatorAmax) {
  Config c = cfg(WireDtype::Fp8, Transport::Sdma);
  c.fuse_quantize = true;
  const fs::path dir = clean_dump(c, "verify_accamax");
  const VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
  EXPECT_TRUE(v.verdict.pass) << codes_text(error_codes(v.verdict));
  EXPECT_EQ(v.wire_recipe, reference::to_string(reference::WireRecipe::AccAmax));
  fs::remove_all(dir);
}

// fuse_quantize without the partials (they are optional): the accumulator's amax is unknown, but one amax within
// half a bf16 ulp of the row's explains every row; the same edit on every peer's view of one element (so the
// ranks agree) still fails, through the wire leg, and says it judged the gathered views only.
TEST(HarnessVerify, FusedQuantizeWithoutPartialsPassesAndEditsStillFail) {
  Config c = cfg(WireDtype::Fp8, Transport::Sdma);
  c.fuse_quantize = true;
  const fs::path clean = clean_dump(c, "verify_accamax_np");
  rewrite(clean, [](const std::string& t, int, Bytes&) { return t != "partial"; });
  const VerifyResult ok = verify_dump(files_of(clean), VerifyOptions{});
  EXPECT_TRUE(ok.verdict.pass) << codes_text(error_codes(ok.verdict)) << ok.wire_recipe;
  EXPECT_EQ(ok.wire_recipe.rfind("fp32-accumulator amax", 0), 0u) << ok.wire_recipe;
  EXPECT_EQ(ok.record.wrong_elements.value_or(-1), 0);
  const std::map<std::string, std::function<uint16_t(uint16_t)>> edits{
      {"flipped ulp", [](uint16_t h) { return uint16_t(h ^ 1); }},
      {"NaN", [](uint16_t) { return uint16_t(0x7fc0); }},
      {"zeroed", [](uint16_t) { return uint16_t(0); }},
      {"1.01x", [](uint16_t h) { return numerics::f32_to_bf16(numerics::bf16_to_f32(h) * 1.01f); }},
  };
  for (const int64_t row : {int64_t(7), int64_t(300), int64_t(1000)})
    for (const auto& [name, edit] : edits) {
      const fs::path dir = clean.string() + "_edit";
      fs::remove_all(dir);
      fs::copy(clean, dir);
      const int owner = int(row / 256);
      const int64_t at = row * 1024 + 333;
      uint16_t before = 0;
      rewrite(dir, [&](const std::string& t, int rank, Bytes& b) {
        if (t == "out" && rank != owner) {
          std::memcpy(&before, &b[size_t(at) * 2], 2);
          const uint16_t h = edit(before);
          std::memcpy(&b[size_t(at) * 2], &h, 2);
        }
        return true;
      });
      const std::string what = name + " on every peer's view of row " + std::to_string(row);
      ASSERT_NE(before, 0) << what;
      const VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
      EXPECT_FALSE(v.verdict.pass) << what;
      EXPECT_TRUE(error_codes(v.verdict).count("COLLECTIVE_MISMATCH")) << what;
      EXPECT_EQ(v.record.wrong_elements_basis.value_or(""), "wire") << what;
      for (const auto& f : v.verdict.findings)
        if (f.code == "COLLECTIVE_MISMATCH") {
          EXPECT_EQ(f.message.find("re-emulated over this run's own partials"), std::string::npos) << f.message;
        }
      EXPECT_NE(v.wire_recipe.find("no recipe explains"), std::string::npos) << what << ": " << v.wire_recipe;
      fs::remove_all(dir);
    }
  fs::remove_all(clean);
}

// mori's reduce starts from the owner's own value (acc = v0), not from 0: an element whose partials are all -0
// sums to -0 (0 + -0 would be +0), and a dump holding that -0 passes.
TEST(HarnessVerify, AllNegativeZeroPartialsReduceToNegativeZero) {
  const uint16_t neg0 = 0x8000;
  for (int owner = 0; owner < 4; ++owner) {
    EXPECT_EQ(numerics::reduce_element(owner, 4, [&](int) { return neg0; }), neg0);
    EXPECT_EQ(numerics::reduce_element(owner, 4, [&](int p) { return p == 2 ? uint16_t(0) : neg0; }), 0);
  }
  const fs::path dir = clean_dump(cfg(WireDtype::Bf16, Transport::Sdma), "verify_negzero");
  const size_t at = size_t(5 * 1024 + 9) * 2;  // row 5 (owner 0), every rank's partial and view
  rewrite(dir, [&](const std::string& t, int, Bytes& b) {
    if (t == "partial" || t == "out") std::memcpy(&b[at], &neg0, 2);
    return true;
  });
  const VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
  EXPECT_TRUE(v.verdict.pass) << codes_text(error_codes(v.verdict));
  EXPECT_EQ(v.record.wrong_elements.value_or(-1), 0);
  fs::remove_all(dir);
}

// Rewrites every non-owner view of the dump's fp8 gather with `recipe` applied to the owner's reduced rows.
void regather(const fs::path& dir, reference::WireRecipe recipe) {
  const int64_t S = 1024 / 4, N = 1024;
  std::map<int, Bytes> outs;
  rewrite(dir, [&](const std::string& name, int rank, Bytes& b) {
    if (name == "out") outs[rank] = b;
    return true;
  });
  rewrite(dir, [&](const std::string& name, int rank, Bytes& b) {
    if (name != "out") return true;
    std::vector<uint8_t> codes(static_cast<size_t>(N));
    for (int owner = 0; owner < 4; ++owner) {
      if (owner == rank) continue;
      for (int64_t i = owner * S; i < (owner + 1) * S; ++i) {
        const auto* reduced = reinterpret_cast<const uint16_t*>(outs[owner].data()) + i * N;
        const float s = reference::wire_quantize_row(reduced, N, codes.data(), Fp8Format::E4M3FN, recipe);
        reference::wire_dequantize_row(codes.data(), s, N, reinterpret_cast<uint16_t*>(b.data()) + i * N,
                                       Fp8Format::E4M3FN);
      }
    }
    return true;
  });
}

// The legitimate variants are named, not failed: with the partials and without.
TEST(HarnessVerify, VariantRecipesAreNamedNotFailed) {
  for (reference::WireRecipe w : {reference::WireRecipe::TrueDivScale, reference::WireRecipe::DivCodes})
    for (bool partials : {true, false}) {
      const fs::path dir = clean_dump(cfg(WireDtype::Fp8, Transport::Sdma), "verify_variant");
      regather(dir, w);
      if (!partials) rewrite(dir, [](const std::string& name, int, Bytes&) { return name != "partial"; });
      const VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
      const std::string what = std::string(reference::to_string(w)) + (partials ? " with" : " without") + " partials";
      EXPECT_TRUE(v.verdict.pass) << what << ": " << codes_text(error_codes(v.verdict));
      // x / scale codes equal x * inv codes except where the two straddle a rounding midpoint: the recipes that give
      // identical bits are named together.
      EXPECT_NE(v.wire_recipe.find(reference::to_string(w)), std::string::npos) << what << ": " << v.wire_recipe;
      EXPECT_EQ(v.wire_recipe.find("mori's tolerance"), std::string::npos) << what << ": " << v.wire_recipe;
      EXPECT_EQ(v.record.wrong_elements.value_or(-1), 0) << what;
      fs::remove_all(dir);
    }
}

// One wrong element in a row the relL2 sampling does not pick: a flipped ulp, a NaN, a zeroed element, on rank 1's
// view of a row rank 0 owns, with and without the partials, on both wires: each fails at the default options.
TEST(HarnessVerify, OneWrongElementAnywhereFailsAtDefaultOptions) {
  const Shape shape{1024, 1024, 256, 4};
  const std::vector<int64_t> sampled = output_check::rows_to_check(shape, Quant::Blockscale, 256, VerifyOptions{}.seed);
  int64_t row = 7;
  while (std::binary_search(sampled.begin(), sampled.end(), row)) ++row;
  ASSERT_LT(row, 256);  // owned by rank 0
  const int64_t at = row * 1024 + 333;
  const std::map<std::string, std::function<uint16_t(uint16_t)>> edits{
      {"flipped ulp", [](uint16_t h) { return uint16_t(h ^ 1); }},
      {"NaN", [](uint16_t) { return uint16_t(0x7fc0); }},
      {"zeroed", [](uint16_t) { return uint16_t(0); }},
  };
  for (WireDtype wire : {WireDtype::Bf16, WireDtype::Fp8})
    for (const auto& [name, edit] : edits)
      for (bool partials : {true, false}) {
        const fs::path dir = clean_dump(cfg(wire, Transport::Sdma), "verify_one");
        uint16_t before = 0;
        rewrite(dir, [&](const std::string& t, int rank, Bytes& b) {
          if (t == "partial") return partials;
          if (t == "out" && rank == 1) {
            std::memcpy(&before, &b[size_t(at) * 2], 2);
            const uint16_t h = edit(before);
            std::memcpy(&b[size_t(at) * 2], &h, 2);
          }
          return true;
        });
        ASSERT_NE(before, 0) << "the element must not be zero already";
        const VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
        const std::string what =
            name + (partials ? " with" : " without") + " partials on " + (wire == WireDtype::Fp8 ? "fp8" : "bf16");
        EXPECT_FALSE(std::binary_search(v.rows.begin(), v.rows.end(), row)) << what;
        EXPECT_FALSE(v.verdict.pass) << what;
        EXPECT_TRUE(error_codes(v.verdict).count("RANK_DISAGREEMENT"))
            << what << ": " << codes_text(error_codes(v.verdict));
        if (partials || wire == WireDtype::Fp8) {
          EXPECT_TRUE(error_codes(v.verdict).count("COLLECTIVE_MISMATCH")) << what;
        }
        if (name == "NaN") {
          EXPECT_EQ(v.nonfinite_elements, 1) << what;
        }
        ASSERT_FALSE(v.first_disagreements.empty()) << what;
        EXPECT_EQ(v.first_disagreements.front().rank, 1) << what;
        EXPECT_EQ(v.first_disagreements.front().row, row) << what;
        EXPECT_EQ(v.disagreeing_by_slice[0], 1) << what;
        fs::remove_all(dir);
      }
}

// The fnuz hint only where the dump does not state e4m3fn: F8_E4M3 codes are e4m3fn (0x80 is -0 there).
TEST(HarnessVerify, NanDiagnosisBlamesFnuzOnlyForUntypedCodes) {
  const fs::path dir = clean_dump(cfg(WireDtype::Bf16, Transport::Sdma), "verify_fnhint");
  rewrite(dir, [](const std::string& t, int, Bytes& b) {
    if (t == "a") b[0] = 0x80;  // -0 in e4m3fn
    if (t == "out") {
      const uint16_t nan = 0x7fc0;
      std::memcpy(&b[2 * 1024 * 3], &nan, 2);  // the same NaN on every rank
    }
    return t != "partial";
  });
  const VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
  EXPECT_FALSE(v.verdict.pass);
  EXPECT_EQ(v.nonfinite_elements, 4);
  ASSERT_FALSE(v.diagnoses.empty());
  EXPECT_EQ(v.diagnoses.front().find("e4m3fnuz"), std::string::npos) << v.diagnoses.front();
  // The record says the dump stated e4m3fn, and the judge's findings leave the fnuz hint out too.
  EXPECT_EQ(v.record.operand_dtype.value_or(""), "F8_E4M3");
  EXPECT_TRUE(error_codes(v.verdict).count("NOT_VALIDATED"));
  for (const auto& f : v.verdict.findings) EXPECT_EQ(f.message.find("e4m3fnuz"), std::string::npos) << f.message;
  // The same record without the stated dtype keeps the hint.
  RunRecord untyped = v.record;
  untyped.operand_dtype.reset();
  bool hinted = false;
  for (const auto& f : judge(untyped, JudgeOptions{}).findings)
    hinted = hinted || (f.code == "NOT_VALIDATED" && f.message.find("e4m3fnuz") != std::string::npos);
  EXPECT_TRUE(hinted);
  fs::remove_all(dir);
}

}  // namespace
