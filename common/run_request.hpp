// What one run of one config is asked to do: the parameters `gemmar run` and `gemmar validate` read once from the
// command line (validate/cli/run_options.cpp), that the harness hands to a backend (validate/harness/run_driver.hpp)
// and that the GPU kernels take as the base of their device run (kernels/gemm_ar.hpp). One definition, so a new
// run option is added in one place and reaches every backend.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/faults.hpp"

namespace gemmar {

struct RunRequest {
  Shape shape;
  Config config;
  Faults inject;
  uint64_t seed = 1234;
  int ranks_per_device = 0;  // GPU: 0 = one rank per device when W devices exist, else all on one
  int64_t check_rows = 256;  // sampled output rows checked against the reference (stratified per slice)
  int iterations = 11;       // iterations (GPU: graph replays timed, median); each on changed inputs
  int check_every = 1;       // every N-th iteration's output is read back and checked (0, N, 2N, ...)
  double straggle_us = 0;    // > 0: random per-rank delays in [0, straggle_us) before each launch / each phase
  std::string profile;       // the model profile to judge against ("" = backend's default)
  GemmImpl gemm_impl = GemmImpl::Gemmar;  // GPU: honoured by gemm-only and the split modes (fused keep ours)
  // `gemmar run --dump DIR`: write the run's tensors for `gemmar verify` (validate/harness/verify.hpp). "" = none.
  std::string dump_dir;
  // The self-test's inputs instead of the seed's operands: every rank's partial is exactly rank+1.
  bool selftest_fill = false;
  // `--guard` (docs/guard.md): every checked call is also judged by the per-call guard's checksums alone.
  bool guard = false;
  // `--guard-sample G`: the guard reads one row in every G consecutive rows, drawn anew per call
  // (reference/guard_sample.hpp); 1 = every row.
  int guard_sample = 32;
  // `--eager` (GPU): every replay is launched eagerly instead of replaying the run captured once as a graph.
  bool eager = false;
};

// The GPU backend's device-side full compare of one checked iteration (kernels/check/output_compare.hpp): every
// element of every rank's output against the collective recomputed on the device from the device's own
// partials. Per rank: wrong elements, NaN/inf elements, the first wrong one's flat index row * n + col (-1: none).
struct FullCompare {
  int iteration = 0;
  int64_t elements = 0;  // compared, all ranks
  int64_t bytes = 0;     // read from device memory (partials once per pass, every output once)
  double us = 0;         // the compare kernel's time
  std::vector<int64_t> wrong, nonfinite, first;
};

}  // namespace gemmar
