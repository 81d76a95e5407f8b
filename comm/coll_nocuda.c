/* A build without CUDA: device pointers cannot be told apart, and a stream means the caller
 * expected a device path this build does not have. */
#include "comm/coll_cuda.h"
#include "comm/comm_impl.h"

int orb_cuda_is_device_ptr(const void *p)
{
    (void)p;
    return 0;
}

orb_status_t orb_cuda_collective(struct orb_comm *c, orb_coll_t coll, const void *sendbuf, void *recvbuf,
                                 size_t count, orb_dtype_t dtype, orb_op_t op, int root, orb_stream_t stream)
{
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op, (void)root, (void)stream;
    return orb_comm_fail(c, ORB_ERR_UNSUPPORTED,
                         "%s: rank %d: stream is not NULL, but this build of orbit has no CUDA support and runs "
                         "host buffers only (pass NULL; the call blocks), or rebuild with -Dcuda=enabled",
                         orb_coll_name(coll), c->rank);
}
