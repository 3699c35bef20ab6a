// The caller guard on the device (docs/guard.md "The guard from what the caller holds"): libgemmar_guard.so's
// kernels behind the C ABI of kernels/check/gemmar_guard.h. One source for HIP and CUDA (kernels/gpu_compat.hpp);
// the judge's math is reference/guard_caller_inline.hpp's, the CPU reference's own (reference/guard_caller.cpp).
//
// The kernels and their launches: kernels/check/caller_guard_kernels.cuh.
#include <cstdio>
#include <exception>
#include <string>

#include "kernels/check/caller_guard_kernels.cuh"
#include "kernels/check/gemmar_guard.h"

namespace {

thread_local std::string g_error;

void require(bool ok, const char* what) {
  if (!ok) throw std::string(what);
}

void check_launch() {
  const gpuError_t e = gpuGetLastError();
  if (e != gpuSuccess) throw std::string("launch failed: ") + gpuGetErrorString(e);
}

template <typename F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::string& e) {
    g_error = e;
  } catch (const std::exception& e) {
    g_error = e.what();
  }
  return 1;
}

bool aligned(const void* p, uintptr_t a) { return (reinterpret_cast<uintptr_t>(p) % a) == 0; }

void check_shape(int world, int64_t m, int64_t n, int stride) {
  require(world >= 1 && world <= cg::kMaxWorld, "world must be in 1..64");
  require(gemmar::guard_sample::valid_stride(stride), "stride must divide 128");
  require(m > 0 && m % (int64_t(world) * stride) == 0, "m must be a multiple of world x stride");
  require(n > 0 && n % 8 == 0, "n must be a positive multiple of 8");
}

}  // namespace

extern "C" {

int gg_abi_version(void) { return GG_ABI_VERSION; }

const char* gg_last_error(void) { return g_error.c_str(); }

int gg_layout(int32_t world, int64_t m, int64_t n, int32_t stride, int64_t* out10) {
  return guarded([&] {
    check_shape(world, m, n, stride);
    require(out10 != nullptr, "gg_layout: out10 is null");
    const cg::Layout l = cg::make_layout(world, m, n, stride);
    const int64_t v[10] = {l.wnorm, l.pred, l.pabs, l.osum, l.osq, l.oabs, l.asq, l.wsum, l.wscale, l.floats};
    for (int i = 0; i < 10; ++i) out10[i] = v[i];
  });
}

int gg_sums(const gg_sums_args* a, void* stream) {
  return guarded([&] {
    require(a != nullptr, "gg_sums: args is null");
    check_shape(a->world, a->m, a->n, a->stride);
    require(a->rank >= 0 && a->rank < a->world, "gg_sums: rank must be in 0..world-1");
    require(a->k > 0 && a->k % 8 == 0, "gg_sums: k must be a positive multiple of 8");
    require(a->a_scale_k > 0 && a->a_scale_k % 8 == 0 && a->k % a->a_scale_k == 0,
            "gg_sums: a_scale_k must be a multiple of 8 dividing k");
    require(a->a_scale_kind >= 0 && a->a_scale_kind <= 3, "gg_sums: a_scale_kind must be 0..3");
    require(a->a_scale_kind != GG_A_SCALE_E8M0_MORI_PACKED || a->m % 64 == 0,
            "gg_sums: mori's packed A scales need m a multiple of 64");
    require(a->a && a->a_scale && a->out && a->w && a->record && a->call, "gg_sums: a null device pointer");
    require(aligned(a->a, 8), "gg_sums: a must be 8-byte aligned");
    require(aligned(a->out, 16) && a->out_ld >= a->n && a->out_ld % 8 == 0,
            "gg_sums: out must be 16-byte aligned with out_ld a multiple of 8, >= n");
    require(aligned(a->w, 16) && aligned(a->record, 16), "gg_sums: w and record must be 16-byte aligned");
    require(a->wire_recipe >= -1 && a->wire_recipe <= 2, "gg_sums: wire_recipe must be -1..2");
    launch_sums(sums_params(*a), static_cast<gpuStream_t>(stream));
    check_launch();
  });
}

int gg_judge(const gg_judge_args* a, void* stream) {
  return guarded([&] {
    require(a != nullptr, "gg_judge: args is null");
    check_shape(a->world, a->m, a->n, a->stride);
    require(a->records && a->cells, "gg_judge: a null device pointer");
    const cg::Layout l = judge_layout(*a);
    require(a->records_ld == 0 || a->records_ld >= l.floats, "gg_judge: records_ld below the record's size");
    require(aligned(a->records, 4), "gg_judge: records must be 4-byte aligned");
    launch_judge(l, consts_of(a->consts), static_cast<const float*>(a->records), static_cast<cg::Cell*>(a->cells),
                 static_cast<unsigned long long*>(a->call), static_cast<gpuStream_t>(stream));
    check_launch();
  });
}

}  // extern "C"
