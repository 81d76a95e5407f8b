#include "elementwise.h"
#include "layer.h"

static orb_status_t relu_setup(orb_train_layer_t *l, int max_batch)
{
    (void)max_batch;
    l->out = l->in;
    l->nweights = l->nbias = 0;
    l->work_floats = 0;
    return ORB_OK;
}

static void relu_forward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *restrict x,
                         float *restrict y)
{
    (void)w;
    size_t n = (size_t)p->n * orb_train_shape_size(l->in);
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static void relu_backward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                          const float *restrict y, const float *restrict dy, float *restrict dx, float *dw)
{
    (void)w;
    (void)x;
    (void)dw;
    if (!dx)
        return;
    orb_train_relu_grad(dx, dy, y, (size_t)p->n * orb_train_shape_size(l->in));
}

const orb_train_layer_ops_t orb_train_relu_cpu_ops = {
    .kind = "relu",
    .setup = relu_setup,
    .init = NULL,
    .forward = relu_forward,
    .backward = relu_backward,
    .destroy = NULL,
};
