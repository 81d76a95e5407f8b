/* 2-D convolution (square kernel, stride, zero padding) as column matrix + SGEMM.
 * Images are processed in groups whose column matrix stays around 1 MiB, so small layers
 * (LeNet: K*P = 20k) still get one GEMM wide enough for the BLAS to run at speed, and large
 * ones (ConvNet conv2: K*P = 166k) keep their columns in L2 between the copy and the GEMM.
 * Two ways to build the columns (orb_train_conv_algo_t): ROWS is plain im2col; WIDE pads the
 * image and computes oh x Wp outputs (Wp = padded width), of which the last Wp - ow columns
 * of each row are dropped: every column row is then a single contiguous slice of the padded
 * image. WIDE trades (Wp - ow) / ow extra GEMM work for far fewer, longer copies.
 * In the WIDE layout, conv_direct.c can compute forward and the 3x3 weight gradient straight
 * from the padded images (no columns, nothing packed), and dx of a stride-1 "same"
 * convolution is computed as a forward convolution of dy (conv_dx_flipped). */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "conv_direct.h"
#include "elementwise.h"
#include "error.h"
#include "im2col.h"
#include "layer.h"
#include "simd.h"

#define CONV_GROUP_FLOATS (256 * 1024)
/* weight gradients with at most this many entries use small_dw, not the BLAS */
#define CONV_SMALL_DW 512

typedef struct {
    orb_train_convgeom_t g;
    int wide;
    int flip_dx;     /* dx as a forward convolution of dy (see conv_dx_flipped) */
    int direct_fwd, direct_dx, direct_dw; /* those products by conv_direct.c, without columns */
    int hp, wp;      /* padded input (WIDE) */
    size_t K, P;     /* column rows; columns per image (oh*ow, or oh*wp when WIDE) */
    int group;       /* images per GEMM */
    size_t col_floats, tmp_floats, pad_floats, wt_floats, wr_floats;
} conv_state_t;

/* Rows are short (10 to 26 floats): plain loops, not a memcpy call per row. With relu the
 * output is max(0, .), the fused activation. */
ORB_TRAIN_CLONES
static void scatter_rows(float *d, const float *s, int oh, int ow, size_t rowlen, float bias, int relu)
{
    for (int oy = 0; oy < oh; oy++) {
        const float *sr = s + (size_t)oy * rowlen;
        float *dr = d + (size_t)oy * ow;
        if (relu) {
            for (int ox = 0; ox < ow; ox++) {
                float v = sr[ox] + bias;
                dr[ox] = v > 0.0f ? v : 0.0f;
            }
        } else {
            for (int ox = 0; ox < ow; ox++)
                dr[ox] = sr[ox] + bias;
        }
    }
}

/* dy rows into the GEMM layout; the dropped columns get zero gradient and add nothing.
 * With a fused ReLU (y given), the gradient passes where the output is positive. */
ORB_TRAIN_CLONES
static void gather_rows(float *restrict d, const float *restrict s, const float *restrict y, int oh, int ow,
                        size_t rowlen)
{
    for (int oy = 0; oy < oh; oy++) {
        const float *sr = s + (size_t)oy * ow;
        float *dr = d + (size_t)oy * rowlen;
        if (y) {
            const float *yr = y + (size_t)oy * ow;
            for (int ox = 0; ox < ow; ox++) {
                float g = sr[ox];
                dr[ox] = yr[ox] > 0.0f ? g : 0.0f;
            }
        } else {
            for (int ox = 0; ox < ow; ox++)
                dr[ox] = sr[ox];
        }
        for (size_t ox = (size_t)ow; ox < rowlen; ox++)
            dr[ox] = 0.0f;
    }
}

/* Eight running sums: vectorises, and the order stays fixed (results are reproducible). */
ORB_TRAIN_CLONES
static float sum_floats(const float *r, size_t n)
{
    float acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += r[i + j];
    float s = 0.0f;
    for (; i < n; i++)
        s += r[i];
    for (int j = 0; j < 8; j++)
        s += acc[j];
    return s;
}

/* dw[co][K] (+)= g[co][ld] . col[K][ld]^T when the result is tiny (first layers: 6x25,
 * 32x9). OpenBLAS packs both long operands for such shapes and runs at a quarter of its
 * speed; here 256-column blocks of both stay in L1, and eight partial sums per dot product
 * vectorise in a fixed order (results do not depend on blocking elsewhere). */
ORB_TRAIN_CLONES
static float dot256(const float *restrict a, const float *restrict b, size_t len)
{
    float acc[8] = {0};
    size_t vec = len / 8 * 8, i;
    for (i = 0; i < vec; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += a[i + j] * b[i + j];
    float s = 0.0f;
    for (; i < len; i++)
        s += a[i] * b[i];
    for (int j = 0; j < 8; j++)
        s += acc[j];
    return s;
}

static void small_dw(float *restrict dw, const float *restrict g, const float *restrict col, int co, int K,
                     size_t ld, int accumulate)
{
    if (!accumulate)
        memset(dw, 0, sizeof(float) * (size_t)co * (size_t)K);
    for (size_t i0 = 0; i0 < ld; i0 += 256) {
        size_t len = ld - i0 < 256 ? ld - i0 : 256;
        for (int c = 0; c < co; c++)
            for (int k = 0; k < K; k++)
                dw[(size_t)c * K + (size_t)k] += dot256(g + (size_t)c * ld + i0, col + (size_t)k * ld + i0, len);
    }
}

/* Measured on all four conv layers of LeNet and ConvNet (OpenBLAS, one thread): WIDE is
 * 3-30% faster, even where it adds 40% columns (LeNet conv2), so it is the default. */
static int pick_wide(const orb_train_layer_t *l)
{
    return l->stride == 1 && l->algo != ORB_TRAIN_CONV_ROWS;
}

static orb_status_t conv_setup(orb_train_layer_t *l, int max_batch)
{
    int oh = (l->in.h + 2 * l->pad - l->kernel) / l->stride + 1;
    int ow = (l->in.w + 2 * l->pad - l->kernel) / l->stride + 1;
    if (l->kernel <= 0 || l->stride <= 0 || l->pad < 0 || oh <= 0 || ow <= 0)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: %dx%d input too small for a %dx%d kernel", l->name,
                              l->in.h, l->in.w, l->kernel, l->kernel);
    conv_state_t *st = calloc(1, sizeof *st);
    if (!st)
        return orb_train_fail(ORB_ERR_NO_MEMORY, "%s: out of memory", l->name);
    st->g = (orb_train_convgeom_t){l->in.c, l->in.h, l->in.w, l->kernel, l->stride, l->pad, oh, ow};
    st->hp = l->in.h + 2 * l->pad;
    st->wp = l->in.w + 2 * l->pad;
    st->wide = pick_wide(l);
    st->flip_dx = st->wide && 2 * l->pad == l->kernel - 1;
    st->K = (size_t)l->in.c * l->kernel * l->kernel;
    st->P = st->wide ? (size_t)oh * st->wp : (size_t)oh * ow;
    /* with flip_dx the same buffers also hold dy's columns (K2 rows), its padded images
     * (out_c channels) and dx before it is scattered (in.c rows) */
    const size_t K2 = (size_t)l->out_c * l->kernel * l->kernel;
    const size_t rows = st->flip_dx && K2 > st->K ? K2 : st->K;
    const size_t chans = st->flip_dx && l->in.c > l->out_c ? (size_t)l->in.c : (size_t)l->out_c;
    const size_t pchans = st->flip_dx && l->out_c > l->in.c ? (size_t)l->out_c : (size_t)l->in.c;
    size_t group = CONV_GROUP_FLOATS / (rows * st->P);
    group = group < 1 ? 1 : group;
    group = group > (size_t)max_batch ? (size_t)max_batch : group;
    st->group = (int)group;
    st->col_floats = rows * st->P * group;
    /* GEMM output of a group before it is scattered to NCHW, and masked dy for a fused ReLU
     * (ROWS with one image and no ReLU works in y and dy directly) */
    st->tmp_floats = (group > 1 || st->wide || l->relu) ? chans * st->P * group : 0;
    /* padded images; a column slice of the last one runs kernel - 1 floats past its end */
    st->pad_floats = st->wide ? pchans * st->hp * st->wp * group + (size_t)l->kernel : 0;
    st->wt_floats = st->flip_dx ? K2 * (size_t)l->in.c : 0;
    const int direct = st->wide && l->algo != ORB_TRAIN_CONV_WIDE_GEMM;
    st->direct_fwd = direct && orb_train_conv_direct_usable(l->kernel, l->out_c, st->P);
    st->direct_dx = direct && st->flip_dx && orb_train_conv_direct_usable(l->kernel, l->in.c, st->P);
    st->direct_dw = direct && orb_train_conv_direct_dw_usable(l->kernel, l->out_c, st->P);
    st->wr_floats = st->direct_fwd || st->direct_dx ? K2 * (size_t)l->in.c : 0;
    l->state = st;
    l->out = (orb_train_shape_t){l->out_c, oh, ow};
    l->nweights = (size_t)l->out_c * st->K;
    l->nbias = l->no_bias ? 0 : (size_t)l->out_c;
    l->work_floats = st->col_floats + st->tmp_floats + st->pad_floats + st->wt_floats + st->wr_floats;
    return ORB_OK;
}

/* The column matrix of a WIDE convolution: row (c, ki, kj) of image j is the slice of its
 * padded plane c that starts at (ki, kj), P floats long. */
static void slice_columns(const float *pad, int gn, int nch, int k, int hp, int wp, size_t P, float *col)
{
    size_t pimg = (size_t)nch * hp * wp, ld = P * (size_t)gn;
    for (int j = 0; j < gn; j++)
        for (int c = 0; c < nch; c++)
            for (int ki = 0; ki < k; ki++)
                for (int kj = 0; kj < k; kj++) {
                    size_t row = ((size_t)c * k + (size_t)ki) * k + (size_t)kj;
                    memcpy(col + row * ld + (size_t)j * P,
                           pad + (size_t)j * pimg + ((size_t)c * hp + (size_t)ki) * wp + (size_t)kj, sizeof(float) * P);
                }
}

/* Pads images [b0, b0+gn) into pad (zero border). */
static void pad_images(const conv_state_t *st, const float *x, int b0, int gn, float *pad)
{
    const orb_train_convgeom_t *g = &st->g;
    size_t img = (size_t)g->c * g->h * g->w, pimg = (size_t)g->c * st->hp * st->wp;
    if (g->pad == 0) {
        memcpy(pad, x + (size_t)b0 * img, sizeof(float) * img * (size_t)gn);
    } else {
        memset(pad, 0, sizeof(float) * pimg * (size_t)gn);
        for (int j = 0; j < gn; j++)
            for (int c = 0; c < g->c; c++)
                for (int iy = 0; iy < g->h; iy++)
                    memcpy(pad + (size_t)j * pimg + ((size_t)c * st->hp + (size_t)(iy + g->pad)) * st->wp + (size_t)g->pad,
                           x + (size_t)(b0 + j) * img + ((size_t)c * g->h + (size_t)iy) * g->w, sizeof(float) * (size_t)g->w);
    }
    /* the slack read by the last slices feeds dropped columns only, but must be finite: the
     * weight gradient multiplies those columns by zero */
    memset(pad + pimg * (size_t)gn, 0, sizeof(float) * (size_t)g->k);
}

/* Pads images [b0, b0+gn) into pad and slices the column matrix from them. */
static void wide_columns(const conv_state_t *st, const float *x, int b0, int gn, float *pad, float *col)
{
    pad_images(st, x, b0, gn, pad);
    slice_columns(pad, gn, st->g.c, st->g.k, st->hp, st->wp, st->P, col);
}

/* dx of a stride-1 convolution with "same" padding (2 pad = k - 1, so oh = h, ow = w and the
 * padded output has the input's padded size hp x wp) is itself such a convolution: of dy padded
 * by pad, with the kernel transposed (in and out channels swapped) and rotated by 180 degrees,
 *   dx[i][y][x] = sum over o, a, b of w[o][i][k-1-a][k-1-b] * dyp[o][y+a][x+b].
 * So it runs as forward does: M = in channels, K = out_c * k * k, wide slices, no col2im. The
 * transposed GEMM it replaces (inner dimension out_c, 16 for ResNet's first stage) writes a
 * column matrix k*k times the size of dx and runs at two thirds of the speed on Zen.
 * g holds dy in GEMM layout ([o][j*P + oy*wp + ox], zero where ox >= ow): one copy per plane,
 * shifted by pad rows and pad columns, is its padded image, the zeros landing on the border. */
static void flip_weights(const float *w, float *wt, int co, int ci, int k)
{
    const size_t kk = (size_t)k * k;
    for (int o = 0; o < co; o++)
        for (int i = 0; i < ci; i++)
            for (size_t t = 0; t < kk; t++)
                wt[((size_t)i * co + (size_t)o) * kk + (kk - 1 - t)] = w[((size_t)o * ci + (size_t)i) * kk + t];
}

static void conv_dx_flipped(const orb_train_layer_t *l, const conv_state_t *st, const float *wt, const float *g,
                            int b0, int gn, float *pad, float *col, float *out, float *dx)
{
    const int co = l->out_c, ci = st->g.c, k = st->g.k;
    const size_t plane = (size_t)st->hp * st->wp, lead = (size_t)st->g.pad * st->wp + (size_t)st->g.pad;
    const size_t ld = st->P * (size_t)gn, in_sz = orb_train_shape_size(l->in), ipix = (size_t)st->g.h * st->g.w;
    for (int j = 0; j < gn; j++)
        for (int o = 0; o < co; o++) {
            float *d = pad + ((size_t)j * co + (size_t)o) * plane;
            memset(d, 0, sizeof(float) * lead);
            memcpy(d + lead, g + (size_t)o * ld + (size_t)j * st->P, sizeof(float) * st->P);
            memset(d + lead + st->P, 0, sizeof(float) * (plane - lead - st->P));
        }
    memset(pad + (size_t)gn * co * plane, 0, sizeof(float) * (size_t)k);
    if (st->direct_dx) { /* wt packed for conv_direct */
        for (int j = 0; j < gn; j++)
            orb_train_conv_direct(wt, pad + (size_t)j * co * plane, co, ci, k, st->hp, st->wp, st->P,
                                  out + (size_t)j * st->P, ld);
    } else {
        slice_columns(pad, gn, co, k, st->hp, st->wp, st->P, col);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ci, (int)ld, co * k * k, 1.0f, wt, co * k * k, col,
                    (int)ld, 0.0f, out, (int)ld);
    }
    for (int j = 0; j < gn; j++)
        for (int c = 0; c < ci; c++)
            scatter_rows(dx + (size_t)(b0 + j) * in_sz + (size_t)c * ipix, out + (size_t)c * ld + (size_t)j * st->P,
                         st->g.h, st->g.w, (size_t)st->wp, 0.0f, 0);
}

static void columns(const conv_state_t *st, const float *x, int b0, int gn, float *pad, float *col)
{
    if (st->wide) {
        wide_columns(st, x, b0, gn, pad, col);
        return;
    }
    size_t img = (size_t)st->g.c * st->g.h * st->g.w;
    for (int j = 0; j < gn; j++)
        orb_train_im2col(&st->g, x + (size_t)(b0 + j) * img, col, st->P * (size_t)gn, (size_t)j * st->P);
}

static void conv_forward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                         float *y)
{
    const conv_state_t *st = l->state;
    const float *bias = l->nbias ? w + l->nweights : NULL;
    int co = l->out_c, ow = l->out.w, oh = l->out.h;
    size_t opix = (size_t)oh * ow, out_sz = orb_train_shape_size(l->out);
    float *col = p->work, *tmp = col + st->col_floats, *pad = tmp + st->tmp_floats;
    size_t rowlen = st->wide ? (size_t)st->wp : (size_t)ow;
    float *wr = pad + st->pad_floats + st->wt_floats;

    if (st->direct_fwd)
        orb_train_conv_direct_pack(w, wr, co, st->g.c, st->g.k);
    for (int b0 = 0; b0 < p->n; b0 += st->group) {
        int gn = p->n - b0 < st->group ? p->n - b0 : st->group;
        size_t ld = st->P * (size_t)gn;
        float *out = st->tmp_floats ? tmp : y + (size_t)b0 * out_sz;
        if (st->direct_fwd) {
            pad_images(st, x, b0, gn, pad);
            for (int j = 0; j < gn; j++)
                orb_train_conv_direct(wr, pad + (size_t)j * st->g.c * st->hp * st->wp, st->g.c, co, st->g.k, st->hp,
                                      st->wp, st->P, out + (size_t)j * st->P, ld);
        } else {
            columns(st, x, b0, gn, pad, col);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, co, (int)ld, (int)st->K, 1.0f, w, (int)st->K, col,
                        (int)ld, 0.0f, out, (int)ld);
        }
        /* bias, and [co][image][oy][rowlen] to [image][co][oy][ow] (in place when out is y) */
        for (int j = 0; j < gn; j++)
            for (int c = 0; c < co; c++)
                scatter_rows(y + (size_t)(b0 + j) * out_sz + (size_t)c * opix,
                             out + (size_t)c * ld + (size_t)j * st->P, oh, ow, rowlen, bias ? bias[c] : 0.0f, l->relu);
    }
}

static void conv_backward(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                          const float *y, const float *dy, float *dx, float *dw)
{
    const conv_state_t *st = l->state;
    const orb_train_convgeom_t *gm = &st->g;
    int co = l->out_c, ow = l->out.w, oh = l->out.h;
    size_t opix = (size_t)oh * ow, in_sz = orb_train_shape_size(l->in), out_sz = orb_train_shape_size(l->out);
    float *col = p->work, *tmp = col + st->col_floats, *pad = tmp + st->tmp_floats;
    size_t rowlen = st->wide ? (size_t)st->wp : (size_t)ow;
    float *db = l->nbias ? dw + l->nweights : NULL;
    float *wt = pad + st->pad_floats;

    if (dx && st->flip_dx) {
        float *wr = wt + st->wt_floats;
        flip_weights(w, st->direct_dx ? wr : wt, co, gm->c, gm->k);
        if (st->direct_dx) /* the flipped kernel has in.c outputs and out_c inputs */
            orb_train_conv_direct_pack(wr, wt, gm->c, co, gm->k);
    }
    if (db)
        memset(db, 0, sizeof(float) * (size_t)co);
    for (int b0 = 0; b0 < p->n; b0 += st->group) {
        int gn = p->n - b0 < st->group ? p->n - b0 : st->group;
        size_t ld = st->P * (size_t)gn;
        /* columns are rebuilt rather than kept from forward: cheaper than the memory */
        if (st->direct_dw)
            pad_images(st, x, b0, gn, pad);
        else
            columns(st, x, b0, gn, pad, col);
        const float *g;
        if (!st->tmp_floats) {
            g = dy + (size_t)b0 * out_sz;
        } else {
            for (int j = 0; j < gn; j++)
                for (int c = 0; c < co; c++)
                    gather_rows(tmp + (size_t)c * ld + (size_t)j * st->P,
                                dy + (size_t)(b0 + j) * out_sz + (size_t)c * opix,
                                l->relu ? y + (size_t)(b0 + j) * out_sz + (size_t)c * opix : NULL, oh, ow, rowlen);
            g = tmp;
        }
        if (st->direct_dw)
            orb_train_conv_direct_dw(g, ld, pad, (size_t)gm->c * st->hp * st->wp, gn, gm->c, co, st->hp, st->wp, st->P,
                                     dw, b0 != 0);
        else if ((size_t)co * st->K <= CONV_SMALL_DW)
            small_dw(dw, g, col, co, (int)st->K, ld, b0 != 0);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, co, (int)st->K, (int)ld, 1.0f, g, (int)ld, col,
                        (int)ld, b0 == 0 ? 0.0f : 1.0f, dw, (int)st->K);
        for (int c = 0; c < co && db; c++)
            db[c] += sum_floats(g + (size_t)c * ld, ld);
        if (!dx)
            continue;
        if (st->flip_dx) {
            conv_dx_flipped(l, st, wt, g, b0, gn, pad, col, tmp, dx);
            continue;
        }
        /* the columns are consumed: reuse them for d(columns) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)st->K, (int)ld, co, 1.0f, w, (int)st->K, g,
                    (int)ld, 0.0f, col, (int)ld);
        if (!st->wide) {
            for (int j = 0; j < gn; j++) {
                float *d = dx + (size_t)(b0 + j) * in_sz;
                memset(d, 0, sizeof(float) * in_sz);
                orb_train_col2im(gm, col, ld, (size_t)j * st->P, d);
            }
            continue;
        }
        size_t pimg = (size_t)gm->c * st->hp * st->wp;
        memset(pad, 0, sizeof(float) * st->pad_floats);
        for (int j = 0; j < gn; j++) {
            float *pj = pad + (size_t)j * pimg;
            for (int c = 0; c < gm->c; c++)
                for (int ki = 0; ki < gm->k; ki++)
                    for (int kj = 0; kj < gm->k; kj++) {
                        size_t k = ((size_t)c * gm->k + (size_t)ki) * gm->k + (size_t)kj;
                        orb_train_add_into(pj + ((size_t)c * st->hp + (size_t)ki) * st->wp + (size_t)kj,
                               col + k * ld + (size_t)j * st->P, st->P);
                    }
            float *d = dx + (size_t)(b0 + j) * in_sz;
            for (int c = 0; c < gm->c; c++)
                for (int iy = 0; iy < gm->h; iy++)
                    memcpy(d + ((size_t)c * gm->h + (size_t)iy) * gm->w,
                           pj + ((size_t)c * st->hp + (size_t)(iy + gm->pad)) * st->wp + (size_t)gm->pad,
                           sizeof(float) * (size_t)gm->w);
        }
    }
}

static void conv_destroy(orb_train_layer_t *l)
{
    free(l->state);
    l->state = NULL;
}

const orb_train_layer_ops_t orb_train_conv_cpu_ops = {
    .kind = "conv",
    .setup = conv_setup,
    .init = orb_train_layer_init_conv,
    .forward = conv_forward,
    .backward = conv_backward,
    .destroy = conv_destroy,
};
