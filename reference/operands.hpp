// Operand generation: per rank, counter based. Every value is a pure function of (seed, rank, tensor, row,
// col), so any subset of A's rows can be generated alone (the CPU samples rows; a GPU run generates all rows
// on the host with the same functions and uploads them: both see identical codes and scales).
//
// Kinds (reference/floors.hpp DataKind):
//   Normal: standard normal values, quantized per the quant's blocks with amax scales (quant.hpp).
//   Bench:  the benchmark's recipe: randn/8 cast straight to e4m3, scales rand*0.01+0.01 (mxfp8: e8m0 exponents
//           uniform in {120, 121, 122}, scales 2^-7, 2^-6, 2^-5, as its _ue8m0_bytes), seed 1234+rank. The
//           distribution matches the benchmark's; the values do not: torch's generator is not reproduced.
// Padding rows of A (row >= shape.m) are zero rows (codes 0).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "common/config.hpp"
#include "reference/floors.hpp"
#include "reference/quant.hpp"

namespace gemmar::reference {

enum class Tensor : uint32_t { A = 1, B = 2, ScaleA = 3, ScaleB = 4 };

// The counter-based generator: splitmix64 over a mix of the key; Box-Muller (double) for normals.
uint64_t counter_hash(uint64_t seed, int rank, Tensor, int64_t row, int64_t col);
// Element (row, col) is the cosine (col even) or sine (col odd) of Box-Muller draw (row, col / 2).
double normal_sample(uint64_t seed, int rank, Tensor, int64_t row, int64_t col);
void normal_pair(uint64_t seed, int rank, Tensor, int64_t row, int64_t pair, double& cos_part, double& sin_part);
double uniform_sample(uint64_t seed, int rank, Tensor, int64_t row, int64_t col);  // in [0, 1)

struct RankOperands {
  int rank = 0;
  std::vector<int64_t> a_rows;  // global (padded) row indices of A held, in order: a.rows == a_rows.size()
  QuantizedMatrix a;            // [a_rows.size(), K], scales in the quant's A layout over the held rows
  QuantizedMatrix b;            // [N, K], always complete
};

struct OperandSpec {
  Shape shape;
  Quant quant = Quant::Blockscale;
  DataKind data = DataKind::Normal;
  uint64_t seed = 1234;  // rank r uses stream (seed, r); Bench mirrors the benchmark's 1234 + rank this way
  Fp8Format fp8_format = Fp8Format::E4M3FN;
};

// All padded rows 0 .. padded_m-1.
std::vector<int64_t> all_rows(const Shape&, Quant);

// One rank's operands; `rows` = the A rows to generate (nullopt = all padded rows).
RankOperands make_rank_operands(const OperandSpec&, int rank, const std::optional<std::vector<int64_t>>& rows = {});

// Dequantized fp32 views (decode * scale), row-major.
std::vector<float> dequantized_a(const RankOperands&, Quant, Fp8Format);
std::vector<float> dequantized_b(const RankOperands&, Quant, Fp8Format);

}  // namespace gemmar::reference
