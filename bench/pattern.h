/* The --check data: every rank's input element is a small integer chosen so that the
 * exact result of the collective is known in every dtype (sums stay below 2^8, exact
 * even in bfloat16 and int8 for up to 42 ranks). */
#ifndef BENCH_PATTERN_H
#define BENCH_PATTERN_H

#include <stddef.h>

#include "orbit.h"

/* op for data that is moved, not reduced (broadcast, gather, ...). */
#define BENCH_OP_NONE (-1)
/* Written to the output before the checked call, so elements it never writes count
 * as wrong. Outside every pattern's range for fewer than 41 ranks. */
#define BENCH_SENTINEL 123.0

/* Input element i on rank, for a collective reducing with op (or BENCH_OP_NONE). */
double bench_pattern_input(int op, int rank, int nranks, size_t i);
/* Element i reduced with op over all nranks ranks' inputs. */
double bench_pattern_reduced(orb_op_t op, int nranks, size_t i);
/* Whether got is the right answer: exact, except avg in floating point, which
 * libraries may compute as a pre-scaled sum and so round differently. */
int bench_pattern_matches(orb_dtype_t dtype, int op, double got, double want);

#endif
