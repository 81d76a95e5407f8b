#include "rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t orb_train_hash(uint64_t a, uint64_t b)
{
    uint64_t x = a;
    uint64_t h = splitmix64(&x);
    x = h ^ b;
    return splitmix64(&x);
}

void orb_train_rng_seed(orb_train_rng_t *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t orb_train_rng_next(orb_train_rng_t *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

float orb_train_rng_uniform(orb_train_rng_t *rng)
{
    return (float)(orb_train_rng_next(rng) >> 40) * (1.0f / 16777216.0f);
}

uint64_t orb_train_rng_below(orb_train_rng_t *rng, uint64_t n)
{
    /* Rejection keeps the draw unbiased for any n. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do {
        r = orb_train_rng_next(rng);
    } while (r >= limit);
    return r % n;
}
