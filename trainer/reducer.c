#include "reducer.h"

#include <stdlib.h>

#include "error.h"

orb_status_t orb_train_reducer_create(const orb_train_model_t *m, orb_train_comm_t *comm, size_t cap_bytes,
                                      int overlap, orb_train_reducer_t **out)
{
    orb_train_reducer_t *r = calloc(1, sizeof *r);
    if (r)
        r->buckets = calloc((size_t)m->ntensors + 1, sizeof *r->buckets);
    if (!r || !r->buckets) {
        free(r);
        return orb_train_fail(ORB_ERR_NO_MEMORY, "reducer: out of memory");
    }
    r->comm = comm;
    r->grads = m->grads;
    r->world = orb_train_comm_world(comm);
    r->wire = ORB_FLOAT32;
    r->overlap = overlap;
    if (cap_bytes < sizeof(float))
        cap_bytes = sizeof(float);

    /* Walk tensors last to first; a bucket closes once it reaches its cap, never splitting
     * a tensor. Tensors are contiguous in forward order, so each bucket is one range. */
    size_t limit = cap_bytes < ORB_TRAIN_FIRST_BUCKET_BYTES ? cap_bytes : ORB_TRAIN_FIRST_BUCKET_BYTES;
    orb_train_bucket_t *b = NULL;
    for (int i = m->ntensors - 1; i >= 0; i--) {
        const orb_train_tensor_t *t = &m->tensors[i];
        if (!b) {
            b = &r->buckets[r->nbuckets++];
            b->off = t->off + t->count;
        }
        b->off = t->off;
        b->count += t->count;
        if (b->count * sizeof(float) >= limit) {
            b = NULL;
            limit = cap_bytes;
        }
    }
    *out = r;
    return ORB_OK;
}

void orb_train_reducer_destroy(orb_train_reducer_t *r)
{
    if (!r)
        return;
    free(r->buckets);
    free(r);
}

void orb_train_reducer_begin(orb_train_reducer_t *r, int64_t step)
{
    r->next = 0;
    r->step = step;
}

static void launch(orb_train_reducer_t *r)
{
    orb_train_bucket_t *b = &r->buckets[r->next];
    orb_train_job_t job = {
        .kind = ORB_TRAIN_JOB_ALLREDUCE,
        .buf = r->grads + b->off,
        .count = b->count,
        .dtype = ORB_FLOAT32,
        .scale = 1.0f / (float)r->world,
        .bucket = r->next,
        .step = r->step,
        .wire = r->wire,
    };
    b->ticket = orb_train_comm_submit(r->comm, &job);
    r->next++;
}

void orb_train_reducer_hook(void *arg, const orb_train_layer_t *layer)
{
    orb_train_reducer_t *r = arg;
    if (r->world == 1 || !r->overlap)
        return;
    /* backward runs last layer first: everything from this layer's offset up is final */
    while (r->next < r->nbuckets && r->buckets[r->next].off >= layer->param_off)
        launch(r);
}

orb_status_t orb_train_reducer_finish(orb_train_reducer_t *r)
{
    if (r->world == 1)
        return ORB_OK;
    while (r->next < r->nbuckets)
        launch(r);
    return orb_train_comm_wait(r->comm, r->buckets[r->nbuckets - 1].ticket);
}
