#include "pattern.h"

#include <math.h>
#include <stdint.h>

#include "dtype.h"

/* Offsets that sum to zero over the ranks (+1, -1 in pairs, 0 for an odd last rank),
 * so avg's exact answer is the shared base even in integer types. */
static int avg_offset(int rank, int nranks)
{
    if (rank == nranks - 1 && nranks % 2 == 1)
        return 0;
    return rank % 2 == 0 ? 1 : -1;
}

/* A hash of (what, rank, index): inputs then differ with the rank and the position, so data
 * that lands at another rank's block or another offset shows at (almost) every element. The
 * values stay in the ranges the periodic patterns before them used (sums of [0, 3], min/max
 * and moved data below 100, products of at most one 2 and one 3), so what was exact in every
 * dtype stays exact. */
static uint64_t mix(uint64_t what, uint64_t r, uint64_t i)
{
    uint64_t x = (what << 56) ^ (r << 40) ^ i;
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

double bench_pattern_input(int op, int rank, int nranks, size_t i)
{
    uint64_t r = (uint64_t)rank, n1 = (uint64_t)nranks + 1;
    switch (op) {
    case ORB_SUM: return (double)(mix(1, r, i) % 4);
    case ORB_PROD: { /* at most one 2 and one 3 per element, on hash-chosen ranks (or none) */
        uint64_t two = mix(2, 0, i) % n1, three = mix(3, 0, i) % n1;
        return r == two ? 2.0 : r == three ? 3.0 : 1.0;
    }
    case ORB_MIN:
    case ORB_MAX: return (double)(mix(4, r, i) % 100);
    case ORB_AVG: return (double)(2 + mix(5, 0, i) % 8) + avg_offset(rank, nranks);
    default: return (double)(mix(6, r, i) % 100);
    }
}

double bench_pattern_reduced(orb_op_t op, int nranks, size_t i)
{
    double acc = bench_pattern_input((int)op, 0, nranks, i);
    for (int r = 1; r < nranks; r++) {
        double v = bench_pattern_input((int)op, r, nranks, i);
        switch (op) {
        case ORB_PROD: acc *= v; break;
        case ORB_MIN: acc = v < acc ? v : acc; break;
        case ORB_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break; /* sum, and avg before the division */
        }
    }
    return op == ORB_AVG ? acc / nranks : acc;
}

int bench_pattern_matches(orb_dtype_t dtype, int op, double got, double want)
{
    if (got == want)
        return 1;
    if (op != ORB_AVG || !bench_dtype_is_float(dtype))
        return 0;
    /* A few ulps of the dtype: 2^-8 relative for bfloat16, 2^-11 for float16, ... */
    double eps = dtype == ORB_BFLOAT16 ? 0x1p-7 : dtype == ORB_FLOAT16 ? 0x1p-10
                 : dtype == ORB_FLOAT32 ? 0x1p-21 : 0x1p-50;
    return fabs(got - want) <= eps * fabs(want);
}
