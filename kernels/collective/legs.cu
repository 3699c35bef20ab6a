// The collective's legs after the GEMM: the reduce of the peers' partials (with the fp8 wire's narrowing fused)
// and split-lsa's CU copy of the reduced slices.
#include "kernels/convert/fp8_wire.cuh"

namespace gemmar::kernels::dev {
namespace {

__global__ void __launch_bounds__(kThreads)
    reduce_kernel(SlotSet slots, int owner, int world, int64_t n, uint16_t* out, uint8_t* q_out, float* q_scale) {
  const int64_t row = blockIdx.x;
  const int64_t nv = n / 8;
  uint16_t* orow = out + row * n;
  float acc_amax = 0.0f;  // fuse_quantize: the wire's amax over the fp32 accumulator, before the bf16 store
  for (int64_t v = threadIdx.x; v < nv; v += blockDim.x) {
    // numerics::reduce_element, 8 lanes at a time: acc starts at the owner's own value, adds peers in order
    // (owner + j) % world (mori's sdma_reduce: an all -0 element stays -0).
    float acc[8];
    unpack8(reinterpret_cast<const uint4*>(slots.slot[owner] + row * n)[v], acc);
    for (int j = 1; j < world; ++j) {
      const int p = (owner + j) % world;
      float f[8];
      unpack8(reinterpret_cast<const uint4*>(slots.slot[p] + row * n)[v], f);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = nm::add_rn(acc[e], f[e]);
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) acc_amax = nm::amax_step(acc_amax, acc[e]);
    uint4 o;
    o.x = pack_bf16x2(acc[0], acc[1]);
    o.y = pack_bf16x2(acc[2], acc[3]);
    o.z = pack_bf16x2(acc[4], acc[5]);
    o.w = pack_bf16x2(acc[6], acc[7]);
    reinterpret_cast<uint4*>(orow)[v] = o;
  }
  if (q_out) {
    __syncthreads();  // the block's own global stores are visible to it after the barrier
    quantize_row(orow, n, q_out + row * n, q_scale + row, acc_amax);
  }
}

__global__ void __launch_bounds__(kThreads) copy_slices_kernel(Bf16Sources src, int count, int64_t elems) {
  const int64_t nv = elems / 8;
  const int64_t total = nv * count;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int s = int(i / nv);
    const int64_t v = i - int64_t(s) * nv;
    reinterpret_cast<uint4*>(src.out[s])[v] = reinterpret_cast<const uint4*>(src.src[s])[v];
  }
}

}  // namespace

gpuError_t launch_reduce(const SlotSet& slots, int owner, int world, int64_t rows, int64_t n, uint16_t* out,
                         uint8_t* q_out, float* q_scale, gpuStream_t s) {
  reduce_kernel<<<unsigned(rows), kThreads, 0, s>>>(slots, owner, world, n, out, q_out, q_scale);
  return gpuGetLastError();
}

gpuError_t launch_copy_slices(const Bf16Sources& src, int count, int64_t elems, int blocks, gpuStream_t s) {
  if (count <= 0) return gpuSuccess;
  const int grid = blocks > 0 ? blocks : grid_for(int64_t(count) * (elems / 8), kThreads);
  copy_slices_kernel<<<unsigned(grid), kThreads, 0, s>>>(src, count, elems);
  return gpuGetLastError();
}

}  // namespace gemmar::kernels::dev
