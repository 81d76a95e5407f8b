/* CPU reduction and copy kernels, one pass over memory.
 *
 * Every kernel takes element counts. Destinations may alias a source exactly (in-place)
 * but must not overlap it partially. dst2 may be NULL: the fused forms write the same
 * result to two places (the output and the next peer's slot) in one pass.
 * postdiv > 1 divides each result by postdiv before it is stored (avg); 0 or 1: no division.
 * float16 / bfloat16 are computed in float32 and rounded once (to nearest even) per call.
 * Integer sum/prod wrap (two's complement), integer avg truncates toward zero.
 * For ORB_AVG the element-wise op is sum. */
#ifndef ORB_KERNELS_REDUCE_H
#define ORB_KERNELS_REDUCE_H

#include <stddef.h>

#include "orbit.h"

/* dst1[i] (and dst2[i]) = post(op(a[i], b[i])) */
void orb_kernel_reduce(void *dst1, void *dst2, const void *a, const void *b, size_t n,
                       orb_dtype_t dtype, orb_op_t op, int postdiv);

/* dst1[i] (and dst2[i]) = post(src[i]); a plain memcpy when postdiv <= 1. */
void orb_kernel_copy(void *dst1, void *dst2, const void *src, size_t n, orb_dtype_t dtype,
                     int postdiv);

/* orb_kernel_copy, with dst1 written by non-temporal stores where the CPU has them (x86):
 * for outputs larger than the last-level cache. Ends with a store fence. */
void orb_kernel_copy_stream(void *dst1, void *dst2, const void *src, size_t n, orb_dtype_t dtype,
                            int postdiv);

/* Scalar conversions, exposed for tests and the trainer (round to nearest even). */
float orb_half_to_float(unsigned short h);
unsigned short orb_float_to_half(float f);
float orb_bf16_to_float(unsigned short h);
unsigned short orb_float_to_bf16(float f);

/* Which implementation the kernels picked on this CPU ("f16c", "portable"). */
const char *orb_kernel_half_impl(void);

/* Tests and benchmarks: use one flavour from now on: "portable" (baseline ISA, float16 by
 * bit manipulation), "f16c" (AVX2 + F16C) or "auto" / NULL (the best this CPU runs).
 * ORB_ERR_UNSUPPORTED when this CPU or build lacks it. Do not call while kernels run. */
orb_status_t orb_kernel_half_select(const char *impl);

#endif
