/* torch.utils.data.DistributedSampler semantics: one permutation of the dataset per epoch
 * (seeded by seed + epoch, identical on every rank), padded by wrapping around to a multiple
 * of the world size, and rank r takes positions r, r + world, r + 2 world, ... */
#ifndef ORB_TRAIN_SAMPLER_H
#define ORB_TRAIN_SAMPLER_H

#include <stdint.h>

#include "orbit.h"

typedef struct {
    int64_t *idx; /* dataset indices of this rank's shard, in visiting order */
    int64_t count;
} orb_train_shard_t;

/* shuffle = 0 keeps dataset order; pad = 0 gives unequal shards that cover each sample
 * exactly once (evaluation). */
orb_status_t orb_train_shard_make(int64_t n, int rank, int world, uint64_t seed, int64_t epoch,
                                  int shuffle, int pad, orb_train_shard_t *out);
void orb_train_shard_free(orb_train_shard_t *shard);

#endif
