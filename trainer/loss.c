#include "loss.h"

#include <string.h>

double orb_train_nll_loss(const float *logp, const int32_t *labels, int n, int nclasses, float *dlogp)
{
    double loss = 0.0;
    float g = -1.0f / (float)n;
    if (dlogp)
        memset(dlogp, 0, sizeof(float) * (size_t)n * (size_t)nclasses);
    for (int b = 0; b < n; b++) {
        loss -= logp[(size_t)b * nclasses + labels[b]];
        if (dlogp)
            dlogp[(size_t)b * nclasses + labels[b]] = g;
    }
    return loss / n;
}
