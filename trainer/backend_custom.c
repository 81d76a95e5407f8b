/* orbit itself: the communicator comes from the launcher's environment (orbitrun, torchrun
 * style variables, mpirun or srun), see orb_comm_init_env. */
#include <stdlib.h>

#include "backend.h"
#include "error.h"

static orb_status_t custom_fail(orb_train_backend_t *be, orb_status_t st, const char *what)
{
    orb_comm_t comm = be->impl;
    const char *detail = comm ? orb_comm_last_error(comm) : "";
    return orb_train_fail(st, "orbit %s failed on rank %d: %s%s%s", what, be->rank, orb_strerror(st),
                          detail[0] ? ": " : "", detail);
}

static orb_status_t custom_init(orb_train_backend_t *be)
{
    orb_comm_t comm = NULL;
    orb_status_t st = orb_comm_init_env(&comm);
    if (st != ORB_OK)
        return orb_train_fail(st, "orbit: cannot create the communicator from the environment: %s%s%s "
                              "(run under orbitrun -n N, mpirun or srun, or use --backend none)",
                              orb_strerror(st), comm ? ": " : "", comm ? orb_comm_last_error(comm) : "");
    be->impl = comm;
    if ((st = orb_comm_rank(comm, &be->rank)) != ORB_OK || (st = orb_comm_size(comm, &be->world)) != ORB_OK) {
        custom_fail(be, st, "rank/size query");
        orb_comm_destroy(comm);
        be->impl = NULL;
        return st;
    }
    const char *lr = getenv("LOCAL_RANK");
    be->local_rank = lr ? atoi(lr) : be->rank;
    return ORB_OK;
}

static orb_status_t custom_allreduce(orb_train_backend_t *be, void *buf, size_t count, orb_dtype_t dtype)
{
    orb_status_t st = orb_allreduce(buf, buf, count, dtype, ORB_SUM, be->impl, NULL);
    return st == ORB_OK ? ORB_OK : custom_fail(be, st, "all-reduce");
}

static orb_status_t custom_broadcast(orb_train_backend_t *be, void *buf, size_t count, orb_dtype_t dtype,
                                     int root)
{
    orb_status_t st = orb_broadcast(buf, buf, count, dtype, root, be->impl, NULL);
    return st == ORB_OK ? ORB_OK : custom_fail(be, st, "broadcast");
}

static orb_status_t custom_reduce(orb_train_backend_t *be, void *buf, size_t count, orb_dtype_t dtype,
                                  int root)
{
    orb_status_t st = orb_reduce(buf, buf, count, dtype, ORB_SUM, root, be->impl, NULL);
    return st == ORB_OK ? ORB_OK : custom_fail(be, st, "reduce");
}

static orb_status_t custom_trace_start(orb_train_backend_t *be, const char *dir)
{
    orb_status_t st = orb_comm_trace_start(be->impl, dir, 0);
    return st == ORB_OK ? ORB_OK : custom_fail(be, st, "trace start");
}

static orb_status_t custom_last_call(orb_train_backend_t *be, int64_t *t0_ns, int64_t *t1_ns)
{
    size_t n = 0;
    orb_status_t st = orb_comm_trace_ncalls(be->impl, &n);
    if (st == ORB_OK && n == 0)
        st = ORB_ERR_INVALID_ARG;
    if (st == ORB_OK)
        st = orb_comm_trace_call(be->impl, n - 1, t0_ns, t1_ns, NULL);
    return st;
}

static void custom_destroy(orb_train_backend_t *be)
{
    if (be->impl)
        orb_comm_destroy(be->impl);
    be->impl = NULL;
}

static void custom_abort(orb_train_backend_t *be)
{
    if (be->impl)
        orb_comm_abort(be->impl);
}

const orb_train_backend_ops_t orb_train_backend_custom_ops = {
    .name = "custom",
    .init = custom_init,
    .allreduce = custom_allreduce,
    .broadcast = custom_broadcast,
    .reduce = custom_reduce,
    .destroy = custom_destroy,
    .abort = custom_abort,
    .trace_start = custom_trace_start,
    .last_call = custom_last_call,
};
