#include "elementwise.h"

#include "simd.h"

ORB_TRAIN_CLONES
void orb_train_add_into(float *restrict d, const float *restrict s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] += s[i];
}

ORB_TRAIN_CLONES
void orb_train_add_relu(float *restrict y, const float *restrict a, const float *restrict b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = a[i] + b[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

ORB_TRAIN_CLONES
void orb_train_relu_grad(float *restrict d, const float *restrict dy, const float *restrict y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}
