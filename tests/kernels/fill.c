/* Test inputs for the kernel tests (CPU and CUDA). */
#include "fill.h"

#include <math.h>
#include <string.h>

#include "ref.h"

/* xorshift64*: reproducible inputs */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

const orb_dtype_t all_dtypes[NDT] = {ORB_INT8, ORB_UINT8, ORB_INT32, ORB_UINT32,
                                     ORB_INT64, ORB_UINT64, ORB_FLOAT16, ORB_BFLOAT16,
                                     ORB_FLOAT32, ORB_FLOAT64};

/* Random elements with the edge cases each type has: int extremes; for floats mostly
 * moderate values (so sums and products stay finite and rounding is exercised), some
 * raw bit patterns (subnormals, huge, NaN) and the specials. */
void fill(void *buf, size_t n, orb_dtype_t dt)
{
    size_t sz = orb_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd(), pick = rnd() % 16;
        unsigned char *p = (unsigned char *)buf + i * sz;
        switch (dt) {
        case ORB_FLOAT16:
        case ORB_BFLOAT16: {
            static const uint16_t sp16[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x0001, 0x8001,
                                            0x7bff, 0x3c00, 0x7f80, 0xff80, 0x7fc0, 0x7f7f};
            uint16_t h;
            if (pick == 0)
                h = sp16[r % (sizeof sp16 / sizeof sp16[0])];
            else if (pick < 5)
                h = (uint16_t)r;
            else { /* |v| in about [2^-4, 2^4): finite sums, products, quotients */
                float f = ldexpf((float)(r % 4096) / 4096.0f + 1.0f, (int)((r >> 20) % 8) - 4);
                f = (r >> 40) & 1 ? -f : f;
                uint32_t u;
                memcpy(&u, &f, 4);
                h = dt == ORB_FLOAT16 ? ref_half_round(f) : (uint16_t)(u >> 16);
            }
            memcpy(p, &h, 2);
            break;
        }
        case ORB_FLOAT32: {
            static const uint32_t sp32[] = {0x00000000, 0x80000000, 0x7f800000, 0xff800000,
                                            0x7fc00000, 0x00000001, 0x807fffff, 0x7f7fffff,
                                            0x7f800001};
            uint32_t u;
            if (pick == 0)
                u = sp32[r % (sizeof sp32 / sizeof sp32[0])];
            else if (pick < 4)
                u = (uint32_t)r;
            else {
                float f = ldexpf((float)(r & 0xffffff) / 16777216.0f + 1.0f, (int)((r >> 30) % 40) - 20);
                f = (r >> 50) & 1 ? -f : f;
                memcpy(&u, &f, 4);
            }
            memcpy(p, &u, 4);
            break;
        }
        case ORB_FLOAT64: {
            static const uint64_t sp64[] = {0, 0x8000000000000000u, 0x7ff0000000000000u,
                                            0xfff0000000000000u, 0x7ff8000000000000u, 1,
                                            0x7fefffffffffffffu};
            uint64_t u;
            if (pick == 0)
                u = sp64[r % (sizeof sp64 / sizeof sp64[0])];
            else if (pick < 4)
                u = r;
            else {
                double d = ldexp((double)(r >> 11) / 9007199254740992.0 + 1.0, (int)(rnd() % 80) - 40);
                d = rnd() & 1 ? -d : d;
                memcpy(&u, &d, 8);
            }
            memcpy(p, &u, 8);
            break;
        }
        default: {
            /* extremes often: they are where wrapping shows */
            uint64_t top = UINT64_C(1) << (sz * 8 - 1); /* sign bit of the element width */
            if (pick == 0)
                r = 0;
            else if (pick == 1)
                r = top - 1; /* largest signed */
            else if (pick == 2)
                r = top; /* smallest signed */
            else if (pick == 3)
                r = ~UINT64_C(0); /* -1, largest unsigned */
            memcpy(p, &r, sz); /* little-endian: the low bytes */
        }
        }
    }
}

