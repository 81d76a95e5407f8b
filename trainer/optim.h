/* Optimisers over the flat parameter buffer, with torch.optim's update rules:
 * SGD (momentum, no dampening: buf = m*buf + g, p -= lr*buf) and Adam (bias-corrected,
 * eps outside the square root), and StepLR's schedule. */
#ifndef ORB_TRAIN_OPTIM_H
#define ORB_TRAIN_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.h"

typedef enum { ORB_TRAIN_SGD = 0, ORB_TRAIN_ADAM } orb_train_optim_kind_t;

typedef struct {
    orb_train_optim_kind_t kind;
    size_t n;
    float momentum;          /* SGD */
    float beta1, beta2, eps; /* Adam */
    int64_t t;               /* steps taken (Adam bias correction) */
    int nstate;              /* state vectors: SGD 0 or 1 (momentum), Adam 2 */
    float *state[2];         /* SGD: momentum buffer; Adam: m, v */
} orb_train_optim_t;

orb_status_t orb_train_optim_create(orb_train_optim_kind_t kind, size_t n, float momentum,
                                    orb_train_optim_t **out);
void orb_train_optim_destroy(orb_train_optim_t *o);
void orb_train_optim_step(orb_train_optim_t *o, float *params, const float *grads, float lr);
/* StepLR: lr0 * gamma^floor(epoch / step_size); step_size <= 0 keeps lr0. */
float orb_train_lr_at(float lr0, int step_size, float gamma, int64_t epoch);

#endif
