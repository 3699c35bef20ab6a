// The run's kernel variants: chosen once (kernel_options_from_env, by the harness's GPU backend and the bench) and
// passed down to the launchers, which never read the environment. The environment variables are the way to set
// them (docs/environment.md lists each with its default). Plain C++: no GPU headers.
#pragma once

namespace gemmar::kernels {

// The NVIDIA build's blockscale GEMM (gemm/gemm_wgmma.cuh, gemm/blockscale.cu; AMD always runs the MFMA kernel).
// Off compute capability 9.x every choice runs Mma.
// GEMMAR_GEMM_KERNEL=wgmma4|wgmma4l0|wgmma4mc|wgmma4mcm|wgmma4mc4|wgmma4n|wgmma|mma.
enum class GemmKernel {
  Wgmma4,  // "wgmma4": warpgroups 2 K blocks apart, K as kernels.hpp wgmma4_k (other K run Wgmma); the fastest; where
           // several GEMMs share the device, at K = 2048 from 12288 rows in clusters of two CTAs along M sharing B
           // (blockscale.cu share_b_along_m)
  Wgmma4InStep,      // "wgmma4l0": the same with the warpgroups in step (measurement: what the lag buys), K = 2048 only
  Wgmma4Cluster,     // "wgmma4mc": clusters of two CTAs along N sharing A by TMA multicast (measurement), K = 2048 only
  Wgmma4Cluster2x2,  // "wgmma4mc4": clusters of 2 x 2 CTAs, A multicast along N and B along M (measurement)
  Wgmma4ClusterM,    // "wgmma4mcm": clusters of two CTAs along M sharing B by TMA multicast at every M (measurement;
                     // blockscale and ptpc at K = 2048)
  Wgmma4BandMajor,   // "wgmma4n": wgmma4 with its tiles in band-major order, the order before the groups (measurement)
  Wgmma,             // "wgmma": any K
  Mma,               // "mma": the mma.sync kernel (the fallback, and the AMD path's twin)
};

// How the widen (the fp8 wire's dequantize and pull) reads and writes a row (convert/convert.cu).
// GEMMAR_WIDEN_KERNEL=int8|int8-st|bulk-store|int16|hw16|ceiling; all but int8 are measurements.
enum class WidenKernel {
  Int8,           // 8-byte code loads, the integer decode; a pull on fewer blocks than the device has SMs stores
                  // through the TMA (Hopper; bulk-store), anything else by 16-byte register stores (int8-st)
  Int8Registers,  // int8's 16-byte register stores at every grid (the default before the TMA stores)
  BulkStore,      // int8's stores through the TMA at every grid (Hopper; else int8-st)
  Int16,          // 16-byte code loads, the integer decode
  Hw16,           // 16-byte code loads, the conversion unit
  Ceiling,        // int8-st's accesses without the arithmetic: a memory ceiling, its output is not a dequantize
};

// Which passes of the device guard run (check/guard.cu). GEMMAR_GUARD_PARTS (a measurement knob, docs/guard.md):
// the passes named in it, any of "partial", "output", "wire", "gemm"; unset: all. A pass left out leaves its sums
// zero, so the guard then flags calls: only for timing each pass's share of the guard's phase.
struct GuardPasses {
  bool partial = true, output = true, wire = true, gemm = true;
};

// How fused-sdma's GEMM hands its slices to the copy-engine puts. GEMMAR_FUSED_SDMA_GEMM=persistent|chunks.
enum class FusedSdmaGemm {
  Persistent,  // one GEMM launch; each put waits on its slice's tile counter (stream memory operations), as the
               // tiles finish. Where the driver has no stream memory operations, Chunks runs.
  Chunks,      // W launches, one per destination slice, each put after its launch (the design before it)
};

// Which of a rank's two streams the device serves first when both have blocks waiting for an SM (measurement).
// GEMMAR_PUT_PRIORITY=equal|low. On one device the "peers" share its SMs, and a same-device put is a copy kernel,
// not a copy engine's transfer (`gemmar_gpu_bench copy-overlap`): one dispatched between a GEMM's waves takes SMs
// from the rest of the GEMM.
enum class PutPriority {
  Equal,  // both streams at the default priority
  Low,    // the compute streams at the device's greatest priority, the copy streams at its least: a put's blocks
          // take only SMs no GEMM block is waiting for. Not the default: what fused-sdma's GEMM phase gains the
          // drain loses (docs/results/h100-h200-1gpu-2026-12-06-puts, h100-1gpu-2026-12-06-release)
};

struct KernelOptions {
  GemmKernel gemm = GemmKernel::Wgmma4;
  WidenKernel widen = WidenKernel::Int8;
  FusedSdmaGemm fused_sdma_gemm = FusedSdmaGemm::Persistent;
  PutPriority put_priority = PutPriority::Equal;
  bool graph = true;  // capture the run once and replay it; GEMMAR_GPU_GRAPH=0 replays eagerly
  GuardPasses guard_passes;
};

// Reads GEMMAR_GEMM_KERNEL, GEMMAR_WIDEN_KERNEL, GEMMAR_FUSED_SDMA_GEMM, GEMMAR_PUT_PRIORITY, GEMMAR_GPU_GRAPH and
// GEMMAR_GUARD_PARTS; an unknown value warns on stderr and keeps the default (as the launchers did when they read the
// variables themselves).
KernelOptions kernel_options_from_env();
const char* widen_kernel_name(WidenKernel);
const char* put_priority_name(PutPriority);

}  // namespace gemmar::kernels
