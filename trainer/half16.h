/* float32 <-> bfloat16 / float16 for the gradient buckets' 16-bit wire format (--grad-dtype),
 * both rounding to nearest even as torch's .to(torch.bfloat16) / .to(torch.float16) do. The
 * trainer is a program on orbit's public API, so it carries its own (liborbit's are internal). */
#ifndef ORB_TRAIN_HALF16_H
#define ORB_TRAIN_HALF16_H

#include <stddef.h>
#include <stdint.h>

/* to: n values of dtype (ORB_BFLOAT16 or ORB_FLOAT16) from x * scale. */
void orb_train_to16(uint16_t *to, const float *x, size_t n, float scale, int bf16);
/* back: the 16-bit values into float32. */
void orb_train_from16(float *x, const uint16_t *from, size_t n, int bf16);

#endif
