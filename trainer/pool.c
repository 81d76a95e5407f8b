/* Max pooling, kernel k, stride s (0: k), padding pad (max_pool2d(x, k, s, pad): the padding
 * never wins). The gradient goes to the first maximum of each window in scan order, as
 * PyTorch's CPU kernel does; forward keeps its position (one byte per output) so backward is
 * a scatter. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "layer.h"

typedef struct {
    uint8_t *arg; /* max_batch x out: i * k + j of the window's first maximum */
} pool_state_t;

static orb_status_t pool_setup(orb_train_layer_t *l, int max_batch)
{
    int k = l->kernel, s = l->stride ? l->stride : k, pad = l->pad;
    if (k <= 0 || k > 15 || s <= 0 || pad < 0 || 2 * pad > k || l->in.h + 2 * pad < k || l->in.w + 2 * pad < k)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: %dx%d input too small for %dx%d pooling (stride %d, padding %d)",
                              l->name, l->in.h, l->in.w, k, k, s, pad);
    l->stride = s;
    l->out = (orb_train_shape_t){l->in.c, (l->in.h + 2 * pad - k) / s + 1, (l->in.w + 2 * pad - k) / s + 1};
    pool_state_t *st = calloc(1, sizeof *st);
    if (st)
        st->arg = malloc((size_t)max_batch * orb_train_shape_size(l->out));
    if (!st || !st->arg) {
        free(st);
        return orb_train_fail(ORB_ERR_NO_MEMORY, "%s: out of memory", l->name);
    }
    l->state = st;
    l->nweights = l->nbias = 0;
    l->work_floats = 0;
    return ORB_OK;
}

/* Any stride and padding (ResNet's 3x3 stride 2 padding 1): the window clipped to the image.
 * arg keeps i * k + j within the unclipped window. */
static void general_forward(orb_train_layer_t *l, int n, const float *x, float *y)
{
    pool_state_t *st = l->state;
    const int k = l->kernel, s = l->stride, pad = l->pad, H = l->in.h, W = l->in.w, oh = l->out.h, ow = l->out.w;
    const size_t planes = (size_t)n * (size_t)l->in.c;
    for (size_t pl = 0; pl < planes; pl++) {
        const float *src = x + pl * (size_t)H * W;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                int a = -1;
                float m = 0.0f;
                for (int i = 0; i < k; i++) {
                    const int iy = oy * s - pad + i;
                    if (iy < 0 || iy >= H)
                        continue;
                    for (int j = 0; j < k; j++) {
                        const int ix = ox * s - pad + j;
                        if (ix < 0 || ix >= W)
                            continue;
                        const float v = src[(size_t)iy * W + ix];
                        if (a < 0 || v > m) {
                            m = v;
                            a = i * k + j;
                        }
                    }
                }
                y[pl * (size_t)oh * ow + (size_t)oy * ow + ox] = m;
                st->arg[pl * (size_t)oh * ow + (size_t)oy * ow + ox] = (uint8_t)a;
            }
    }
}

static void pool_forward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                         float *y)
{
    (void)w;
    pool_state_t *st = l->state;
    int k = l->kernel, H = l->in.h, W = l->in.w, oh = l->out.h, ow = l->out.w;
    size_t planes = (size_t)p->n * (size_t)l->in.c;
    if (l->stride != k || l->pad) {
        general_forward(l, p->n, x, y);
        return;
    }
    for (size_t pl = 0; pl < planes; pl++) {
        const float *src = x + pl * (size_t)H * W;
        float *dst = y + pl * (size_t)oh * ow;
        uint8_t *arg = st->arg + pl * (size_t)oh * ow;
        for (int oy = 0; oy < oh; oy++) {
            const float *row = src + (size_t)oy * k * W;
            for (int ox = 0; ox < ow; ox++) {
                const float *win = row + (size_t)ox * k;
                float m = win[0];
                int a = 0;
                if (k == 2) {
                    /* strict > keeps the first maximum; selects, not branches */
                    float v1 = win[1], v2 = win[W], v3 = win[W + 1];
                    a = v1 > m ? 1 : a;
                    m = v1 > m ? v1 : m;
                    a = v2 > m ? 2 : a;
                    m = v2 > m ? v2 : m;
                    a = v3 > m ? 3 : a;
                    m = v3 > m ? v3 : m;
                } else {
                    for (int i = 0; i < k; i++)
                        for (int j = 0; j < k; j++)
                            if (win[(size_t)i * W + j] > m) {
                                m = win[(size_t)i * W + j];
                                a = i * k + j;
                            }
                }
                dst[(size_t)oy * ow + ox] = m;
                arg[(size_t)oy * ow + ox] = (uint8_t)a;
            }
        }
    }
}

static void pool_backward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                          const float *y, const float *dy, float *dx, float *dw)
{
    (void)w;
    (void)x;
    (void)y;
    (void)dw;
    if (!dx)
        return;
    const pool_state_t *st = l->state;
    int k = l->kernel, s = l->stride, pad = l->pad, H = l->in.h, W = l->in.w, oh = l->out.h, ow = l->out.w;
    size_t planes = (size_t)p->n * (size_t)l->in.c;
    memset(dx, 0, sizeof(float) * planes * (size_t)H * W);
    for (size_t pl = 0; pl < planes; pl++) {
        const float *g = dy + pl * (size_t)oh * ow;
        const uint8_t *arg = st->arg + pl * (size_t)oh * ow;
        float *d = dx + pl * (size_t)H * W;
        for (int oy = 0; oy < oh; oy++) {
            for (int ox = 0; ox < ow; ox++) {
                int a = arg[(size_t)oy * ow + ox];
                d[(size_t)(oy * s - pad + a / k) * W + (size_t)(ox * s - pad + a % k)] += g[(size_t)oy * ow + ox];
            }
        }
    }
}

static void pool_destroy(orb_train_layer_t *l)
{
    pool_state_t *st = l->state;
    if (st)
        free(st->arg);
    free(st);
    l->state = NULL;
}

const orb_train_layer_ops_t orb_train_maxpool_cpu_ops = {
    .kind = "maxpool",
    .setup = pool_setup,
    .init = NULL,
    .forward = pool_forward,
    .backward = pool_backward,
    .destroy = pool_destroy,
};
