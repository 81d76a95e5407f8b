#include "half16.h"

#include <math.h>
#include <string.h>

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t to_bf16(float f)
{
    uint32_t u = bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN stays a (quiet) NaN */
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even on the dropped 16 bits */
    return (uint16_t)(u >> 16);
}

static uint16_t to_fp16(float f)
{
    uint32_t u = bits(f), sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u) /* rounds to >= 65520: infinity, as torch does */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* below 2^-14: a subnormal, rounded by the float hardware */
        float s = from_bits(a) * 0x1p24f; /* units of 2^-24 */
        return (uint16_t)(sign | (uint32_t)nearbyintf(s));
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - (112u << 23); /* rebias 127 -> 15, round to even */
    return (uint16_t)(sign | (r >> 13));
}

static float from_fp16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0)
        return from_bits(sign) + (sign ? -1.0f : 1.0f) * (float)m * 0x1p-24f;
    if (e == 31)
        return from_bits(sign | 0x7f800000u | (m << 13));
    return from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

void orb_train_to16(uint16_t *to, const float *x, size_t n, float scale, int bf16)
{
    if (bf16)
        for (size_t i = 0; i < n; i++)
            to[i] = to_bf16(x[i] * scale);
    else
        for (size_t i = 0; i < n; i++)
            to[i] = to_fp16(x[i] * scale);
}

void orb_train_from16(float *x, const uint16_t *from, size_t n, int bf16)
{
    if (bf16)
        for (size_t i = 0; i < n; i++)
            x[i] = from_bits((uint32_t)from[i] << 16);
    else
        for (size_t i = 0; i < n; i++)
            x[i] = from_fp16(from[i]);
}
