/* See ref.h. Written plainly on purpose: slow, obvious, and different from the kernels. */
#include "ref.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

/* Sorted magnitudes of every finite pattern, plus one past the largest finite value: the
 * "value" of the inf pattern for rounding, 2^16 (half) and 2^128 (bf16). IEEE rounds to inf
 * exactly when the tie point between max and that virtual value is reached. */
#define HALF_N 0x7c01
#define BF16_N 0x7f81
static double half_tab[HALF_N];
static double bf16_tab[BF16_N];

double ref_half_value(uint16_t h)
{
    int sign = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0x1f)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -24);
    else
        v = ldexp(1024 + m, e - 25);
    return sign ? -v : v;
}

double ref_bf16_value(uint16_t h)
{
    int sign = h >> 15, e = (h >> 7) & 0xff, m = h & 0x7f;
    double v;
    if (e == 0xff)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -133);
    else
        v = ldexp(128 + m, e - 134);
    return sign ? -v : v;
}

void ref_init(void)
{
    for (unsigned i = 0; i < HALF_N - 1; i++)
        half_tab[i] = ref_half_value((uint16_t)i);
    half_tab[HALF_N - 1] = 65536.0;
    for (unsigned i = 0; i < BF16_N - 1; i++)
        bf16_tab[i] = ref_bf16_value((uint16_t)i);
    bf16_tab[BF16_N - 1] = ldexp(1.0, 128);
}

static uint16_t round_in(const double *tab, unsigned count, double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (a >= tab[count - 1])
        return sign | (uint16_t)(count - 1);
    unsigned lo = 0, hi = count - 1; /* tab[lo] <= a < tab[hi] */
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) / 2;
        if (tab[mid] <= a)
            lo = mid;
        else
            hi = mid;
    }
    double dl = a - tab[lo], dh = tab[hi] - a;
    unsigned pick = dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);
    return sign | (uint16_t)pick;
}

uint16_t ref_half_round(double v)
{
    return isnan(v) ? 0x7e00 : round_in(half_tab, HALF_N, v);
}

uint16_t ref_bf16_round(double v)
{
    return isnan(v) ? 0x7fc0 : round_in(bf16_tab, BF16_N, v);
}

/* min/max with the documented rule: NaN wins; -0 < +0. */
static double ref_minmax(double x, double y, bool want_max)
{
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == y) {
        if (x != 0)
            return x;
        bool neg = want_max ? (signbit(x) && signbit(y)) : (signbit(x) || signbit(y));
        return neg ? -0.0 : 0.0;
    }
    return (x < y) == want_max ? y : x;
}

static double ref_float_op(double x, double y, orb_op_t op, bool first_only)
{
    if (first_only)
        return x;
    switch (op) {
    case ORB_SUM:
    case ORB_AVG:
        return x + y;
    case ORB_PROD:
        return x * y;
    case ORB_MIN:
        return ref_minmax(x, y, false);
    case ORB_MAX:
        return ref_minmax(x, y, true);
    default:
        return NAN;
    }
}

/* Integers: exact in 128 bits, then reduced modulo 2^bits; division truncates. */
static void ref_int(void *out, const void *pa, const void *pb, size_t i, orb_dtype_t dtype,
                    orb_op_t op, int pd, bool first_only)
{
    int bits;
    bool is_signed;
    __int128 x, y;
    switch (dtype) {
    case ORB_INT8: bits = 8; is_signed = true; x = ((const int8_t *)pa)[i]; y = ((const int8_t *)pb)[i]; break;
    case ORB_UINT8: bits = 8; is_signed = false; x = ((const uint8_t *)pa)[i]; y = ((const uint8_t *)pb)[i]; break;
    case ORB_INT32: bits = 32; is_signed = true; x = ((const int32_t *)pa)[i]; y = ((const int32_t *)pb)[i]; break;
    case ORB_UINT32: bits = 32; is_signed = false; x = ((const uint32_t *)pa)[i]; y = ((const uint32_t *)pb)[i]; break;
    case ORB_INT64: bits = 64; is_signed = true; x = ((const int64_t *)pa)[i]; y = ((const int64_t *)pb)[i]; break;
    default: bits = 64; is_signed = false; x = ((const uint64_t *)pa)[i]; y = ((const uint64_t *)pb)[i]; break;
    }
    unsigned __int128 r; /* two's complement bits of the exact result */
    if (first_only)
        r = (unsigned __int128)x;
    else if (op == ORB_SUM || op == ORB_AVG)
        r = (unsigned __int128)(x + y);
    else if (op == ORB_PROD)
        r = (unsigned __int128)x * (unsigned __int128)y; /* low bits are what matter */
    else if (op == ORB_MIN)
        r = (unsigned __int128)(x < y ? x : y);
    else
        r = (unsigned __int128)(x > y ? x : y);
    /* wrap to the element width, then back to a signed or unsigned value */
    uint64_t low = (uint64_t)r;
    if (bits < 64)
        low &= (UINT64_C(1) << bits) - 1;
    __int128 v = low;
    if (is_signed && (low >> (bits - 1)) & 1)
        v -= (__int128)1 << bits;
    if (pd > 1) {
        __int128 mag = v < 0 ? -v : v;
        mag /= pd;
        v = v < 0 ? -mag : mag;
    }
    uint64_t outbits = (uint64_t)(unsigned __int128)v;
    memcpy(out, &outbits, (size_t)bits / 8); /* little-endian: the low bytes */
}

void ref_reduce_elem(void *out, const void *a, const void *b, size_t i, orb_dtype_t dtype,
                     orb_op_t op, int pd, int first_only)
{
    switch (dtype) {
    case ORB_FLOAT16:
    case ORB_BFLOAT16: {
        bool half = dtype == ORB_FLOAT16;
        uint16_t ha = ((const uint16_t *)a)[i], hb = ((const uint16_t *)b)[i];
        double x = half ? ref_half_value(ha) : ref_bf16_value(ha);
        double y = half ? ref_half_value(hb) : ref_bf16_value(hb);
        /* computed in float32: each step rounds to float (double rounding through
         * double is innocuous for + * / on float operands) */
        float r = (float)ref_float_op(x, y, op, first_only);
        if (pd > 1)
            r = (float)((double)r / pd);
        uint16_t o = half ? ref_half_round(r) : ref_bf16_round(r);
        memcpy(out, &o, 2);
        return;
    }
    case ORB_FLOAT32: {
        double x = ((const float *)a)[i], y = ((const float *)b)[i];
        float r = (float)ref_float_op(x, y, op, first_only);
        if (pd > 1)
            r = (float)((double)r / pd);
        memcpy(out, &r, 4);
        return;
    }
    case ORB_FLOAT64: {
        double x = ((const double *)a)[i], y = ((const double *)b)[i];
        double r = ref_float_op(x, y, op, first_only);
        if (pd > 1)
            r = r / pd;
        memcpy(out, &r, 8);
        return;
    }
    default:
        ref_int(out, a, b, i, dtype, op, pd, first_only);
    }
}

int ref_is_nan(const void *p, orb_dtype_t dtype)
{
    uint16_t h;
    switch (dtype) {
    case ORB_FLOAT16:
        memcpy(&h, p, 2);
        return (h & 0x7fff) > 0x7c00;
    case ORB_BFLOAT16:
        memcpy(&h, p, 2);
        return (h & 0x7fff) > 0x7f80;
    case ORB_FLOAT32: {
        float f;
        memcpy(&f, p, 4);
        return isnan(f);
    }
    case ORB_FLOAT64: {
        double d;
        memcpy(&d, p, 8);
        return isnan(d);
    }
    default:
        return 0;
    }
}
