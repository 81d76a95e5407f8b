#include "optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

orb_status_t orb_train_optim_create(orb_train_optim_kind_t kind, size_t n, float momentum,
                                    orb_train_optim_t **out)
{
    orb_train_optim_t *o = calloc(1, sizeof *o);
    if (!o)
        return orb_train_fail(ORB_ERR_NO_MEMORY, "optimiser: out of memory");
    o->kind = kind;
    o->n = n;
    o->momentum = momentum;
    o->beta1 = 0.9f;
    o->beta2 = 0.999f;
    o->eps = 1e-8f;
    o->nstate = kind == ORB_TRAIN_ADAM ? 2 : (momentum != 0.0f ? 1 : 0);
    for (int i = 0; i < o->nstate; i++) {
        o->state[i] = calloc(n ? n : 1, sizeof(float));
        if (!o->state[i]) {
            orb_train_optim_destroy(o);
            return orb_train_fail(ORB_ERR_NO_MEMORY, "optimiser: cannot allocate %zu floats", n);
        }
    }
    *out = o;
    return ORB_OK;
}

void orb_train_optim_destroy(orb_train_optim_t *o)
{
    if (!o)
        return;
    free(o->state[0]);
    free(o->state[1]);
    free(o);
}

static void sgd_step(orb_train_optim_t *o, float *restrict p, const float *restrict g, float lr)
{
    size_t n = o->n;
    if (o->nstate == 0) {
        for (size_t i = 0; i < n; i++)
            p[i] -= lr * g[i];
        return;
    }
    float *restrict buf = o->state[0];
    float mom = o->momentum;
    if (o->t == 0) {
        /* torch starts the buffer as a copy of the first gradient */
        for (size_t i = 0; i < n; i++) {
            buf[i] = g[i];
            p[i] -= lr * buf[i];
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        buf[i] = mom * buf[i] + g[i];
        p[i] -= lr * buf[i];
    }
}

static void adam_step(orb_train_optim_t *o, float *restrict p, const float *restrict g, float lr)
{
    float *restrict m = o->state[0], *restrict v = o->state[1];
    float b1 = o->beta1, b2 = o->beta2;
    double t = (double)o->t + 1.0;
    float bc1 = (float)(1.0 - pow((double)b1, t));
    float bc2_sqrt = (float)sqrt(1.0 - pow((double)b2, t));
    float step = lr / bc1;
    for (size_t i = 0; i < o->n; i++) {
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        float denom = sqrtf(v[i]) / bc2_sqrt + o->eps;
        p[i] -= step * m[i] / denom;
    }
}

void orb_train_optim_step(orb_train_optim_t *o, float *params, const float *grads, float lr)
{
    if (o->kind == ORB_TRAIN_ADAM)
        adam_step(o, params, grads, lr);
    else
        sgd_step(o, params, grads, lr);
    o->t++;
}

float orb_train_lr_at(float lr0, int step_size, float gamma, int64_t epoch)
{
    if (step_size <= 0)
        return lr0;
    return (float)((double)lr0 * pow((double)gamma, (double)(epoch / step_size)));
}
