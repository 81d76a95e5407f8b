#include <math.h>

#include "layer.h"

void orb_train_layer_init_uniform(const orb_train_layer_t *l, float *w, orb_train_rng_t *rng)
{
    /* kaiming_uniform_(a=sqrt(5)) reduces to this bound; the bias uses the same one. */
    size_t fan_in = l->nweights / (size_t)l->out_c;
    float bound = 1.0f / sqrtf((float)fan_in);
    size_t n = l->nweights + l->nbias;
    for (size_t i = 0; i < n; i++)
        w[i] = (2.0f * orb_train_rng_uniform(rng) - 1.0f) * bound;
}
