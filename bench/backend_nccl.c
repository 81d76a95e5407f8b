/* --backend nccl: NCCL on device buffers. NCCL has no barrier or host-side helpers, so
 * the control calls and the unique id travel over a second backend: MPI when launched by
 * mpirun (and built with it), orbit otherwise. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

typedef struct {
    bench_backend_t ctrl;
    ncclComm_t comm;
    int inplace; /* the in-place variant will run */
} nccl_state_t;

static nccl_state_t *state_of(bench_backend_t *be)
{
    return (nccl_state_t *)be->state;
}

static int fail(bench_backend_t *be, const char *what, ncclResult_t rc)
{
    snprintf(be->err, sizeof(be->err), "%s failed: %s", what, ncclGetErrorString(rc));
    return -1;
}

static int ctrl_fail(bench_backend_t *be)
{
    snprintf(be->err, sizeof(be->err), "%s", state_of(be)->ctrl.err);
    return -1;
}

static ncclDataType_t nccl_dtype(orb_dtype_t dtype)
{
    switch (dtype) {
    case ORB_INT8: return ncclInt8;
    case ORB_UINT8: return ncclUint8;
    case ORB_INT32: return ncclInt32;
    case ORB_UINT32: return ncclUint32;
    case ORB_INT64: return ncclInt64;
    case ORB_UINT64: return ncclUint64;
    case ORB_FLOAT16: return ncclFloat16;
    case ORB_BFLOAT16: return ncclBfloat16;
    case ORB_FLOAT32: return ncclFloat32;
    case ORB_FLOAT64: return ncclFloat64;
    default: return ncclNumTypes;
    }
}

static ncclRedOp_t nccl_op(orb_op_t op)
{
    switch (op) {
    case ORB_SUM: return ncclSum;
    case ORB_PROD: return ncclProd;
    case ORB_MIN: return ncclMin;
    case ORB_MAX: return ncclMax;
    case ORB_AVG: return ncclAvg;
    default: return ncclNumOps;
    }
}

static int nccl_init(bench_backend_t *be, const bench_opts_t *o)
{
    nccl_state_t *s = calloc(1, sizeof(*s));
    ncclUniqueId id, *ids = NULL;
    ncclResult_t rc;

    if (!s) {
        snprintf(be->err, sizeof(be->err), "out of memory");
        return -1;
    }
    be->state = s;
    s->inplace = o->run_inplace;
    s->ctrl.ops = &bench_backend_custom;
#ifdef BENCH_HAVE_MPI
    if (getenv("OMPI_COMM_WORLD_SIZE"))
        s->ctrl.ops = &bench_backend_mpi;
#endif
    bench_opts_t ctrl_opts = *o;
    ctrl_opts.algo = NULL; /* --algo is NCCL's here */
    if (s->ctrl.ops->init(&s->ctrl, &ctrl_opts))
        return ctrl_fail(be);
    be->rank = s->ctrl.rank;
    be->nranks = s->ctrl.nranks;

    if (o->algo)
        setenv("NCCL_ALGO", !strcmp(o->algo, "ring") ? "Ring" : "Tree", 1);
    if (be->rank == 0 && (rc = ncclGetUniqueId(&id)) != ncclSuccess)
        return fail(be, "ncclGetUniqueId", rc);
    ids = malloc(sizeof(id) * (size_t)be->nranks);
    if (!ids) {
        snprintf(be->err, sizeof(be->err), "out of memory");
        return -1;
    }
    if (s->ctrl.ops->allgather_bytes(&s->ctrl, &id, ids, sizeof(id))) {
        free(ids);
        return ctrl_fail(be);
    }
    id = ids[0]; /* rank 0's id; the other entries are unused */
    free(ids);
    if ((rc = ncclCommInitRank(&s->comm, be->nranks, id, be->rank)) != ncclSuccess)
        return fail(be, "ncclCommInitRank", rc);
    return 0;
}

static int nccl_supports(bench_backend_t *be, const bench_coll_t *coll, orb_dtype_t dtype,
                         orb_op_t op)
{
    /* NCCL does not promise an in-place all-to-all (grouped sends and receives on one
     * buffer race), so it is not timed rather than timed wrong. */
    if (coll->kind == BENCH_ALLTOALL && state_of(be)->inplace) {
        snprintf(be->err, sizeof(be->err),
                 "in-place alltoall: not supported by --backend nccl (add --no-inplace)");
        return 0;
    }
    return nccl_dtype(dtype) != ncclNumTypes && nccl_op(op) != ncclNumOps;
}

/* NCCL 2.28 has ncclAlltoAll and ncclScatter; before it, the grouped sends and receives
 * nccl-tests uses. */
#define BENCH_NCCL_HAS_ALLTOALL (NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0))
#if BENCH_NCCL_HAS_ALLTOALL
static ncclResult_t nccl_alltoall(bench_backend_t *be, const bench_call_t *c, ncclDataType_t dt,
                                  ncclComm_t comm, cudaStream_t stream)
{
    (void)be;
    return ncclAlltoAll(c->sendbuf, c->recvbuf, c->count, dt, comm, stream);
}

static ncclResult_t nccl_scatter(bench_backend_t *be, const bench_call_t *c, ncclDataType_t dt,
                                 ncclComm_t comm, cudaStream_t stream)
{
    (void)be;
    return ncclScatter(c->sendbuf, c->recvbuf, c->count, dt, c->root, comm, stream);
}
#else
static ncclResult_t group_end(ncclResult_t rc)
{
    ncclResult_t end = ncclGroupEnd();
    return rc == ncclSuccess ? end : rc;
}

static ncclResult_t nccl_alltoall(bench_backend_t *be, const bench_call_t *c, ncclDataType_t dt,
                                  ncclComm_t comm, cudaStream_t stream)
{
    size_t bytes = c->count * orb_dtype_size(c->dtype);
    ncclResult_t rc = ncclGroupStart();
    if (rc != ncclSuccess)
        return rc;
    for (int r = 0; r < be->nranks && rc == ncclSuccess; r++) {
        rc = ncclSend((const char *)c->sendbuf + (size_t)r * bytes, c->count, dt, r, comm, stream);
        if (rc == ncclSuccess)
            rc = ncclRecv((char *)c->recvbuf + (size_t)r * bytes, c->count, dt, r, comm, stream);
    }
    return group_end(rc);
}

static ncclResult_t nccl_scatter(bench_backend_t *be, const bench_call_t *c, ncclDataType_t dt,
                                 ncclComm_t comm, cudaStream_t stream)
{
    size_t bytes = c->count * orb_dtype_size(c->dtype);
    ncclResult_t rc = ncclGroupStart();
    if (rc != ncclSuccess)
        return rc;
    if (be->rank != c->root) {
        rc = ncclRecv(c->recvbuf, c->count, dt, c->root, comm, stream);
        return group_end(rc);
    }
    for (int r = 0; r < be->nranks && rc == ncclSuccess; r++) {
        const char *block = (const char *)c->sendbuf + (size_t)r * bytes;
        if (r != be->rank)
            rc = ncclSend(block, c->count, dt, r, comm, stream);
        else if (block != c->recvbuf &&
                 cudaMemcpyAsync(c->recvbuf, block, bytes, cudaMemcpyDeviceToDevice, stream) !=
                     cudaSuccess)
            rc = ncclUnhandledCudaError;
    }
    return group_end(rc);
}
#endif

static int nccl_run(bench_backend_t *be, bench_call_t *c)
{
    ncclComm_t comm = state_of(be)->comm;
    cudaStream_t stream = (cudaStream_t)c->stream;
    ncclDataType_t dt = nccl_dtype(c->dtype);
    ncclRedOp_t op = nccl_op(c->op);
    ncclResult_t rc = ncclSuccess;
    const char *what = "?";

    switch (c->kind) {
    case BENCH_ALLREDUCE:
        what = "ncclAllReduce";
        rc = ncclAllReduce(c->sendbuf, c->recvbuf, c->count, dt, op, comm, stream);
        break;
    case BENCH_BROADCAST:
        what = "ncclBroadcast";
        rc = ncclBroadcast(c->sendbuf, c->recvbuf, c->count, dt, c->root, comm, stream);
        break;
    case BENCH_REDUCE:
        what = "ncclReduce";
        rc = ncclReduce(c->sendbuf, c->recvbuf, c->count, dt, op, c->root, comm, stream);
        break;
    case BENCH_ALLGATHER:
        what = "ncclAllGather";
        rc = ncclAllGather(c->sendbuf, c->recvbuf, c->count, dt, comm, stream);
        break;
    case BENCH_REDUCE_SCATTER:
        what = "ncclReduceScatter";
        rc = ncclReduceScatter(c->sendbuf, c->recvbuf, c->count, dt, op, comm, stream);
        break;
    case BENCH_GATHER: {
        /* No ncclGather: the root receives every slot in one group, as nccl-tests does. */
        size_t bytes = c->count * orb_dtype_size(c->dtype);
        what = "ncclSend/ncclRecv (gather)";
        if ((rc = ncclGroupStart()) != ncclSuccess)
            break;
        if (be->rank == c->root) {
            for (int r = 0; r < be->nranks && rc == ncclSuccess; r++) {
                char *slot = (char *)c->recvbuf + (size_t)r * bytes;
                if (r == be->rank) {
                    if (slot != c->sendbuf &&
                        cudaMemcpyAsync(slot, c->sendbuf, bytes, cudaMemcpyDeviceToDevice,
                                        stream) != cudaSuccess)
                        rc = ncclUnhandledCudaError;
                } else {
                    rc = ncclRecv(slot, c->count, dt, r, comm, stream);
                }
            }
        } else {
            rc = ncclSend(c->sendbuf, c->count, dt, c->root, comm, stream);
        }
        ncclResult_t end = ncclGroupEnd();
        if (rc == ncclSuccess)
            rc = end;
        break;
    }
    case BENCH_ALLTOALL:
        what = BENCH_NCCL_HAS_ALLTOALL ? "ncclAlltoAll" : "ncclSend/ncclRecv (alltoall)";
        rc = nccl_alltoall(be, c, dt, comm, stream);
        break;
    case BENCH_SCATTER:
        what = BENCH_NCCL_HAS_ALLTOALL ? "ncclScatter" : "ncclSend/ncclRecv (scatter)";
        rc = nccl_scatter(be, c, dt, comm, stream);
        break;
    case BENCH_SENDRECV: {
        int next = (be->rank + 1) % be->nranks;
        int prev = (be->rank + be->nranks - 1) % be->nranks;
        what = "ncclSend/ncclRecv";
        if ((rc = ncclGroupStart()) != ncclSuccess)
            break;
        rc = ncclSend(c->sendbuf, c->count, dt, next, comm, stream);
        if (rc == ncclSuccess)
            rc = ncclRecv(c->recvbuf, c->count, dt, prev, comm, stream);
        ncclResult_t end = ncclGroupEnd();
        if (rc == ncclSuccess)
            rc = end;
        break;
    }
    }
    return rc == ncclSuccess ? 0 : fail(be, what, rc);
}

static int nccl_barrier(bench_backend_t *be)
{
    nccl_state_t *s = state_of(be);
    return s->ctrl.ops->barrier(&s->ctrl) ? ctrl_fail(be) : 0;
}

static int nccl_reduce_double(bench_backend_t *be, double *value, bench_reduce_t how)
{
    nccl_state_t *s = state_of(be);
    return s->ctrl.ops->reduce_double(&s->ctrl, value, how) ? ctrl_fail(be) : 0;
}

static int nccl_allgather_bytes(bench_backend_t *be, const void *in, void *out, size_t bytes)
{
    nccl_state_t *s = state_of(be);
    return s->ctrl.ops->allgather_bytes(&s->ctrl, in, out, bytes) ? ctrl_fail(be) : 0;
}

static void nccl_finalize(bench_backend_t *be)
{
    nccl_state_t *s = state_of(be);
    if (!s)
        return;
    if (s->comm)
        ncclCommDestroy(s->comm);
    s->ctrl.ops->finalize(&s->ctrl);
    free(s);
    be->state = NULL;
}

static void nccl_abort(bench_backend_t *be)
{
    nccl_state_t *s = state_of(be);
    if (!s)
        return;
    if (s->comm)
        ncclCommAbort(s->comm);
    s->ctrl.ops->abort(&s->ctrl);
}

const bench_backend_ops_t bench_backend_nccl = {
    .name = "nccl",
    .init = nccl_init,
    .supports = nccl_supports,
    .run = nccl_run,
    .barrier = nccl_barrier,
    .reduce_double = nccl_reduce_double,
    .allgather_bytes = nccl_allgather_bytes,
    .finalize = nccl_finalize,
    .abort = nccl_abort,
};
