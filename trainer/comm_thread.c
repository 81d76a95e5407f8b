#include "comm_thread.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "half16.h"

#define QUEUE_CAP 256

struct orb_train_comm {
    orb_train_backend_t be;
    orb_train_trace_t *trace;
    int lib_traced; /* the backend's tracer records the calls (trace->lib_dir) */
    uint16_t *wire; /* 16-bit staging of compressed all-reduces, grown to the largest bucket */
    size_t wire_cap;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    orb_train_job_t queue[QUEUE_CAP];
    uint64_t submitted, completed; /* tickets: job k is queue[(k - 1) % QUEUE_CAP] */
    int stop;
    int init_done;
    orb_status_t status;           /* first error, sticky */
    char err[512];
};

/* A float32 all-reduce sent as 16 bits: the rounding and widening are here, on the
 * communication thread, overlapped with backward like the reduction itself. *t0 becomes the
 * start of the all-reduce proper (the profile's communication event). */
static orb_status_t allreduce16(orb_train_comm_t *c, const orb_train_job_t *j, int64_t *t0)
{
    const int bf16 = j->wire == ORB_BFLOAT16;
    if (j->count > c->wire_cap) {
        uint16_t *w = realloc(c->wire, j->count * sizeof *w);
        if (!w)
            return orb_train_fail(ORB_ERR_NO_MEMORY, "communication thread: no memory for a %zu-element 16-bit bucket",
                                  j->count);
        c->wire = w;
        c->wire_cap = j->count;
    }
    orb_train_to16(c->wire, j->buf, j->count, j->scale != 0.0f ? j->scale : 1.0f, bf16);
    *t0 = orb_train_now_ns();
    orb_status_t st = c->be.ops->allreduce(&c->be, c->wire, j->count, j->wire);
    if (st == ORB_OK)
        orb_train_from16(j->buf, c->wire, j->count, bf16);
    return st;
}

static orb_status_t run_job(orb_train_comm_t *c, const orb_train_job_t *j)
{
    orb_train_backend_t *be = &c->be;
    int64_t t0 = orb_train_now_ns();
    orb_status_t st;
    orb_train_ev_kind_t kind;
    switch (j->kind) {
    case ORB_TRAIN_JOB_ALLREDUCE:
        if (j->dtype == ORB_FLOAT32 && (j->wire == ORB_BFLOAT16 || j->wire == ORB_FLOAT16)) {
            st = allreduce16(c, j, &t0);
            kind = ORB_TRAIN_EV_ALLREDUCE;
            break;
        }
        st = be->ops->allreduce(be, j->buf, j->count, j->dtype);
        /* averaging here keeps it off the compute thread, overlapped like the reduction */
        if (st == ORB_OK && j->scale != 0.0f && j->dtype == ORB_FLOAT32) {
            float *f = j->buf;
            for (size_t i = 0; i < j->count; i++)
                f[i] *= j->scale;
        }
        kind = ORB_TRAIN_EV_ALLREDUCE;
        break;
    case ORB_TRAIN_JOB_BROADCAST:
        st = be->ops->broadcast(be, j->buf, j->count, j->dtype, j->root);
        kind = ORB_TRAIN_EV_BROADCAST;
        break;
    case ORB_TRAIN_JOB_REDUCE:
        st = be->ops->reduce(be, j->buf, j->count, j->dtype, j->root);
        kind = ORB_TRAIN_EV_REDUCE;
        break;
    default:
        return orb_train_fail(ORB_ERR_INTERNAL, "communication thread: unknown job %d", (int)j->kind);
    }
    int64_t t1 = orb_train_now_ns();
    /* the library's own tracer timed the call itself (without the averaging above) */
    if (st == ORB_OK && c->trace && c->trace->enabled && c->lib_traced && be->ops->last_call(be, &t0, &t1) != ORB_OK)
        t1 = orb_train_now_ns();
    const orb_dtype_t sent = j->wire == ORB_BFLOAT16 || j->wire == ORB_FLOAT16 ? j->wire : j->dtype;
    orb_train_trace_add(c->trace, kind, t0, t1, (int64_t)(j->count * orb_dtype_size(sent)), j->step, j->bucket);
    return st;
}

static void *comm_main(void *arg)
{
    orb_train_comm_t *c = arg;
    orb_status_t st = c->be.ops->init(&c->be);
    if (st == ORB_OK && c->trace && c->trace->enabled && c->trace->lib_dir && c->be.ops->trace_start) {
        st = c->be.ops->trace_start(&c->be, c->trace->lib_dir);
        c->lib_traced = st == ORB_OK;
        if (st != ORB_OK)
            c->be.ops->destroy(&c->be);
    }
    pthread_mutex_lock(&c->mu);
    c->init_done = 1;
    if (st != ORB_OK) {
        c->status = st;
        snprintf(c->err, sizeof c->err, "%s", orb_train_last_error());
        c->stop = 1;
    }
    pthread_cond_broadcast(&c->cv_done);
    while (st == ORB_OK) {
        while (!c->stop && c->completed == c->submitted)
            pthread_cond_wait(&c->cv_work, &c->mu);
        if (c->completed == c->submitted && c->stop)
            break;
        orb_train_job_t job = c->queue[c->completed % QUEUE_CAP];
        orb_status_t failed = c->status;
        pthread_mutex_unlock(&c->mu);
        /* after a failure the rest only complete: the ranks no longer agree on the sequence */
        orb_status_t js = failed == ORB_OK ? run_job(c, &job) : failed;
        pthread_mutex_lock(&c->mu);
        if (js != ORB_OK && c->status == ORB_OK) {
            c->status = js;
            snprintf(c->err, sizeof c->err, "%s", orb_train_last_error());
        }
        c->completed++;
        pthread_cond_broadcast(&c->cv_done);
    }
    pthread_mutex_unlock(&c->mu);
    if (st == ORB_OK)
        c->be.ops->destroy(&c->be);
    return NULL;
}

orb_status_t orb_train_comm_start(const orb_train_backend_ops_t *ops, orb_train_trace_t *trace,
                                  orb_train_comm_t **out)
{
    orb_train_comm_t *c = calloc(1, sizeof *c);
    if (!c)
        return orb_train_fail(ORB_ERR_NO_MEMORY, "communication thread: out of memory");
    c->be.ops = ops;
    c->trace = trace;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv_work, NULL);
    pthread_cond_init(&c->cv_done, NULL);
    if (pthread_create(&c->thread, NULL, comm_main, c) != 0) {
        free(c);
        return orb_train_fail(ORB_ERR_SYSTEM, "cannot start the communication thread");
    }
    pthread_mutex_lock(&c->mu);
    while (!c->init_done)
        pthread_cond_wait(&c->cv_done, &c->mu);
    orb_status_t st = c->status;
    pthread_mutex_unlock(&c->mu);
    if (st != ORB_OK) {
        orb_train_fail(st, "%s", c->err);
        pthread_join(c->thread, NULL);
        free(c);
        return st;
    }
    *out = c;
    return ORB_OK;
}

int orb_train_comm_rank(const orb_train_comm_t *c)
{
    return c->be.rank;
}

int orb_train_comm_world(const orb_train_comm_t *c)
{
    return c->be.world;
}

int orb_train_comm_local_rank(const orb_train_comm_t *c)
{
    return c->be.local_rank;
}

uint64_t orb_train_comm_submit(orb_train_comm_t *c, const orb_train_job_t *job)
{
    pthread_mutex_lock(&c->mu);
    while (c->submitted - c->completed >= QUEUE_CAP)
        pthread_cond_wait(&c->cv_done, &c->mu);
    c->queue[c->submitted % QUEUE_CAP] = *job;
    uint64_t ticket = ++c->submitted;
    pthread_cond_signal(&c->cv_work);
    pthread_mutex_unlock(&c->mu);
    return ticket;
}

orb_status_t orb_train_comm_wait(orb_train_comm_t *c, uint64_t ticket)
{
    pthread_mutex_lock(&c->mu);
    while (c->completed < ticket)
        pthread_cond_wait(&c->cv_done, &c->mu);
    orb_status_t st = c->status;
    if (st != ORB_OK)
        orb_train_fail(st, "%s", c->err);
    pthread_mutex_unlock(&c->mu);
    return st;
}

orb_status_t orb_train_comm_run(orb_train_comm_t *c, const orb_train_job_t *job)
{
    return orb_train_comm_wait(c, orb_train_comm_submit(c, job));
}

void orb_train_comm_abort(orb_train_comm_t *c)
{
    if (c && c->be.ops->abort)
        c->be.ops->abort(&c->be);
}

void orb_train_comm_stop(orb_train_comm_t *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cv_work);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv_work);
    pthread_cond_destroy(&c->cv_done);
    free(c->wire);
    free(c);
}
