#include "eval.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "sampler.h"

orb_status_t orb_train_evaluate(orb_train_model_t *m, orb_train_comm_t *comm, const orb_train_dataset_t *ds,
                                float mean, float std, int64_t *counts)
{
    int rank = orb_train_comm_rank(comm), world = orb_train_comm_world(comm), nc = m->nclasses;
    orb_train_shard_t shard = {0};
    memset(counts, 0, sizeof(int64_t) * 2 * (size_t)nc);
    if (ds->n > rank) /* fewer test images than ranks: this rank has none */
        ORB_TRAIN_CHECK(orb_train_shard_make(ds->n, rank, world, 0, 0, 0, 0, &shard));
    int32_t *y = malloc(sizeof(int32_t) * (size_t)m->max_batch);
    if (!y) {
        orb_train_shard_free(&shard);
        return orb_train_fail(ORB_ERR_NO_MEMORY, "evaluation: out of memory");
    }
    for (int64_t s = 0; s < shard.count; s += m->max_batch) {
        int n = (int)(shard.count - s < m->max_batch ? shard.count - s : m->max_batch);
        orb_train_dataset_batch(ds, shard.idx + s, n, mean, std, orb_train_model_input(m), y);
        orb_train_pass_t pass = {.n = n, .training = 0, .sample_ids = shard.idx + s};
        const float *logp = orb_train_model_forward(m, &pass);
        for (int b = 0; b < n; b++) {
            const float *row = logp + (size_t)b * nc;
            int best = 0;
            for (int c = 1; c < nc; c++)
                best = row[c] > row[best] ? c : best;
            if (y[b] >= nc)
                continue; /* cannot happen: the model covers the labels of both splits */
            counts[y[b]] += best == y[b];
            counts[nc + y[b]]++;
        }
    }
    free(y);
    orb_train_shard_free(&shard);
    orb_train_job_t job = {.kind = ORB_TRAIN_JOB_REDUCE, .buf = counts, .count = 2 * (size_t)nc,
                           .dtype = ORB_INT64, .root = 0, .bucket = -1};
    return orb_train_comm_run(comm, &job);
}
