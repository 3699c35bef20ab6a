/* libgemmar_guard.so: the caller guard's device code behind a C ABI (docs/guard.md "The guard from what the
 * caller holds"). A serving process calls it through ctypes (python/gemmar_guard_caller.py Library) with raw device
 * pointers on its own stream; nothing here depends on torch. Per call and rank: gg_sums writes the rank's record
 * (reference/guard_caller_inline.hpp Layout) from its A, its A scales, its output view and its weights' checksum;
 * the caller exchanges the records over its process group (an all_gather); gg_judge reads every rank's record and
 * writes the (view, slice) cells, which the caller copies to the host when it wants the findings.
 * Every function returns 0, or nonzero with gg_last_error() naming the argument. Plain C. */
#ifndef GEMMAR_GUARD_H
#define GEMMAR_GUARD_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GG_ABI_VERSION 1
/* The library is built with hidden visibility: only these functions are exported. */
#define GG_API __attribute__((visibility("default")))

/* The bound's constants (reference/guard_caller_inline.hpp Consts, field for field). */
typedef struct gg_consts {
  double lambda, agg_threshold, det_pred, k_asq, part2, reduce, out2, wire_rel, wire_sub, underflow;
  int32_t fp8_gather, recipe_known;
} gg_consts;

/* A-scale layouts read in place: one scale per row and a_scale_k columns of K. */
enum gg_a_scale_kind {
  GG_A_SCALE_F32_K_MAJOR = 0,     /* fp32 [K / a_scale_k, M]: blockscale's physical order (mori's flat a_scale) */
  GG_A_SCALE_F32_ROW_MAJOR = 1,   /* fp32 [M, K / a_scale_k] (ptpc: a_scale_k = K) */
  GG_A_SCALE_E8M0_ROW_MAJOR = 2,  /* e8m0 bytes [M, K / a_scale_k] */
  GG_A_SCALE_E8M0_MORI_PACKED = 3 /* e8m0 bytes in mori's preshuffle_a_scale order (mxfp8, M a multiple of 64) */
};

typedef struct gg_sums_args {
  int32_t world, rank;
  int64_t m, n, k;      /* m: the padded rows the op ran */
  int32_t stride;       /* one listed row per aligned stratum of `stride` rows (divides 128) */
  int32_t a_scale_kind; /* gg_a_scale_kind */
  uint64_t seed;        /* the group's sample seed (equal on every rank) */
  const void* a;        /* [m, k] e4m3 codes, row-major, 8-byte aligned */
  const void* a_scale;  /* per a_scale_kind */
  int32_t a_scale_k;    /* K columns per A scale: 32, 128 or k */
  int32_t a_fnuz;       /* A's codes are e4m3fnuz */
  const void* out;      /* this rank's output view, bf16, row stride out_ld elements, 16-byte aligned */
  int64_t out_ld;       /* a multiple of 8, >= n */
  const void* w;        /* [nb, k] fp32: this rank's weights' checksum, 16-byte aligned */
  void* record;         /* this rank's record (gg_layout's floats); its weight norms are the caller's, once */
  int32_t wire_recipe;  /* fp8 gather: the owner's rows re-quantized (0 mori, 1 true-division, 2 div-codes); -1 none */
  int32_t wire_fnuz;    /* the fp8 wire is e4m3fnuz */
  const void* call;     /* device uint64: the call number the rows are drawn for (gg_judge advances it) */
} gg_sums_args;

typedef struct gg_judge_args {
  int32_t world, stride;
  int64_t m, n;
  const void* records; /* every rank's record of this call, gathered: rank r's at records + r * records_ld floats */
  int64_t records_ld;  /* 0: the record's size (one call exchanged alone) */
  gg_consts consts;
  void* cells; /* (world * world + 1) cells of 16 words: index v * world + s; the last: the call number */
  void* call;  /* device uint64, advanced by one after the judge (null: left alone) */
} gg_judge_args;

GG_API int gg_abi_version(void);
/* The record's float offsets: wnorm, pred, pabs, osum, osq, oabs, asq, wsum, wscale, and its size (10 values). */
GG_API int gg_layout(int32_t world, int64_t m, int64_t n, int32_t stride, int64_t* out10);
GG_API int gg_sums(const gg_sums_args* args, void* stream);
GG_API int gg_judge(const gg_judge_args* args, void* stream);
GG_API const char* gg_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
