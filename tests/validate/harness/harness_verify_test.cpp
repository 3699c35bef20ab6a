// gemmar verify's engine (validate/harness/verify.hpp) on dumps the tests write themselves: the CPU emulation run
// through run_and_check with --dump, clean and with every fault class injected. A dump must be judged exactly as
// the run that wrote it was (the same finding codes), each fault class found with its code; the diagnoses
// (format mix-up, ranks that disagree, the fp8 wire's legs) are checked on dumps edited here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/errors.hpp"
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

// ---- issue 45: mori's fp8 scatter (--scatter-dtype fp8) --------------------------------------------------------

namespace {

Config scatter_cfg(WireDtype gather, Transport t = Transport::Sdma) {
  Config c = cfg(gather, t);
  c.scatter_dtype = WireDtype::Fp8;
  return c;
}

constexpr int64_t kM = 1024, kN = 1024, kW = 4, kS = kM / kW, kSeg = kN / 256;

// Every rank's scatter leg of a dump: its bf16 partial narrowed per row per 256 columns with `recipe`.
struct ScatterTensors {
  std::map<int, Bytes> codes, scales;  // by rank: [M, N] codes, [M, N/256] fp32 scales
};
ScatterTensors scatter_of(const fs::path& dir, reference::ScatterRecipe recipe) {
  ScatterTensors t;
  rewrite(dir, [&](const std::string& name, int rank, Bytes& b) {
    if (name != "partial") return true;
    Bytes& codes = t.codes[rank];
    Bytes& scales = t.scales[rank];
    codes.resize(size_t(kM * kN));
    scales.resize(size_t(kM * kSeg) * 4);
    for (int64_t i = 0; i < kM; ++i)
      reference::scatter_quantize_row(reinterpret_cast<const uint16_t*>(b.data()) + i * kN, kN, &codes[size_t(i * kN)],
                                      reinterpret_cast<float*>(scales.data()) + i * kSeg, Fp8Format::E4M3FN, recipe);
    return true;
  });
  return t;
}

// Adds the scatter tensors (replacing any) to every rank file.
void add_scatter(const fs::path& dir, const ScatterTensors& t) {
  rewrite(
      dir, [](const std::string& name, int, Bytes&) { return name != "scatter" && name != "scatter_scale"; },
      [&](int rank) {
        safetensors::TensorInfo c, s;
        c.name = "scatter", c.dtype = "F8_E4M3", c.shape = {kM, kN};
        s.name = "scatter_scale", s.dtype = "F32", s.shape = {kM, kSeg};
        return std::vector<std::pair<safetensors::TensorInfo, Bytes>>{{c, t.codes.at(rank)}, {s, t.scales.at(rank)}};
      });
}

// Every rank's output rewritten as the collective over these scatter tensors gives it on the bf16 gather: the owner's
// reduce of the widened codes, copied to every view.
void rebuild_outputs(const fs::path& dir, const ScatterTensors& t) {
  std::vector<float> wide(size_t(kW * kN));
  std::vector<uint16_t> reduced(size_t(kM * kN));
  for (int64_t i = 0; i < kM; ++i) {
    const int owner = int(i / kS);
    for (int p = 0; p < kW; ++p)
      reference::scatter_widen_row(&t.codes.at(p)[size_t(i * kN)],
                                   reinterpret_cast<const float*>(t.scales.at(p).data()) + i * kSeg, kN,
                                   &wide[size_t(p * kN)], Fp8Format::E4M3FN);
    for (int64_t col = 0; col < kN; ++col)
      reduced[size_t(i * kN + col)] = numerics::f32_to_bf16(
          numerics::reduce_sum_f32(owner, int(kW), [&](int p) { return wide[size_t(p * kN + col)]; }));
  }
  rewrite(dir, [&](const std::string& name, int, Bytes& b) {
    if (name == "out") std::memcpy(b.data(), reduced.data(), b.size());
    return true;
  });
}

// A row owned by rank 0 that the default relL2 sample does not pick: what fails there fails on the element checks.
int64_t unsampled_row() {
  const std::vector<int64_t> sampled =
      output_check::rows_to_check({kM, kN, 256, int(kW)}, Quant::Blockscale, 256, VerifyOptions{}.seed);
  int64_t row = 7;
  while (std::binary_search(sampled.begin(), sampled.end(), row)) ++row;
  return row;
}

bool mentions(const std::vector<std::string>& v, const std::string& what) {
  for (const auto& s : v)
    if (s.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

// A clean fp8-scatter dump of the emulation (mori's recipe) passes on both gathers with the recipe named: from the
// partials (the recipe whose reduce gives the owner's rows), from the dumped codes judged against the partials, and
// from the dumped codes alone (the reduce rebuilt from them, bit for bit).
TEST(HarnessVerify, Fp8ScatterDumpPassesWithMorisRecipeNamed) {
  const std::string mori = reference::to_string(reference::ScatterRecipe::Mori);
  for (WireDtype gather : {WireDtype::Bf16, WireDtype::Fp8}) {
    const fs::path dir = clean_dump(scatter_cfg(gather), "verify_scatter");
    const std::string what = std::string("gather ") + to_string(gather);
    VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
    EXPECT_TRUE(v.verdict.pass) << what << ": " << codes_text(error_codes(v.verdict));
    EXPECT_EQ(v.record.config.scatter_dtype, WireDtype::Fp8);
    EXPECT_EQ(v.scatter_recipe, mori) << what;
    EXPECT_EQ(v.record.wrong_elements.value_or(-1), 0) << what;
    EXPECT_TRUE(v.record.validated.value_or(false)) << what;  // inside the benchmark's two-sided fp8 gate
    add_scatter(dir, scatter_of(dir, reference::ScatterRecipe::Mori));
    v = verify_dump(files_of(dir), VerifyOptions{});
    EXPECT_TRUE(v.has_scatter);
    EXPECT_TRUE(v.verdict.pass) << what << ": " << codes_text(error_codes(v.verdict));
    EXPECT_EQ(v.scatter_recipe, mori) << what;
    EXPECT_NE(verify_text(v).find("fp8 scatter recipe: mori"), std::string::npos) << verify_text(v);
    rewrite(dir, [](const std::string& name, int, Bytes&) { return name != "partial"; });
    v = verify_dump(files_of(dir), VerifyOptions{});
    EXPECT_TRUE(v.verdict.pass) << what << ": " << codes_text(error_codes(v.verdict));
    EXPECT_EQ(v.record.wrong_elements.value_or(-1), 0) << what;  // the reduce rebuilt from the codes, bit for bit
    EXPECT_EQ(v.scatter_recipe.rfind("not judged", 0), 0u) << v.scatter_recipe;
    fs::remove_all(dir);
  }
}

// One wrong code in the scatter leg (rank 1's contribution to a row rank 0 owns, outside the relL2 sample): with the
// partials the code itself is unexplained (and the owner's row no longer the reduce of what was sent, or, where the
// output was computed from the wrong code, still the code); without them the owner's row differs from the reduce
// rebuilt from the dumped codes.
TEST(HarnessVerify, Fp8ScatterOneWrongCodeFails) {
  const int64_t row = unsampled_row();
  ASSERT_LT(row, kS);
  const fs::path clean = clean_dump(scatter_cfg(WireDtype::Bf16), "verify_scatter_wrong");
  ScatterTensors bad = scatter_of(clean, reference::ScatterRecipe::Mori);
  Bytes& codes = bad.codes.at(1);
  int64_t at = row * kN;
  while ((codes[size_t(at)] & 0x7f) < 0x50) ++at;  // a large code, so the change shows in the bf16 sum
  codes[size_t(at)] ^= 0x08;                       // one exponent step: far from any rounding midpoint
  struct Case {
    const char* what;
    bool partials, consistent_output;
  };
  for (const Case& c : {Case{"with partials", true, false}, Case{"with partials, output of the wrong code", true, true},
                        Case{"without partials", false, false}}) {
    const fs::path dir = clean.string() + "_case";
    fs::remove_all(dir);
    fs::copy(clean, dir);
    add_scatter(dir, bad);
    if (c.consistent_output) rebuild_outputs(dir, bad);
    if (!c.partials) rewrite(dir, [](const std::string& name, int, Bytes&) { return name != "partial"; });
    const VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
    EXPECT_FALSE(std::binary_search(v.rows.begin(), v.rows.end(), row)) << c.what;
    EXPECT_FALSE(v.verdict.pass) << c.what;
    EXPECT_TRUE(error_codes(v.verdict).count("COLLECTIVE_MISMATCH"))
        << c.what << ": " << codes_text(error_codes(v.verdict));
    if (c.partials) {
      EXPECT_EQ(v.scatter_wrong_codes, 1) << c.what;
      ASSERT_EQ(v.scatter_wrong_by_rank.size(), size_t(kW));
      EXPECT_EQ(v.scatter_wrong_by_rank[1], 1) << c.what;
      EXPECT_TRUE(mentions(v.diagnoses, "scatter's quantizer is wrong")) << c.what;
      EXPECT_NE(v.scatter_recipe.find("no recipe explains"), std::string::npos) << v.scatter_recipe;
    }
    if (!c.consistent_output) {
      ASSERT_FALSE(v.first_mismatches.empty()) << c.what;
      EXPECT_EQ(v.first_mismatches.front().rank, 0) << c.what;  // the owner's reduce
      EXPECT_EQ(v.first_mismatches.front().row, row) << c.what;
    }
    fs::remove_all(dir);
  }
  fs::remove_all(clean);
}

// The gather's recipe applied per 256 columns (a last-bit different scale on many segments) is named, not failed,
// whether judged from the dumped codes or from the reduce; a scale off by one ulp (1e-7 relative) passes within
// mori's tolerance, one off by 1e-5 relative is wrong.
TEST(HarnessVerify, Fp8ScatterVariantIsNamedAndMorisToleranceJudgesTheRest) {
  const std::string gather_like = reference::to_string(reference::ScatterRecipe::GatherScale);
  const fs::path dir = clean_dump(scatter_cfg(WireDtype::Bf16), "verify_scatter_variant");
  const ScatterTensors variant = scatter_of(dir, reference::ScatterRecipe::GatherScale);
  rebuild_outputs(dir, variant);
  VerifyResult v = verify_dump(files_of(dir), VerifyOptions{});
  EXPECT_TRUE(v.verdict.pass) << codes_text(error_codes(v.verdict));
  EXPECT_NE(v.scatter_recipe.find(gather_like), std::string::npos) << v.scatter_recipe;
  add_scatter(dir, variant);
  v = verify_dump(files_of(dir), VerifyOptions{});
  EXPECT_TRUE(v.verdict.pass) << codes_text(error_codes(v.verdict));
  EXPECT_NE(v.scatter_recipe.find(gather_like), std::string::npos) << v.scatter_recipe;
  EXPECT_EQ(v.scatter_wrong_codes, 0);

  const int64_t row = unsampled_row();
  for (const auto& [rel, pass] : {std::pair{1e-7, true}, std::pair{1e-5, false}}) {
    ScatterTensors t = scatter_of(dir, reference::ScatterRecipe::Mori);
    float* s = reinterpret_cast<float*>(t.scales.at(2).data()) + row * kSeg + 1;
    *s = rel < 1e-6 ? std::nextafter(*s, 1.0f) : float(double(*s) * (1 + rel));
    add_scatter(dir, t);
    rebuild_outputs(dir, t);
    v = verify_dump(files_of(dir), VerifyOptions{});
    EXPECT_EQ(v.verdict.pass, pass) << rel << ": " << codes_text(error_codes(v.verdict)) << " " << v.scatter_recipe;
    if (pass) {
      EXPECT_NE(v.scatter_recipe.find("within mori's tolerance"), std::string::npos) << v.scatter_recipe;
    } else {
      EXPECT_EQ(v.scatter_wrong_codes, 1) << v.scatter_recipe;  // the scale
    }
  }
  fs::remove_all(dir);
}

// The scatter tensors belong to an fp8-scatter run and have the run's rows and N/256 scales a row.
TEST(HarnessVerify, Fp8ScatterTensorsOfTheWrongRunOrShapeAreRejectedNamingTheTensor) {
  const fs::path dir = clean_dump(scatter_cfg(WireDtype::Bf16), "verify_scatter_bad");
  add_scatter(dir, scatter_of(dir, reference::ScatterRecipe::Mori));
  const fs::path bf16 = dir.string() + "_bf16";
  fs::remove_all(bf16);
  fs::copy(dir, bf16);
  for (const auto& path : files_of(bf16)) {
    const safetensors::File f = safetensors::File::open(path);
    auto meta = f.metadata();
    meta["scatter_dtype"] = "bf16";
    std::vector<safetensors::TensorOut> out;
    std::vector<Bytes> keep;
    for (const auto& name : f.names()) {
      const auto& t = f.tensor(name);
      keep.emplace_back(f.data(t), f.data(t) + (t.end - t.begin));
    }
    size_t k = 0;
    for (const auto& name : f.names()) {
      const auto& t = f.tensor(name);
      out.push_back({t.name, t.dtype, t.shape, keep[k].data(), keep[k].size()});
      ++k;
    }
    safetensors::write_file(path, meta, out);
  }
  try {
    verify_dump(files_of(bf16), VerifyOptions{});
    ADD_FAILURE() << "a bf16-scatter dump with scatter tensors was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("scatter_dtype"), std::string::npos) << e.what();
  }
  // One scale per row per 512 columns: not the fp8 scatter's layout.
  rewrite(
      dir, [](const std::string& name, int, Bytes&) { return name != "scatter_scale"; },
      [](int) {
        safetensors::TensorInfo s;
        s.name = "scatter_scale", s.dtype = "F32", s.shape = {kM, kSeg / 2};
        return std::vector<std::pair<safetensors::TensorInfo, Bytes>>{{s, Bytes(size_t(kM * kSeg / 2) * 4, 0)}};
      });
  try {
    verify_dump(files_of(dir), VerifyOptions{});
    ADD_FAILURE() << "a scatter_scale of the wrong shape was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'scatter_scale' has shape"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
  fs::remove_all(bf16);
}

// python/gemmar_dump.py writes the scatter tensors in the same format (and scatter_dtype=fp8 with them).
TEST(HarnessVerify, PythonDumperWritesTheScatterTensors) {
  if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const fs::path dir = clean_dump(scatter_cfg(WireDtype::Bf16), "verify_scatter_py");
  add_scatter(dir, scatter_of(dir, reference::ScatterRecipe::Mori));
  const fs::path out = test::scratch_dir("verify_scatter_py_out");
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
                     partial=t["partial"], scatter=t["scatter"], scatter_scale=t["scatter_scale"], quant=meta["quant"],
                     mode=meta["mode"], gather_dtype=meta["gather_dtype"], gather_transport=meta["gather_transport"],
                     fp8_format="e4m3fn", pull_blocks=meta["pull_blocks"])
)PY";
  std::ofstream(out / "conv.py") << script;
  const std::string cmd =
      "python3 " + (out / "conv.py").string() + " " + py.string() + " " + dir.string() + " " + (out / "dump").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const VerifyResult v = verify_dump(files_of(out / "dump"), VerifyOptions{});
  EXPECT_TRUE(v.has_scatter);
  EXPECT_TRUE(v.verdict.pass) << codes_text(error_codes(v.verdict));
  EXPECT_EQ(v.scatter_recipe, reference::to_string(reference::ScatterRecipe::Mori));
  fs::remove_all(dir);
  fs::remove_all(out);
}
