/* Public CPU kernel entry points: pick a flavour once, then one table lookup per call. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/log.h"
#include "core/param.h"
#include "reduce.h"
#include "reduce_impl.h"

static _Atomic(const struct orb_kernel_set *) orb_kset;

#ifdef ORB_KERNELS_HAVE_AVX2
#include <cpuid.h>

/* __builtin_cpu_supports checks that the OS saves the AVX state; clang 14 does not know
 * "f16c" there, so that bit comes straight from CPUID leaf 1. */
static bool orb_cpu_has_avx2_f16c(void)
{
    unsigned eax, ebx, ecx, edx;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return false;
    return (ecx & bit_F16C) != 0;
}
#endif

/* The best flavour this CPU runs. */
static const struct orb_kernel_set *orb_kernel_best(void)
{
#ifdef ORB_KERNELS_HAVE_AVX2
    if (orb_cpu_has_avx2_f16c())
        return &orb_kernels_avx2;
#endif
    return &orb_kernels_portable;
}

/* ORBIT_CPU_KERNELS=portable forces the baseline-ISA loops, so one CI variant runs the path
 * that CPUs without AVX2/F16C take. */
static const struct orb_kernel_set *orb_kernel_pick(void)
{
    const char *want = orb_param_str(ORB_PARAM_S_CPU_KERNELS);
    const struct orb_kernel_set *s = orb_kernel_best();
    if (strcmp(want, "portable") == 0)
        s = &orb_kernels_portable;
    else if (want[0] != '\0' && strcmp(want, "auto") != 0)
        ORB_WARN("ORBIT_CPU_KERNELS=%s: not a kernel flavour (auto, portable); using auto", want);
    ORB_INFO("CPU reduction kernels: %s", s == &orb_kernels_portable ? "portable" : "avx2+f16c");
    return s;
}

/* Racing first callers compute the same answer, so a relaxed store is enough. */
static inline const struct orb_kernel_set *orb_kernel_set(void)
{
    const struct orb_kernel_set *s = atomic_load_explicit(&orb_kset, memory_order_relaxed);
    if (s == NULL) {
        s = orb_kernel_pick();
        atomic_store_explicit(&orb_kset, s, memory_order_relaxed);
    }
    return s;
}

/* Two destinations (the output, and the slot a ring passes the value on in): the value is
 * written to the first in blocks that stay in L1, and each block then copied to the second.
 * One loop storing to both, two store streams interleaved, ran 1.6x slower from the caches
 * (Intel Xeon VM, family 6 model 207, 256 KiB pieces: int8, float32 and float64 a+b 10.2
 * against 16.3 GB/s, the same with blocks of 1 to 64 KiB; from memory the two were even), and
 * that loop is the all-reduce ring's busiest step. Not for float16 and bfloat16, whose loops
 * are bound by their conversions: the second store costs them nothing and the copy does
 * (bfloat16 7.2 against 6.5 GB/s); nor for a piece of one block or less, the small calls'
 * path, left as it was. A block is whole elements of every type. */
#define ORB_DUAL_BLOCK_BYTES 4096u

void orb_kernel_reduce(void *dst1, void *dst2, const void *a, const void *b, size_t n,
                       orb_dtype_t dtype, orb_op_t op, int postdiv)
{
    if (n == 0 || (unsigned)dtype >= ORB_NUM_DTYPES || (unsigned)op >= ORB_NUM_OPS)
        return;
    if (dst2 == dst1)
        dst2 = NULL;
    int kop = op == ORB_AVG ? ORB_KOP_SUM : (int)op; /* ORB_SUM..ORB_MAX match ORB_KOP_* */
    const orb_kloop_t loop = orb_kernel_set()->loop[dtype][kop];
    const size_t esz = dst2 ? orb_dtype_bytes(dtype) : 0; /* (looked up only for two destinations) */
    if (!dst2 || n * esz <= ORB_DUAL_BLOCK_BYTES || dtype == ORB_FLOAT16 || dtype == ORB_BFLOAT16) {
        loop(dst1, dst2, a, b, n, postdiv); /* (one destination, or a small call's piece: as ever) */
        return;
    }
    const size_t blk = ORB_DUAL_BLOCK_BYTES / esz;
    /* Exact aliasing only (a destination that is a source is the same elements): element i
     * of dst2 is written after element i of a and b was read, as in the one loop. */
    for (size_t i = 0; i < n; i += blk) {
        const size_t m = n - i < blk ? n - i : blk, off = i * esz;
        loop((char *)dst1 + off, NULL, (const char *)a + off, (const char *)b + off, m, postdiv);
        memcpy((char *)dst2 + off, (const char *)dst1 + off, m * esz);
    }
}

void orb_kernel_copy(void *dst1, void *dst2, const void *src, size_t n, orb_dtype_t dtype,
                     int postdiv)
{
    if (n == 0 || (unsigned)dtype >= ORB_NUM_DTYPES)
        return;
    if (dst2 == dst1)
        dst2 = NULL;
    if (postdiv > 1) {
        orb_kernel_set()->loop[dtype][ORB_KOP_FIRST](dst1, dst2, src, src, n, postdiv);
        return;
    }
    size_t bytes = n * orb_dtype_bytes(dtype);
    if (dst1 != src)
        memcpy(dst1, src, bytes);
    if (dst2 != NULL && dst2 != src)
        memcpy(dst2, src, bytes);
}

const char *orb_kernel_half_impl(void)
{
    return orb_kernel_set()->half_impl;
}

orb_status_t orb_kernel_half_select(const char *impl)
{
    const struct orb_kernel_set *s = NULL;
    if (impl == NULL || strcmp(impl, "auto") == 0)
        s = orb_kernel_best();
    else if (strcmp(impl, "portable") == 0)
        s = &orb_kernels_portable;
#ifdef ORB_KERNELS_HAVE_AVX2
    else if (strcmp(impl, "f16c") == 0 && orb_kernel_best() == &orb_kernels_avx2)
        s = &orb_kernels_avx2;
#endif
    if (s == NULL)
        return ORB_ERR_UNSUPPORTED;
    atomic_store_explicit(&orb_kset, s, memory_order_relaxed);
    return ORB_OK;
}
