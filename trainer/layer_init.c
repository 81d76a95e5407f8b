#include <math.h>

#include "layer.h"

void orb_train_layer_init_conv(const orb_train_layer_t *l, float *w, orb_train_rng_t *rng)
{
    if (!l->kaiming) {
        orb_train_layer_init_uniform(l, w, rng);
        return;
    }
    const double fan_out = (double)l->nweights / (double)l->in.c;
    const double std = sqrt(2.0 / fan_out);
    for (size_t i = 0; i < l->nweights; i += 2) { /* Box-Muller: two normals from two uniforms */
        double u1 = ((double)orb_train_rng_uniform(rng) + 0x1p-25), u2 = (double)orb_train_rng_uniform(rng);
        double r = sqrt(-2.0 * log(u1)), a = 6.283185307179586 * u2;
        w[i] = (float)(std * r * cos(a));
        if (i + 1 < l->nweights)
            w[i + 1] = (float)(std * r * sin(a));
    }
    for (size_t i = 0; i < l->nbias; i++)
        w[l->nweights + i] = 0.0f;
}

void orb_train_layer_init_uniform(const orb_train_layer_t *l, float *w, orb_train_rng_t *rng)
{
    /* kaiming_uniform_(a=sqrt(5)) reduces to this bound; the bias uses the same one. */
    size_t fan_in = l->nweights / (size_t)l->out_c;
    float bound = 1.0f / sqrtf((float)fan_in);
    size_t n = l->nweights + l->nbias;
    for (size_t i = 0; i < n; i++)
        w[i] = (2.0f * orb_train_rng_uniform(rng) - 1.0f) * bound;
}
