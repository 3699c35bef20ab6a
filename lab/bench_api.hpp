// The bench's measurements (lab/bench_api.cu), each on device 0 with its own buffers: the ceilings, where a copy
// runs, the data kernels against the copy ceiling, the fp8 conversions' selftest, and one GEMM subject (the op's
// dispatch, a family forced, a lab variant: lab/variants.hpp) alone, beside cuBLASLt or several at once.
// gemmar_gpu_bench (lab/bench_main.cpp) and the testbed (lab/testbed.hpp) call them. Plain C++.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "kernels/gemm_ar.hpp"
#include "lab/variants.hpp"

namespace gemmar::lab {

using kernels::OperandFn;
using kernels::RankOperands;

// Ceilings measured on the current device, for model/profiles (bytes counted read + written).
struct Ceilings {
  double hbm_copy_kernel_gbs = 0;  // our 16-byte vector copy kernel
  double memcpy_d2d_gbs = 0;       // the runtime's device-to-device memcpy (gpuMemcpyAsync)
  double peer_copy_gbs = 0;        // memcpyPeerAsync between devices 0 and 1 (0 when one device)
  double launch_floor_us = 0;      // an empty kernel, launch to completion, median
  int64_t bytes = 0;
  double l2_bytes = 0;  // the device's L2 (the copy buffers are many times larger)
};
Ceilings measure_ceilings(int64_t bytes, int iterations);

// Where a copy runs: alone, and issued on a second stream while a kernel holds every SM (as a persistent GEMM's grid
// does). A copy on the copy engines ends while the SMs are still held; one run as a kernel waits for them.
struct CopyOverlap {
  std::string path;     // "memcpy" (D2D gpuMemcpyAsync, the one-device put), "batch-prefer-overlap" (D2D
                        // cudaMemcpyBatchAsync with cudaMemcpyFlagPreferOverlapWithCompute, CUDA 12.8+), "d2h-pinned"
                        // (to pinned host memory: a copy engine's transfer, the reference)
  double alone_us = 0;  // the copy alone, median
  double hold_us = 0;   // the SM-holding kernel's span, launch to end
  double end_after_hold_start_us = 0;  // the copy's end, from the holding kernel's start (median of 5)
  bool beside_sms = false;             // it ended before the SMs were released
  bool copied = false;                 // dst equals src after each overlapped copy (first and last 4 KiB)
};
std::vector<CopyOverlap> measure_copy_overlap(int64_t bytes);

// The data kernels alone on large buffers (rows x n, many times the L2), against the copy ceiling measured
// in the same call: GB/s counting bytes read + written, median of `iterations`.
struct DataKernelRates {
  double copy_kernel_gbs = 0, memcpy_gbs = 0;
  double quantize_gbs = 0;                             // reads rows*n*2 (once), writes rows*n + 4*rows
  double dequantize_gbs = 0;                           // reads rows*n + 4*rows, writes rows*n*2 (default grid)
  double pull_gbs = 0;                                 // the same kernel with `pull_blocks` blocks (the pull's grid)
  double widen_ceiling_gbs = 0, pull_ceiling_gbs = 0;  // the widen's accesses without its arithmetic, both grids
  double copy_at_pull_grid_gbs = 0;  // a plain 16-byte copy on the pull's grid (pull_blocks blocks of 1024 threads)
  double load_at_pull_grid_gbs = 0, store_at_pull_grid_gbs = 0;  // loads alone, stores alone, on the same grid
  int pull_blocks = 0;
  int64_t bytes_quantize = 0, bytes_widen = 0;
};
// widen: the widen subject timed as the dequantize and the pull (lab/variants.hpp; WidenProduct is the op's).
DataKernelRates measure_data_kernels(int64_t rows, int64_t n, int iterations, int pull_blocks, Subject widen);

// Exhaustive check of the fp8 wire's conversions on the device against reference/numerics_inline.hpp: all
// 2^32 fp32 inputs of the quantize (at each inverse scale in `invs`) and every code of the dequantize at 65536
// scales. Returns the number of mismatches; *first = the first mismatching input's bits.
uint64_t fp8_conversion_selftest(const std::vector<float>& invs, uint64_t* first);
// One GEMM alone on one device (gemm-only, one rank), median time in us over `iterations`, plus `rows` of the
// bf16 partial it computed, read back ([i * n + col], for the check against the CPU fp32 GEMM).
struct GemmTiming {
  double us = 0;
  std::vector<float> partial_rows;
};
// quant (issue 25): the operands' scale layout; ptpc's vendor GEMM is cuBLASLt's outer-vector scaling, mxfp8 has
// none on Hopper (UsageError).
// M rounded up to the GEMM kernels' 128-row tile: the rows ours runs for an M off the tile (the padding rows zero).
int64_t gemm_padded_rows(int64_t m);
// m: any positive M; ours runs it padded to a multiple of 128 with zero rows (as the op pads), the
// vendor's at m itself. The operand generator must produce the padded M.
// gemm: the gemm subject ours runs (lab/variants.hpp; GemmProduct is the op's dispatch).
GemmTiming time_gemm_only(int64_t m, int64_t n, int64_t k, int iterations, const OperandFn&, GemmImpl impl,
                          const std::vector<int64_t>& rows, Quant quant, Subject gemm);
// Ours and the vendor's on the same operands, timed in alternation (one of each per iteration) so both run at the
// same clock and power state: a device capped by power slows whichever runs second in a block of its own.
// vendor_m: the rows the vendor runs (m, or the padded M where it refuses m).
// burst > 0: then `burst` launches back to back of each, twice (ours then the vendor's, the vendor's then ours, a
// 1 s pause before each burst): the sustained regime, the device at its power-capped clock with the GEMM's own
// operands warm in L2; *_burst_us is the mean per launch over both bursts (-1 when burst is 0).
struct GemmPairTiming {
  GemmTiming ours, vendor;
  double ours_burst_us = -1, vendor_burst_us = -1;
};
GemmPairTiming time_gemm_pair(int64_t m, int64_t vendor_m, int64_t n, int64_t k, int iterations, const OperandFn&,
                              const std::vector<int64_t>& rows, Quant quant, Subject gemm, int burst = 0);
// `world` such GEMMs (rank r's operands from gen(r, ...)), each on its own stream, launched together as the one-device
// backend launches the ranks' GEMMs: the median time from the fork to the last one's end (us).
double time_gemm_concurrent(int64_t m, int64_t n, int64_t k, int world, int iterations, const OperandFn&, GemmImpl impl,
                            Quant quant, Subject gemm);
// What the gemm subject runs for a quant at this shape (16-byte aligned buffers, as the bench's), in words.
std::string gemm_kernel_name(Subject gemm, Quant quant, int64_t m, int64_t n, int64_t k, int concurrent = 1);

}  // namespace gemmar::lab
