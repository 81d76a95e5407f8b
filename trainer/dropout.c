/* Inverted dropout: kept activations are scaled by 1/(1-p) in training, identity in eval.
 * Each sample's mask is drawn from a stream keyed by (seed, step, dataset index, layer), not
 * by rank: a sample gets the same mask whichever rank processes it, which is what lets N
 * ranks reproduce a 1-rank run exactly (the DDP equivalence test) and a resumed run
 * reproduce an uninterrupted one. */
#include <math.h>
#include <stdlib.h>

#include "error.h"
#include "layer.h"

typedef struct {
    uint8_t *keep; /* max_batch x size */
} dropout_state_t;

static orb_status_t dropout_setup(orb_train_layer_t *l, int max_batch)
{
    if (!(l->drop_p >= 0.0f && l->drop_p < 1.0f))
        return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: dropout probability %g not in [0, 1)", l->name,
                              (double)l->drop_p);
    dropout_state_t *st = calloc(1, sizeof *st);
    if (st)
        st->keep = malloc((size_t)max_batch * orb_train_shape_size(l->in));
    if (!st || !st->keep) {
        free(st);
        return orb_train_fail(ORB_ERR_NO_MEMORY, "%s: out of memory", l->name);
    }
    l->state = st;
    l->out = l->in;
    l->nweights = l->nbias = 0;
    l->work_floats = 0;
    return ORB_OK;
}

static void dropout_forward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                            float *y)
{
    (void)w;
    dropout_state_t *st = l->state;
    size_t sz = orb_train_shape_size(l->in);
    if (!p->training || l->drop_p == 0.0f) {
        for (size_t i = 0; i < (size_t)p->n * sz; i++)
            y[i] = x[i];
        return;
    }
    float scale = 1.0f / (1.0f - l->drop_p);
    /* keep when u >= p: u has 24 bits, so compare integers to avoid a float per element */
    uint32_t thresh = (uint32_t)ceil((double)l->drop_p * 16777216.0);
    for (int b = 0; b < p->n; b++) {
        orb_train_rng_t rng;
        uint64_t key = orb_train_hash(orb_train_hash(p->seed, p->step), (uint64_t)p->sample_ids[b]);
        orb_train_rng_seed(&rng, orb_train_hash(key, (uint64_t)l->index));
        const float *xs = x + (size_t)b * sz;
        float *ys = y + (size_t)b * sz;
        uint8_t *keep = st->keep + (size_t)b * sz;
        size_t i = 0;
        for (; i + 1 < sz; i += 2) {
            uint64_t r = orb_train_rng_next(&rng);
            keep[i] = (uint32_t)(r >> 40) >= thresh;
            keep[i + 1] = (uint32_t)((r >> 8) & 0xffffff) >= thresh;
        }
        if (i < sz)
            keep[i] = (uint32_t)(orb_train_rng_next(&rng) >> 40) >= thresh;
        for (i = 0; i < sz; i++)
            ys[i] = xs[i] * ((float)keep[i] * scale);
    }
}

static void dropout_backward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                             const float *y, const float *dy, float *dx, float *dw)
{
    (void)w;
    (void)x;
    (void)y;
    (void)dw;
    if (!dx)
        return;
    const dropout_state_t *st = l->state;
    size_t n = (size_t)p->n * orb_train_shape_size(l->in);
    if (!p->training || l->drop_p == 0.0f) {
        for (size_t i = 0; i < n; i++)
            dx[i] = dy[i];
        return;
    }
    float scale = 1.0f / (1.0f - l->drop_p);
    const uint8_t *restrict keep = st->keep;
    for (size_t i = 0; i < n; i++)
        dx[i] = dy[i] * ((float)keep[i] * scale);
}

static void dropout_destroy(orb_train_layer_t *l)
{
    dropout_state_t *st = l->state;
    if (st)
        free(st->keep);
    free(st);
    l->state = NULL;
}

const orb_train_layer_ops_t orb_train_dropout_cpu_ops = {
    .kind = "dropout",
    .setup = dropout_setup,
    .init = NULL,
    .forward = dropout_forward,
    .backward = dropout_backward,
    .destroy = dropout_destroy,
};
