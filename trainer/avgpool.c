/* Global average pooling, C x H x W to C x 1 x 1 (AdaptiveAvgPool2d(1), the head of
 * ResNet). Each plane is summed in double, in order, and the mean rounded once to float;
 * backward spreads dy / (H*W) over the plane. */
#include "error.h"
#include "layer.h"

static orb_status_t avgpool_setup(orb_train_layer_t *l, int max_batch)
{
    (void)max_batch;
    if (l->in.c <= 0 || l->in.h <= 0 || l->in.w <= 0)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: empty %dx%dx%d input", l->name, l->in.c, l->in.h,
                              l->in.w);
    l->out = (orb_train_shape_t){l->in.c, 1, 1};
    l->nweights = l->nbias = 0;
    l->work_floats = 0;
    return ORB_OK;
}

static void avgpool_forward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w,
                            const float *restrict x, float *restrict y)
{
    (void)w;
    size_t hw = (size_t)l->in.h * (size_t)l->in.w, planes = (size_t)p->n * (size_t)l->in.c;
    for (size_t pl = 0; pl < planes; pl++) {
        const float *src = x + pl * hw;
        double s = 0.0;
        for (size_t i = 0; i < hw; i++)
            s += (double)src[i];
        y[pl] = (float)(s / (double)hw);
    }
}

static void avgpool_backward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                             const float *y, const float *restrict dy, float *restrict dx, float *dw)
{
    (void)w;
    (void)x;
    (void)y;
    (void)dw;
    if (!dx)
        return;
    size_t hw = (size_t)l->in.h * (size_t)l->in.w, planes = (size_t)p->n * (size_t)l->in.c;
    for (size_t pl = 0; pl < planes; pl++) {
        float g = dy[pl] / (float)hw;
        float *d = dx + pl * hw;
        for (size_t i = 0; i < hw; i++)
            d[i] = g;
    }
}

const orb_train_layer_ops_t orb_train_avgpool_cpu_ops = {
    .kind = "avgpool",
    .setup = avgpool_setup,
    .init = NULL,
    .forward = avgpool_forward,
    .backward = avgpool_backward,
    .destroy = NULL,
};
