/* Distributed evaluation: each rank classifies its shard of the test set (no padding, so
 * every image counts once); per-class counts are summed into rank 0. */
#ifndef ORB_TRAIN_EVAL_H
#define ORB_TRAIN_EVAL_H

#include "comm_thread.h"
#include "dataset.h"
#include "model.h"

/* counts: 2 * nclasses int64 (correct per class, then total per class); on rank 0 they
 * hold the sums over all ranks. */
orb_status_t orb_train_evaluate(orb_train_model_t *m, orb_train_comm_t *comm, const orb_train_dataset_t *ds,
                                float mean, float std, int64_t *counts);

#endif
