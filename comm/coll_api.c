/* The public collective entry points: each names its call and enters the one front end
 * (coll_front.c), for host and device buffers alike. */
#include "comm/coll_call.h"

orb_status_t orb_allreduce(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_op_t op,
                           orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_broadcast(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, int root,
                           orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, ORB_SUM, root};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_reduce(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_op_t op, int root,
                        orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_gather(const void *sendbuf, void *recvbuf, size_t sendcount, orb_dtype_t dtype, int root,
                        orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_GATHER, sendbuf, recvbuf, sendcount, dtype, ORB_SUM, root};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, orb_dtype_t dtype, orb_comm_t comm,
                           orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, ORB_SUM, 0};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, orb_dtype_t dtype, orb_op_t op,
                                orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_barrier(orb_comm_t comm)
{
    orb_call_t k = {ORB_COLL_BARRIER, NULL, NULL, 1, ORB_UINT8, ORB_MAX, 0};
    return orb_coll_enter(comm, &k, NULL);
}

orb_status_t orb_send(const void *buf, size_t count, orb_dtype_t dtype, int peer, orb_comm_t comm,
                      orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_SEND, buf, NULL, count, dtype, ORB_SUM, peer};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_recv(void *buf, size_t count, orb_dtype_t dtype, int peer, orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_RECV, NULL, buf, count, dtype, ORB_SUM, peer};
    return orb_coll_enter(comm, &k, stream);
}
