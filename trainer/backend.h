/* The trainer's view of a communication library: one ops table per backend (orbit, MPI, or
 * none for a single process). Every entry after init is called from one thread (the
 * communication thread, comm_thread.c), in the same order on every rank, as orbit and MPI
 * require. Reductions are sums in place; the caller scales. */
#ifndef ORB_TRAIN_BACKEND_H
#define ORB_TRAIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.h"

typedef struct orb_train_backend orb_train_backend_t;

typedef struct {
    const char *name;
    /* Joins the job; fills be->rank, be->world, be->local_rank. */
    orb_status_t (*init)(orb_train_backend_t *be);
    orb_status_t (*allreduce)(orb_train_backend_t *be, void *buf, size_t count, orb_dtype_t dtype);
    orb_status_t (*broadcast)(orb_train_backend_t *be, void *buf, size_t count, orb_dtype_t dtype, int root);
    /* Sum into root's buf; other ranks' buf is left as is. */
    orb_status_t (*reduce)(orb_train_backend_t *be, void *buf, size_t count, orb_dtype_t dtype, int root);
    void (*destroy)(orb_train_backend_t *be);
    /* Fatal error on this rank: make the other ranks stop too. Any thread, any time. */
    void (*abort)(orb_train_backend_t *be);
    /* Optional (NULL: --profile times each call around it): the library's own tracer records
     * every call into dir, and last_call gives the last call's start and end (CLOCK_MONOTONIC
     * ns) as the tracer measured them: one tracer in the project, not two. */
    orb_status_t (*trace_start)(orb_train_backend_t *be, const char *dir);
    orb_status_t (*last_call)(orb_train_backend_t *be, int64_t *t0_ns, int64_t *t1_ns);
} orb_train_backend_ops_t;

struct orb_train_backend {
    const orb_train_backend_ops_t *ops;
    int rank, world, local_rank;
    void *impl;
};

extern const orb_train_backend_ops_t orb_train_backend_none_ops;
extern const orb_train_backend_ops_t orb_train_backend_custom_ops;
extern const orb_train_backend_ops_t orb_train_backend_mpi_ops;

/* "custom", "mpi" or "none"; an error (with the reason) for one not built in. */
orb_status_t orb_train_backend_lookup(const char *name, const orb_train_backend_ops_t **ops);

#endif
