#include "pattern.h"

#include <math.h>

#include "dtype.h"

/* Offsets that sum to zero over the ranks (+1, -1 in pairs, 0 for an odd last rank),
 * so avg's exact answer is the shared base even in integer types. */
static int avg_offset(int rank, int nranks)
{
    if (rank == nranks - 1 && nranks % 2 == 1)
        return 0;
    return rank % 2 == 0 ? 1 : -1;
}

double bench_pattern_input(int op, int rank, int nranks, size_t i)
{
    size_t r = (size_t)rank;
    switch (op) {
    case ORB_SUM: return (double)((i * 3 + r * 5) % 4);
    case ORB_PROD: /* one factor of 2 per element, so products never overflow */
        return (i % (size_t)nranks == r) ? 2.0 : 1.0;
    case ORB_MIN:
    case ORB_MAX: return (double)((i * 7 + r * 13) % 100);
    case ORB_AVG: return (double)(2 + (i * 3) % 8) + avg_offset(rank, nranks);
    default: return (double)((i * 3 + r * 5 + 1) % 64);
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
