/* Element types and reduction ops as the benches name them, and element access by index
 * so the check pattern can be written and read in any dtype. */
#ifndef BENCH_DTYPE_H
#define BENCH_DTYPE_H

#include <stddef.h>

#include "orbit.h"

/* Accepts orbit's names (float32, bfloat16, ...) and nccl-tests' (float, half, ...). */
int bench_dtype_parse(const char *name, orb_dtype_t *dtype);
int bench_op_parse(const char *name, orb_op_t *op);
int bench_dtype_is_float(orb_dtype_t dtype);

/* Element i of buf as a double, and the reverse (rounded to nearest, even on ties). */
double bench_elem_load(orb_dtype_t dtype, const void *buf, size_t i);
void bench_elem_store(orb_dtype_t dtype, void *buf, size_t i, double value);

#endif
