/* --backend custom: orbit itself, through the public API only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

static orb_comm_t comm_of(bench_backend_t *be)
{
    return (orb_comm_t)be->state;
}

static int fail(bench_backend_t *be, const char *what, orb_status_t st)
{
    const char *detail = be->state ? orb_comm_last_error(comm_of(be)) : "";
    snprintf(be->err, sizeof(be->err), "%s failed: %s (%s)%s%s", what, orb_strerror(st),
             orb_status_name(st), *detail ? ": " : "", detail);
    return -1;
}

static int launched(void)
{
    return getenv("RANK") || getenv("OMPI_COMM_WORLD_RANK") || getenv("SLURM_PROCID");
}

static int custom_init(bench_backend_t *be, const bench_opts_t *o)
{
    orb_comm_t comm = NULL;
    orb_status_t st;

    /* The tuner reads ORBIT_ALGO when the communicator is built; auto leaves any
     * value the user exported alone. */
    if (o->algo && setenv("ORBIT_ALGO", o->algo, 1) != 0) {
        snprintf(be->err, sizeof(be->err), "setenv ORBIT_ALGO failed");
        return -1;
    }
    if (launched()) {
        st = orb_comm_init_env(&comm);
        if (st != ORB_OK) {
            fail(be, "orb_comm_init_env", st);
            snprintf(be->err + strlen(be->err), sizeof(be->err) - strlen(be->err),
                     " -- run under orbitrun -n N, or see docs/env.md");
            return -1;
        }
    } else {
        /* Started by hand: a one-rank communicator, handy for smoke tests. */
        orb_unique_id_t id;
        st = orb_get_unique_id(&id);
        if (st == ORB_OK)
            st = orb_comm_init_rank(&comm, 1, id, 0);
        if (st != ORB_OK)
            return fail(be, "orb_comm_init_rank (single rank, no launcher environment)", st);
    }
    be->state = comm;
    if ((st = orb_comm_rank(comm, &be->rank)) != ORB_OK)
        return fail(be, "orb_comm_rank", st);
    if ((st = orb_comm_size(comm, &be->nranks)) != ORB_OK)
        return fail(be, "orb_comm_size", st);
    return 0;
}

static int custom_supports(bench_backend_t *be, const bench_coll_t *coll, orb_dtype_t dtype,
                           orb_op_t op)
{
    (void)be;
    (void)coll;
    (void)dtype;
    (void)op;
    return 1; /* orbit answers for itself, with a message, on the first call */
}

static int custom_run(bench_backend_t *be, bench_call_t *c)
{
    orb_comm_t comm = comm_of(be);
    orb_status_t st = ORB_ERR_INTERNAL;
    const char *what = "?";

    switch (c->kind) {
    case BENCH_ALLREDUCE:
        what = "orb_allreduce";
        st = orb_allreduce(c->sendbuf, c->recvbuf, c->count, c->dtype, c->op, comm, c->stream);
        break;
    case BENCH_BROADCAST:
        what = "orb_broadcast";
        st = orb_broadcast(c->sendbuf, c->recvbuf, c->count, c->dtype, c->root, comm,
                           c->stream);
        break;
    case BENCH_REDUCE:
        what = "orb_reduce";
        st = orb_reduce(c->sendbuf, c->recvbuf, c->count, c->dtype, c->op, c->root, comm,
                        c->stream);
        break;
    case BENCH_GATHER:
        what = "orb_gather";
        st = orb_gather(c->sendbuf, c->recvbuf, c->count, c->dtype, c->root, comm, c->stream);
        break;
    case BENCH_ALLGATHER:
        what = "orb_allgather";
        st = orb_allgather(c->sendbuf, c->recvbuf, c->count, c->dtype, comm, c->stream);
        break;
    case BENCH_REDUCE_SCATTER:
        what = "orb_reduce_scatter";
        st = orb_reduce_scatter(c->sendbuf, c->recvbuf, c->count, c->dtype, c->op, comm,
                                c->stream);
        break;
    case BENCH_ALLTOALL:
        what = "orb_alltoall";
        st = orb_alltoall(c->sendbuf, c->recvbuf, c->count, c->dtype, comm, c->stream);
        break;
    case BENCH_SCATTER:
        what = "orb_scatter";
        st = orb_scatter(c->sendbuf, c->recvbuf, c->count, c->dtype, c->root, comm, c->stream);
        break;
    case BENCH_SENDRECV: {
        /* A ring shift: send to the next rank, receive from the previous one. Grouped so
         * neither call waits for the other (and one rank can send to itself). */
        int next = (be->rank + 1) % be->nranks;
        int prev = (be->rank + be->nranks - 1) % be->nranks;
        what = "orb_group_start";
        if ((st = orb_group_start()) != ORB_OK)
            break;
        what = "orb_send";
        st = orb_send(c->sendbuf, c->count, c->dtype, next, comm, c->stream);
        if (st == ORB_OK) {
            what = "orb_recv";
            st = orb_recv(c->recvbuf, c->count, c->dtype, prev, comm, c->stream);
        }
        orb_status_t end = orb_group_end();
        if (st == ORB_OK && end != ORB_OK) {
            what = "orb_group_end";
            st = end;
        }
        break;
    }
    }
    return st == ORB_OK ? 0 : fail(be, what, st);
}

static int custom_barrier(bench_backend_t *be)
{
    orb_status_t st = orb_barrier(comm_of(be));
    return st == ORB_OK ? 0 : fail(be, "orb_barrier", st);
}

static int custom_reduce_double(bench_backend_t *be, double *value, bench_reduce_t how)
{
    orb_status_t st = orb_allreduce(value, value, 1, ORB_FLOAT64,
                                    how == BENCH_REDUCE_MAX ? ORB_MAX : ORB_SUM, comm_of(be),
                                    NULL);
    return st == ORB_OK ? 0 : fail(be, "orb_allreduce (float64, control)", st);
}

static int custom_allgather_bytes(bench_backend_t *be, const void *in, void *out, size_t bytes)
{
    orb_status_t st = orb_allgather(in, out, bytes, ORB_UINT8, comm_of(be), NULL);
    return st == ORB_OK ? 0 : fail(be, "orb_allgather (bytes, control)", st);
}

static void *custom_mem_alloc(bench_backend_t *be, size_t bytes)
{
    void *p = NULL;
    orb_status_t st = orb_mem_alloc(&p, bytes);
    if (st != ORB_OK)
        snprintf(be->err, sizeof(be->err), "orb_mem_alloc failed: %s", orb_comm_last_error(NULL));
    return st == ORB_OK ? p : NULL;
}

static void custom_mem_free(bench_backend_t *be, void *p)
{
    (void)be;
    orb_mem_free(p);
}

static void custom_finalize(bench_backend_t *be)
{
    if (be->state)
        orb_comm_destroy(comm_of(be));
    be->state = NULL;
}

static void custom_abort(bench_backend_t *be)
{
    if (be->state)
        orb_comm_abort(comm_of(be));
}

const bench_backend_ops_t bench_backend_custom = {
    .name = "custom",
    .init = custom_init,
    .supports = custom_supports,
    .run = custom_run,
    .barrier = custom_barrier,
    .reduce_double = custom_reduce_double,
    .allgather_bytes = custom_allgather_bytes,
    .mem_alloc = custom_mem_alloc,
    .mem_free = custom_mem_free,
    .finalize = custom_finalize,
    .abort = custom_abort,
};
