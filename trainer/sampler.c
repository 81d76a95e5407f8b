#include "sampler.h"

#include <stdlib.h>

#include "error.h"
#include "rng.h"

orb_status_t orb_train_shard_make(int64_t n, int rank, int world, uint64_t seed, int64_t epoch,
                                  int shuffle, int pad, orb_train_shard_t *out)
{
    if (n <= 0 || world <= 0 || rank < 0 || rank >= world)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "sampler: bad arguments n=%lld rank=%d world=%d",
                              (long long)n, rank, world);
    int64_t total = pad ? (n + world - 1) / world * world : n;
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    int64_t mine = pad ? total / world : (n - rank + world - 1) / world;
    int64_t *idx = malloc((size_t)(mine > 0 ? mine : 1) * sizeof *idx);
    if (!perm || !idx) {
        free(perm);
        free(idx);
        return orb_train_fail(ORB_ERR_NO_MEMORY, "sampler: cannot allocate %lld indices", (long long)n);
    }
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    if (shuffle) {
        /* Same stream on every rank: seed + epoch, as DistributedSampler.set_epoch does. */
        orb_train_rng_t rng;
        orb_train_rng_seed(&rng, orb_train_hash(seed + (uint64_t)epoch, 0x5a4d504c45ull));
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)orb_train_rng_below(&rng, (uint64_t)i + 1);
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
    }
    int64_t k = 0;
    for (int64_t pos = rank; pos < total; pos += world)
        idx[k++] = perm[pos % n]; /* positions past n wrap to the start: the padding */
    free(perm);
    out->idx = idx;
    out->count = k;
    return ORB_OK;
}

void orb_train_shard_free(orb_train_shard_t *shard)
{
    free(shard->idx);
    shard->idx = NULL;
    shard->count = 0;
}
