/* log_softmax over the features of each sample. Both models end in it and the loss is the
 * negative log-likelihood (loss.c): for LeNet the pair is exactly CrossEntropyLoss. */
#include <math.h>

#include "layer.h"

static orb_status_t logsoftmax_setup(orb_train_layer_t *l, int max_batch)
{
    (void)max_batch;
    l->out = l->in;
    l->nweights = l->nbias = 0;
    l->work_floats = 0;
    return ORB_OK;
}

static void logsoftmax_forward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w,
                               const float *x, float *y)
{
    (void)w;
    size_t sz = orb_train_shape_size(l->in);
    for (int b = 0; b < p->n; b++) {
        const float *xs = x + (size_t)b * sz;
        float *ys = y + (size_t)b * sz;
        float m = xs[0];
        for (size_t i = 1; i < sz; i++)
            m = xs[i] > m ? xs[i] : m;
        double s = 0.0;
        for (size_t i = 0; i < sz; i++)
            s += exp((double)(xs[i] - m));
        float lse = m + (float)log(s);
        for (size_t i = 0; i < sz; i++)
            ys[i] = xs[i] - lse;
    }
}

/* dx = dy - softmax(x) * sum(dy) */
static void logsoftmax_backward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w,
                                const float *x, const float *y, const float *dy, float *dx, float *dw)
{
    (void)w;
    (void)x;
    (void)dw;
    if (!dx)
        return;
    size_t sz = orb_train_shape_size(l->in);
    for (int b = 0; b < p->n; b++) {
        const float *ys = y + (size_t)b * sz, *g = dy + (size_t)b * sz;
        float *d = dx + (size_t)b * sz;
        float s = 0.0f;
        for (size_t i = 0; i < sz; i++)
            s += g[i];
        for (size_t i = 0; i < sz; i++)
            d[i] = g[i] - expf(ys[i]) * s;
    }
}

const orb_train_layer_ops_t orb_train_logsoftmax_cpu_ops = {
    .kind = "logsoftmax",
    .setup = logsoftmax_setup,
    .init = NULL,
    .forward = logsoftmax_forward,
    .backward = logsoftmax_backward,
    .destroy = NULL,
};
