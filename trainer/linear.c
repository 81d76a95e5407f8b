/* Fully connected layer, y = x W^T + b with W stored out x in (PyTorch's layout), so a
 * checkpoint's weights read the same as a state_dict's. Input shapes flatten implicitly. */
#include <cblas.h>
#include <string.h>

#include "error.h"
#include "layer.h"

static orb_status_t linear_setup(orb_train_layer_t *l, int max_batch)
{
    (void)max_batch;
    if (l->out_c <= 0)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: %d output features", l->name, l->out_c);
    l->out = (orb_train_shape_t){l->out_c, 1, 1};
    l->nweights = (size_t)l->out_c * orb_train_shape_size(l->in);
    l->nbias = (size_t)l->out_c;
    l->work_floats = 0;
    return ORB_OK;
}

static void linear_forward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                           float *y)
{
    int in = (int)orb_train_shape_size(l->in), out = l->out_c;
    const float *bias = w + l->nweights;
    for (int b = 0; b < p->n; b++)
        memcpy(y + (size_t)b * out, bias, sizeof(float) * (size_t)out);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, p->n, out, in, 1.0f, x, in, w, in, 1.0f, y, out);
}

static void linear_backward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                            const float *y, const float *dy, float *dx, float *dw)
{
    (void)y;
    int in = (int)orb_train_shape_size(l->in), out = l->out_c;
    float *db = dw + l->nweights;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, p->n, 1.0f, dy, out, x, in, 0.0f, dw, in);
    memset(db, 0, sizeof(float) * (size_t)out);
    for (int b = 0; b < p->n; b++)
        for (int o = 0; o < out; o++)
            db[o] += dy[(size_t)b * out + o];
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p->n, in, out, 1.0f, dy, out, w, in, 0.0f, dx,
                    in);
}

const orb_train_layer_ops_t orb_train_linear_cpu_ops = {
    .kind = "linear",
    .setup = linear_setup,
    .init = orb_train_layer_init_uniform,
    .forward = linear_forward,
    .backward = linear_backward,
    .destroy = NULL,
};
