/* Reproducible test inputs with the edge cases of every dtype. */
#ifndef ORB_TEST_KERNELS_FILL_H
#define ORB_TEST_KERNELS_FILL_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.h"

#define NDT 10
extern const orb_dtype_t all_dtypes[NDT];

/* xorshift64*, fixed seed */
uint64_t rnd(void);
/* n random elements of dt: extremes for integers; for floats mostly moderate values (sums
 * and products stay finite, rounding is exercised), some raw bit patterns, the specials. */
void fill(void *buf, size_t n, orb_dtype_t dt);

#endif
