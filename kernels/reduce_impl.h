/* Internal to kernels/: one table of element loops per instruction-set flavour. The public
 * entry points (reduce_cpu.c) pick a table once and index it by [dtype][op]. */
#ifndef ORB_KERNELS_REDUCE_IMPL_H
#define ORB_KERNELS_REDUCE_IMPL_H

#include <stddef.h>

#include "orbit.h"

/* dst1 (and dst2 when not NULL) = post(op(a, b)); post divides by postdiv when > 1.
 * Destinations may alias a source exactly. dst1 != dst2 (the caller folds that case). */
typedef void (*orb_kloop_t)(void *dst1, void *dst2, const void *a, const void *b, size_t n,
                            int postdiv);

/* Element ops. FIRST (r = a) turns the reduce loops into the dividing copy. */
enum { ORB_KOP_SUM, ORB_KOP_PROD, ORB_KOP_MIN, ORB_KOP_MAX, ORB_KOP_FIRST, ORB_KOP_COUNT };

struct orb_kernel_set {
    const char *half_impl; /* what float16 uses: "portable" or "f16c" */
    orb_kloop_t loop[ORB_NUM_DTYPES][ORB_KOP_COUNT];
};

/* Baseline ISA (SSE2 on x86-64), bit-manipulation float16. */
extern const struct orb_kernel_set orb_kernels_portable;

#if defined(__x86_64__) || defined(__i386__)
#define ORB_KERNELS_HAVE_AVX2 1
/* AVX2 loops, F16C float16 conversions: only for CPUs with both. */
extern const struct orb_kernel_set orb_kernels_avx2;
#endif

#endif
