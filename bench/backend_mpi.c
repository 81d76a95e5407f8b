/* --backend mpi: the same calls through MPI, the reference orbit is measured against. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "mpi_dtype.h"

static int fail(bench_backend_t *be, const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof(msg), "MPI error %d", rc);
    snprintf(be->err, sizeof(be->err), "%s failed: %s", what, msg);
    return -1;
}

static MPI_Op mpi_op(orb_op_t op)
{
    switch (op) {
    case ORB_SUM: return MPI_SUM;
    case ORB_PROD: return MPI_PROD;
    case ORB_MIN: return MPI_MIN;
    case ORB_MAX: return MPI_MAX;
    default: return MPI_OP_NULL; /* avg: MPI has none */
    }
}

static int reducing(bench_coll_kind_t kind)
{
    return kind == BENCH_ALLREDUCE || kind == BENCH_REDUCE || kind == BENCH_REDUCE_SCATTER;
}

static int mpi_init(bench_backend_t *be, const bench_opts_t *o)
{
    int rc = MPI_Init(NULL, NULL);
    if (rc != MPI_SUCCESS)
        return fail(be, "MPI_Init", rc);
    be->state = (void *)1; /* initialised: finalize must run */
    /* Errors come back as codes so the bench can name the call that failed. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &be->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &be->nranks);
    if (o->algo && be->rank == 0)
        fprintf(stderr, "%s: warning: --algo %s is ignored by --backend mpi (Open MPI's "
                        "tuned component picks; see OMPI_MCA_coll_tuned_*)\n",
                o->prog, o->algo);
    return 0;
}

static int mpi_supports(bench_backend_t *be, const bench_coll_t *coll, orb_dtype_t dtype,
                        orb_op_t op)
{
    int red = reducing(coll->kind);
    if (orb_mpi_dtype(dtype, red) == MPI_DATATYPE_NULL) {
        snprintf(be->err, sizeof(be->err),
                 "--dtype %s: not supported by --backend mpi: MPI has no 16-bit float type "
                 "to reduce (use float32, or --backend custom)",
                 orb_dtype_name(dtype));
        return 0;
    }
    if (red && mpi_op(op) == MPI_OP_NULL) {
        snprintf(be->err, sizeof(be->err),
                 "--op %s: not supported by --backend mpi: MPI has no average reduction "
                 "(use sum, or --backend custom)",
                 orb_op_name(op));
        return 0;
    }
    return 1;
}

static int mpi_run(bench_backend_t *be, bench_call_t *c)
{
    MPI_Datatype dt = orb_mpi_dtype(c->dtype, reducing(c->kind));
    MPI_Op op = mpi_op(c->op);
    int count = (int)c->count; /* the harness keeps counts below INT_MAX for MPI */
    int root_here = be->rank == c->root;
    const void *in = c->inplace ? MPI_IN_PLACE : c->sendbuf;
    int rc = MPI_SUCCESS;
    const char *what = "?";

    if (c->count > INT_MAX) {
        snprintf(be->err, sizeof(be->err), "count %zu is above INT_MAX, MPI's limit for a count",
                 c->count);
        return -1;
    }
    switch (c->kind) {
    case BENCH_ALLREDUCE:
        what = "MPI_Allreduce";
        rc = MPI_Allreduce(in, c->recvbuf, count, dt, op, MPI_COMM_WORLD);
        break;
    case BENCH_BROADCAST:
        /* MPI_Bcast is in-place only; out-of-place, the root copies first, which is
         * what an out-of-place broadcast promises. */
        what = "MPI_Bcast";
        if (!c->inplace && root_here && c->recvbuf != c->sendbuf) {
            int size;
            MPI_Type_size(dt, &size);
            memcpy(c->recvbuf, c->sendbuf, c->count * (size_t)size);
        }
        rc = MPI_Bcast(c->recvbuf, count, dt, c->root, MPI_COMM_WORLD);
        break;
    case BENCH_REDUCE:
        /* MPI_IN_PLACE is only valid on the root. */
        what = "MPI_Reduce";
        rc = MPI_Reduce(root_here ? in : c->sendbuf, c->recvbuf, count, dt, op, c->root,
                        MPI_COMM_WORLD);
        break;
    case BENCH_GATHER:
        what = "MPI_Gather";
        rc = MPI_Gather(root_here ? in : c->sendbuf, count, dt, c->recvbuf, count, dt, c->root,
                        MPI_COMM_WORLD);
        break;
    case BENCH_ALLGATHER:
        what = "MPI_Allgather";
        rc = MPI_Allgather(in, count, dt, c->recvbuf, count, dt, MPI_COMM_WORLD);
        break;
    case BENCH_REDUCE_SCATTER:
        /* MPI's in-place form reads the whole input from recvbuf and leaves this rank's
         * block at its start, not at the rank's offset as orbit and NCCL do. */
        what = "MPI_Reduce_scatter_block";
        if (c->inplace) {
            rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, (void *)c->sendbuf, count, dt, op,
                                          MPI_COMM_WORLD);
            c->result = c->sendbuf;
        } else {
            rc = MPI_Reduce_scatter_block(c->sendbuf, c->recvbuf, count, dt, op,
                                          MPI_COMM_WORLD);
        }
        break;
    case BENCH_ALLTOALL:
        /* MPI_IN_PLACE exchanges within recvbuf, which is sendbuf in-place. */
        what = "MPI_Alltoall";
        rc = MPI_Alltoall(in, count, dt, c->recvbuf, count, dt, MPI_COMM_WORLD);
        break;
    case BENCH_SCATTER:
        /* In place the root keeps its block where it is in sendbuf, as NCCL and orbit do. */
        what = "MPI_Scatter";
        rc = MPI_Scatter(c->sendbuf, count, dt,
                         root_here && c->inplace ? MPI_IN_PLACE : c->recvbuf, count, dt,
                         c->root, MPI_COMM_WORLD);
        break;
    case BENCH_SENDRECV: {
        int next = (be->rank + 1) % be->nranks;
        int prev = (be->rank + be->nranks - 1) % be->nranks;
        MPI_Request req;
        what = "MPI_Irecv";
        rc = MPI_Irecv(c->recvbuf, count, dt, prev, 0, MPI_COMM_WORLD, &req);
        if (rc == MPI_SUCCESS) {
            what = "MPI_Send";
            rc = MPI_Send(c->sendbuf, count, dt, next, 0, MPI_COMM_WORLD);
        }
        if (rc == MPI_SUCCESS) {
            what = "MPI_Wait";
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        break;
    }
    }
    return rc == MPI_SUCCESS ? 0 : fail(be, what, rc);
}

static int mpi_barrier(bench_backend_t *be)
{
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : fail(be, "MPI_Barrier", rc);
}

static int mpi_reduce_double(bench_backend_t *be, double *value, bench_reduce_t how)
{
    int rc = MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_DOUBLE,
                           how == BENCH_REDUCE_MAX ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : fail(be, "MPI_Allreduce (control)", rc);
}

static int mpi_allgather_bytes(bench_backend_t *be, const void *in, void *out, size_t bytes)
{
    int rc = MPI_Allgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : fail(be, "MPI_Allgather (control)", rc);
}

static void *mpi_mem_alloc(bench_backend_t *be, size_t bytes)
{
    void *p = NULL;
    int rc = MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &p);
    if (rc != MPI_SUCCESS) {
        fail(be, "MPI_Alloc_mem", rc);
        return NULL;
    }
    return p;
}

static void mpi_mem_free(bench_backend_t *be, void *p)
{
    (void)be;
    MPI_Free_mem(p);
}

static void mpi_finalize(bench_backend_t *be)
{
    if (be->state)
        MPI_Finalize();
    be->state = NULL;
}

static void mpi_abort(bench_backend_t *be)
{
    (void)be;
    MPI_Abort(MPI_COMM_WORLD, 1);
}

const bench_backend_ops_t bench_backend_mpi = {
    .name = "mpi",
    .init = mpi_init,
    .supports = mpi_supports,
    .run = mpi_run,
    .barrier = mpi_barrier,
    .reduce_double = mpi_reduce_double,
    .allgather_bytes = mpi_allgather_bytes,
    .mem_alloc = mpi_mem_alloc,
    .mem_free = mpi_mem_free,
    .finalize = mpi_finalize,
    .abort = mpi_abort,
};
