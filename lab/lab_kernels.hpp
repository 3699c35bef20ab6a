// The lab's device side (GPU-typed): each subject of lab/variants.hpp as a launch, and the kernels only the bench
// needs (the copy and launch ceilings, the SM-holding kernel, the conversions' selftest). The op never links any of
// it (lab/CMakeLists.txt: gemmar_lab is its own library).
#pragma once
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/pipeline/hooks.hpp"
#include "lab/variants.hpp"

namespace gemmar::lab {

namespace dev = kernels::dev;

// One GEMM of a gemm subject (lab/gemm/variants.cu) on the current device; gpuErrorInvalidValue where the subject
// does not run these operands (gemm_applies, or no sm_90a kernels in the build).
gpuError_t launch_gemm_subject(Subject, const dev::GemmOperands&, int64_t m_begin, int64_t m_end, const dev::GemmDest&,
                               gpuStream_t);
// What the subject runs for these operands, in words.
const char* gemm_subject_kernel(Subject, const dev::GemmOperands&, const dev::GemmDest&);

// The widen of a widen subject (lab/convert/widen_variants.cu): as dev::launch_widen.
gpuError_t launch_widen_subject(Subject, const dev::Fp8Sources& src, int count, int64_t rows, int64_t n, int blocks,
                                gpuStream_t);

// The pipeline plug-ins of a pipeline subject (lab/pipeline_variants.cu); PipelineProduct's are empty.
kernels::PipelineHooks pipeline_hooks(Subject);

// lab/ceilings.cu. A 16-byte vector copy: blocks = 0: 4 blocks of 512 threads per SM (the HBM ceiling); blocks > 0:
// that many blocks of 1024 threads (the copy on the SMs a pull of that grid has).
gpuError_t launch_copy_kernel(void* dst, const void* src, int64_t bytes, gpuStream_t s, int blocks = 0);
// One direction alone on `blocks` blocks of 1024 threads: 16-byte loads (sink written only by an impossible fold)
// or 16-byte stores.
gpuError_t launch_load_kernel(const void* src, int64_t bytes, uint32_t* sink, gpuStream_t s, int blocks);
gpuError_t launch_store_kernel(void* dst, int64_t bytes, gpuStream_t s, int blocks);
gpuError_t launch_empty(gpuStream_t s);
// Two blocks of 1024 threads per SM spinning on the device's clock for `ns` ns: no SM has room for another block.
gpuError_t launch_hold_sms(uint64_t ns, gpuStream_t s);
// lab/convert/widen_variants.cu. Exhaustive conversion check (fp8 wire, hardware vs numerics_inline.hpp) over fp32
// bit patterns [begin, begin + count): mismatches counted into *bad, the first one's input bits into *first.
gpuError_t launch_fp8_selftest(uint64_t begin, uint64_t count, float inv, unsigned long long* bad,
                               unsigned long long* first, gpuStream_t s);

}  // namespace gemmar::lab
