/* Negative log-likelihood on log-probabilities, mean over the batch (F.nll_loss). */
#ifndef ORB_TRAIN_LOSS_H
#define ORB_TRAIN_LOSS_H

#include <stdint.h>

/* Returns the loss; writes d(loss)/d(logp) into dlogp (n x nclasses). */
double orb_train_nll_loss(const float *logp, const int32_t *labels, int n, int nclasses, float *dlogp);

#endif
