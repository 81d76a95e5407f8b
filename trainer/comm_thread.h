/* The communication thread. After orbit_train_comm_start it owns the backend: it runs init,
 * every collective, and destroy, so a communicator is only ever used by one thread and in
 * submission order, identical on every rank. The compute thread submits jobs (gradient
 * buckets while backward continues, or blocking calls) and waits on tickets. */
#ifndef ORB_TRAIN_COMM_THREAD_H
#define ORB_TRAIN_COMM_THREAD_H

#include <stdint.h>

#include "backend.h"
#include "trace.h"

typedef enum { ORB_TRAIN_JOB_ALLREDUCE = 0, ORB_TRAIN_JOB_BROADCAST, ORB_TRAIN_JOB_REDUCE } orb_train_job_kind_t;

typedef struct {
    orb_train_job_kind_t kind;
    void *buf;
    size_t count;
    orb_dtype_t dtype;
    int root;
    float scale;    /* float32 all-reduce: multiply the result by this (0: leave it) */
    /* float32 all-reduce on the wire in ORB_BFLOAT16 or ORB_FLOAT16 (0 or ORB_FLOAT32: as is):
     * scaled, rounded to 16 bits, summed in 16 bits, widened back, as DDP's
     * bf16_compress_hook / fp16_compress_hook do (--grad-dtype) */
    orb_dtype_t wire;
    int bucket;     /* for the trace; -1 when not a gradient bucket */
    int64_t step;
} orb_train_job_t;

typedef struct orb_train_comm orb_train_comm_t;

/* trace may be NULL; it is written only by the communication thread. */
orb_status_t orb_train_comm_start(const orb_train_backend_ops_t *ops, orb_train_trace_t *trace,
                                  orb_train_comm_t **out);
int orb_train_comm_rank(const orb_train_comm_t *c);
int orb_train_comm_world(const orb_train_comm_t *c);
int orb_train_comm_local_rank(const orb_train_comm_t *c);
/* Queues a job; returns its ticket (blocks only while the queue is full). */
uint64_t orb_train_comm_submit(orb_train_comm_t *c, const orb_train_job_t *job);
/* Until every job up to ticket is done; the first error of any job so far, with its detail
 * in this thread's orb_train_last_error. */
orb_status_t orb_train_comm_wait(orb_train_comm_t *c, uint64_t ticket);
orb_status_t orb_train_comm_run(orb_train_comm_t *c, const orb_train_job_t *job);
/* Ends the job's other ranks too, for fatal errors (safe while a job is in flight). */
void orb_train_comm_abort(orb_train_comm_t *c);
/* Destroys the backend on its thread and joins it. */
void orb_train_comm_stop(orb_train_comm_t *c);

#endif
