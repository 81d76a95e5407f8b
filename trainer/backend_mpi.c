/* Open MPI (or any MPI): the peer the custom backend is measured against. MPI is
 * initialised on the communication thread, which then makes every MPI call. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>

#include "backend.h"
#include "error.h"
#include "mpi_dtype.h"

static orb_status_t mpi_fail(orb_train_backend_t *be, int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return orb_train_fail(ORB_ERR_SYSTEM, "MPI %s failed on rank %d: %s", what, be->rank, msg);
}

/* Every buffer is typed as for a reduction, broadcasts too: float16/bfloat16 are refused
 * whatever the call, as they always were here. */
static orb_status_t mpi_type(orb_dtype_t dtype, MPI_Datatype *t)
{
    *t = orb_mpi_dtype(dtype, 1);
    if (*t == MPI_DATATYPE_NULL)
        return orb_train_fail(ORB_ERR_UNSUPPORTED, "MPI backend: dtype %s not supported", orb_dtype_name(dtype));
    return ORB_OK;
}

static orb_status_t mpi_init(orb_train_backend_t *be)
{
    int inited = 0, provided = 0, rc;
    MPI_Initialized(&inited);
    if (!inited) {
        /* SERIALIZED: the communication thread is not the process's main thread. */
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
        if (rc != MPI_SUCCESS)
            return mpi_fail(be, rc, "init");
        if (provided < MPI_THREAD_SERIALIZED)
            return orb_train_fail(ORB_ERR_UNSUPPORTED, "MPI provides thread level %d, the trainer needs SERIALIZED",
                                  provided);
    }
    MPI_Comm *comm = malloc(sizeof *comm);
    if (!comm)
        return orb_train_fail(ORB_ERR_NO_MEMORY, "MPI backend: out of memory");
    MPI_Comm_dup(MPI_COMM_WORLD, comm);
    MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(*comm, &be->rank);
    MPI_Comm_size(*comm, &be->world);
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    be->local_rank = lr ? atoi(lr) : be->rank;
    be->impl = comm;
    return ORB_OK;
}

/* MPI counts are int: long buffers go in pieces. */
#define MPI_PIECE ((size_t)1 << 30)

typedef enum { MPI_K_ALLREDUCE, MPI_K_BROADCAST, MPI_K_REDUCE } mpi_kind_t;

/* One collective on buf in place (sum), in pieces of at most MPI_PIECE elements: MPI counts
 * are int. */
static orb_status_t mpi_pieces(orb_train_backend_t *be, mpi_kind_t kind, void *buf, size_t count, orb_dtype_t dtype,
                               int root)
{
    static const char *const what[] = {"all-reduce", "broadcast", "reduce"};
    MPI_Datatype t = MPI_DATATYPE_NULL;
    ORB_TRAIN_CHECK(mpi_type(dtype, &t));
    const MPI_Comm comm = *(MPI_Comm *)be->impl;
    const size_t esz = orb_dtype_size(dtype);
    for (size_t off = 0; off < count; off += MPI_PIECE) {
        int n = (int)(count - off < MPI_PIECE ? count - off : MPI_PIECE);
        char *p = (char *)buf + off * esz;
        int rc;
        switch (kind) {
        case MPI_K_ALLREDUCE:
            rc = MPI_Allreduce(MPI_IN_PLACE, p, n, t, MPI_SUM, comm);
            break;
        case MPI_K_BROADCAST:
            rc = MPI_Bcast(p, n, t, root, comm);
            break;
        default:
            rc = be->rank == root ? MPI_Reduce(MPI_IN_PLACE, p, n, t, MPI_SUM, root, comm)
                                  : MPI_Reduce(p, NULL, n, t, MPI_SUM, root, comm);
        }
        if (rc != MPI_SUCCESS)
            return mpi_fail(be, rc, what[kind]);
    }
    return ORB_OK;
}

static orb_status_t mpi_allreduce(orb_train_backend_t *be, void *buf, size_t count, orb_dtype_t dtype)
{
    return mpi_pieces(be, MPI_K_ALLREDUCE, buf, count, dtype, 0);
}

static orb_status_t mpi_broadcast(orb_train_backend_t *be, void *buf, size_t count, orb_dtype_t dtype, int root)
{
    return mpi_pieces(be, MPI_K_BROADCAST, buf, count, dtype, root);
}

static orb_status_t mpi_reduce(orb_train_backend_t *be, void *buf, size_t count, orb_dtype_t dtype, int root)
{
    return mpi_pieces(be, MPI_K_REDUCE, buf, count, dtype, root);
}

static void mpi_destroy(orb_train_backend_t *be)
{
    MPI_Comm *comm = be->impl;
    if (comm) {
        MPI_Comm_free(comm);
        free(comm);
    }
    be->impl = NULL;
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Finalize();
}

static void mpi_abort(orb_train_backend_t *be)
{
    (void)be;
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

const orb_train_backend_ops_t orb_train_backend_mpi_ops = {
    .name = "mpi",
    .init = mpi_init,
    .allreduce = mpi_allreduce,
    .broadcast = mpi_broadcast,
    .reduce = mpi_reduce,
    .destroy = mpi_destroy,
    .abort = mpi_abort,
};
