/* The layer interface. A layer is a const ops table plus a small descriptor; it owns no
 * parameters: weights and gradients live in the model's two flat buffers (so DDP buckets
 * are plain ranges of them) and are passed in as pointers. Memory behind every pointer
 * belongs to the model's device: a CUDA implementation (cuDNN, cuBLAS) provides its own ops
 * tables for the same descriptors and the model, reducer and optimiser stay as they are. */
#ifndef ORB_TRAIN_LAYER_H
#define ORB_TRAIN_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.h"
#include "rng.h"

typedef enum { ORB_TRAIN_DEV_CPU = 0 } orb_train_device_t;

typedef struct {
    int c, h, w;
} orb_train_shape_t;

static inline size_t orb_train_shape_size(orb_train_shape_t s)
{
    return (size_t)s.c * (size_t)s.h * (size_t)s.w;
}

/* What one forward/backward pass needs besides the tensors. */
typedef struct {
    int n;                      /* samples in this batch */
    int training;               /* dropout active */
    uint64_t seed;              /* run seed */
    uint64_t step;              /* global optimiser step */
    const int64_t *sample_ids;  /* dataset index of each sample */
    float *work;                /* scratch shared by all layers, model-owned */
    /* SyncBatchNorm (--sync-bn): sums n doubles over every rank, in place, before the call
     * returns (NULL: batch statistics stay this rank's). A failure is kept by the callee and
     * the training loop stops after the pass; the layer goes on with what it has. */
    void (*sync_sum)(void *ctx, double *buf, size_t n);
    void *sync_ctx;
} orb_train_pass_t;

typedef struct orb_train_layer orb_train_layer_t;

typedef struct {
    const char *kind;
    /* From l->in and the hyper-parameters: fill l->out, l->nweights, l->nbias,
     * l->work_floats; allocate per-batch state for up to max_batch samples. */
    orb_status_t (*setup)(orb_train_layer_t *l, int max_batch);
    /* PyTorch's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and bias. */
    void (*init)(const orb_train_layer_t *l, float *w, orb_train_rng_t *rng);
    /* x: n x in, y: n x out, per sample C x H x W (NCHW). w: weights then bias. */
    void (*forward)(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                    float *y);
    /* dw is overwritten with this batch's gradient (weights then bias). dx is NULL when the
     * input needs no gradient (the first layer). */
    void (*backward)(orb_train_layer_t *l, const orb_train_pass_t *p, const float *w, const float *x,
                     const float *y, const float *dy, float *dx, float *dw);
    void (*destroy)(orb_train_layer_t *l);
} orb_train_layer_ops_t;

struct orb_train_layer {
    const orb_train_layer_ops_t *ops;
    char name[16];
    int index;
    orb_train_shape_t in, out;
    /* hyper-parameters; each kind reads the ones it has */
    int out_c, kernel, stride, pad;
    float drop_p;
    int algo; /* implementation variant, 0: the kind picks (conv.c: orb_train_conv_algo_t) */
    int relu; /* conv, batchnorm: ReLU fused on the output (saves two passes over the largest tensors) */
    int kaiming; /* conv: Kaiming normal init, fan_out, gain sqrt(2) (torchvision's ResNet); 0: PyTorch's default */
    int no_bias; /* conv: no bias (a convolution followed by batch norm has none, as in torchvision) */
    float momentum, eps; /* batchnorm: running-statistics momentum (PyTorch's 0.1) and epsilon (1e-5) */
    /* filled by setup */
    size_t nweights, nbias;
    size_t nbuffers; /* state that is not trained but is part of the model (batch norm's running
                      * statistics): DDP broadcasts it from rank 0, checkpoints save it */
    size_t work_floats;
    void *state;
    /* placed by the model */
    size_t param_off;
    size_t buffer_off;
    float *buffers; /* nbuffers floats of the model's buffer region (NULL when none) */
};

static inline size_t orb_train_layer_nparams(const orb_train_layer_t *l)
{
    return l->nweights + l->nbias;
}

/* CPU ops tables, one per kind (conv.c, linear.c, ...). */
extern const orb_train_layer_ops_t orb_train_conv_cpu_ops;
extern const orb_train_layer_ops_t orb_train_linear_cpu_ops;
extern const orb_train_layer_ops_t orb_train_maxpool_cpu_ops;
extern const orb_train_layer_ops_t orb_train_relu_cpu_ops;
extern const orb_train_layer_ops_t orb_train_dropout_cpu_ops;
extern const orb_train_layer_ops_t orb_train_logsoftmax_cpu_ops;
extern const orb_train_layer_ops_t orb_train_batchnorm_cpu_ops; /* batchnorm.c: BatchNorm2d */
extern const orb_train_layer_ops_t orb_train_avgpool_cpu_ops;   /* avgpool.c: global average pool to C x 1 x 1 */
extern const orb_train_layer_ops_t orb_train_block_cpu_ops;     /* block.c: a ResNet residual block */

/* Convolution variants. ROWS: im2col row by row. WIDE (stride 1 only): the output is
 * computed at the padded input's full width and the extra columns dropped, so each column
 * row is one long copy of the padded image instead of oh short ones; where conv_direct.c
 * serves the shape, without columns. WIDE_GEMM: WIDE always with columns + SGEMM (what a CPU
 * without FMA runs; the tests keep it checked). */
typedef enum {
    ORB_TRAIN_CONV_AUTO = 0,
    ORB_TRAIN_CONV_ROWS,
    ORB_TRAIN_CONV_WIDE,
    ORB_TRAIN_CONV_WIDE_GEMM
} orb_train_conv_algo_t;

/* Shared default initialiser: uniform in +-1/sqrt(fan_in) with fan_in = nweights / out_c. */
void orb_train_layer_init_uniform(const orb_train_layer_t *l, float *w, orb_train_rng_t *rng);
/* Convolutions: l->kaiming ? Kaiming normal with fan_out = nweights / in.c (out_c x k x k), std
 * sqrt(2 / fan_out), as torchvision's ResNet (kaiming_normal_, mode="fan_out", relu), bias 0 :
 * the default above. */
void orb_train_layer_init_conv(const orb_train_layer_t *l, float *w, orb_train_rng_t *rng);

#endif
