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
// one table of common/faults.hpp, applied as kernels/pipeline/ and docs/kernels.md say; gemm_impl honoured by
// gemm-only and the split modes) and what the harness derives from them for the device.
// The run is captured once into a graph and replayed (warmup + iterations); `eager` (RunRequest, --eager) launches
// every replay eagerly instead. Buffers are poisoned once, before the first launch, so a replay that reads a buffer
// before this replay wrote it reads the previous replay's data (as a real replay would).
struct DeviceRun : RunRequest {
  // shape.m must already be padded (multiple of world * 128).
  int warmup = 2;
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
  int ranks_per_device = 1;               // where the ranks ran (DeviceRun::ranks_per_device, 0 resolved)
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

// The vendor GEMM (kernels/vendor_gemm.hpp): whether this build has it, which quants' scale layouts it runs
// (blockscale; issue 25: ptpc through cuBLASLt's outer-vector scaling; no MX GEMM on Hopper), and what it is
// for a quant, e.g. "cuBLASLt 130100 blockscale-128 (A 1x128, B 128x128)", or why there is none.
bool vendor_gemm_available();
bool vendor_gemm_supports(Quant);
std::string vendor_gemm_name(Quant = Quant::Blockscale);

}  // namespace gemmar::kernels
