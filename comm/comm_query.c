/* What a live communicator answers: its rank and size, an error that happened outside a
 * call, and abort from anywhere (a signal handler, a watchdog thread). */
#include "comm/comm_impl.h"
#include "comm/cuda_hooks.h"

orb_status_t orb_comm_rank(orb_comm_t comm, int *rank)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_rank");
    if (st != ORB_OK)
        return st;
    if (!rank) {
        orb_set_thread_error("orb_comm_rank: rank (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    *rank = comm->rank;
    return ORB_OK;
}

orb_status_t orb_comm_size(orb_comm_t comm, int *size)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_size");
    if (st != ORB_OK)
        return st;
    if (!size) {
        orb_set_thread_error("orb_comm_size: size (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    *size = comm->nranks;
    return ORB_OK;
}

orb_status_t orb_comm_abort(orb_comm_t comm)
{
    /* Async-signal-safe: no locks, no allocation, no formatting or log; atomic stores, futex
     * wakes and a fixed text copied into the thread's error. */
    if (!comm || comm->magic != ORB_COMM_MAGIC) {
        orb_set_thread_error_fixed("orb_comm_abort: comm is NULL or not a communicator; pass one from orb_comm_init_*");
        return ORB_ERR_INVALID_ARG;
    }
    atomic_store(&comm->aborted, 1);
    atomic_store(&comm->async_error, ORB_ERR_ABORTED);
    if (comm->box)
        orb_box_wake(comm->box);
    orb_cuda_comm_abort(comm);
    for (int t = 0; orb_transports[t]; t++)
        if (comm->ep[t])
            orb_transports[t]->abort(comm->ep[t]); /* destroy will not wait to flush */
    return ORB_OK;
}

orb_status_t orb_comm_get_async_error(orb_comm_t comm, orb_status_t *async_error)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_get_async_error");
    if (st != ORB_OK)
        return st;
    if (!async_error) {
        orb_set_thread_error("orb_comm_get_async_error: async_error (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    *async_error = (orb_status_t)atomic_load(&comm->async_error);
    if (*async_error == ORB_OK)
        *async_error = orb_cuda_async_error(comm);
    return ORB_OK;
}

/* Read by the front end when it plans a call, so a change applies from the next call on. */
orb_status_t orb_comm_set_deterministic(orb_comm_t comm, int on)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_set_deterministic");
    if (st != ORB_OK)
        return st;
    comm->deterministic = on != 0;
    return ORB_OK;
}

orb_status_t orb_comm_get_deterministic(orb_comm_t comm, int *on)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_get_deterministic");
    if (st != ORB_OK)
        return st;
    if (!on) {
        orb_set_thread_error("orb_comm_get_deterministic: on (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    *on = comm->deterministic;
    return ORB_OK;
}

/* The host executor reads its copy in c->env; the device path reads c->timeout_s. */
orb_status_t orb_comm_set_timeout(orb_comm_t comm, double seconds)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_set_timeout");
    if (st != ORB_OK)
        return st;
    if (seconds != seconds) {
        orb_set_thread_error("orb_comm_set_timeout: seconds is NaN; pass a number of seconds (0 or less: never)");
        return ORB_ERR_INVALID_ARG;
    }
    comm->timeout_s = seconds > 0 ? seconds : 1e9;
    comm->env.timeout_s = comm->timeout_s;
    return ORB_OK;
}

orb_status_t orb_comm_get_timeout(orb_comm_t comm, double *seconds)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_get_timeout");
    if (st != ORB_OK)
        return st;
    if (!seconds) {
        orb_set_thread_error("orb_comm_get_timeout: seconds (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    *seconds = comm->timeout_s >= 1e9 ? 0 : comm->timeout_s;
    return ORB_OK;
}
