/* Independent reference for the kernel tests: values through double arithmetic and
 * ldexp, rounding to float16 / bfloat16 by searching a sorted table of every value the
 * format can hold. Shares no code with kernels/. */
#ifndef ORB_TEST_KERNELS_REF_H
#define ORB_TEST_KERNELS_REF_H

#include <stdint.h>

#include "orbit.h"

/* Value of a float16 / bfloat16 bit pattern, from its fields. */
double ref_half_value(uint16_t h);
double ref_bf16_value(uint16_t h);
/* Nearest float16 / bfloat16 pattern to v, ties to the even pattern; NaN gives 0x7e00 /
 * 0x7fc0 (callers compare NaN by class). */
uint16_t ref_half_round(double v);
uint16_t ref_bf16_round(double v);
void ref_init(void);

/* Expected bits of element i of post(op(a[i], b[i])) into out (element size bytes). */
void ref_reduce_elem(void *out, const void *a, const void *b, size_t i, orb_dtype_t dtype,
                     orb_op_t op, int postdiv, int first_only);

/* Whether the element at p is a NaN of a float dtype. */
int ref_is_nan(const void *p, orb_dtype_t dtype);

#endif
