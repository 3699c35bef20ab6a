// The one portability layer between HIP (AMD, ROCm) and CUDA (NVIDIA): every kernel source in kernels/ is
// written once against the gpu* names below and compiled by hipcc/clang (-x hip) or by nvcc (-x cu).
// Only what the kernels use is mapped; vendor-specific matrix instructions live behind GEMMAR_MMA_* macros so
// the GEMM main loop has one body per instruction family, chosen at compile time.
#pragma once

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__) || defined(__HIP__)
#define GEMMAR_GPU_HIP 1
#include <hip/hip_runtime.h>
#else
#define GEMMAR_GPU_CUDA 1
#include <cuda_runtime.h>
#endif

#include <cstddef>
#include <cstdint>
#include <utility>

// ---- runtime API -----------------------------------------------------------------------------------------
#if defined(GEMMAR_GPU_HIP)
using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuGraph_t = hipGraph_t;
using gpuGraphExec_t = hipGraphExec_t;
using gpuDeviceProp = hipDeviceProp_t;
#define gpuSuccess hipSuccess
#define gpuErrorInvalidValue hipErrorInvalidValue
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuSetDevice hipSetDevice
#define gpuGetDevice hipGetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceCanAccessPeer hipDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess hipDeviceEnablePeerAccess
#define gpuErrorPeerAccessAlreadyEnabled hipErrorPeerAccessAlreadyEnabled
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemset hipMemset
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpyPeerAsync hipMemcpyPeerAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuMemcpyHostToHost hipMemcpyHostToHost
#define gpuHostAlloc hipHostMalloc
#define gpuFreeHost hipHostFree
#define gpuErrorNotSupported hipErrorNotSupported
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamCreateWithPriority hipStreamCreateWithPriority
#define gpuDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuEventCreate hipEventCreate
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuFuncSetAttribute(f, a, v) hipFuncSetAttribute(reinterpret_cast<const void*>(f), a, v)
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#else
using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuGraph_t = cudaGraph_t;
using gpuGraphExec_t = cudaGraphExec_t;
using gpuDeviceProp = cudaDeviceProp;
#define gpuSuccess cudaSuccess
#define gpuErrorInvalidValue cudaErrorInvalidValue
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuGetDevice cudaGetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define gpuErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemset cudaMemset
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpyPeerAsync cudaMemcpyPeerAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemcpyHostToHost cudaMemcpyHostToHost
#define gpuHostAlloc cudaHostAlloc
#define gpuFreeHost cudaFreeHost
#define gpuErrorNotSupported cudaErrorNotSupported
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamCreateWithPriority cudaStreamCreateWithPriority
#define gpuDeviceGetStreamPriorityRange cudaDeviceGetStreamPriorityRange
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuEventCreate cudaEventCreate
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuFuncSetAttribute(f, a, v) cudaFuncSetAttribute(f, a, v)
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#endif

// ---- device-side ------------------------------------------------------------------------------------------
// The wavefront is 64 lanes on CDNA (gfx942/gfx950) and the warp 32 on NVIDIA: reductions and the MMA
// fragment layouts depend on it, so it is a compile-time constant of the device pass.
#if defined(GEMMAR_GPU_HIP)
#define GEMMAR_WARP_SIZE 64
#else
#define GEMMAR_WARP_SIZE 32
#endif

#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define GEMMAR_DEVICE_PASS 1
#endif

// Capabilities, each named once. GEMMAR_GPU_SM90: this build has the sm_90a kernels (wgmma, TMA, CTA clusters:
// the NVIDIA build), run where the device is compute capability 9.x (kernels/device_common.cuh
// current_device_is_sm90); GEMMAR_SM90A_PASS: the device pass that compiles them (sm_90a's arch-specific
// features); GEMMAR_TMA_STORE_PASS: a device pass with the TMA's bulk stores from shared memory (sm_90+).
#if defined(GEMMAR_GPU_CUDA)
#define GEMMAR_GPU_SM90 1
#endif
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GEMMAR_SM90A_PASS 1
#endif
#if defined(GEMMAR_GPU_CUDA) && defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define GEMMAR_TMA_STORE_PASS 1
#endif

namespace gemmar::gpu {

__device__ __forceinline__ float shfl_xor(float v, int o) {
#if defined(GEMMAR_GPU_HIP)
  return __shfl_xor(v, o, GEMMAR_WARP_SIZE);
#else
  return __shfl_xor_sync(0xffffffffu, v, o);
#endif
}

__device__ __forceinline__ uint32_t shfl_down(uint32_t v, int o) {
#if defined(GEMMAR_GPU_HIP)
  return __shfl_down(v, unsigned(o), GEMMAR_WARP_SIZE);
#else
  return __shfl_down_sync(0xffffffffu, v, unsigned(o));
#endif
}

// Spins the calling thread for `us` microseconds of wall time (the straggler fault's delay).
__device__ __forceinline__ void spin_for_us(float us) {
#if defined(GEMMAR_GPU_HIP)
  const unsigned long long ticks = (unsigned long long)(us * 100.0f);  // wall_clock64 runs at 100 MHz on CDNA
  const unsigned long long t0 = wall_clock64();
  while (wall_clock64() - t0 < ticks) {
  }
#else
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const unsigned long long ns = (unsigned long long)(us * 1000.0f);
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
#endif
}

}  // namespace gemmar::gpu

// Graph capture / replay and timed events inside a capture (docs/reliability.md). An event recorded inside a capture is
// only a dependency unless recorded as "external": then the graph's replay records it and it can be timed.
#if defined(GEMMAR_GPU_HIP)
#if defined(hipEventRecordExternal) || HIP_VERSION >= 60200000
#define GEMMAR_RECORD_EXTERNAL(e, s) hipEventRecordWithFlags(e, s, hipEventRecordExternal)
#else  // older HIP: no external event nodes; a timed event inside a capture is then only a dependency
#define GEMMAR_RECORD_EXTERNAL(e, s) hipEventRecord(e, s)
#endif
#define GEMMAR_BEGIN_CAPTURE(s) hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed)
#define GEMMAR_END_CAPTURE(s, g) hipStreamEndCapture(s, g)
#define GEMMAR_INSTANTIATE(x, g) hipGraphInstantiate(x, g, nullptr, nullptr, 0)
#define GEMMAR_GRAPH_LAUNCH(x, s) hipGraphLaunch(x, s)
#define GEMMAR_GRAPH_EXEC_DESTROY(x) hipGraphExecDestroy(x)
#define GEMMAR_GRAPH_DESTROY(g) hipGraphDestroy(g)
#else
#define GEMMAR_RECORD_EXTERNAL(e, s) cudaEventRecordWithFlags(e, s, cudaEventRecordExternal)
#define GEMMAR_BEGIN_CAPTURE(s) cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed)
#define GEMMAR_END_CAPTURE(s, g) cudaStreamEndCapture(s, g)
// Each kernel node keeps the priority of the stream it was captured from (the compute streams' over the copy
// streams' where the lab gives them priorities: lab/pipeline_variants.cu); without the flag the whole graph runs at its
// launch stream's.
#define GEMMAR_INSTANTIATE(x, g) cudaGraphInstantiate(x, g, cudaGraphInstantiateFlagUseNodePriority)
#define GEMMAR_GRAPH_LAUNCH(x, s) cudaGraphLaunch(x, s)
#define GEMMAR_GRAPH_EXEC_DESTROY(x) cudaGraphExecDestroy(x)
#define GEMMAR_GRAPH_DESTROY(g) cudaGraphDestroy(g)
#endif

#if defined(GEMMAR_GPU_CUDA)
#include <cuda.h>  // CUtensorMap (types only: the encoder is fetched from the driver at run time)
#include <cudaTypedefs.h>
namespace gemmar::gpu {
// The driver's cuTensorMapEncodeTiled, fetched through the runtime so nothing links libcuda; null if missing.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  return fn;
}
}  // namespace gemmar::gpu
using gpuTensorMap = CUtensorMap;  // a TMA descriptor (sm_90a's wgmma GEMMs only: AMD has no TMA)
namespace gemmar::gpu {
// A 2-D TMA descriptor over `base`: `inner` x `outer` elements (inner contiguous, rows `row_bytes` apart), boxes
// of box_inner x box_outer. e4m3_tile: e4m3 bytes, 128-byte swizzle and 256-byte L2 promotion (the wgmma
// operand tiles, what smem_desc() describes); otherwise fp32, unswizzled (the A scales). False if the driver
// has no encoder or refuses the layout.
inline bool encode_tensor_map_2d(gpuTensorMap* map, const void* base, bool e4m3_tile, uint64_t inner, uint64_t outer,
                                 uint64_t row_bytes, uint32_t box_inner, uint32_t box_outer) {
  const auto enc = tensor_map_encoder();
  if (!enc) return false;
  const cuuint64_t dims[2] = {cuuint64_t(inner), cuuint64_t(outer)};
  const cuuint64_t strides[1] = {cuuint64_t(row_bytes)};
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t estr[2] = {1, 1};
  return enc(map, e4m3_tile ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
             const_cast<void*>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
             e4m3_tile ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
             e4m3_tile ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_NONE,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
}  // namespace gemmar::gpu
#endif

#if defined(GEMMAR_GPU_SM90)
namespace gemmar::gpu {
// A launch of `grid` CTAs of `block` threads in thread-block clusters of `cluster` CTAs along x (sm_90); attr holds
// the cluster attribute the config points to.
inline cudaLaunchConfig_t cluster_config(unsigned grid, unsigned block, size_t smem, gpuStream_t s, unsigned cluster,
                                         cudaLaunchAttribute (&attr)[1]) {
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(block);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}
// Launches kern in clusters, its arguments as a kernel launch takes them.
template <typename... Params, typename... Args>
gpuError_t launch_clustered(void (*kern)(Params...), unsigned grid, unsigned block, size_t smem, gpuStream_t s,
                            unsigned cluster, Args&&... args) {
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = cluster_config(grid, block, smem, s, cluster, attr);
  return cudaLaunchKernelEx(&cfg, kern, std::forward<Args>(args)...);
}
// How many clusters of `cluster` CTAs of kern (block threads, smem bytes each) the device runs at once, for a grid
// of `grid` CTAs.
template <typename Kern>
gpuError_t max_active_clusters(Kern kern, unsigned grid, unsigned block, size_t smem, unsigned cluster, int* fit) {
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = cluster_config(grid, block, smem, nullptr, cluster, attr);
  return cudaOccupancyMaxActiveClusters(fit, kern, &cfg);
}
}  // namespace gemmar::gpu
#endif

// A device-to-device copy through the batch API with the driver's hint to overlap it with the SMs' work (CUDA
// 12.8+: cudaMemcpyBatchAsync, cudaMemcpyFlagPreferOverlapWithCompute); gpuErrorNotSupported where there is none.
namespace gemmar::gpu {
inline gpuError_t copy_prefer_overlap(void* dst, const void* src, size_t bytes, gpuStream_t s) {
#if defined(GEMMAR_GPU_CUDA) && CUDART_VERSION >= 12080
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
  size_t attr_index = 0;
  void* dsts[1] = {dst};
  void* srcs[1] = {const_cast<void*>(src)};  // CUDA 12.8 takes void**, 13.0 const void* const*
  size_t sizes[1] = {bytes};
#if CUDART_VERSION >= 13000
  return cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &attr_index, 1, s);
#else
  size_t fail_index = 0;
  return cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &attr_index, 1, &fail_index, s);
#endif
#else
  (void)dst, (void)src, (void)bytes, (void)s;
  return gpuErrorNotSupported;
#endif
}
}  // namespace gemmar::gpu

// Stream memory operations: `s` waits until the 32-bit word at `counter` (device memory, raised by a kernel on
// another stream) is >= `value`, so a copy engine's put can follow a running kernel's progress instead of a launch
// boundary (fused-sdma's persistent GEMM, kernels/pipeline/legs_gemm.cu). An error where the driver has none: the
// caller falls back to launch boundaries.
namespace gemmar::gpu {
#if defined(GEMMAR_GPU_HIP)
inline gpuError_t stream_wait_geq(gpuStream_t s, const unsigned* counter, unsigned value) {
  return hipStreamWaitValue32(s, const_cast<unsigned*>(counter), value, hipStreamWaitValueGte, 0xffffffffu);
}
#else
inline gpuError_t stream_wait_geq(gpuStream_t s, const unsigned* counter, unsigned value) {
  static PFN_cuStreamWaitValue32_v11070 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    const bool ok =
        cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess;
    return ok ? reinterpret_cast<PFN_cuStreamWaitValue32_v11070>(p) : nullptr;
  }();
  if (!fn) return cudaErrorNotSupported;
  return fn(s, CUdeviceptr(reinterpret_cast<uintptr_t>(counter)), value, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS
             ? cudaSuccess
             : cudaErrorNotSupported;
}
#endif
}  // namespace gemmar::gpu

// ---- fp8 matrix instruction families ----------------------------------------------------------------------
// GEMMAR_MMA_SM89: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 (sm_89+, used on sm_90a).
// GEMMAR_MMA_MFMA: __builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8 (gfx940+, gfx950). gfx942 hardware reads fp8 as
//                  e4m3fnuz; the host side compensates (kernels/pipeline/engine.cu upload: fn bits read as fnuz are
//                  exactly half).
// GEMMAR_MMA_SCALAR: a plain fp32 fallback for any other target.
#if defined(GEMMAR_GPU_CUDA) && defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 890)
#define GEMMAR_MMA_SM89 1
#elif defined(GEMMAR_GPU_HIP) && defined(__HIP_DEVICE_COMPILE__) && \
    (defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__))
#define GEMMAR_MMA_MFMA 1
#else
#define GEMMAR_MMA_SCALAR 1
#endif

#if defined(GEMMAR_MMA_SM89)
namespace gemmar::gpu {
// D = A(16x32 e4m3, row) * B(32x8 e4m3, col) + C, fp32 accumulate. Fragment layout per PTX ISA 9.7.14.5.
__device__ __forceinline__ void mma_e4m3_16x8x32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(addr), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
}  // namespace gemmar::gpu
#endif

#if defined(GEMMAR_MMA_MFMA)
namespace gemmar::gpu {
using f32x16 = __attribute__((__vector_size__(16 * sizeof(float)))) float;
// 32x32x16: each lane supplies 8 fp8 of A (row lane%32, k 8*(lane/32)..+7) and 8 of B (col lane%32, same k);
// the 16 accumulators of lane l hold C[8*(i/4) + 4*(l/32) + i%4][l%32] (CDNA3 ISA, MFMA layouts).
__device__ __forceinline__ void mfma_e4m3_32x32x16(f32x16& acc, long a, long b) {
  acc = __builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8(a, b, acc, 0, 0, 0);
}
}  // namespace gemmar::gpu
#endif
