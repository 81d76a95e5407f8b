#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef struct {
    const orb_train_layer_ops_t *ops;
    const char *name;
    int out_c; /* -1: the number of classes */
    int kernel, stride, pad;
    float drop_p;
    int relu;
    int kaiming, no_bias;
} layer_spec_t;

/* A convolution followed by ReLU is one layer with the activation fused (conv.c): the same
 * function, without two passes over the largest activations. */
#define CONV_RELU(n, c, k, p) {.ops = &orb_train_conv_cpu_ops, .name = n, .out_c = c, .kernel = k, .stride = 1, .pad = p, .relu = 1}
#define RELU(n) {.ops = &orb_train_relu_cpu_ops, .name = n}
#define POOL(n, k) {.ops = &orb_train_maxpool_cpu_ops, .name = n, .kernel = k, .stride = k}
#define FC(n, c) {.ops = &orb_train_linear_cpu_ops, .name = n, .out_c = c}
#define DROP(n, p) {.ops = &orb_train_dropout_cpu_ops, .name = n, .drop_p = p}
#define LOGSOFTMAX {.ops = &orb_train_logsoftmax_cpu_ops, .name = "log_softmax"}
/* ResNet parts (torchvision's layouts): a stem convolution without bias and with Kaiming init,
 * batch norm with the ReLU fused, a residual block (block.c: width, stride, expansion 1 basic
 * or 4 bottleneck), global average pooling. */
#define STEM(n, c, k, s, p) {.ops = &orb_train_conv_cpu_ops, .name = n, .out_c = c, .kernel = k, .stride = s, .pad = p, .kaiming = 1, .no_bias = 1}
#define BN_RELU(n) {.ops = &orb_train_batchnorm_cpu_ops, .name = n, .relu = 1}
#define MAXPOOL(n, k, s, p) {.ops = &orb_train_maxpool_cpu_ops, .name = n, .kernel = k, .stride = s, .pad = p}
#define BLOCK(n, planes, s, exp) {.ops = &orb_train_block_cpu_ops, .name = n, .out_c = planes, .kernel = exp, .stride = s}
#define AVGPOOL {.ops = &orb_train_avgpool_cpu_ops, .name = "avgpool"}

/* LeNet-5 for 28x28 inputs: conv1 pads by 2 so fc1 sees 16x5x5, as in the original. */
static const layer_spec_t lenet_spec[] = {
    CONV_RELU("conv1", 6, 5, 2), POOL("pool1", 2),
    CONV_RELU("conv2", 16, 5, 0), POOL("pool2", 2),
    FC("fc1", 120), RELU("relu3"), FC("fc2", 84), RELU("relu4"), FC("fc3", -1), LOGSOFTMAX,
};

/* The network of PyTorch's examples/mnist/main.py. */
static const layer_spec_t convnet_spec[] = {
    CONV_RELU("conv1", 32, 3, 0), CONV_RELU("conv2", 64, 3, 0),
    POOL("pool", 2), DROP("dropout1", 0.25f),
    FC("fc1", 128), RELU("relu3"), DROP("dropout2", 0.5f), FC("fc2", -1), LOGSOFTMAX,
};

/* The CIFAR ResNet-20 of He et al. (3 stages of 3 basic blocks, 16/32/64 wide; 0.27 M
 * parameters with torchvision-style projection shortcuts), whose 3x3 stem takes 28x28 too. */
static const layer_spec_t resnet20_spec[] = {
    STEM("conv1", 16, 3, 1, 1), BN_RELU("bn1"),
    BLOCK("layer1.0", 16, 1, 1), BLOCK("layer1.1", 16, 1, 1), BLOCK("layer1.2", 16, 1, 1),
    BLOCK("layer2.0", 32, 2, 1), BLOCK("layer2.1", 32, 1, 1), BLOCK("layer2.2", 32, 1, 1),
    BLOCK("layer3.0", 64, 2, 1), BLOCK("layer3.1", 64, 1, 1), BLOCK("layer3.2", 64, 1, 1),
    AVGPOOL, FC("fc", -1), LOGSOFTMAX,
};

/* torchvision.models.resnet18 */
static const layer_spec_t resnet18_spec[] = {
    STEM("conv1", 64, 7, 2, 3), BN_RELU("bn1"), MAXPOOL("maxpool", 3, 2, 1),
    BLOCK("layer1.0", 64, 1, 1), BLOCK("layer1.1", 64, 1, 1),
    BLOCK("layer2.0", 128, 2, 1), BLOCK("layer2.1", 128, 1, 1),
    BLOCK("layer3.0", 256, 2, 1), BLOCK("layer3.1", 256, 1, 1),
    BLOCK("layer4.0", 512, 2, 1), BLOCK("layer4.1", 512, 1, 1),
    AVGPOOL, FC("fc", -1), LOGSOFTMAX,
};

/* torchvision.models.resnet50 (v1.5: the stride in the bottleneck's 3x3) */
static const layer_spec_t resnet50_spec[] = {
    STEM("conv1", 64, 7, 2, 3), BN_RELU("bn1"), MAXPOOL("maxpool", 3, 2, 1),
    BLOCK("layer1.0", 64, 1, 4), BLOCK("layer1.1", 64, 1, 4), BLOCK("layer1.2", 64, 1, 4),
    BLOCK("layer2.0", 128, 2, 4), BLOCK("layer2.1", 128, 1, 4), BLOCK("layer2.2", 128, 1, 4),
    BLOCK("layer2.3", 128, 1, 4),
    BLOCK("layer3.0", 256, 2, 4), BLOCK("layer3.1", 256, 1, 4), BLOCK("layer3.2", 256, 1, 4),
    BLOCK("layer3.3", 256, 1, 4), BLOCK("layer3.4", 256, 1, 4), BLOCK("layer3.5", 256, 1, 4),
    BLOCK("layer4.0", 512, 2, 4), BLOCK("layer4.1", 512, 1, 4), BLOCK("layer4.2", 512, 1, 4),
    AVGPOOL, FC("fc", -1), LOGSOFTMAX,
};

static const struct {
    const char *name;
    const layer_spec_t *spec;
    int n;
} models[] = {
#define MODEL(n, s) {n, s, (int)(sizeof s / sizeof s[0])}
    MODEL("lenet", lenet_spec), MODEL("convnet", convnet_spec), MODEL("resnet20", resnet20_spec),
    MODEL("resnet18", resnet18_spec), MODEL("resnet50", resnet50_spec),
#undef MODEL
};

static void *alloc_floats(size_t n)
{
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    void *p = aligned_alloc(64, bytes ? bytes : 64);
    if (p)
        memset(p, 0, bytes ? bytes : 64);
    return p;
}

int orb_train_model_fixed_input(const char *name, orb_train_shape_t *in)
{
    if (strcmp(name, "lenet") != 0 && strcmp(name, "convnet") != 0)
        return 0;
    *in = (orb_train_shape_t){1, 28, 28};
    return 1;
}

orb_status_t orb_train_model_create(const char *name, orb_train_shape_t in, int nclasses, int max_batch,
                                    orb_train_model_t **out)
{
    const layer_spec_t *spec = NULL;
    int nspec = 0;
    for (size_t i = 0; i < sizeof models / sizeof models[0] && !spec; i++)
        if (strcmp(name, models[i].name) == 0) {
            spec = models[i].spec;
            nspec = models[i].n;
        }
    if (!spec)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "unknown model '%s' (lenet, convnet, resnet20, resnet18, resnet50)",
                              name);
    _Static_assert(sizeof resnet50_spec / sizeof resnet50_spec[0] <= ORB_TRAIN_MAX_LAYERS, "ORB_TRAIN_MAX_LAYERS");
    if (max_batch <= 0 || nclasses < 2)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "model %s: batch %d, %d classes", name, max_batch, nclasses);

    orb_train_model_t *m = calloc(1, sizeof *m);
    if (!m)
        return orb_train_fail(ORB_ERR_NO_MEMORY, "model %s: out of memory", name);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->dev = ORB_TRAIN_DEV_CPU;
    m->in = in;
    m->nclasses = nclasses;
    m->max_batch = max_batch;

    orb_status_t st = ORB_OK;
    orb_train_shape_t shape = in;
    size_t work = 0, widest = orb_train_shape_size(in);
    for (int i = 0; i < nspec; i++) {
        orb_train_layer_t *l = &m->layers[i];
        l->ops = spec[i].ops;
        snprintf(l->name, sizeof l->name, "%s", spec[i].name);
        l->index = i;
        l->in = shape;
        l->out_c = spec[i].out_c < 0 ? nclasses : spec[i].out_c;
        l->kernel = spec[i].kernel;
        l->stride = spec[i].stride;
        l->pad = spec[i].pad;
        l->drop_p = spec[i].drop_p;
        l->relu = spec[i].relu;
        l->kaiming = spec[i].kaiming;
        l->no_bias = spec[i].no_bias;
        l->param_off = m->nparams;
        m->nlayers = i + 1;
        st = l->ops->setup(l, max_batch);
        if (st != ORB_OK)
            goto err;
        if (l->nweights) {
            orb_train_tensor_t *t = &m->tensors[m->ntensors++];
            snprintf(t->name, sizeof t->name, "%s.weight", l->name);
            t->off = m->nparams;
            t->count = l->nweights;
            t->layer = i;
        }
        if (l->nbias) {
            orb_train_tensor_t *t = &m->tensors[m->ntensors++];
            snprintf(t->name, sizeof t->name, "%s.bias", l->name);
            t->off = m->nparams + l->nweights;
            t->count = l->nbias;
            t->layer = i;
        }
        m->nparams += orb_train_layer_nparams(l);
        l->buffer_off = m->nbuffers;
        m->nbuffers += l->nbuffers;
        work = l->work_floats > work ? l->work_floats : work;
        shape = l->out;
        widest = orb_train_shape_size(shape) > widest ? orb_train_shape_size(shape) : widest;
    }

    m->params = alloc_floats(m->nparams);
    m->buffers = alloc_floats(m->nbuffers);
    for (int i = 0; i < m->nlayers && m->buffers; i++)
        m->layers[i].buffers = m->layers[i].nbuffers ? m->buffers + m->layers[i].buffer_off : NULL;
    m->grads = alloc_floats(m->nparams);
    m->work = alloc_floats(work);
    m->dbuf[0] = alloc_floats(widest * (size_t)max_batch);
    m->dbuf[1] = alloc_floats(widest * (size_t)max_batch);
    m->acts[0] = alloc_floats(orb_train_shape_size(in) * (size_t)max_batch);
    int ok = m->params && m->grads && m->buffers && m->work && m->dbuf[0] && m->dbuf[1] && m->acts[0];
    for (int i = 0; i < m->nlayers && ok; i++) {
        m->acts[i + 1] = alloc_floats(orb_train_shape_size(m->layers[i].out) * (size_t)max_batch);
        ok = m->acts[i + 1] != NULL;
    }
    if (!ok) {
        st = orb_train_fail(ORB_ERR_NO_MEMORY, "model %s: cannot allocate buffers for batch %d", name,
                            max_batch);
        goto err;
    }
    *out = m;
    return ORB_OK;

err:
    orb_train_model_destroy(m);
    return st;
}

void orb_train_model_destroy(orb_train_model_t *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nlayers; i++)
        if (m->layers[i].ops->destroy)
            m->layers[i].ops->destroy(&m->layers[i]);
    for (int i = 0; i <= m->nlayers; i++)
        free(m->acts[i]);
    free(m->dbuf[0]);
    free(m->dbuf[1]);
    free(m->work);
    free(m->params);
    free(m->grads);
    free(m->buffers);
    free(m);
}

void orb_train_model_init_params(orb_train_model_t *m, uint64_t seed)
{
    orb_train_rng_t rng;
    orb_train_rng_seed(&rng, orb_train_hash(seed, 0x494e4954ull));
    for (int i = 0; i < m->nlayers; i++) {
        orb_train_layer_t *l = &m->layers[i];
        /* buffers too (running variance starts at 1): init sets a layer's buffers */
        if (l->ops->init && (orb_train_layer_nparams(l) || l->nbuffers))
            l->ops->init(l, m->params + l->param_off, &rng);
    }
}

const float *orb_train_model_forward(orb_train_model_t *m, const orb_train_pass_t *p)
{
    orb_train_pass_t pass = *p;
    pass.work = m->work;
    for (int i = 0; i < m->nlayers; i++) {
        orb_train_layer_t *l = &m->layers[i];
        l->ops->forward(l, &pass, m->params + l->param_off, m->acts[i], m->acts[i + 1]);
    }
    return m->acts[m->nlayers];
}

void orb_train_model_backward(orb_train_model_t *m, const orb_train_pass_t *p, orb_train_grad_hook_t hook,
                              void *hook_arg)
{
    orb_train_pass_t pass = *p;
    pass.work = m->work;
    int cur = 0;
    for (int i = m->nlayers - 1; i >= 0; i--) {
        orb_train_layer_t *l = &m->layers[i];
        /* Nothing below a parameter-free prefix needs gradients; here only the input. */
        float *dx = i == 0 ? NULL : m->dbuf[1 - cur];
        l->ops->backward(l, &pass, m->params + l->param_off, m->acts[i], m->acts[i + 1], m->dbuf[cur], dx,
                         m->grads + l->param_off);
        if (hook && orb_train_layer_nparams(l))
            hook(hook_arg, l);
        cur = 1 - cur;
    }
}
