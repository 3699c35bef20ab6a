// The shape and configuration of one gemm_ar run, spelled as in the real benchmark (docs/spec.md 1.1, section 4),
// and the derived quantities every part shares: padding, slice rows, bytes per phase.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/modes.hpp"

namespace gemmar {

enum class WireDtype { Bf16, Fp8 };
enum class Transport { Sdma, Lsa };
// e4m3fn (OCP: gfx950, NVIDIA) or e4m3fnuz (gfx942). Same bits read 2x apart.
enum class Fp8Format { E4M3FN, E4M3FNUZ };
// Which GEMM computes the partials on the GPU, as the benchmark's --gemm-impl: ours (the fused modes always use
// it: their epilogue pushes tiles), or the vendor's blockscale GEMM (cuBLASLt) for gemm-only and the split modes.
enum class GemmImpl { Gemmar, Cublaslt };
// How the reduce publishes a band to the copy engine under fuse_reduce_push (mori python/mori/ops/gemm_ar/README.md,
// "Firing the gather's puts from inside the reduce"): cache-bypassing stores (the wait is the release), or cached
// stores and a system-scope release per block per band.
enum class Publish { Writethrough, Fence };

struct Shape {
  int64_t m = 16384;  // rows of the output, before padding
  int64_t n = 7168;
  int64_t k = 2048;  // per rank
  int world = 8;
};

struct Config {
  Mode mode = Mode::FusedSdma;
  Quant quant = Quant::Blockscale;
  WireDtype gather_dtype = WireDtype::Bf16;
  Transport gather_transport = Transport::Sdma;
  int pull_blocks = 64;        // MORI_GEMM_AR_PULL_BLOCKS
  bool fuse_quantize = false;  // fold the fp8 narrowing into the reduce
  // The reduce fires the bf16 gather's copy-engine puts itself, band by band (mori's fuse_reduce_push): per band
  // a barrier of the reducing blocks, a counter atomic and the elected block's puts, so the gather of band b
  // overlaps the reduce of the later bands. Only on the bf16 gather over sdma.
  bool fuse_reduce_push = false;
  int gather_bands = 8;  // bands of the owned slice (mori's default)
  Publish publish = Publish::Writethrough;
  // fused-sdma: pushes per destination of mori's epilogue (bench_gemm_ar.py --chunks, RESULT_JSON "chunks"): each
  // destination's slice leaves in this many puts, the first when 1/chunks of the GEMM is done. 0: mori's default
  // (effective_chunks). Only the timing model reads it; gemmar's own kernels have their own put schedule.
  int chunks = 0;
};

std::string to_string(Mode);
std::string to_string(Quant);
std::string to_string(WireDtype);
std::string to_string(Transport);
std::string to_string(Fp8Format);
std::string to_string(GemmImpl);
std::string to_string(Publish);
// Parsers throw UsageError naming `option` and listing the accepted spellings.
Mode parse_mode(const std::string& s, const std::string& option = "--mode");
Quant parse_quant(const std::string& s, const std::string& option = "--quant");
WireDtype parse_wire(const std::string& s, const std::string& option = "--gather-dtype");
Transport parse_transport(const std::string& s, const std::string& option = "--gather-transport");
Fp8Format parse_fp8_format(const std::string& s, const std::string& option = "--fp8-format");
GemmImpl parse_gemm_impl(const std::string& s, const std::string& option = "--gemm-impl");
Publish parse_publish(const std::string& s, const std::string& option = "--publish");
const std::vector<Mode>& all_modes();
// "gemm-only|split-sdma|..." and "blockscale|ptpc|mxfp8", from the tables (for --help).
const char* mode_spellings();
const char* quant_spellings();

// The mode and quant rows are in common/modes.hpp: a new mode is a row there plus one branch per leg in
// reference/emulation.cpp, model/model.cpp and kernels/pipeline/plan.cu.
const ModeTraits& traits(Mode);

bool is_fused(Mode);
bool has_collective(Mode);  // false only for gemm-only
// split-lsa is a bf16-only 2-stage CU all-reduce: its gather "wire" is always bf16 over CUs.
bool uses_fp8_wire(const Config&);
// The config runs the pull kernel (an fp8 gather over CU loads, lsa): the only one the pull grid affects.
bool has_pull(const Config&);
// The phases a config runs, in order (docs/spec.md 1.1): gemm, then scatter (split) or drain (fused), reduce,
// quantize (fp8), gather, dequantize (fp8/sdma) or pull (fp8/lsa); split-lsa: gemm, allreduce.
std::vector<std::string> phase_names(const Config&);
// Every phase name in pipeline order (the order reports and tables use).
const std::vector<std::string>& all_phase_names();
// The gather leg as it really runs: split-lsa forces bf16/lsa, gemm-only has none.
Config effective_config(const Config&);

// BLOCK_M (quant_traits(q).block_m).
int block_m(Quant);
// M padded up to a multiple of world * BLOCK_M; padding rows are zero rows.
int64_t padded_m(const Shape&, Quant);
// Rows owned per rank after padding: S = padded_m / world.
int64_t slice_rows(const Shape&, Quant);

// fused-sdma's pushes per destination as mori resolves them (bench_gemm_ar.py @fc892894 run()): the asked chunks, or
// DEFAULT_CHUNKS = 8 when 0, halved until it divides the M-tiles per destination, max(1, ceil(M / BLOCK_M) / W).
int effective_chunks(const Shape&, const Config&);

// Throws UsageError (exit 2) naming the option for any shape/config the op cannot run:
// K not a multiple of 128, N not a multiple of 1024 on an fp8 wire, world not dividing 512, absurd sizes,
// and, when `require_padded` is set, M not already a multiple of world * BLOCK_M.
void validate_shape_config(const Shape&, const Config&, bool require_padded = false);

// Canonical one-line label, e.g. "fused-sdma/blockscale/fp8/lsa".
std::string config_label(const Config&);

}  // namespace gemmar
