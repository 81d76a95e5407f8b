/* The public collective entry points: each names its call and enters the one front end
 * (coll_front.c), for host and device buffers alike. */
#include "comm/coll_call.h"

orb_status_t orb_allreduce(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_op_t op,
                           orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {.coll = ORB_COLL_ALLREDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count, .dtype = dtype,
                     .op = op, .root = 0};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_broadcast(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, int root,
                           orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {.coll = ORB_COLL_BROADCAST, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count, .dtype = dtype,
                     .op = ORB_SUM, .root = root};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_reduce(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_op_t op, int root,
                        orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {.coll = ORB_COLL_REDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count, .dtype = dtype,
                     .op = op, .root = root};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_gather(const void *sendbuf, void *recvbuf, size_t sendcount, orb_dtype_t dtype, int root,
                        orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {.coll = ORB_COLL_GATHER, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = sendcount, .dtype = dtype,
                     .op = ORB_SUM, .root = root};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, orb_dtype_t dtype, orb_comm_t comm,
                           orb_stream_t stream)
{
    orb_call_t k = {.coll = ORB_COLL_ALLGATHER, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = sendcount,
                     .dtype = dtype, .op = ORB_SUM, .root = 0};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, orb_dtype_t dtype, orb_op_t op,
                                orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {.coll = ORB_COLL_REDUCE_SCATTER, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = recvcount,
                     .dtype = dtype, .op = op, .root = 0};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_barrier(orb_comm_t comm)
{
    orb_call_t k = {.coll = ORB_COLL_BARRIER, .sendbuf = NULL, .recvbuf = NULL, .count = 1, .dtype = ORB_UINT8,
                     .op = ORB_MAX, .root = 0};
    return orb_coll_enter(comm, &k, NULL);
}

orb_status_t orb_send_tagged(const void *buf, size_t count, orb_dtype_t dtype, int peer, uint32_t tag,
                             orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {.coll = ORB_COLL_SEND, .sendbuf = buf, .recvbuf = NULL, .count = count, .dtype = dtype,
                     .op = ORB_SUM, .root = peer, .tag = tag};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_recv_tagged(void *buf, size_t count, orb_dtype_t dtype, int peer, uint32_t tag, orb_comm_t comm,
                             orb_stream_t stream)
{
    orb_call_t k = {.coll = ORB_COLL_RECV, .sendbuf = NULL, .recvbuf = buf, .count = count, .dtype = dtype,
                     .op = ORB_SUM, .root = peer, .tag = tag};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_send(const void *buf, size_t count, orb_dtype_t dtype, int peer, orb_comm_t comm,
                      orb_stream_t stream)
{
    return orb_send_tagged(buf, count, dtype, peer, 0, comm, stream);
}

orb_status_t orb_recv(void *buf, size_t count, orb_dtype_t dtype, int peer, orb_comm_t comm, orb_stream_t stream)
{
    return orb_recv_tagged(buf, count, dtype, peer, 0, comm, stream);
}

orb_status_t orb_alltoall(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_comm_t comm,
                          orb_stream_t stream)
{
    orb_call_t k = {.coll = ORB_COLL_ALLTOALL, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count, .dtype = dtype,
                     .op = ORB_SUM, .root = 0};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
                           const size_t *recvcounts, const size_t *rdispls, orb_dtype_t dtype, orb_comm_t comm,
                           orb_stream_t stream)
{
    orb_call_t k = {.coll = ORB_COLL_ALLTOALLV, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = 0, .dtype = dtype,
                     .op = ORB_SUM, .root = 0, .sendcounts = sendcounts, .sdispls = sdispls, .recvcounts = recvcounts,
                     .rdispls = rdispls};
    return orb_coll_enter(comm, &k, stream);
}

orb_status_t orb_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, orb_dtype_t dtype, int root,
                         orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {.coll = ORB_COLL_SCATTER, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = recvcount,
                     .dtype = dtype, .op = ORB_SUM, .root = root};
    return orb_coll_enter(comm, &k, stream);
}
