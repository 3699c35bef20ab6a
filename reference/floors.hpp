// Predicted relL2 floors of each wire, derived by emulating the pipeline's every rounding point on
// sampled rows (never stored constants). Used by `gemmar reference floors` and by the verdict engine.
#pragma once
#include <cstdint>
#include <filesystem>

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
  // The reduce-scatter leg's wire (`gemmar reference floors --scatter-dtype`, Config::scatter_dtype): bf16, or
  // mori's fp8 scatter experiment (the floors of each gather wire are then those of fp8 scatter x that gather).
  WireDtype scatter_dtype = WireDtype::Bf16;
};

struct FloorResult {
  double bf16 = 0, fp8 = 0;                // predicted relL2 against the fp32 reference
  double bf16_stderr = 0, fp8_stderr = 0;  // statistical uncertainty from the row sampling
  int64_t rows_evaluated = 0;
  double seconds = 0;
};

FloorResult predict_floors(const FloorRequest&);

// Cached by (shape, quant, data, fp8 format): the verdict engine asks once per distinct config. In memory for
// the process, and on disk across processes in GEMMAR_CACHE_DIR (default $XDG_CACHE_HOME/gemmar, else
// ~/.cache/gemmar; "off" or "0" disables), keyed by a hash of the reference's sources and build flags.
const FloorResult& cached_floors(const Shape&, Quant, DataKind = DataKind::Normal, Fp8Format = Fp8Format::E4M3FN);
// The file cached_floors reads and writes for that key (empty when the disk cache is off).
std::filesystem::path floors_cache_path(const Shape&, Quant, DataKind = DataKind::Normal,
                                        Fp8Format = Fp8Format::E4M3FN);

}  // namespace gemmar::reference
