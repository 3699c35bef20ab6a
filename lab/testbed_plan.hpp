// The testbed's cases (plain C++: tests/kernels checks on the CPU that every lab variant has a case it runs, and
// that the GEMM cases cover every quant x K x edge M). lab/testbed.hpp runs them.
#pragma once
#include <cstdint>
#include <vector>

#include "common/config.hpp"
#include "lab/variants.hpp"

namespace gemmar::lab {

// One GEMM problem: every gemm subject that applies runs it (gemm_applies on the padded M).
struct GemmCase {
  Quant quant;
  int64_t m, n, k;  // m as asked: ours runs it padded to the 128-row tile (as the op pads), cuBLASLt at m
};
// The edge M: one tile, an odd M (padded to 1024 for ours, 1000 for cuBLASLt), and the 12288 rows from which the
// K = 2048 GEMM shares B where GEMMs share the device (gemm/heuristics.hpp kShareBFromRows).
inline constexpr int64_t kTestbedEdgeM[] = {128, 1000, 12288};
inline constexpr int64_t kTestbedN = 2048;  // even N tiles, so the share-A clusters run too
// Every quant of common/modes.hpp x every K of kWgmma4KBlocks x kTestbedEdgeM.
std::vector<GemmCase> gemm_cases();

// One widen problem: `rows` rows of n codes, on the local dequantize's grid (blocks 0) or a pull's (blocks > 0;
// -1: as many blocks as the device has SMs, the grid from which the pull stores from registers).
struct WidenCase {
  int64_t rows, n;
  int blocks;
};
std::vector<WidenCase> widen_cases();

// One pipeline config, run as the op runs it (PipelineProduct) and as each listed variant, alternately.
struct PipelineCase {
  Shape shape;  // m as the config's row plan pads it: a multiple of world * block_m, or (relaxed rows) of world
  Config config;
  bool guard = false;
  std::vector<Subject> variants;
};
std::vector<PipelineCase> pipeline_cases();

// One caller-guard problem (libgemmar_guard.so): mori's targets at the guard's default sample (one row in 32), the
// A scales as the caller holds them (gemmar_guard.h gg_a_scale_kind), the gather's wire. Every guard subject runs it.
struct GuardCase {
  const char* name;
  int world;
  int64_t m, n, k;
  int a_scale_kind, a_scale_k;  // gg_a_scale_kind and the K columns per scale
  bool fp8_gather;              // the owner's rows re-quantized by mori's recipe (the wire blocks run)
};
std::vector<GuardCase> guard_cases();

// The subjects of a concern, in table order.
std::vector<Subject> subjects_of(Concern);

}  // namespace gemmar::lab
