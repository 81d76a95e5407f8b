#include "dtype.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static const struct {
    const char *name;
    orb_dtype_t dtype;
} dtype_aliases[] = {
    {"int8", ORB_INT8},       {"char", ORB_INT8},         {"uint8", ORB_UINT8},
    {"int32", ORB_INT32},     {"int", ORB_INT32},         {"uint32", ORB_UINT32},
    {"int64", ORB_INT64},     {"uint64", ORB_UINT64},     {"float16", ORB_FLOAT16},
    {"half", ORB_FLOAT16},    {"bfloat16", ORB_BFLOAT16}, {"bf16", ORB_BFLOAT16},
    {"float32", ORB_FLOAT32}, {"float", ORB_FLOAT32},     {"float64", ORB_FLOAT64},
    {"double", ORB_FLOAT64},
};

int bench_dtype_parse(const char *name, orb_dtype_t *dtype)
{
    for (size_t i = 0; i < sizeof(dtype_aliases) / sizeof(dtype_aliases[0]); i++) {
        if (strcmp(name, dtype_aliases[i].name) == 0) {
            *dtype = dtype_aliases[i].dtype;
            return 0;
        }
    }
    return -1;
}

int bench_op_parse(const char *name, orb_op_t *op)
{
    for (int i = 0; i < ORB_NUM_OPS; i++) {
        if (strcmp(name, orb_op_name((orb_op_t)i)) == 0) {
            *op = (orb_op_t)i;
            return 0;
        }
    }
    return -1;
}

int bench_dtype_is_float(orb_dtype_t dtype)
{
    return dtype == ORB_FLOAT16 || dtype == ORB_BFLOAT16 || dtype == ORB_FLOAT32 ||
           dtype == ORB_FLOAT64;
}

static uint32_t f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    return x;
}

static float f32_from_bits(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

/* IEEE binary16 <-> binary32. Written out rather than relying on _Float16, which
 * neither every compiler nor every target here has. */
static uint16_t f16_from_f32(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    int32_t fexp = (int32_t)((x >> 23) & 0xffu);
    uint32_t mant = x & 0x7fffffu;
    int32_t exp = fexp - 127 + 15;

    if (fexp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) { /* subnormal half: value = h * 2^-24 */
        if (exp < -10)
            return sign;
        uint32_t full = mant | 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = full >> shift;
        uint32_t rem = full & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is the right rounding */
    return (uint16_t)(sign | h);
}

static float f32_from_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (exp == 0) {
        float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    if (exp == 31)
        return f32_from_bits(sign | 0x7f800000u | (mant << 13));
    return f32_from_bits(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

static uint16_t bf16_from_f32(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* keep NaN a NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float f32_from_bf16(uint16_t h)
{
    return f32_from_bits((uint32_t)h << 16);
}

double bench_elem_load(orb_dtype_t dtype, const void *buf, size_t i)
{
    switch (dtype) {
    case ORB_INT8: return ((const int8_t *)buf)[i];
    case ORB_UINT8: return ((const uint8_t *)buf)[i];
    case ORB_INT32: return ((const int32_t *)buf)[i];
    case ORB_UINT32: return ((const uint32_t *)buf)[i];
    case ORB_INT64: return (double)((const int64_t *)buf)[i];
    case ORB_UINT64: return (double)((const uint64_t *)buf)[i];
    case ORB_FLOAT16: return f32_from_f16(((const uint16_t *)buf)[i]);
    case ORB_BFLOAT16: return f32_from_bf16(((const uint16_t *)buf)[i]);
    case ORB_FLOAT32: return ((const float *)buf)[i];
    case ORB_FLOAT64: return ((const double *)buf)[i];
    default: return NAN;
    }
}

void bench_elem_store(orb_dtype_t dtype, void *buf, size_t i, double v)
{
    switch (dtype) {
    case ORB_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case ORB_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case ORB_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case ORB_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case ORB_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case ORB_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case ORB_FLOAT16: ((uint16_t *)buf)[i] = f16_from_f32((float)v); break;
    case ORB_BFLOAT16: ((uint16_t *)buf)[i] = bf16_from_f32((float)v); break;
    case ORB_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case ORB_FLOAT64: ((double *)buf)[i] = v; break;
    default: break;
    }
}
