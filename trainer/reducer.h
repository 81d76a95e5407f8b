/* Gradient synchronisation as torch DDP's Reducer does it: parameters are grouped into
 * buckets in reverse order (the order backward produces them), the first bucket capped at
 * 1 MiB so communication starts early and the rest at --bucket-mb; a bucket is all-reduced
 * as soon as backward has written all of it, on the communication thread, while backward
 * goes on; the sum is divided by the world size. With overlap off every bucket waits for
 * the end of backward. Because gradients are one flat buffer, a bucket is a range of it:
 * nothing is copied in or out. */
#ifndef ORB_TRAIN_REDUCER_H
#define ORB_TRAIN_REDUCER_H

#include "comm_thread.h"
#include "model.h"

typedef struct {
    size_t off, count; /* floats of model->grads */
    uint64_t ticket;
} orb_train_bucket_t;

typedef struct {
    orb_train_comm_t *comm;
    float *grads;
    int world, overlap;
    int nbuckets, next;
    orb_train_bucket_t *buckets; /* buckets[0] holds the last parameters */
    int64_t step;
    orb_status_t status;
    orb_dtype_t wire; /* ORB_FLOAT32, or the 16-bit type the buckets travel in (--grad-dtype) */
} orb_train_reducer_t;

/* DDP's first-bucket cap (torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES). */
#define ORB_TRAIN_FIRST_BUCKET_BYTES ((size_t)1 << 20)

orb_status_t orb_train_reducer_create(const orb_train_model_t *m, orb_train_comm_t *comm, size_t cap_bytes,
                                      int overlap, orb_train_reducer_t **out);
void orb_train_reducer_destroy(orb_train_reducer_t *r);
void orb_train_reducer_begin(orb_train_reducer_t *r, int64_t step);
/* orb_train_grad_hook_t: a layer's gradients are final. */
void orb_train_reducer_hook(void *arg, const orb_train_layer_t *layer);
/* Launches what is left and waits for every bucket: after it, grads hold the average. */
orb_status_t orb_train_reducer_finish(orb_train_reducer_t *r);

#endif
