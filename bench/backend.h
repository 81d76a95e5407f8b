/* A backend runs the benched calls and the harness's own small control calls (barrier,
 * max/sum of one double, exchange of a few bytes). One const ops table per backend. */
#ifndef BENCH_BACKEND_H
#define BENCH_BACKEND_H

#include <stddef.h>

#include "harness.h"
#include "options.h"

typedef struct bench_backend bench_backend_t;

typedef enum { BENCH_REDUCE_SUM, BENCH_REDUCE_MAX } bench_reduce_t;

typedef struct {
    const char *name;
    /* Sets rank and nranks. Failures leave a message in be->err. */
    int (*init)(bench_backend_t *be, const bench_opts_t *o);
    /* Whether the backend can run this dtype/op; if not, why in be->err. */
    int (*supports)(bench_backend_t *be, const bench_coll_t *coll, orb_dtype_t dtype,
                    orb_op_t op);
    int (*run)(bench_backend_t *be, bench_call_t *call);
    int (*barrier)(bench_backend_t *be);
    /* In place over all ranks; host memory. */
    int (*reduce_double)(bench_backend_t *be, double *value, bench_reduce_t how);
    /* out gets nranks * bytes: every rank's in, in rank order; host memory. */
    int (*allgather_bytes)(bench_backend_t *be, const void *in, void *out, size_t bytes);
    /* Host memory from the library's own allocator (--mem lib), and its release; NULL with a
     * reason in be->err on failure. Both NULL: the backend has none. */
    void *(*mem_alloc)(bench_backend_t *be, size_t bytes);
    void (*mem_free)(bench_backend_t *be, void *p);
    void (*finalize)(bench_backend_t *be);
    /* Brings every rank down after a failure on one. */
    void (*abort)(bench_backend_t *be);
} bench_backend_ops_t;

struct bench_backend {
    const bench_backend_ops_t *ops;
    int rank, nranks;
    void *state;
    char err[512];
};

extern const bench_backend_ops_t bench_backend_custom;
#ifdef BENCH_HAVE_MPI
extern const bench_backend_ops_t bench_backend_mpi;
#endif
#ifdef BENCH_HAVE_NCCL
extern const bench_backend_ops_t bench_backend_nccl;
#endif

/* The ops for o->backend, or NULL with a reason in why when not built in. */
const bench_backend_ops_t *bench_backend_select(bench_backend_kind_t kind, const char **why);

#endif
