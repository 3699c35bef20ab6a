#include "lab/variants.hpp"

#include <cstring>

#include "kernels/gemm/heuristics.hpp"

namespace gemmar::lab {

namespace {

using S = Subject;
using C = Concern;

// name, concern, product, same bits, the spelling before the lab, what
const std::vector<SubjectInfo> kSubjects = {
    {S::GemmProduct, "product", C::Gemm, true, true, "wgmma4",
     "launch_gemm's choice for one GEMM on the device (gemm/heuristics.hpp choose_gemm)"},
    {S::GemmProductShared, "product-shared", C::Gemm, true, true, "",
     "launch_gemm's choice where 8 GEMMs share the device: at K = 2048 from 12288 rows, clusters sharing B"},
    {S::GemmFamilyWgmma, "family-wgmma", C::Gemm, true, true, "wgmma",
     "gemm_wgmma_kernel forced: the op's sm_90a kernel for other K (mxfp8's too, which takes the tuned kernel at "
     "K = 2048)"},
    {S::GemmFamilyPortable, "family-portable", C::Gemm, true, false, "mma",
     "the portable kernels forced: mma.sync (Blockscale) or CUDA cores (PerRow, PerStep32), the op's off "
     "compute capability 9.x"},
    {S::GemmWgmma4InStep, "wgmma4-in-step", C::Gemm, false, true, "wgmma4l0",
     "gemm_wgmma4_kernel with its consumer warpgroups in step (what the 2-block lag buys), K = 2048"},
    {S::GemmWgmma4ShareA, "wgmma4-share-a", C::Gemm, false, true, "wgmma4mc",
     "gemm_wgmma4_kernel in clusters of two CTAs along N sharing A by TMA multicast, K = 2048"},
    {S::GemmWgmma4ShareAB, "wgmma4-share-ab", C::Gemm, false, true, "wgmma4mc4",
     "gemm_wgmma4_kernel in clusters of 2 x 2 CTAs sharing A along N and B along M, K = 2048"},
    {S::GemmWgmma4ShareB, "wgmma4-share-b", C::Gemm, false, true, "wgmma4mcm",
     "gemm_wgmma4_kernel in clusters of two CTAs along M sharing B, at every M and for one GEMM alone, K = 2048"},
    {S::GemmWgmma4BandMajor, "wgmma4-band-major", C::Gemm, false, true, "wgmma4n",
     "gemm_wgmma4_kernel with its tiles in band-major order (groups of one band)"},
    {S::GemmWgmma4MxLag1, "wgmma4-mx-lag1", C::Gemm, false, true, "none (new with issue 45)",
     "the op's mxfp8 kernel at K = 2048 (gemm_wgmma4_kernel<16, PerStep32>) with its consumer warpgroups 1 K block "
     "apart instead of 2 (half of its main loop's 2-block "
     "iteration, so one warpgroup's drain at the iteration's end falls inside the other's), K = 2048"},
    {S::GemmWgmma4MxProducer64, "wgmma4-mx-producer-64", C::Gemm, false, true, "none (new with issue 45)",
     "the op's mxfp8 kernel at K = 2048 with its producer warpgroup at 64 registers and its consumers at 216 (ptxas: "
     "no spills, where the product's 56 spill 236 bytes)"},
    {S::WidenProduct, "widen-product", C::Widen, true, true, "int8",
     "launch_widen's choice: TMA stores for a pull on fewer blocks than SMs (sm_90), else register stores"},
    {S::WidenRegisters, "widen-registers", C::Widen, false, true, "int8-st",
     "8-byte code loads, the integer decode, 16-byte register stores at every grid"},
    {S::WidenBulkStore, "widen-bulk-store", C::Widen, false, true, "bulk-store",
     "8-byte code loads, the integer decode, stores through the TMA at every grid (sm_90)"},
    {S::WidenInt16, "widen-int16", C::Widen, false, true, "int16", "16-byte code loads, the integer decode"},
    {S::WidenHw16, "widen-hw16", C::Widen, false, true, "hw16", "16-byte code loads, the conversion unit"},
    {S::WidenCeiling, "widen-ceiling", C::Widen, false, false, "ceiling",
     "the register walk's loads and stores without the decode: a memory ceiling, its output is the codes "
     "zero-extended"},
    {S::PipelineProduct, "pipeline-product", C::Pipeline, true, true, "", "run_gemm_ar as the op runs it"},
    {S::PipelinePutLow, "put-priority-low", C::Pipeline, false, true, "GEMMAR_PUT_PRIORITY=low",
     "every rank's compute stream at the device's greatest priority, its copy stream at the least"},
    {S::PipelinePerSlice, "fused-sdma-per-slice", C::Pipeline, true, true, "GEMMAR_FUSED_SDMA_GEMM=chunks",
     "fused-sdma's GEMM launched per destination slice, each put after its launch: the op's fallback where the "
     "driver has no stream memory operations, forced"},
    {S::PipelinePortableGemm, "portable-gemm", C::Pipeline, true, false, "GEMMAR_GEMM_KERNEL=mma",
     "the op end to end with its portable GEMM kernels forced (mma.sync, CUDA cores): its path off compute "
     "capability 9.x, the AMD path's twin"},
    {S::PipelineGuardPartial, "guard-partial", C::Pipeline, false, true, "GEMMAR_GUARD_PARTS=partial",
     "--guard with only the partial's sums (the other passes' sums zero: the phase's share, not a verdict)"},
    {S::PipelineGuardOutput, "guard-output", C::Pipeline, false, true, "GEMMAR_GUARD_PARTS=output",
     "--guard with only the output's sums"},
    {S::PipelineGuardWire, "guard-wire", C::Pipeline, false, true, "GEMMAR_GUARD_PARTS=wire",
     "--guard with only the fp8 wire's sums"},
    {S::PipelineGuardGemm, "guard-gemm", C::Pipeline, false, true, "GEMMAR_GUARD_PARTS=gemm",
     "--guard with only the GEMM check"},
    {S::GuardProduct, "guard-product", C::Guard, true, true, "",
     "libgemmar_guard.so's caller_sums_kernel and caller_judge_kernel as gg_sums and gg_judge launch them"},
    {S::GuardPredictSplitK, "guard-predict-split-k", C::Guard, false, false, "none (new with issue 49)",
     "one listed row per prediction block, its K walked by the block's 128 threads (two steps at K = 2048), the "
     "warps' sums added in warp order: another summation order, checked against the CPU reference"},
    {S::GuardJudgeTree, "guard-judge-tree", C::Guard, false, false, "none (the product's judge until 2026-12-07)",
     "the judge's ranks read in a loop with the world from the layout, its threads' cells merged by a tree of 8 "
     "rounds over shared memory: another merge order (zsum), checked against the CPU reference"},
    {S::GuardViewRows8, "guard-view-rows-8", C::Guard, false, true, "none (new with issue 49)",
     "view blocks of 8 listed rows, their loads in one round trip (4 times the blocks), in place of 32 in 4 rounds"},
};

}  // namespace

const std::vector<SubjectInfo>& subjects() { return kSubjects; }

const SubjectInfo& subject_info(Subject s) { return kSubjects[size_t(s)]; }

bool find_subject(const char* name, Subject* out) {
  for (const SubjectInfo& i : kSubjects)
    if (std::strcmp(i.name, name) == 0) {
      *out = i.id;
      return true;
    }
  return false;
}

const char* to_string(Concern c) {
  switch (c) {
    case Concern::Gemm:
      return "gemm";
    case Concern::Widen:
      return "widen";
    case Concern::Pipeline:
      return "pipeline";
    case Concern::Guard:
      return "guard";
  }
  return "?";
}

bool gemm_applies(Subject s, Quant q, int64_t m, int64_t n, int64_t k) {
  using kernels::dev::GemmScales;
  const GemmScales scales = kernels::dev::gemm_scales(q);
  const bool tiled = scales == GemmScales::Blockscale || scales == GemmScales::PerRow;  // gemm_wgmma4_kernel's
  const bool k2048 = k == 16 * 128, even_n = (n / 128) % 2 == 0, pairs_m = m % 256 == 0;
  switch (s) {
    case S::GemmProduct:
    case S::GemmProductShared:
    case S::GemmFamilyPortable:
      return scales != GemmScales::Unsupported;
    case S::GemmFamilyWgmma:
      return tiled || (scales == GemmScales::PerStep32 && scale_block(q, true).rows == 32);
    case S::GemmWgmma4InStep:
      return scales == GemmScales::Blockscale && k2048;
    case S::GemmWgmma4ShareA:
      return scales == GemmScales::Blockscale && k2048 && even_n;
    case S::GemmWgmma4ShareAB:
      return scales == GemmScales::Blockscale && k2048 && even_n && pairs_m;
    case S::GemmWgmma4ShareB:
      return tiled && k2048 && pairs_m;
    case S::GemmWgmma4BandMajor:
      return tiled && kernels::dev::wgmma4_k(k);
    case S::GemmWgmma4MxLag1:
    case S::GemmWgmma4MxProducer64:
      return scales == GemmScales::PerStep32 && scale_block(q, true).rows == 32 && k2048;
    default:
      break;
  }
  return false;
}

}  // namespace gemmar::lab
