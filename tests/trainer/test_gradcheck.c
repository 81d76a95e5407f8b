/* Every layer's backward against central finite differences, every forward against a
 * naive double-precision loop written here independently, both conv variants, and whole
 * models (LeNet; ConvNet with its dropout masks) through the flat parameter buffer. */
#include <math.h>
#include <string.h>

#include "layer.h"
#include "loss.h"
#include "model.h"
#include "rng.h"
#include "tt_util.h"

static orb_train_rng_t rng;

static float urand(float lo, float hi)
{
    return lo + (hi - lo) * orb_train_rng_uniform(&rng);
}

typedef struct {
    orb_train_layer_t l;
    int n;
    float *w, *x, *y, *r, *dx, *dw, *work;
    float *buf; /* the layer's buffers (batch norm's running statistics), when it has any */
    orb_train_pass_t pass;
    int64_t ids[64];
} harness_t;

static void *xcalloc(size_t n)
{
    void *p = calloc(n ? n : 1, sizeof(float));
    TT_CHECK(p != NULL, "out of memory");
    return p;
}

static void harness_setup(harness_t *h, const orb_train_layer_ops_t *ops, orb_train_shape_t in, int n)
{
    h->l.ops = ops;
    snprintf(h->l.name, sizeof h->l.name, "%s", ops->kind);
    h->l.in = in;
    h->n = n;
    TT_CHECK(ops->setup(&h->l, n) == ORB_OK, "setup %s", ops->kind);
    size_t isz = orb_train_shape_size(in) * (size_t)n, osz = orb_train_shape_size(h->l.out) * (size_t)n;
    size_t np = orb_train_layer_nparams(&h->l);
    h->w = xcalloc(np);
    h->dw = xcalloc(np);
    h->x = xcalloc(isz);
    h->dx = xcalloc(isz);
    h->y = xcalloc(osz);
    h->r = xcalloc(osz);
    h->work = xcalloc(h->l.work_floats);
    if (h->l.nbuffers) {
        h->buf = xcalloc(h->l.nbuffers);
        h->l.buffers = h->buf;
    }
    for (int i = 0; i < n; i++)
        h->ids[i] = 1000 + 7 * i;
    h->pass = (orb_train_pass_t){.n = n, .training = 1, .seed = 42, .step = 3, .sample_ids = h->ids, .work = h->work};
    for (size_t i = 0; i < np; i++)
        h->w[i] = urand(-0.5f, 0.5f);
    for (size_t i = 0; i < isz; i++)
        h->x[i] = urand(-1.0f, 1.0f);
    for (size_t i = 0; i < osz; i++)
        h->r[i] = urand(-1.0f, 1.0f);
}

static void harness_free(harness_t *h)
{
    if (h->l.ops->destroy)
        h->l.ops->destroy(&h->l);
    free(h->w), free(h->dw), free(h->x), free(h->dx), free(h->y), free(h->r), free(h->work), free(h->buf);
}

/* The work area is the layer's scratch, shared with every other layer in a model: it arrives
 * holding anything. NaN in every float makes a read of something the layer did not write
 * first show in y, dx or dw (even a product with zero stays NaN). */
static void dirty_work(harness_t *h)
{
    for (size_t i = 0; i < h->l.work_floats; i++)
        h->work[i] = NAN;
}

/* L = sum(y * r): dL/dy = r */
static double objective(harness_t *h)
{
    dirty_work(h);
    h->l.ops->forward(&h->l, &h->pass, h->w, h->x, h->y);
    size_t osz = orb_train_shape_size(h->l.out) * (size_t)h->n;
    double s = 0;
    for (size_t i = 0; i < osz; i++)
        s += (double)h->y[i] * (double)h->r[i];
    return s;
}

static int checked;

static void compare(const char *what, const char *name, size_t i, double num, double ana, double tol)
{
    double err = fabs(num - ana);
    TT_CHECK(err <= tol * (1.0 + fabs(num)), "%s %s[%zu]: numeric %.7g analytic %.7g", what, name, i, num, ana);
    checked++;
}

/* Checks up to `samples` coordinates of x and of w (all of them when fewer). */
static void gradcheck(harness_t *h, const char *what, float step, double tol, int samples)
{
    objective(h);
    dirty_work(h);
    h->l.ops->backward(&h->l, &h->pass, h->w, h->x, h->y, h->r, h->dx, h->dw);
    size_t isz = orb_train_shape_size(h->l.in) * (size_t)h->n, np = orb_train_layer_nparams(&h->l);
    float *vec[2] = {h->x, h->w};
    const float *grad[2] = {h->dx, h->dw};
    size_t len[2] = {isz, np};
    const char *names[2] = {"dx", "dw"};
    for (int v = 0; v < 2; v++) {
        size_t cnt = len[v] < (size_t)samples ? len[v] : (size_t)samples;
        for (size_t s = 0; s < cnt; s++) {
            size_t i = len[v] <= (size_t)samples ? s : (size_t)orb_train_rng_below(&rng, len[v]);
            float keep = vec[v][i];
            vec[v][i] = keep + step;
            double up = objective(h);
            vec[v][i] = keep - step;
            double down = objective(h);
            vec[v][i] = keep;
            compare(what, names[v], i, (up - down) / (2.0 * step), grad[v][i], tol);
        }
    }
    /* backward overwrites dw: a second call must give the same, not twice the gradient */
    float *dw2 = xcalloc(np);
    objective(h);
    dirty_work(h);
    h->l.ops->backward(&h->l, &h->pass, h->w, h->x, h->y, h->r, h->dx, dw2);
    dirty_work(h);
    h->l.ops->backward(&h->l, &h->pass, h->w, h->x, h->y, h->r, h->dx, dw2);
    for (size_t i = 0; i < np; i++)
        TT_CHECK(dw2[i] == h->dw[i], "%s: dw[%zu] differs on a repeated backward", what, i);
    free(dw2);
}

/* ---- independent forward references (double, direct loops) ---- */

static void conv_reference(const harness_t *h, double *out)
{
    const orb_train_layer_t *l = &h->l;
    int C = l->in.c, H = l->in.h, W = l->in.w, K = l->kernel, S = l->stride, P = l->pad;
    int CO = l->out.c, OH = l->out.h, OW = l->out.w;
    for (int b = 0; b < h->n; b++)
        for (int co = 0; co < CO; co++)
            for (int oy = 0; oy < OH; oy++)
                for (int ox = 0; ox < OW; ox++) {
                    double s = h->w[l->nweights + (size_t)co];
                    for (int c = 0; c < C; c++)
                        for (int ki = 0; ki < K; ki++)
                            for (int kj = 0; kj < K; kj++) {
                                int iy = oy * S - P + ki, ix = ox * S - P + kj;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                                    continue;
                                s += (double)h->w[(((size_t)co * C + c) * K + ki) * K + kj] *
                                     (double)h->x[(((size_t)b * C + c) * H + iy) * W + ix];
                            }
                    out[(((size_t)b * CO + co) * OH + oy) * OW + ox] = s;
                }
}

static void check_forward(harness_t *h, const char *what, const double *ref, double tol)
{
    h->l.ops->forward(&h->l, &h->pass, h->w, h->x, h->y);
    size_t osz = orb_train_shape_size(h->l.out) * (size_t)h->n;
    for (size_t i = 0; i < osz; i++)
        TT_CHECK(fabs(h->y[i] - ref[i]) <= tol * (1.0 + fabs(ref[i])), "%s forward y[%zu] = %.7g, reference %.7g",
                 what, i, h->y[i], ref[i]);
}

static void test_conv(int c, int h_, int w_, int co, int k, int stride, int pad, int n, int algo)
{
    harness_t h = {0};
    h.l.out_c = co;
    h.l.kernel = k;
    h.l.stride = stride;
    h.l.pad = pad;
    h.l.algo = algo;
    harness_setup(&h, &orb_train_conv_cpu_ops, (orb_train_shape_t){c, h_, w_}, n);
    char what[96];
    snprintf(what, sizeof what, "conv c%d %dx%d co%d k%d s%d p%d n%d algo%d", c, h_, w_, co, k, stride, pad, n, algo);
    double *ref = malloc(sizeof(double) * orb_train_shape_size(h.l.out) * (size_t)n);
    conv_reference(&h, ref);
    check_forward(&h, what, ref, 1e-5);
    free(ref);
    gradcheck(&h, what, 1e-2f, 2e-3, 150);
    harness_free(&h);
}

/* conv with the ReLU fused gives bit for bit what conv then the ReLU layer give */
static void test_conv_relu(int c, int hw, int co, int k, int pad, int n, int algo)
{
    harness_t f = {0}, u = {0}, r = {0};
    f.l.out_c = u.l.out_c = co;
    f.l.kernel = u.l.kernel = k;
    f.l.stride = u.l.stride = 1;
    f.l.pad = u.l.pad = pad;
    f.l.algo = u.l.algo = algo;
    f.l.relu = 1;
    harness_setup(&f, &orb_train_conv_cpu_ops, (orb_train_shape_t){c, hw, hw}, n);
    harness_setup(&u, &orb_train_conv_cpu_ops, (orb_train_shape_t){c, hw, hw}, n);
    harness_setup(&r, &orb_train_relu_cpu_ops, u.l.out, n);
    size_t np = orb_train_layer_nparams(&f.l), isz = orb_train_shape_size(f.l.in) * (size_t)n;
    size_t osz = orb_train_shape_size(f.l.out) * (size_t)n;
    memcpy(u.w, f.w, sizeof(float) * np);
    memcpy(u.x, f.x, sizeof(float) * isz);
    f.l.ops->forward(&f.l, &f.pass, f.w, f.x, f.y);
    u.l.ops->forward(&u.l, &u.pass, u.w, u.x, u.y);
    r.l.ops->forward(&r.l, &r.pass, NULL, u.y, r.y);
    TT_CHECK(memcmp(f.y, r.y, sizeof(float) * osz) == 0, "fused ReLU forward differs (algo %d)", algo);
    float *dz = xcalloc(osz);
    r.l.ops->backward(&r.l, &r.pass, NULL, u.y, r.y, f.r, dz, NULL);
    u.l.ops->backward(&u.l, &u.pass, u.w, u.x, u.y, dz, u.dx, u.dw);
    f.l.ops->backward(&f.l, &f.pass, f.w, f.x, f.y, f.r, f.dx, f.dw);
    TT_CHECK(memcmp(f.dx, u.dx, sizeof(float) * isz) == 0 && memcmp(f.dw, u.dw, sizeof(float) * np) == 0,
             "fused ReLU backward differs (algo %d)", algo);
    checked += (int)(osz + isz + np);
    free(dz);
    harness_free(&f), harness_free(&u), harness_free(&r);
}

static void test_linear(int in, int out, int n)
{
    harness_t h = {0};
    h.l.out_c = out;
    harness_setup(&h, &orb_train_linear_cpu_ops, (orb_train_shape_t){in, 1, 1}, n);
    double *ref = malloc(sizeof(double) * (size_t)out * (size_t)n);
    for (int b = 0; b < n; b++)
        for (int o = 0; o < out; o++) {
            double s = h.w[(size_t)out * in + (size_t)o];
            for (int i = 0; i < in; i++)
                s += (double)h.w[(size_t)o * in + (size_t)i] * (double)h.x[(size_t)b * in + (size_t)i];
            ref[(size_t)b * out + (size_t)o] = s;
        }
    check_forward(&h, "linear", ref, 1e-5);
    free(ref);
    gradcheck(&h, "linear", 1e-2f, 2e-3, 200);
    harness_free(&h);
}

static void test_maxpool(int c, int hh, int ww, int k, int n)
{
    harness_t h = {0};
    h.l.kernel = k;
    harness_setup(&h, &orb_train_maxpool_cpu_ops, (orb_train_shape_t){c, hh, ww}, n);
    /* distinct values 0.05 apart, so a 1e-3 step never changes which one is the maximum */
    size_t isz = orb_train_shape_size(h.l.in) * (size_t)n;
    for (size_t i = 0; i < isz; i++)
        h.x[i] = 0.05f * (float)i;
    for (size_t i = isz - 1; i > 0; i--) {
        size_t j = (size_t)orb_train_rng_below(&rng, i + 1);
        float t = h.x[i];
        h.x[i] = h.x[j];
        h.x[j] = t;
    }
    double *ref = malloc(sizeof(double) * orb_train_shape_size(h.l.out) * (size_t)n);
    int oh = hh / k, ow = ww / k;
    for (int p = 0; p < n * c; p++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                double m = -INFINITY;
                for (int i = 0; i < k; i++)
                    for (int j = 0; j < k; j++)
                        m = fmax(m, h.x[((size_t)p * hh + (size_t)(oy * k + i)) * ww + (size_t)(ox * k + j)]);
                ref[((size_t)p * oh + (size_t)oy) * ow + (size_t)ox] = m;
            }
    check_forward(&h, "maxpool", ref, 0);
    free(ref);
    gradcheck(&h, "maxpool", 1e-3f, 1e-3, 400);
    /* ties: the first maximum in scan order takes the whole gradient (PyTorch's choice) */
    for (size_t i = 0; i < isz; i++)
        h.x[i] = 1.0f;
    objective(&h);
    h.l.ops->backward(&h.l, &h.pass, h.w, h.x, h.y, h.r, h.dx, h.dw);
    TT_CHECK(h.dx[0] == h.r[0] && h.dx[1] == 0.0f && h.dx[ww] == 0.0f, "maxpool tie goes to the first element");
    harness_free(&h);
}

static void test_relu(void)
{
    harness_t h = {0};
    harness_setup(&h, &orb_train_relu_cpu_ops, (orb_train_shape_t){3, 5, 7}, 4);
    size_t isz = 3 * 5 * 7 * 4;
    for (size_t i = 0; i < isz; i++) /* keep clear of the kink at 0 */
        h.x[i] = (h.x[i] < 0 ? -0.1f : 0.1f) + h.x[i];
    double *ref = malloc(sizeof(double) * isz);
    for (size_t i = 0; i < isz; i++)
        ref[i] = h.x[i] > 0 ? h.x[i] : 0;
    check_forward(&h, "relu", ref, 0);
    free(ref);
    gradcheck(&h, "relu", 1e-3f, 1e-3, 1000);
    harness_free(&h);
}

static void test_dropout(float p)
{
    harness_t h = {0};
    h.l.drop_p = p;
    harness_setup(&h, &orb_train_dropout_cpu_ops, (orb_train_shape_t){4, 6, 6}, 8);
    objective(&h);
    size_t isz = 4 * 6 * 6 * 8, kept = 0;
    for (size_t i = 0; i < isz; i++) {
        TT_CHECK(h.y[i] == 0.0f || fabsf(h.y[i] - h.x[i] / (1.0f - p)) <= 1e-6f * (1 + fabsf(h.y[i])),
                 "dropout scales kept values by 1/(1-p)");
        kept += h.y[i] != 0.0f;
    }
    double frac = (double)kept / (double)isz;
    TT_CHECK(fabs(frac - (1.0 - p)) < 0.08, "dropout p=%g kept %.3f of the values", (double)p, frac);
    gradcheck(&h, "dropout", 1e-2f, 1e-3, 1000);
    /* masks follow (seed, step, sample): the same sample at another batch position keeps its
     * mask, another step draws a new one */
    float *y1 = xcalloc(isz);
    memcpy(y1, h.y, sizeof(float) * isz);
    size_t per = 4 * 6 * 6;
    int64_t rev[8];
    for (int b = 0; b < 8; b++)
        rev[b] = h.ids[7 - b];
    float *xr = xcalloc(isz), *yr = xcalloc(isz);
    for (int b = 0; b < 8; b++)
        memcpy(xr + (size_t)b * per, h.x + (size_t)(7 - b) * per, sizeof(float) * per);
    orb_train_pass_t pr = h.pass;
    pr.sample_ids = rev;
    h.l.ops->forward(&h.l, &pr, h.w, xr, yr);
    for (int b = 0; b < 8; b++)
        TT_CHECK(memcmp(yr + (size_t)b * per, y1 + (size_t)(7 - b) * per, sizeof(float) * per) == 0,
                 "dropout mask follows the sample id, not the batch position");
    pr.step++;
    h.l.ops->forward(&h.l, &pr, h.w, xr, yr);
    TT_CHECK(memcmp(yr + 7 * per, y1, sizeof(float) * per) != 0, "dropout mask changes with the step");
    pr.training = 0;
    h.l.ops->forward(&h.l, &pr, h.w, xr, yr);
    TT_CHECK(memcmp(yr, xr, sizeof(float) * isz) == 0, "dropout is the identity in evaluation");
    free(y1), free(xr), free(yr);
    harness_free(&h);
}

static void test_logsoftmax(void)
{
    harness_t h = {0};
    harness_setup(&h, &orb_train_logsoftmax_cpu_ops, (orb_train_shape_t){10, 1, 1}, 5);
    for (int i = 0; i < 50; i++)
        h.x[i] *= 4.0f;
    double *ref = malloc(sizeof(double) * 50);
    for (int b = 0; b < 5; b++) {
        double s = 0;
        for (int i = 0; i < 10; i++)
            s += exp((double)h.x[b * 10 + i]);
        for (int i = 0; i < 10; i++)
            ref[b * 10 + i] = (double)h.x[b * 10 + i] - log(s);
    }
    check_forward(&h, "log_softmax", ref, 1e-6);
    free(ref);
    gradcheck(&h, "log_softmax", 1e-2f, 2e-3, 100);
    harness_free(&h);
}

/* ---- batch norm and global average pooling (ResNet) ---- */

/* Per channel over N x H x W: the batch's mean and biased variance in training, the
 * running statistics (h->buf as they are now) in evaluation. */
static void bn_reference(const harness_t *h, int training, double *out)
{
    const orb_train_layer_t *l = &h->l;
    int C = l->in.c;
    size_t hw = (size_t)l->in.h * l->in.w, M = (size_t)h->n * hw;
    double eps = l->eps != 0.0f ? (double)l->eps : 1e-5;
    for (int c = 0; c < C; c++) {
        double mean = 0, var = 0;
        if (training) {
            for (int b = 0; b < h->n; b++)
                for (size_t i = 0; i < hw; i++)
                    mean += h->x[((size_t)b * C + c) * hw + i];
            mean /= (double)M;
            for (int b = 0; b < h->n; b++)
                for (size_t i = 0; i < hw; i++) {
                    double d = h->x[((size_t)b * C + c) * hw + i] - mean;
                    var += d * d;
                }
            var /= (double)M;
        } else {
            mean = h->buf[c];
            var = h->buf[C + c];
        }
        for (int b = 0; b < h->n; b++)
            for (size_t i = 0; i < hw; i++) {
                size_t k = ((size_t)b * C + c) * hw + i;
                double v = h->w[c] * (h->x[k] - mean) / sqrt(var + eps) + h->w[C + c];
                out[k] = l->relu && v < 0 ? 0 : v;
            }
    }
}

/* What one training forward must leave in the running statistics, from the state before it:
 * r = (1 - m) r + m s in double, s the batch mean and the unbiased variance (torch's CPU
 * kernel computes this in double too, then rounds to float). */
static void bn_running_reference(const harness_t *h, const float *before, double momentum, float *want)
{
    int C = h->l.in.c;
    size_t hw = (size_t)h->l.in.h * h->l.in.w, M = (size_t)h->n * hw;
    for (int c = 0; c < C; c++) {
        double s = 0, s2 = 0;
        for (int b = 0; b < h->n; b++)
            for (size_t i = 0; i < hw; i++)
                s += h->x[((size_t)b * C + c) * hw + i];
        double mean = s / (double)M;
        for (int b = 0; b < h->n; b++)
            for (size_t i = 0; i < hw; i++) {
                double d = h->x[((size_t)b * C + c) * hw + i] - mean;
                s2 += d * d;
            }
        want[c] = (float)((1.0 - momentum) * before[c] + momentum * mean);
        want[C + c] = (float)((1.0 - momentum) * before[C + c] + momentum * (s2 / (double)(M - 1)));
    }
}

/* For the fused ReLU: per channel, M/2 values v in [0.2, 1] and their negatives, in random
 * places (the mean is exactly 0, the variance about 0.41, invstd about 1.56); |gamma| in
 * [0.5, 1.5], |beta| <= 0.05. Every output is then at least 0.5 * 0.2 * 1.56 - 0.05 = 0.1
 * away from the ReLU's kink, while a 1e-2 step moves an output by at most 1.5 * 1.6 * 1e-2
 * (through x), 1e-2 (beta) or 1e-2 * 2.5 (gamma): central differences never straddle it. */
static void bn_kink_free(harness_t *h)
{
    int C = h->l.in.c;
    size_t hw = (size_t)h->l.in.h * h->l.in.w, M = (size_t)h->n * hw;
    float *v = xcalloc(M);
    for (int c = 0; c < C; c++) {
        for (size_t i = 0; i + 1 < M; i += 2) {
            v[i] = urand(0.2f, 1.0f);
            v[i + 1] = -v[i];
        }
        for (size_t i = M - 1; i > 0; i--) {
            size_t j = (size_t)orb_train_rng_below(&rng, i + 1);
            float t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
        for (size_t k = 0; k < M; k++)
            h->x[((size_t)(k / hw) * C + c) * hw + k % hw] = v[k];
        h->w[c] = (c % 2 ? -1.0f : 1.0f) * urand(0.5f, 1.5f);
        h->w[C + c] = urand(-0.05f, 0.05f);
    }
    free(v);
}

/* Central differences on a batch-norm forward in float: outputs of the other channels are
 * bit-identical on both sides, so only the perturbed channel's M = 100 outputs add noise.
 * Each is a few float roundings (x - mean, * scale, + beta; mean and scale rounded to
 * float), rms about 2^-24 * |y| <= 6e-8 * 1.5 each; with |r| <= 1 and independent signs the
 * loss carries sqrt(100) * 1e-7 = 1e-6 of noise per side, the difference quotient
 * sqrt(2) * 1e-6 / (2 * 1e-2) = 7e-5. Truncation (h^2/6 * L''', L''' ~ gamma invstd^3 / M)
 * is below 1e-6, and L is linear in gamma and beta. 1e-3 is over ten times the noise (the
 * largest seen over eight seeds: 9e-5) and well below what a wrong term gives (dropping
 * mean(g) alone shifts dx by gamma invstd mean(r), ~5e-2). */
#define BN_STEP 1e-2f
#define BN_TOL 1e-3

static void test_batchnorm(int c, int hw, int n, int relu, int training)
{
    harness_t h = {0};
    h.l.relu = relu;
    harness_setup(&h, &orb_train_batchnorm_cpu_ops, (orb_train_shape_t){c, hw, hw}, n);
    TT_CHECK(h.l.nweights == (size_t)c && h.l.nbias == (size_t)c && h.l.nbuffers == 2 * (size_t)c &&
                 h.l.out.c == c && h.l.out.h == hw && h.l.out.w == hw,
             "batchnorm setup: shapes and counts");
    if (relu)
        bn_kink_free(&h);
    for (int i = 0; i < c; i++) { /* running statistics away from their initial 0 and 1 */
        /* with the ReLU in evaluation, close to the batch's (bn_kink_free): |mean| <= 0.02,
         * invstd in [1.41, 1.83] keep outputs 0.5 * 0.18 * 1.41 - 0.05 = 0.077 from the kink */
        h.buf[i] = relu ? urand(-0.02f, 0.02f) : urand(-0.5f, 0.5f);
        h.buf[c + i] = relu ? urand(0.3f, 0.5f) : urand(0.5f, 2.0f);
    }
    h.pass.training = training;
    char what[96];
    snprintf(what, sizeof what, "batchnorm c%d %dx%d n%d%s %s", c, hw, hw, n, relu ? " relu" : "",
             training ? "training" : "eval");
    size_t osz = orb_train_shape_size(h.l.out) * (size_t)n, nb = h.l.nbuffers;
    double *ref = malloc(sizeof(double) * osz);
    float *before = xcalloc(nb), *want = xcalloc(nb);
    memcpy(before, h.buf, sizeof(float) * nb);
    bn_reference(&h, training, ref);
    if (training)
        bn_running_reference(&h, before, 0.1, want);
    else
        memcpy(want, before, sizeof(float) * nb);
    /* y is a handful of float roundings of values below 4: 6 * 2^-24 * 4 = 1.4e-6 */
    check_forward(&h, what, ref, 2e-6);
    /* The sums of x are exact in double (x are multiples of 2^-23 in [-1, 1], or of 2^-26 in
     * [0.2, 1] with their negatives); the squared deviations differ from ours only in their
     * summation order, ~1e-16 relative, far below the half float ulp (3e-8) at which the
     * final rounding could differ: the result must be the same float. */
    for (size_t i = 0; i < nb; i++)
        TT_CHECK(h.buf[i] == want[i], "%s: running %s[%zu] = %.9g, reference %.9g", what,
                 i < (size_t)c ? "mean" : "var", i % (size_t)c, h.buf[i], want[i]);
    checked += (int)(osz + nb);
    free(ref);
    gradcheck(&h, what, BN_STEP, BN_TOL, 1000);
    /* no input gradient wanted: the same parameter gradient */
    float *dw2 = xcalloc(2 * (size_t)c);
    h.l.ops->backward(&h.l, &h.pass, h.w, h.x, h.y, h.r, NULL, dw2);
    TT_CHECK(memcmp(dw2, h.dw, sizeof(float) * 2 * (size_t)c) == 0, "%s: dw with dx = NULL", what);
    free(dw2), free(before), free(want);
    harness_free(&h);
}

/* BN with the ReLU fused gives bit for bit what BN then the ReLU layer give */
static void test_batchnorm_fused_relu(void)
{
    harness_t f = {0}, u = {0}, r = {0};
    f.l.relu = 1;
    harness_setup(&f, &orb_train_batchnorm_cpu_ops, (orb_train_shape_t){3, 5, 5}, 4);
    harness_setup(&u, &orb_train_batchnorm_cpu_ops, (orb_train_shape_t){3, 5, 5}, 4);
    harness_setup(&r, &orb_train_relu_cpu_ops, u.l.out, 4);
    size_t sz = 3 * 5 * 5 * 4;
    memcpy(u.w, f.w, sizeof(float) * 6);
    memcpy(u.x, f.x, sizeof(float) * sz);
    f.l.ops->forward(&f.l, &f.pass, f.w, f.x, f.y);
    u.l.ops->forward(&u.l, &u.pass, u.w, u.x, u.y);
    r.l.ops->forward(&r.l, &r.pass, NULL, u.y, r.y);
    TT_CHECK(memcmp(f.y, r.y, sizeof(float) * sz) == 0, "batchnorm fused ReLU forward differs");
    float *dz = xcalloc(sz);
    r.l.ops->backward(&r.l, &r.pass, NULL, u.y, r.y, f.r, dz, NULL);
    u.l.ops->backward(&u.l, &u.pass, u.w, u.x, u.y, dz, u.dx, u.dw);
    f.l.ops->backward(&f.l, &f.pass, f.w, f.x, f.y, f.r, f.dx, f.dw);
    TT_CHECK(memcmp(f.dx, u.dx, sizeof(float) * sz) == 0 && memcmp(f.dw, u.dw, sizeof(float) * 6) == 0,
             "batchnorm fused ReLU backward differs");
    checked += (int)(2 * sz + 6);
    free(dz);
    harness_free(&f), harness_free(&u), harness_free(&r);
}

static void close_to(const char *what, double got, double want)
{
    TT_CHECK(fabs(got - want) <= 1e-6 * (1.0 + fabs(want)), "%s = %.9g, expected %.9g", what, got, want);
    checked++;
}

/* One channel, four values 1..4 (N = 4, 1x1), gamma 2, beta 0.5, by hand: mean 2.5, biased
 * variance 1.25, unbiased 5/3, xhat = (-1.5, -0.5, 0.5, 1.5) / sqrt(1.25 + 1e-5). Then the
 * init values, the defaults (momentum 0.1, eps 1e-5), explicit ones, and no buffers. */
static void test_batchnorm_by_hand(void)
{
    harness_t h = {0};
    harness_setup(&h, &orb_train_batchnorm_cpu_ops, (orb_train_shape_t){1, 1, 1}, 4);
    h.buf[0] = h.buf[1] = 7.0f;
    h.l.ops->init(&h.l, h.w, &rng);
    TT_CHECK(h.w[0] == 1.0f && h.w[1] == 0.0f && h.buf[0] == 0.0f && h.buf[1] == 1.0f,
             "batchnorm init: gamma 1, beta 0, running mean 0, running var 1");
    for (int i = 0; i < 4; i++)
        h.x[i] = (float)(i + 1);
    h.w[0] = 2.0f, h.w[1] = 0.5f;
    h.l.ops->forward(&h.l, &h.pass, h.w, h.x, h.y);
    const double y[4] = {-2.18327084, -0.394423613, 1.394423613, 3.18327084};
    for (int i = 0; i < 4; i++)
        close_to("hand y", h.y[i], y[i]);
    close_to("hand running mean", h.buf[0], 0.25);       /* 0.9 * 0 + 0.1 * 2.5 */
    close_to("hand running var", h.buf[1], 1.066666667); /* 0.9 * 1 + 0.1 * 5/3 */
    float dy[4] = {1, 0, 0, 0};
    h.l.ops->backward(&h.l, &h.pass, h.w, h.x, h.y, dy, h.dx, h.dw);
    /* dx = gamma invstd / 4 * (4 dy - sum(dy) - xhat * sum(dy xhat)) */
    const double dx[4] = {0.536660608, -0.715536744, -0.178886869, 0.357763006};
    for (int i = 0; i < 4; i++)
        close_to("hand dx", h.dx[i], dx[i]);
    close_to("hand dgamma", h.dw[0], -1.34163542); /* xhat[0] */
    close_to("hand dbeta", h.dw[1], 1.0);
    /* evaluation: (x - 0.25) / sqrt(1.0666667 + 1e-5) * 2 + 0.5; dx = 2 / sqrt(...) dy */
    h.pass.training = 0;
    h.l.ops->forward(&h.l, &h.pass, h.w, h.x, h.y);
    close_to("hand eval y[3]", h.y[3], 3.75 * 2 / sqrt(1.066666667 + 1e-5) + 0.5);
    h.l.ops->backward(&h.l, &h.pass, h.w, h.x, h.y, dy, h.dx, h.dw);
    close_to("hand eval dx[0]", h.dx[0], 2 / sqrt(1.066666667 + 1e-5));
    close_to("hand eval dx[1]", h.dx[1], 0.0);
    TT_CHECK(h.buf[0] == 0.25f, "evaluation leaves the running statistics alone");
    harness_free(&h);

    /* explicit momentum 0.25 (exact in float) over two steps, eps 1e-3 */
    harness_t e = {0};
    e.l.momentum = 0.25f;
    e.l.eps = 1e-3f;
    harness_setup(&e, &orb_train_batchnorm_cpu_ops, (orb_train_shape_t){2, 3, 3}, 3);
    e.l.ops->init(&e.l, e.w, &rng);
    float before[4], want[4];
    for (int step = 0; step < 2; step++) {
        memcpy(before, e.buf, sizeof before);
        bn_running_reference(&e, before, 0.25, want);
        double *ref = malloc(sizeof(double) * 2 * 9 * 3);
        bn_reference(&e, 1, ref);
        check_forward(&e, "batchnorm momentum 0.25 eps 1e-3", ref, 2e-6);
        free(ref);
        TT_CHECK(memcmp(e.buf, want, sizeof want) == 0, "batchnorm momentum 0.25, step %d", step);
        for (int i = 0; i < 2 * 9 * 3; i++)
            e.x[i] = urand(-1.0f, 1.0f);
    }
    /* a bare layer: training runs without an update, evaluation uses mean 0, variance 1 */
    e.l.buffers = NULL;
    objective(&e);
    e.pass.training = 0;
    e.l.ops->forward(&e.l, &e.pass, e.w, e.x, e.y);
    for (int i = 0; i < 2 * 9 * 3; i++) {
        int ch = (i / 9) % 2;
        close_to("bare eval y", e.y[i], e.w[ch] * e.x[i] / sqrt(1 + 1e-3) + e.w[2 + ch]);
    }
    harness_free(&e);
}

static void test_avgpool(void)
{
    /* by hand: two 2x2 planes */
    harness_t h = {0};
    harness_setup(&h, &orb_train_avgpool_cpu_ops, (orb_train_shape_t){2, 2, 2}, 1);
    TT_CHECK(h.l.out.c == 2 && h.l.out.h == 1 && h.l.out.w == 1 && orb_train_layer_nparams(&h.l) == 0,
             "avgpool shape");
    const float x[8] = {1, 2, 3, 4, -1, 0.5f, 0.25f, 2}, dy[2] = {4, -8};
    memcpy(h.x, x, sizeof x);
    h.l.ops->forward(&h.l, &h.pass, h.w, h.x, h.y);
    TT_CHECK(h.y[0] == 2.5f && h.y[1] == 0.4375f, "avgpool by hand: %g %g", h.y[0], h.y[1]);
    h.l.ops->backward(&h.l, &h.pass, h.w, h.x, h.y, dy, h.dx, h.dw);
    for (int i = 0; i < 8; i++)
        TT_CHECK(h.dx[i] == (i < 4 ? 1.0f : -2.0f), "avgpool backward by hand: dx[%d] = %g", i, h.dx[i]);
    checked += 10;
    harness_free(&h);

    harness_t r = {0};
    harness_setup(&r, &orb_train_avgpool_cpu_ops, (orb_train_shape_t){3, 5, 7}, 4);
    double *ref = malloc(sizeof(double) * 12);
    for (int p = 0; p < 12; p++) {
        double s = 0;
        for (int i = 0; i < 35; i++)
            s += r.x[p * 35 + i];
        ref[p] = s / 35;
    }
    check_forward(&r, "avgpool", ref, 1e-7); /* one rounding of a double mean */
    free(ref);
    /* L is linear in x: only float noise, 1e-7 per output, over 2e-2 */
    gradcheck(&r, "avgpool", 1e-2f, 1e-4, 1000);
    harness_free(&r);
}

/* Max pooling with stride and padding (ResNet's 3x3, stride 2, padding 1): forward against a
 * direct loop (the padding never wins), backward against central differences. */
static void test_maxpool_strided(int c, int hw, int k, int stride, int pad, int n)
{
    harness_t h = {0};
    h.l.kernel = k, h.l.stride = stride, h.l.pad = pad;
    harness_setup(&h, &orb_train_maxpool_cpu_ops, (orb_train_shape_t){c, hw, hw}, n);
    /* distinct values 0.05 apart, shuffled: a 1e-3 step never changes a window's maximum */
    size_t isz = orb_train_shape_size(h.l.in) * (size_t)n;
    for (size_t i = 0; i < isz; i++)
        h.x[i] = 0.05f * (float)i - 2.0f;
    for (size_t i = isz - 1; i > 0; i--) {
        size_t j = (size_t)orb_train_rng_below(&rng, i + 1);
        float t = h.x[i];
        h.x[i] = h.x[j];
        h.x[j] = t;
    }
    const int oh = (hw + 2 * pad - k) / stride + 1;
    TT_CHECK(h.l.out.h == oh && h.l.out.w == oh, "maxpool %d/%d/%d: out %dx%d, expected %dx%d", k, stride, pad,
             h.l.out.h, h.l.out.w, oh, oh);
    size_t osz = orb_train_shape_size(h.l.out) * (size_t)n;
    double *ref = malloc(sizeof(double) * osz);
    for (int pl = 0; pl < n * c; pl++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < oh; ox++) {
                double m = -INFINITY;
                for (int i = 0; i < k; i++)
                    for (int j = 0; j < k; j++) {
                        int iy = oy * stride - pad + i, ix = ox * stride - pad + j;
                        if (iy >= 0 && iy < hw && ix >= 0 && ix < hw && h.x[(size_t)pl * hw * hw + (size_t)iy * hw + ix] > m)
                            m = h.x[(size_t)pl * hw * hw + (size_t)iy * hw + ix];
                    }
                ref[(size_t)pl * oh * oh + (size_t)oy * oh + ox] = m;
            }
    char what[64];
    snprintf(what, sizeof what, "maxpool %dx%d/%d pad %d on %dx%d", k, k, stride, pad, hw, hw);
    check_forward(&h, what, ref, 0.0);
    free(ref);
    gradcheck(&h, what, 1e-3f, 1e-2, 400);
    harness_free(&h);
}

/* A residual block (block.c) against central differences: every sampled derivative of x and
 * of the parameters, to the tolerance of the other layers. Central differences are only exact
 * away from a ReLU's kink, and with batch norm every parameter moves every value of its
 * channel; so the batch norms' betas are set to keep each channel's ReLUs on one side for any
 * batch: |xhat| <= sqrt(M - 1) for M values (4.2 for the smallest M here, 18), so a beta of
 * +-5 before a fused ReLU and +-10 before the block's last one (which adds the shortcut,
 * |xhat| or |x| <= 4.2 more) fixes each channel on (+) or off (-). Every third channel is
 * off: the masks are exercised, no kink is ever crossed, and no convolution is left with a
 * single live input channel (batch norm would make that output scale-invariant in its
 * weight, a derivative of ~eps / w^2 that a 1e-2 step cannot follow). Tolerance: the step's
 * truncation (h^2/6 times third derivatives of order 1/var through the batch norms) and the
 * objective's float rounding (~1e-6 over 2h) are each ~1e-3 of a derivative through the
 * block's six to eight sub-layers; 1e-2 is ten times that, and a wrong gradient path is off
 * by its whole size. Layout: the sub-layers' weights and betas in block.c's order
 * (convolutions without bias, batch norm gamma then beta). */
static void test_block(int c, int hw, int planes, int stride, int exp, int n)
{
    harness_t h = {0};
    h.l.out_c = planes, h.l.stride = stride, h.l.kernel = exp;
    harness_setup(&h, &orb_train_block_cpu_ops, (orb_train_shape_t){c, hw, hw}, n);
    const int oh = (hw - 1) / stride + 1, out = planes * exp;
    TT_CHECK(h.l.out.c == out && h.l.out.h == oh && h.l.out.w == oh && h.l.nbias == 0,
             "block: out %dx%dx%d", h.l.out.c, h.l.out.h, h.l.out.w);
    orb_train_rng_t init;
    orb_train_rng_seed(&init, 99);
    h.l.ops->init(&h.l, h.w, &init); /* Kaiming convolutions, gamma 1, beta 0 */
    /* {in, out, kernel} of each convolution, each followed by a batch norm of `out`; the last
     * batch norm's beta before the final ReLU is the main path's last, or the shortcut's 0 */
    int conv[4][3], nconv = 0;
    if (exp == 1) {
        conv[nconv][0] = c, conv[nconv][1] = planes, conv[nconv++][2] = 3;
        conv[nconv][0] = planes, conv[nconv][1] = planes, conv[nconv++][2] = 3;
    } else {
        conv[nconv][0] = c, conv[nconv][1] = planes, conv[nconv++][2] = 1;
        conv[nconv][0] = planes, conv[nconv][1] = planes, conv[nconv++][2] = 3;
        conv[nconv][0] = planes, conv[nconv][1] = out, conv[nconv++][2] = 1;
    }
    const int nmain = nconv;
    if (c != out || stride != 1)
        conv[nconv][0] = c, conv[nconv][1] = out, conv[nconv++][2] = 1;
    size_t off = 0;
    for (int i = 0; i < nconv; i++) {
        /* each output channel gets one dominant input, a live one: its batch norm then sees a
         * variance of order 1, never the near-zero of cancelling inputs where the derivative
         * (~1/sqrt(var)) is too curved for a finite difference */
        const int cin = conv[i][0], k2 = conv[i][2] * conv[i][2];
        const int fed_by_bn = i > 0 && i < nmain; /* conv2, conv3: after a masked batch norm */
        for (int o = 0; o < conv[i][1]; o++) {
            int d = o % cin;
            if (fed_by_bn && d % 3 == 1)
                d--;
            h.w[off + ((size_t)o * (size_t)cin + (size_t)d) * (size_t)k2 + (size_t)k2 / 2] += 1.0f;
        }
        off += (size_t)conv[i][0] * (size_t)conv[i][1] * (size_t)(conv[i][2] * conv[i][2]);
        const int C = conv[i][1];
        for (int ch = 0; ch < C; ch++) {
            float beta = i < nmain - 1 ? 5.0f : i == nmain - 1 ? 10.0f : 0.0f;
            h.w[off + (size_t)C + (size_t)ch] = ch % 3 == 1 ? -beta : beta;
        }
        off += 2 * (size_t)C;
    }
    TT_CHECK(off == orb_train_layer_nparams(&h.l), "block: the test's layout has %zu parameters, the block %zu", off,
             orb_train_layer_nparams(&h.l));
    char what[96];
    snprintf(what, sizeof what, "block %dx%dx%d planes %d stride %d expansion %d", c, hw, hw, planes, stride, exp);
    gradcheck(&h, what, BN_STEP, 1e-2, 600);
    /* and the channels held off really are off */
    for (int b = 0; b < n; b++)
        for (int i = 0; i < oh * oh; i++)
            TT_CHECK(h.y[((size_t)b * out + 1) * (size_t)(oh * oh) + (size_t)i] == 0.0f, "%s: channel 1 not off", what);
    harness_free(&h);
}

/* By hand: a basic block with zero convolution weights and no projection gives
 * y = relu(x + beta2) (its batch norms see all-zero inputs: variance 0, xhat 0, output beta). */
static void test_block_by_hand(void)
{
    harness_t h = {0};
    h.l.out_c = 2, h.l.stride = 1, h.l.kernel = 1;
    harness_setup(&h, &orb_train_block_cpu_ops, (orb_train_shape_t){2, 3, 3}, 2);
    size_t np = orb_train_layer_nparams(&h.l);
    /* layout: conv1 (2x2x3x3 = 36), bn1 (2 + 2), conv2 (36), bn2 (2 + 2) */
    TT_CHECK(np == 36 + 4 + 36 + 4 && h.l.nbuffers == 8, "block by hand: %zu parameters, %zu buffers", np,
             h.l.nbuffers);
    memset(h.w, 0, sizeof(float) * np);
    h.w[36 + 2] = 0.25f, h.w[36 + 3] = -0.75f; /* bn1's beta: relu'd, then lost in conv2's zeros */
    h.w[76 + 2] = 0.5f, h.w[76 + 3] = -0.25f;  /* bn2's beta */
    objective(&h);
    for (int b = 0; b < 2; b++)
        for (int c = 0; c < 2; c++)
            for (int i = 0; i < 9; i++) {
                size_t at = (size_t)b * 18 + (size_t)c * 9 + (size_t)i;
                float want = h.x[at] + (c ? -0.25f : 0.5f);
                want = want > 0.0f ? want : 0.0f;
                TT_CHECK(h.y[at] == want, "block by hand: y[%zu] = %.9g, expected %.9g", at, h.y[at], want);
            }
    checked += 36;
    harness_free(&h);
}

static void test_nll(void)
{
    float logp[6] = {-0.5f, -1.0f, -2.0f, -0.1f, -3.0f, -4.0f}, d[6];
    int32_t y[2] = {1, 0};
    double loss = orb_train_nll_loss(logp, y, 2, 3, d);
    TT_CHECK(fabs(loss - 0.55) < 1e-6, "nll loss %g", loss);
    float want[6] = {0, -0.5f, 0, -0.5f, 0, 0};
    TT_CHECK(memcmp(d, want, sizeof d) == 0, "nll gradient");
}

/* Whole model through the flat buffers, for wiring (offsets, buffers, the order of
 * layers); the layers' own checks above are the precise ones. Per layer, central
 * differences at 64 random coordinates against the analytic gradient must correlate
 * (>= 0.9; over 100 seeds 0.95 to 1) with a regression slope within 25% of 1 (0.82 to
 * 1.04: one kink at a large gradient moves it). Single coordinates cannot be held to a tight
 * tolerance here: the forward runs in float (~1e-6 relative noise in the loss) and a step
 * large enough to rise above that crosses ReLU and pooling kinks in the conv layers, whose
 * every weight moves thousands of activations. A wiring mistake decorrelates completely. */
static void test_model(const char *name, int n)
{
    orb_train_model_t *m;
    TT_CHECK(orb_train_model_create(name, (orb_train_shape_t){1, 28, 28}, 10, n, &m) == ORB_OK, "model %s", name);
    orb_train_model_init_params(m, 7);
    for (size_t i = 0; i < 784 * (size_t)n; i++)
        m->acts[0][i] = urand(-1.0f, 2.0f);
    int32_t y[16];
    int64_t ids[16];
    for (int b = 0; b < n; b++)
        y[b] = b % 10, ids[b] = 11 * b;
    orb_train_pass_t pass = {.n = n, .training = 1, .seed = 5, .step = 9, .sample_ids = ids};
    const float *logp = orb_train_model_forward(m, &pass);
    orb_train_nll_loss(logp, y, n, 10, orb_train_model_output_grad(m));
    orb_train_model_backward(m, &pass, NULL, NULL);
    float *g = xcalloc(m->nparams);
    memcpy(g, m->grads, sizeof(float) * m->nparams);
    enum { COORDS = 64 };
    const float h = 3e-3f;
    for (int li = 0; li < m->nlayers; li++) {
        const orb_train_layer_t *l = &m->layers[li];
        if (!orb_train_layer_nparams(l))
            continue;
        double sna = 0, saa = 0, snn = 0;
        for (int k = 0; k < COORDS; k++) {
            size_t i = l->param_off + (size_t)orb_train_rng_below(&rng, orb_train_layer_nparams(l));
            float keep = m->params[i];
            m->params[i] = keep + h;
            double up = orb_train_nll_loss(orb_train_model_forward(m, &pass), y, n, 10, NULL);
            m->params[i] = keep - h;
            double down = orb_train_nll_loss(orb_train_model_forward(m, &pass), y, n, 10, NULL);
            m->params[i] = keep;
            double num = (up - down) / (2.0 * h), ana = g[i];
            sna += num * ana, saa += ana * ana, snn += num * num;
            checked++;
        }
        double slope = saa > 0 ? sna / saa : 0, corr = saa > 0 && snn > 0 ? sna / sqrt(saa * snn) : 0;
        printf("model %s, %s: numeric vs analytic: correlation %.4f, slope %.4f\n", name, l->name, corr, slope);
        TT_CHECK(corr >= 0.9 && fabs(slope - 1.0) <= 0.25, "%s %s: numeric gradient correlates %.4f (slope %.4f)",
                 name, l->name, corr, slope);
    }
    free(g);
    orb_train_model_destroy(m);
}

int main(void)
{
    orb_train_rng_seed(&rng, getenv("TT_SEED") ? strtoull(getenv("TT_SEED"), NULL, 10) : 12345);
    for (int algo = ORB_TRAIN_CONV_ROWS; algo <= ORB_TRAIN_CONV_WIDE_GEMM; algo++) {
        test_conv(1, 28, 28, 6, 5, 1, 2, 3, algo);   /* LeNet conv1 */
        test_conv(6, 14, 14, 16, 5, 1, 0, 2, algo);  /* LeNet conv2 */
        test_conv(3, 9, 8, 4, 3, 1, 1, 3, algo);
        test_conv(4, 20, 20, 3, 3, 1, 0, 20, algo); /* groups of 18 images: a partial last one */
        test_conv(2, 11, 9, 3, 3, 2, 1, 2, algo);   /* stride 2 (always ROWS) */
        /* "same" padding, stride 1: WIDE takes dx as a convolution of dy (conv_dx_flipped),
         * with more output than input channels (its buffers sized by out_c), fewer, a 1x1 and
         * a partial last group */
        test_conv(3, 12, 9, 8, 3, 1, 1, 5, algo);   /* conv_direct forward (P = 132) */
        test_conv(4, 16, 13, 12, 5, 1, 2, 3, algo); /* conv_direct both ways, 5x5 */
        test_conv(8, 15, 15, 8, 3, 1, 0, 3, algo);  /* conv_direct forward, no padding: dx by columns */
        test_conv(6, 8, 9, 2, 3, 1, 1, 2, algo);
        test_conv(5, 6, 7, 12, 1, 1, 0, 3, algo);
        test_conv(16, 28, 28, 16, 3, 1, 1, 5, algo); /* ResNet stage 1: groups of 2, a partial last one */
        test_conv_relu(1, 28, 6, 5, 2, 3, algo);
        test_conv_relu(32, 12, 8, 3, 0, 1, algo);  /* one image per group: ROWS without a copy of y */
    }
    test_linear(37, 11, 5);
    test_linear(400, 120, 3);
    test_maxpool(3, 8, 8, 2, 2);
    test_maxpool(2, 9, 7, 3, 2); /* floor: last rows and columns unused */
    test_relu();
    test_dropout(0.25f);
    test_dropout(0.5f);
    test_logsoftmax();
    test_batchnorm_by_hand();
    test_batchnorm(3, 5, 4, 0, 1);
    test_batchnorm(3, 5, 4, 1, 1);
    test_batchnorm(3, 5, 4, 0, 0);
    test_batchnorm(3, 5, 4, 1, 0);
    test_batchnorm(8, 3, 2, 0, 1); /* 9 values a plane: the lanes' tail */
    test_batchnorm_fused_relu();
    test_avgpool();
    test_maxpool_strided(2, 9, 3, 2, 1, 2); /* ResNet-18/50's stem pool */
    test_maxpool_strided(1, 8, 3, 2, 1, 1);
    test_block_by_hand();
    test_block(4, 6, 4, 1, 1, 3);  /* basic, identity shortcut */
    test_block(4, 6, 8, 2, 1, 3);  /* basic, projection (stride 2, wider) */
    test_block(8, 5, 3, 2, 4, 2);  /* bottleneck, projection */
    test_block(12, 4, 3, 1, 4, 2); /* bottleneck, identity (12 = 3 x 4) */
    test_nll();
    test_model("lenet", 3);
    test_model("convnet", 2);
    test_model("resnet20", 2);
    printf("gradcheck: %d derivatives match\n", checked);
    return 0;
}
