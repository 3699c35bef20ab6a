// Host API of the GPU kernels library (gemmar_kernels): one gemm_ar run, every mode and wire, W ranks either
// one per device (peer access) or several on one device (separate allocations per rank). Plain C++: callers
// (validate/harness/run_gpu.cpp, the bench) need no GPU headers. The numerics come from reference/numerics_inline.hpp,
// so the collective the GPU runs is the one the CPU emulation re-computes, bit for bit.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/faults.hpp"
#include "common/run_request.hpp"
#include "kernels/kernel_options.hpp"
#include "reference/guard.hpp"
#include "reference/operands.hpp"

namespace gemmar::kernels {

// The operands of one rank, produced on the host by reference/operands.hpp's generator and uploaded as they
// are: A [m, k] and B [n, k] as e4m3fn codes, A's scales [k/128, m] (column-major per docs/spec.md 1.2: index
// kb*m + row), B's [n/128, k/128] row-major; m is the padded M (padding rows zero).
using RankOperands = reference::RankOperands;
// Fills one rank's operands; called once per rank so only one rank's host copy is alive at a time.
using OperandFn = std::function<void(int rank, RankOperands&)>;

// One run on the device: the run's parameters as the harness got them (common/run_request.hpp; faults from the
// one table of common/faults.hpp, applied as kernels/gemm_ar.cu and docs/kernels.md say; gemm_impl honoured by
// gemm-only and the split modes) and what the harness derives from them for the device.
// The run is captured once into a graph and replayed (warmup + iterations); kernels.graph = false (GEMMAR_GPU_GRAPH=0)
// runs eagerly instead. Buffers are poisoned once, before the first launch, so a replay that reads a buffer before this
// replay wrote it reads the previous replay's data (as a real replay would).
struct DeviceRun : RunRequest {
  // shape.m must already be padded (multiple of world * 128).
  int warmup = 2;
  KernelOptions kernels;      // the variants the launchers run, chosen once by the caller (kernel_options_from_env)
  std::vector<int64_t> rows;  // output rows to read back (every rank)
  // iteration_scales[it][rank]: iteration it's factor on that rank's A scales (a power of two; empty = 1);
  // warm-up replays run on iteration 0's. Applied between replays, outside the graph.
  std::vector<std::vector<float>> iteration_scales;
  // straggle_schedule_us[it][rank * 3 + k]: delays (us) spun on rank's compute stream before its GEMM (k = 0), its
  // reduce (k = 1) and its gather (k = 2) in iteration it; read from device memory by the captured spin kernels
  // and rewritten before every replay (a value passed as a kernel argument would be frozen into the capture).
  std::vector<std::vector<float>> straggle_schedule_us;
  // `guard` (RunRequest): the per-call guard's kernels (kernels/check/guard.hpp) run at the end of every launch, inside
  // the graph, and after every timed replay (iteration >= 0) every rank's sums go to this sink.
  std::function<void(int iteration, reference::GuardCall&& call)> guard_sink;
};

struct RunOutput {
  std::vector<std::vector<uint16_t>> outputs;  // [rank][i * n + col] = bf16 bits of row rows[i]
  std::vector<std::vector<float>> partials;    // [rank][i * n + col] = that rank's GEMM partial (bf16-rounded)
  // Median over iterations, max over ranks per phase. The faults' setup phases ("prefill", "no-release") are
  // reported here but subtracted from total_us and per_rank_time_us.
  std::map<std::string, double> phases_us;
  std::vector<double> per_rank_time_us;   // median per rank, start of the run to the rank's last event
  double total_us = 0;                    // median, start to end of the whole run
  int64_t unwritten_outputs = 0;          // poison (0xFFFF) elements left in any rank's output
  std::string device;                     // e.g. "NVIDIA H200 (8 ranks on 1 device)"
  int pull_blocks = 0;                    // the pull grid actually launched (fp8/lsa), else 0
  GemmImpl gemm_impl = GemmImpl::Gemmar;  // the GEMM that actually ran
  // Each checked iteration's outputs (same layout as `outputs`, which is the last iteration's read
  // back after the run), and how the replays ran ("graph" | "eager: ...why").
  std::vector<int> iteration_index;
  std::vector<std::vector<std::vector<uint16_t>>> iteration_outputs;
  std::string launch = "graph";
  // Per checked iteration with a collective: every element of every rank against the collective recomputed on
  // the device from its own partials (kernels/check/output_compare.hpp).
  std::vector<FullCompare> full_compares;
};

// Number of usable GPUs (0 when the runtime finds none or has no driver).
int device_count();
std::string device_name(int device);

// Runs the plan end to end: upload, poison, `warmup` + `iterations` full runs (each poisoned first), timing,
// read back. Throws gemmar::EnvironmentError on any runtime failure, UsageError on an unsupported config.
RunOutput run_gemm_ar(const DeviceRun&, const OperandFn&);

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
DataKernelRates measure_data_kernels(int64_t rows, int64_t n, int iterations, int pull_blocks, WidenKernel widen);

// Exhaustive check of the fp8 wire's conversions on the device against reference/numerics_inline.hpp: all
// 2^32 fp32 inputs of the quantize (at each inverse scale in `invs`) and every code of the dequantize at 65536
// scales. Returns the number of mismatches; *first = the first mismatching input's bits.
uint64_t fp8_conversion_selftest(const std::vector<float>& invs, uint64_t* first);
std::string gemm_kernel_name(GemmKernel variant, int64_t k);
// The GEMM that runs a ptpc or mxfp8 problem of this shape on the current device (gemm/quant.hpp).
std::string gemm_quant_kernel_name(Quant quant, int64_t n, int64_t k, GemmKernel variant);
// The vendor GEMM (kernels/vendor_gemm.hpp): whether this build has it, which quants' scale layouts it runs
// (blockscale; issue 25: ptpc through cuBLASLt's outer-vector scaling; no MX GEMM on Hopper), and what it is
// for a quant, e.g. "cuBLASLt 130100 blockscale-128 (A 1x128, B 128x128)", or why there is none.
bool vendor_gemm_available();
bool vendor_gemm_supports(Quant);
std::string vendor_gemm_name(Quant = Quant::Blockscale);

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
GemmTiming time_gemm_only(int64_t m, int64_t n, int64_t k, int iterations, const OperandFn&, GemmImpl impl,
                          const std::vector<int64_t>& rows, Quant quant, GemmKernel variant);
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
                              const std::vector<int64_t>& rows, Quant quant, GemmKernel variant, int burst = 0);
// `world` such GEMMs (rank r's operands from gen(r, ...)), each on its own stream, launched together as the one-device
// backend launches the ranks' GEMMs: the median time from the fork to the last one's end (us).
double time_gemm_concurrent(int64_t m, int64_t n, int64_t k, int world, int iterations, const OperandFn&, GemmImpl impl,
                            Quant quant, GemmKernel variant);

}  // namespace gemmar::kernels
