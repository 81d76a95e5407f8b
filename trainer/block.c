/* A residual block of torchvision's ResNet as one layer of the sequential model, so that the
 * model, the DDP buckets (ranges of the flat parameter buffer) and the gradient hook stay as
 * they are:
 *
 *   basic (expansion 1):       conv3x3(stride) bn relu conv3x3 bn        + shortcut, relu
 *   bottleneck (expansion 4):  conv1x1 bn relu conv3x3(stride) bn relu conv1x1 bn + shortcut, relu
 *   shortcut: the input itself, or conv1x1(stride) bn when the shape changes (torchvision's
 *             downsample)
 *
 * l->out_c is the block's width ("planes"), l->stride its stride, l->kernel its expansion (1 or
 * 4); the output has out_c * expansion channels. The sub-layers' parameters lie one after the
 * other in the block's part of the parameter buffer (weights then bias of each, in the order
 * above, the order of torchvision's parameters()), their running statistics likewise in the
 * block's buffers. Convolutions have no bias and Kaiming init; batch norms fuse the ReLU that
 * follows them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "elementwise.h"
#include "layer.h"

#define BLOCK_MAX_SUB 5 /* bottleneck: 3 convs + downsample conv, and their batch norms: 8 */

typedef struct {
    orb_train_layer_t sub[2 * BLOCK_MAX_SUB];
    int nmain, nsub;  /* sub[0..nmain): main path; sub[nmain..nsub): the shortcut (or none) */
    float *act[2 * BLOCK_MAX_SUB]; /* each sub-layer's output, max_batch samples */
    float *g[2];      /* gradient ping-pong, the widest activation */
    float *dsum;      /* d(loss)/d(main + shortcut) */
    float *dsc;       /* the shortcut's dx */
} block_state_t;

static void *alloc_floats(size_t n)
{
    return calloc(n ? n : 1, sizeof(float));
}

/* The next sub-layer, its input shape the previous one's output (or in). */
static orb_train_layer_t *add(block_state_t *st, const orb_train_layer_ops_t *ops, const char *name,
                              orb_train_shape_t in, int out_c, int kernel, int stride, int relu)
{
    orb_train_layer_t *s = &st->sub[st->nsub++];
    memset(s, 0, sizeof *s);
    s->ops = ops;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->in = in;
    s->out_c = out_c;
    s->kernel = kernel;
    s->stride = stride;
    s->pad = kernel / 2;
    s->relu = relu;
    s->kaiming = 1;
    s->no_bias = 1;
    return s;
}

static orb_status_t block_setup(orb_train_layer_t *l, int max_batch)
{
    const int exp = l->kernel ? l->kernel : 1, planes = l->out_c, stride = l->stride ? l->stride : 1;
    if (exp != 1 && exp != 4)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: expansion %d (1: basic block, 4: bottleneck)", l->name, exp);
    block_state_t *st = calloc(1, sizeof *st);
    if (!st)
        return orb_train_fail(ORB_ERR_NO_MEMORY, "%s: out of memory", l->name);
    l->state = st;
    const orb_train_layer_ops_t *conv = &orb_train_conv_cpu_ops, *bn = &orb_train_batchnorm_cpu_ops;
    /* the main path, each sub-layer set up as it is added: the next one's input is its output */
    const struct {
        int is_bn, out_c, kernel, stride, relu;
        const char *name;
    } basic[] = {{0, planes, 3, stride, 0, "conv1"}, {1, 0, 0, 0, 1, "bn1"},
                 {0, planes, 3, 1, 0, "conv2"},      {1, 0, 0, 0, 0, "bn2"}},
      bottleneck[] = {{0, planes, 1, 1, 0, "conv1"},      {1, 0, 0, 0, 1, "bn1"}, {0, planes, 3, stride, 0, "conv2"},
                      {1, 0, 0, 0, 1, "bn2"},             {0, planes * 4, 1, 1, 0, "conv3"}, {1, 0, 0, 0, 0, "bn3"}};
    const int nmain = exp == 1 ? 4 : 6;
    for (int i = 0; i < nmain; i++) {
        const __typeof__(basic[0]) *d = exp == 1 ? &basic[i] : &bottleneck[i];
        orb_train_layer_t *s = add(st, d->is_bn ? bn : conv, d->name, st->nsub ? st->sub[st->nsub - 1].out : l->in,
                                   d->out_c, d->kernel, d->stride, d->relu);
        orb_status_t r = s->ops->setup(s, max_batch);
        if (r != ORB_OK)
            return r;
    }
    st->nmain = st->nsub;
    l->out = st->sub[st->nmain - 1].out;
    if (l->out.c != l->in.c || l->out.h != l->in.h || l->out.w != l->in.w) {
        orb_train_layer_t *c = add(st, conv, "downsample.0", l->in, l->out.c, 1, stride, 0);
        orb_status_t s = c->ops->setup(c, max_batch);
        if (s != ORB_OK)
            return s;
        orb_train_layer_t *b = add(st, bn, "downsample.1", c->out, 0, 0, 0, 0);
        if ((s = b->ops->setup(b, max_batch)) != ORB_OK)
            return s;
        if (b->out.h != l->out.h || b->out.w != l->out.w)
            return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: shortcut %dx%d against the main path's %dx%d", l->name,
                                  b->out.h, b->out.w, l->out.h, l->out.w);
    }
    size_t nparams = 0, nbuf = 0, work = 0, widest = orb_train_shape_size(l->in);
    for (int i = 0; i < st->nsub; i++) {
        orb_train_layer_t *s = &st->sub[i];
        s->param_off = nparams;
        s->buffer_off = nbuf;
        nparams += orb_train_layer_nparams(s);
        nbuf += s->nbuffers;
        work = s->work_floats > work ? s->work_floats : work;
        size_t sz = orb_train_shape_size(s->out);
        widest = sz > widest ? sz : widest;
        if (!(st->act[i] = alloc_floats(sz * (size_t)max_batch)))
            return orb_train_fail(ORB_ERR_NO_MEMORY, "%s: out of memory", l->name);
    }
    const size_t per = widest * (size_t)max_batch, out = orb_train_shape_size(l->out) * (size_t)max_batch;
    st->g[0] = alloc_floats(per);
    st->g[1] = alloc_floats(per);
    st->dsum = alloc_floats(out);
    st->dsc = alloc_floats(orb_train_shape_size(l->in) * (size_t)max_batch);
    if (!st->g[0] || !st->g[1] || !st->dsum || !st->dsc)
        return orb_train_fail(ORB_ERR_NO_MEMORY, "%s: out of memory", l->name);
    l->nweights = nparams; /* one tensor: the sub-layers' weights and biases in order */
    l->nbias = 0;
    l->nbuffers = nbuf;
    l->work_floats = work;
    return ORB_OK;
}

/* The model places the block's buffers after setup: hand each sub-layer its part. */
static void place_buffers(orb_train_layer_t *l)
{
    block_state_t *st = l->state;
    for (int i = 0; i < st->nsub; i++)
        st->sub[i].buffers = st->sub[i].nbuffers && l->buffers ? l->buffers + st->sub[i].buffer_off : NULL;
}

static void block_init(const orb_train_layer_t *l, float *w, orb_train_rng_t *rng)
{
    place_buffers((orb_train_layer_t *)l);
    block_state_t *st = l->state;
    for (int i = 0; i < st->nsub; i++)
        if (st->sub[i].ops->init)
            st->sub[i].ops->init(&st->sub[i], w + st->sub[i].param_off, rng);
}

static void block_forward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                          float *y)
{
    block_state_t *st = l->state;
    place_buffers(l);
    const float *in = x;
    for (int i = 0; i < st->nmain; i++) {
        st->sub[i].ops->forward(&st->sub[i], p, w + st->sub[i].param_off, in, st->act[i]);
        in = st->act[i];
    }
    const float *sc = x;
    for (int i = st->nmain; i < st->nsub; i++) {
        st->sub[i].ops->forward(&st->sub[i], p, w + st->sub[i].param_off, sc, st->act[i]);
        sc = st->act[i];
    }
    const float *main = st->act[st->nmain - 1];
    orb_train_add_relu(y, main, sc, (size_t)p->n * orb_train_shape_size(l->out));
}

/* Backward through sub-layers [from, to) in reverse, starting from dy; dx (may be NULL) gets
 * the gradient of the first one's input x. */
static void backward_path(block_state_t *st, const orb_train_pass_t *p, const float *w, int from, int to,
                          const float *x, const float *dy, float *dx, float *dw)
{
    int cur = 0;
    const float *g = dy;
    for (int i = to - 1; i >= from; i--) {
        orb_train_layer_t *s = &st->sub[i];
        const float *sin = i == from ? x : st->act[i - 1];
        float *gout = i == from ? dx : st->g[cur];
        s->ops->backward(s, p, w + s->param_off, sin, st->act[i], g, gout, dw + s->param_off);
        g = gout;
        cur = 1 - cur;
    }
}

static void block_backward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                           const float *y, const float *dy, float *dx, float *dw)
{
    block_state_t *st = l->state;
    const size_t n = (size_t)p->n * orb_train_shape_size(l->out);
    orb_train_relu_grad(st->dsum, dy, y, n); /* through the final ReLU */
    backward_path(st, p, w, 0, st->nmain, x, st->dsum, dx, dw);
    if (st->nsub > st->nmain) {
        backward_path(st, p, w, st->nmain, st->nsub, x, st->dsum, dx ? st->dsc : NULL, dw);
        if (dx)
            orb_train_add_into(dx, st->dsc, (size_t)p->n * orb_train_shape_size(l->in));
    } else if (dx) {
        orb_train_add_into(dx, st->dsum, n); /* identity shortcut: in and out have one shape */
    }
}

static void block_destroy(orb_train_layer_t *l)
{
    block_state_t *st = l->state;
    if (!st)
        return;
    for (int i = 0; i < st->nsub; i++) {
        if (st->sub[i].ops->destroy)
            st->sub[i].ops->destroy(&st->sub[i]);
        free(st->act[i]);
    }
    free(st->g[0]);
    free(st->g[1]);
    free(st->dsum);
    free(st->dsc);
    free(st);
    l->state = NULL;
}

const orb_train_layer_ops_t orb_train_block_cpu_ops = {
    .kind = "block",
    .setup = block_setup,
    .init = block_init,
    .forward = block_forward,
    .backward = block_backward,
    .destroy = block_destroy,
};
