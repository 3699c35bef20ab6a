#include "lab/testbed_plan.hpp"

#include "kernels/gemm/heuristics.hpp"

namespace gemmar::lab {

std::vector<GemmCase> gemm_cases() {
  std::vector<GemmCase> out;
  for (const QuantTraits& q : kQuantTable)
    for (const int kb : kernels::dev::kWgmma4KBlocks)
      for (const int64_t m : kTestbedEdgeM) out.push_back({q.quant, m, kTestbedN, int64_t(kb) * 128});
  return out;
}

std::vector<WidenCase> widen_cases() {
  // 8192 rows of mori's N: 58.7 MB of codes, 117 MB of bf16, several times the L2 (50 MB on the H100).
  return {{8192, 7168, 0}, {8192, 7168, 64}, {8192, 7168, -1}};
}

std::vector<PipelineCase> pipeline_cases() {
  const Shape shape{4096, 7168, 2048, 8};
  auto config = [](Mode mode, WireDtype wire, Transport transport, Quant quant) {
    Config c;
    c.mode = mode;
    c.gather_dtype = wire;
    c.gather_transport = transport;
    c.quant = quant;
    return c;
  };
  auto fp8_scatter = [](Config c) {
    c.scatter_dtype = WireDtype::Fp8;
    return c;
  };
  auto relaxed = [](Config c, int chunk_bands) {
    c.chunk_bands = chunk_bands;
    c.relaxed_rows = true;
    return c;
  };
  using S = Subject;
  return {
      // where the priorities were measured (ptpc 4096, fused-sdma bf16)
      {shape, config(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma, Quant::Ptpc), false, {S::PipelinePutLow}},
      {shape,
       config(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma, Quant::Blockscale),
       false,
       {S::PipelinePerSlice, S::PipelinePutLow, S::PipelinePortableGemm}},
      {shape,
       config(Mode::FusedSdma, WireDtype::Fp8, Transport::Sdma, Quant::Blockscale),
       true,
       {S::PipelineGuardPartial, S::PipelineGuardOutput, S::PipelineGuardWire, S::PipelineGuardGemm}},
      // mori's fp8 scatter (issue 45): its quantize-before-put on both put paths, with either gather, at mori's
      // two targets (W = 8 blockscale N = 7168; W = 4 mxfp8 N = 5120)
      {shape,
       fp8_scatter(config(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma, Quant::Blockscale)),
       false,
       {S::PipelinePerSlice}},
      {shape,
       fp8_scatter(config(Mode::FusedSdma, WireDtype::Fp8, Transport::Lsa, Quant::Blockscale)),
       false,
       {S::PipelinePerSlice}},
      {Shape{4096, 5120, 2048, 4},
       fp8_scatter(config(Mode::FusedSdma, WireDtype::Fp8, Transport::Sdma, Quant::Mxfp8)),
       false,
       {S::PipelinePerSlice}},
      // mori's relaxed rows (issue 45; kernels_fused.py @f3bff0ae): M a multiple of W only, a 128-row tile
      // straddling two owners and two chunks. mori's W = 4 mxfp8 wo_b plans (4224 and 8256, chunk_bands 1: S = 1056
      // and 2064, straddles at every owner boundary) on the bf16 wire, the fp8 scatter and the fp8 gather, and a
      // W = 8 blockscale one (M = 4104, S = 513, puts of 2 bands: short tails), each on both put paths.
      {Shape{4224, 5120, 2048, 4},
       relaxed(config(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma, Quant::Mxfp8), 1),
       false,
       {S::PipelinePerSlice}},
      {Shape{8256, 5120, 2048, 4},
       relaxed(fp8_scatter(config(Mode::FusedSdma, WireDtype::Bf16, Transport::Sdma, Quant::Mxfp8)), 1),
       false,
       {S::PipelinePerSlice}},
      {Shape{4224, 5120, 2048, 4},
       relaxed(fp8_scatter(config(Mode::FusedSdma, WireDtype::Fp8, Transport::Lsa, Quant::Mxfp8)), 1),
       false,
       {S::PipelinePerSlice}},
      {Shape{4104, 7168, 2048, 8},
       relaxed(config(Mode::FusedSdma, WireDtype::Fp8, Transport::Sdma, Quant::Blockscale), 2),
       false,
       {S::PipelinePerSlice}},
  };
}

std::vector<GuardCase> guard_cases() {
  // V4-Pro (blockscale, W = 8, 7168 x 2048; mori's flat [K/128, M] scales) at the two M of docs/guard.md's cost goal,
  // on the bf16 and the fp8 gather; V4-Flash (mxfp8, W = 4, 5120 x 2048; mori's packed e8m0 scales).
  return {{"v4-pro bf16", 8, 4096, 7168, 2048, 0, 128, false},
          {"v4-pro bf16", 8, 16384, 7168, 2048, 0, 128, false},
          {"v4-pro fp8", 8, 16384, 7168, 2048, 0, 128, true},
          {"v4-flash bf16", 4, 4096, 5120, 2048, 3, 32, false},
          {"v4-flash fp8", 4, 16384, 5120, 2048, 3, 32, true}};
}

std::vector<Subject> subjects_of(Concern c) {
  std::vector<Subject> out;
  for (const SubjectInfo& i : subjects())
    if (i.concern == c) out.push_back(i.id);
  return out;
}

}  // namespace gemmar::lab
