/* A sequential model: layers, the flat parameter and gradient buffers, and activations for
 * up to max_batch samples. Parameters are laid out in forward order, weights then bias per
 * layer (the order of PyTorch's model.parameters()); backward fills the gradient buffer from
 * the end, which is why DDP buckets are ranges taken from the tail. */
#ifndef ORB_TRAIN_MODEL_H
#define ORB_TRAIN_MODEL_H

#include "layer.h"

#define ORB_TRAIN_MAX_LAYERS 32

typedef struct {
    char name[24]; /* "conv1.weight" */
    size_t off, count;
    int layer;
} orb_train_tensor_t;

/* Called after a layer's gradients are final during backward (overlap starts here). */
typedef void (*orb_train_grad_hook_t)(void *arg, const orb_train_layer_t *layer);

typedef struct {
    char name[16];
    orb_train_device_t dev;
    int nlayers;
    orb_train_layer_t layers[ORB_TRAIN_MAX_LAYERS];
    int ntensors;
    orb_train_tensor_t tensors[2 * ORB_TRAIN_MAX_LAYERS];
    size_t nparams;
    float *params, *grads;
    size_t nbuffers;  /* every layer's buffers (batch norm's running statistics), in layer order */
    float *buffers;
    orb_train_shape_t in;
    int nclasses, max_batch;
    float *acts[ORB_TRAIN_MAX_LAYERS + 1]; /* acts[0] input, acts[i+1] output of layer i */
    float *dbuf[2];                         /* gradient ping-pong */
    float *work;
} orb_train_model_t;

/* name: "lenet" or "convnet". */
orb_status_t orb_train_model_create(const char *name, orb_train_shape_t in, int nclasses, int max_batch,
                                    orb_train_model_t **out);
void orb_train_model_destroy(orb_train_model_t *m);
/* 1 with *in set when the model only takes one sample shape (lenet, convnet: 1x28x28, their
 * layer sizes are MNIST's); 0 when it adapts to the data. */
int orb_train_model_fixed_input(const char *name, orb_train_shape_t *in);
/* Draws every layer's initial parameters from one stream seeded by seed. */
void orb_train_model_init_params(orb_train_model_t *m, uint64_t seed);

/* Where to write the n x in batch before forward. */
static inline float *orb_train_model_input(orb_train_model_t *m)
{
    return m->acts[0];
}
/* Runs every layer; returns the n x nclasses log-probabilities. */
const float *orb_train_model_forward(orb_train_model_t *m, const orb_train_pass_t *p);
/* Where to write d(loss)/d(log-probabilities) before backward. */
static inline float *orb_train_model_output_grad(orb_train_model_t *m)
{
    return m->dbuf[0];
}
/* Backward through every layer (the input gets no gradient); hook may be NULL. */
void orb_train_model_backward(orb_train_model_t *m, const orb_train_pass_t *p, orb_train_grad_hook_t hook,
                              void *hook_arg);

#endif
