/* Pseudo-random numbers for the trainer: xoshiro256** streams seeded through splitmix64.
 * Every random choice (initial weights, shuffles, dropout masks) derives from the run seed
 * plus a key, never from hidden state, so a resumed or re-sharded run draws the same numbers. */
#ifndef ORB_TRAIN_RNG_H
#define ORB_TRAIN_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} orb_train_rng_t;

/* Mixes words into one well-spread 64-bit key (splitmix64 finaliser per word). */
uint64_t orb_train_hash(uint64_t a, uint64_t b);
void orb_train_rng_seed(orb_train_rng_t *rng, uint64_t seed);
uint64_t orb_train_rng_next(orb_train_rng_t *rng);
/* Uniform in [0, 1) with 24 random bits: exactly representable as float. */
float orb_train_rng_uniform(orb_train_rng_t *rng);
/* Uniform integer in [0, n), unbiased. n > 0. */
uint64_t orb_train_rng_below(orb_train_rng_t *rng, uint64_t n);

#endif
