/* Element-wise loops shared by the layers (elementwise.c), each built for the baseline ISA
 * and AVX2 (simd.h). The ReLU mask is a select, never a branch: it is taken at random, and a
 * branch per element mispredicts half the time. */
#ifndef ORB_TRAIN_ELEMENTWISE_H
#define ORB_TRAIN_ELEMENTWISE_H

#include <stddef.h>

/* d[i] += s[i] */
void orb_train_add_into(float *restrict d, const float *restrict s, size_t n);
/* y[i] = max(0, a[i] + b[i]): a residual addition and its ReLU */
void orb_train_add_relu(float *restrict y, const float *restrict a, const float *restrict b, size_t n);
/* d[i] = y[i] > 0 ? dy[i] : 0: through a ReLU whose output was y (derivative 0 at 0, as
 * PyTorch's threshold_backward) */
void orb_train_relu_grad(float *restrict d, const float *restrict dy, const float *restrict y, size_t n);

#endif
