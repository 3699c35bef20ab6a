// Predicted relL2 floors of each wire, derived by emulating the pipeline's every rounding point on
// sampled rows (never stored constants). Used by `gemmar reference floors` and by the verdict engine.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>

#include "common/config.hpp"

namespace gemmar::reference {

enum class DataKind { Normal, Bench };

struct FloorRequest {
  Shape shape;
  Quant quant = Quant::Blockscale;
  DataKind data = DataKind::Normal;
  int64_t rows = 256;  // sampled output rows, stratified so every rank's slice is covered
  uint64_t seed = 1234;
  Fp8Format fp8_format = Fp8Format::E4M3FN;
};

// One scatter x gather pair's floor.
struct PairFloor {
  double value = 0, stderr_ = 0;
};

struct FloorResult {
  // The gather wire's floors with the bf16 scatter (the default): predicted relL2 against the fp32 reference and
  // the statistical uncertainty from the row sampling.
  double bf16 = 0, fp8 = 0;
  double bf16_stderr = 0, fp8_stderr = 0;
  // With the fp8 scatter (mori's --scatter-dtype fp8, fused-sdma): the bf16 and the fp8 gather.
  PairFloor fp8_scatter_bf16, fp8_scatter_fp8;
  int64_t rows_evaluated = 0;
  double seconds = 0;
  // Every pair by its legs.
  PairFloor pair(WireDtype scatter, WireDtype gather) const;
};

FloorResult predict_floors(const FloorRequest&);

// mori's published relL2 for a scatter x gather pair where it published one: W=8 blockscale N=7168 K=2048 (DeepSeek
// V4-Pro) and W=4 mxfp8 N=5120 K=2048 (V4-Flash), bench data, rank 0's view, M = 4096, 8192 and 16384 alike.
struct PublishedFloor {
  double value = 0;
  const char* source = "";  // the README table it was read from
};
std::optional<PublishedFloor> published_floor(const Shape&, Quant, WireDtype scatter, WireDtype gather);

// Cached by (shape, quant, data, fp8 format): the verdict engine asks once per distinct config. In memory for
// the process, and on disk across processes in GEMMAR_CACHE_DIR (default $XDG_CACHE_HOME/gemmar, else
// ~/.cache/gemmar; "off" or "0" disables), keyed by a hash of the reference's sources and build flags.
const FloorResult& cached_floors(const Shape&, Quant, DataKind = DataKind::Normal, Fp8Format = Fp8Format::E4M3FN);
// The file cached_floors reads and writes for that key (empty when the disk cache is off).
std::filesystem::path floors_cache_path(const Shape&, Quant, DataKind = DataKind::Normal,
                                        Fp8Format = Fp8Format::E4M3FN);

}  // namespace gemmar::reference
