/* float16 / bfloat16 <-> float32 by bit manipulation, exact IEEE with round to nearest
 * even. Written with selects only (no branches) so that loops calling them vectorise.
 * NaN handling matches x86 F16C (VCVTPH2PS / VCVTPS2PH): the quiet bit is set and the
 * payload keeps its top bits. */
#ifndef ORB_KERNELS_HALF_H
#define ORB_KERNELS_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t orb_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float orb_f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float orb_h2f(uint16_t h)
{
    /* signed 32-bit lanes throughout: SSE2 has signed compares only */
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    int32_t ah = h & 0x7fff;
    int32_t normal = (ah << 13) + 0x38000000;              /* rebias 15 -> 127 */
    int32_t special = ((ah << 13) + 0x70000000)            /* exponent 31 -> 255 */
                      | (ah > 0x7c00 ? 0x00400000 : 0);    /* NaN: set quiet bit */
    /* subnormal (and zero): mantissa * 2^-24 is exact in float32 */
    int32_t sub = (int32_t)orb_f32_bits((float)(ah & 0x3ff) * 0x1p-24f);
    int32_t r = ah < 0x0400 ? sub : (ah >= 0x7c00 ? special : normal);
    return orb_f32_of_bits(sign | (uint32_t)r);
}

/* keep_payload: 1 for the exact conversion (F16C's NaN rule), 0 for the kernels' single
 * quiet NaN 0x7e00 (see orb_f2h_kernel). A constant at every call, so it folds away. */
static inline uint16_t orb_f2h_nan(float f, int keep_payload)
{
    /* signed 32-bit lanes throughout (|x| < 2^31): SSE2 has signed compares only */
    uint32_t x = orb_f32_bits(f);
    int32_t sign = (int32_t)((x >> 16) & 0x8000u);
    int32_t ax = (int32_t)(x & 0x7fffffffu);
    /* normal range: rebias, add the rounding increment (ties to even), drop 13 bits;
     * anything that rounds past 65504 (or is inf) clamps to the inf pattern. Below the
     * normal range the difference is negative and the result unused. */
    int32_t normal = (ax - 0x38000000 + 0x0fff + ((ax >> 13) & 1)) >> 13;
    normal = normal > 0x7c00 ? 0x7c00 : normal;
    /* below 2^-14: adding 0.5 makes the FPU round at the subnormal-half spacing 2^-24 */
    int32_t sub = (int32_t)orb_f32_bits(orb_f32_of_bits((uint32_t)ax) + 0.5f) - 0x3f000000;
    int32_t nan = keep_payload ? sign | 0x7e00 | ((ax >> 13) & 0x03ff) : 0x7e00;
    int32_t r = ax < 0x38800000 ? sub : normal;
    return (uint16_t)(ax > 0x7f800000 ? nan : sign | r);
}

static inline uint16_t orb_f2h(float f)
{
    return orb_f2h_nan(f, 1);
}

/* Kernel results: every NaN becomes 0x7e00. Which operand's NaN an add or multiply
 * returns depends on the operand order the compiler picked, so payloads cannot be
 * promised; one canonical NaN keeps every flavour bit-identical. */
static inline uint16_t orb_f2h_kernel(float f)
{
    return orb_f2h_nan(f, 0);
}

static inline float orb_b2f(uint16_t b)
{
    return orb_f32_of_bits((uint32_t)b << 16);
}

static inline uint16_t orb_f2b_nan(float f, int keep_payload)
{
    uint32_t x = orb_f32_bits(f);
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16; /* overflow carries into inf */
    uint32_t nan = keep_payload ? (x >> 16) | 0x0040u : 0x7fc0u; /* quiet; never inf */
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

static inline uint16_t orb_f2b(float f)
{
    return orb_f2b_nan(f, 1);
}

/* Kernel results: every NaN becomes 0x7fc0 (as orb_f2h_kernel). */
static inline uint16_t orb_f2b_kernel(float f)
{
    return orb_f2b_nan(f, 0);
}

#endif
