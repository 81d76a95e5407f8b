/* Batch normalisation over N x H x W per channel, PyTorch's BatchNorm2d. Parameters: gamma
 * (C) then beta (C); buffers: running_mean (C) then running_var (C). Training normalises
 * with the batch's mean and biased variance and moves the running statistics towards the
 * batch's mean and unbiased variance (momentum m: r = (1 - m) r + m s); evaluation
 * normalises with the running statistics. l->momentum and l->eps left at 0 mean PyTorch's
 * defaults, 0.1 and 1e-5 (kept as doubles, the values torch uses). Without buffers (a bare
 * layer) training skips the running update and evaluation uses the initial statistics,
 * mean 0 and variance 1.
 *
 * Per-channel sums are accumulated in double: a channel holds N*H*W values (131072 for a
 * batch of 128 at 32x32), where a running float sum's error bound grows as M * 2^-24 (2^-7
 * here) and the variance inherits the mean's error; the running statistics are then computed
 * in double from them, as torch's CPU kernel does. The element-wise passes stay in float.
 * Backward recomputes xhat from x (the model keeps x) instead of storing it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "layer.h"
#include "simd.h"

typedef struct {
    double momentum, eps;
    double *mean, *invstd; /* C each: the statistics the last forward normalised with */
    double *acc;           /* 2C + 1: per-channel sums, and the count, as summed over ranks */
    double count;          /* values per channel the statistics came from (all ranks' with sync) */
    int batch_stats;       /* the last forward used the batch's (training) statistics */
    int synced;            /* ... summed over every rank (SyncBatchNorm: pass->sync_sum) */
} bn_state_t;

/* Eight double lanes (two AVX2 vectors), added in a fixed order: vectorises without
 * reassociation, and the result does not depend on which clone runs. */
#define BN_LANES 8

static double lanes_total(const double *acc)
{
    double s = 0.0;
    for (int j = 0; j < BN_LANES; j++)
        s += acc[j];
    return s;
}

ORB_TRAIN_CLONES
static double plane_sum(const float *restrict x, size_t n)
{
    double acc[BN_LANES] = {0};
    size_t i = 0;
    for (; i + BN_LANES <= n; i += BN_LANES)
        for (int j = 0; j < BN_LANES; j++)
            acc[j] += (double)x[i + j];
    for (; i < n; i++)
        acc[0] += (double)x[i];
    return lanes_total(acc);
}

/* sum (x - mean)^2: two passes, no cancellation between E[x^2] and E[x]^2 */
ORB_TRAIN_CLONES
static double plane_sqdev(const float *restrict x, size_t n, double mean)
{
    double acc[BN_LANES] = {0};
    size_t i = 0;
    for (; i + BN_LANES <= n; i += BN_LANES)
        for (int j = 0; j < BN_LANES; j++) {
            double d = (double)x[i + j] - mean;
            acc[j] += d * d;
        }
    for (; i < n; i++) {
        double d = (double)x[i] - mean;
        acc[0] += d * d;
    }
    return lanes_total(acc);
}

/* sum g and sum g * (x - mean), g = dy masked by y > 0 when y is given (fused ReLU): eight
 * float lanes over runs of 256 values, each run folded into double, so a lane adds up at most
 * 32 products (relative error about 32 * 2^-24) and the run totals keep double's precision.
 * x - mean is taken against mean rounded to float, mf; the exact total is restored as
 * sum g (x - mean) = sum g (x - mf) + (mf - mean) sum g. The mask is a bitwise and with the
 * comparison (a select, never a branch: it is taken at random). */
#define BN_RUN 256
ORB_TRAIN_CLONES
static void plane_grad_sums(const float *restrict dy, const float *restrict y, const float *restrict x, size_t n,
                            double mean, double *sg, double *sgx)
{
    const float mf = (float)mean;
    const orb_train_v8f zero = {0};
    double a = 0.0, b = 0.0;
    size_t i = 0;
    while (i + 8 <= n) {
        const size_t end = n - i >= BN_RUN ? i + BN_RUN : i + (n - i) / 8 * 8;
        orb_train_v8f va = zero, vb = zero;
        for (; i < end; i += 8) {
            orb_train_v8f g = *(const orb_train_v8f *)(dy + i);
            if (y)
                g = (orb_train_v8f)((orb_train_v8i)g & (*(const orb_train_v8f *)(y + i) > zero));
            va += g;
            vb += g * (*(const orb_train_v8f *)(x + i) - mf);
        }
        for (int j = 0; j < 8; j++) {
            a += (double)va[j];
            b += (double)vb[j];
        }
    }
    for (; i < n; i++) {
        float g = !y || y[i] > 0.0f ? dy[i] : 0.0f;
        a += (double)g;
        b += (double)g * (double)(x[i] - mf);
    }
    *sg += a;
    *sgx += b + ((double)mf - mean) * a;
}

/* y = (x - mean) * scale + beta: the subtraction first keeps precision when |mean| is large
 * against the spread (x * scale + (beta - mean * scale) would cancel). */
ORB_TRAIN_CLONES
static void plane_normalise(float *restrict y, const float *restrict x, size_t n, float mean, float scale,
                            float beta, int relu)
{
    if (relu) {
        for (size_t i = 0; i < n; i++) {
            float v = (x[i] - mean) * scale + beta;
            y[i] = v > 0.0f ? v : 0.0f;
        }
    } else {
        for (size_t i = 0; i < n; i++)
            y[i] = (x[i] - mean) * scale + beta;
    }
}

/* dx = k g - c1 (x - mean) - c0, g masked as in plane_grad_sums */
ORB_TRAIN_CLONES
static void plane_dx(float *restrict dx, const float *restrict dy, const float *restrict y,
                     const float *restrict x, size_t n, float mean, float k, float c1, float c0)
{
    if (y) {
        for (size_t i = 0; i < n; i++) {
            float g = dy[i];
            g = y[i] > 0.0f ? g : 0.0f;
            dx[i] = k * g - c1 * (x[i] - mean) - c0;
        }
    } else {
        for (size_t i = 0; i < n; i++)
            dx[i] = k * dy[i] - c1 * (x[i] - mean) - c0;
    }
}

static orb_status_t bn_setup(orb_train_layer_t *l, int max_batch)
{
    (void)max_batch;
    if (l->in.c <= 0 || l->in.h <= 0 || l->in.w <= 0 || l->momentum < 0.0f || l->momentum > 1.0f ||
        l->eps < 0.0f)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: %dx%dx%d input, momentum %g, eps %g", l->name, l->in.c,
                              l->in.h, l->in.w, (double)l->momentum, (double)l->eps);
    size_t C = (size_t)l->in.c;
    bn_state_t *st = calloc(1, sizeof *st);
    if (st)
        st->mean = calloc(4 * C + 1, sizeof(double));
    if (!st || !st->mean) {
        free(st);
        return orb_train_fail(ORB_ERR_NO_MEMORY, "%s: out of memory", l->name);
    }
    st->invstd = st->mean + C;
    st->acc = st->mean + 2 * C;
    st->momentum = l->momentum != 0.0f ? (double)l->momentum : 0.1;
    st->eps = l->eps != 0.0f ? (double)l->eps : 1e-5;
    l->state = st;
    l->out = l->in;
    l->nweights = C;
    l->nbias = C;
    l->nbuffers = 2 * C;
    l->work_floats = 0;
    return ORB_OK;
}

static void bn_init(const orb_train_layer_t *l, float *w, orb_train_rng_t *rng)
{
    (void)rng;
    size_t C = (size_t)l->in.c;
    for (size_t c = 0; c < C; c++) {
        w[c] = 1.0f;
        w[C + c] = 0.0f;
    }
    if (!l->buffers)
        return;
    for (size_t c = 0; c < C; c++) {
        l->buffers[c] = 0.0f;
        l->buffers[C + c] = 1.0f;
    }
}

static void bn_forward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x, float *y)
{
    bn_state_t *st = l->state;
    int C = l->in.c;
    size_t hw = (size_t)l->in.h * (size_t)l->in.w, chw = (size_t)C * hw, M = (size_t)p->n * hw;
    float *rmean = l->buffers, *rvar = l->buffers ? l->buffers + C : NULL;
    st->batch_stats = p->training;
    st->synced = p->training && p->sync_sum;
    double *acc = st->acc;
    if (p->training) {
        /* sums first, for every channel: with SyncBatchNorm they are summed over the ranks
         * (one all-reduce for the means, one for the squared deviations about them: two
         * passes over x, no cancellation, as without sync) */
        for (int c = 0; c < C; c++) {
            double s = 0.0;
            for (int b = 0; b < p->n; b++)
                s += plane_sum(x + (size_t)b * chw + (size_t)c * hw, hw);
            acc[c] = s;
        }
        acc[C] = (double)M;
        if (st->synced)
            p->sync_sum(p->sync_ctx, acc, (size_t)C + 1);
        st->count = acc[C];
        for (int c = 0; c < C; c++) {
            const double mean = acc[c] / st->count;
            double s2 = 0.0;
            for (int b = 0; b < p->n; b++)
                s2 += plane_sqdev(x + (size_t)b * chw + (size_t)c * hw, hw, mean);
            st->mean[c] = mean;
            acc[C + 1 + c] = s2;
        }
        if (st->synced)
            p->sync_sum(p->sync_ctx, acc + C + 1, (size_t)C);
    }
    const double Mg = p->training ? st->count : (double)M;
    for (int c = 0; c < C; c++) {
        double mean, var;
        if (p->training) {
            const double s2 = acc[C + 1 + c];
            mean = st->mean[c];
            var = s2 / Mg;
            if (rmean) {
                /* torch divides by M - 1 for the running variance; with one value per
                 * channel it refuses to train, here the biased 0 is used */
                double unbiased = Mg > 1 ? s2 / (Mg - 1) : var;
                rmean[c] = (float)((1.0 - st->momentum) * (double)rmean[c] + st->momentum * mean);
                rvar[c] = (float)((1.0 - st->momentum) * (double)rvar[c] + st->momentum * unbiased);
            }
        } else {
            mean = rmean ? (double)rmean[c] : 0.0;
            var = rvar ? (double)rvar[c] : 1.0;
        }
        st->mean[c] = mean;
        st->invstd[c] = 1.0 / sqrt(var + st->eps);
        float scale = (float)((double)w[c] * st->invstd[c]);
        for (int b = 0; b < p->n; b++) {
            size_t off = (size_t)b * chw + (size_t)c * hw;
            plane_normalise(y + off, x + off, hw, (float)mean, scale, w[C + c], l->relu);
        }
    }
}

/* Training: with xhat = (x - mean) * invstd and g = dy (masked by the fused ReLU),
 *   dx = gamma * invstd * (g - mean(g) - xhat * mean(g * xhat)),
 * the last two terms being the paths through the batch mean and variance. Evaluation: the
 * statistics are constants, dx = gamma * invstd * g. Either way dgamma = sum(g * xhat),
 * dbeta = sum(g). The mode is the one the forward that made y ran in. */
static void bn_backward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                        const float *y, const float *dy, float *dx, float *dw)
{
    const bn_state_t *st = l->state;
    int C = l->in.c;
    size_t hw = (size_t)l->in.h * (size_t)l->in.w, chw = (size_t)C * hw;
    const float *mask = l->relu ? y : NULL;
    double *acc = st->acc; /* sum g, then sum g (x - mean), per channel */
    for (int c = 0; c < C; c++) {
        double sg = 0.0, sgx = 0.0;
        for (int b = 0; b < p->n; b++) {
            size_t off = (size_t)b * chw + (size_t)c * hw;
            plane_grad_sums(dy + off, mask ? mask + off : NULL, x + off, hw, st->mean[c], &sg, &sgx);
        }
        /* this rank's parameter gradients: DDP averages them over the ranks, as it does for
         * SyncBatchNorm's in torch */
        dw[c] = (float)(sgx * st->invstd[c]);
        dw[C + c] = (float)sg;
        acc[c] = sg;
        acc[C + c] = sgx;
    }
    if (!dx)
        return;
    /* dx goes through the statistics of every rank's batch: their sums, over their count */
    if (st->synced && p->sync_sum)
        p->sync_sum(p->sync_ctx, acc, 2 * (size_t)C);
    for (int c = 0; c < C; c++) {
        double mean = st->mean[c], invstd = st->invstd[c], sg = acc[c], sgx = acc[C + c];
        double k = (double)w[c] * invstd, c1 = 0.0, c0 = 0.0;
        if (st->batch_stats) {
            c1 = k * invstd * invstd * sgx / st->count; /* k * xhat * mean(g xhat), per (x - mean) */
            c0 = k * sg / st->count;
        }
        for (int b = 0; b < p->n; b++) {
            size_t off = (size_t)b * chw + (size_t)c * hw;
            plane_dx(dx + off, dy + off, mask ? mask + off : NULL, x + off, hw, (float)mean, (float)k, (float)c1,
                     (float)c0);
        }
    }
}

static void bn_destroy(orb_train_layer_t *l)
{
    bn_state_t *st = l->state;
    if (st)
        free(st->mean);
    free(st);
    l->state = NULL;
}

const orb_train_layer_ops_t orb_train_batchnorm_cpu_ops = {
    .kind = "batchnorm",
    .setup = bn_setup,
    .init = bn_init,
    .forward = bn_forward,
    .backward = bn_backward,
    .destroy = bn_destroy,
};
