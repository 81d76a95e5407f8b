/* Micro-benchmark of the CPU kernels (not a test): GB/s of float32 / float16 / bfloat16 sum
 * at a pipeline-piece size (256 KiB, cache resident) and at 64 MiB (DRAM), next to memcpy.
 * Usage: kernels_bench [portable|f16c|auto]   (default: every flavour this CPU runs)
 * "buf GB/s" is bytes of one operand per second; "mem GB/s" counts every read and write. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/reduce.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

enum { K_MEMCPY, K_OOP, K_INPLACE, K_DUAL, K_AVG };
static const char *const kind_names[] = {"memcpy", "d=a+b", "a=a+b", "d,e=a+b", "d=(a+b)/4"};
static const int kind_streams[] = {2, 3, 2, 4, 3};

static void run(void *d, void *e, void *a, void *b, size_t n, orb_dtype_t dt, int kind)
{
    switch (kind) {
    case K_MEMCPY:
        memcpy(d, a, n * orb_dtype_size(dt));
        break;
    case K_OOP:
        orb_kernel_reduce(d, NULL, a, b, n, dt, ORB_SUM, 0);
        break;
    case K_INPLACE:
        orb_kernel_reduce(a, NULL, a, b, n, dt, ORB_SUM, 0);
        break;
    case K_DUAL:
        orb_kernel_reduce(d, e, a, b, n, dt, ORB_SUM, 0);
        break;
    default:
        orb_kernel_reduce(d, NULL, a, b, n, dt, ORB_AVG, 4);
    }
}

/* Best of 5 trials, each repeating the call for at least 50 ms. */
static double best_seconds(void *d, void *e, void *a, void *b, size_t n, orb_dtype_t dt, int kind)
{
    double best = 1e30;
    for (int trial = 0; trial < 5; trial++) {
        long reps = 0;
        double t0 = now(), t;
        do {
            run(d, e, a, b, n, dt, kind);
            reps++;
            t = now();
        } while (t - t0 < 0.05);
        double per = (t - t0) / (double)reps;
        best = per < best ? per : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    static const char *const all[] = {"portable", "f16c"};
    const char *const *impls = all;
    int nimpl = 2;
    if (argc > 1) {
        impls = (const char *const *)&argv[1];
        nimpl = 1;
    }
    static const size_t sizes[] = {256u << 10, 64u << 20};
    static const orb_dtype_t dts[] = {ORB_FLOAT32, ORB_FLOAT16, ORB_BFLOAT16};
    char *a = aligned_alloc(64, 64u << 20), *b = aligned_alloc(64, 64u << 20);
    char *d = aligned_alloc(64, 64u << 20), *e = aligned_alloc(64, 64u << 20);
    if (!a || !b || !d || !e)
        return 1;
    /* 1.0 in every format keeps sums finite for every repetition of a=a+b */
    for (size_t i = 0; i < (64u << 20) / 4; i++) {
        ((uint32_t *)a)[i] = 0x3c003c00u; /* as float32: ~0.0078; as float16: 1.0 */
        ((uint32_t *)b)[i] = 0x3c003c00u;
    }
    memset(d, 0, 64u << 20);
    memset(e, 0, 64u << 20);
    printf("%-8s %-9s %-9s %-10s %9s %9s\n", "flavour", "dtype", "size", "kernel", "buf GB/s", "mem GB/s");
    for (int k = 0; k < nimpl; k++) {
        if (orb_kernel_half_select(impls[k]) != ORB_OK) {
            printf("%s: not available on this CPU\n", impls[k]);
            continue;
        }
        for (size_t s = 0; s < 2; s++)
            for (size_t t = 0; t < 3; t++)
                for (int kind = 0; kind <= K_AVG; kind++) {
                    if (kind == K_MEMCPY && t > 0)
                        continue;
                    size_t n = sizes[s] / orb_dtype_size(dts[t]);
                    double sec = best_seconds(d, e, a, b, n, dts[t], kind);
                    double gbs = (double)sizes[s] / sec / 1e9;
                    printf("%-8s %-9s %-9s %-10s %9.2f %9.2f\n", orb_kernel_half_impl(),
                           kind == K_MEMCPY ? "bytes" : orb_dtype_name(dts[t]),
                           s ? "64 MiB" : "256 KiB", kind_names[kind], gbs, gbs * kind_streams[kind]);
                }
    }
    free(a);
    free(b);
    free(d);
    free(e);
    return 0;
}
