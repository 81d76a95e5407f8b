/* Device buffers: collectives enqueued on a CUDA stream. Implemented in coll_cuda.c when
 * orbit is built with CUDA, else by coll_nocuda.c, which says what is missing. */
#ifndef ORB_COMM_COLL_CUDA_H
#define ORB_COMM_COLL_CUDA_H

#include "collectives/plan.h"
#include "orbit.h"

struct orb_comm;

/* 1 if p is device (or managed) memory; 0 for host memory or without CUDA. */
int orb_cuda_is_device_ptr(const void *p);
orb_status_t orb_cuda_collective(struct orb_comm *c, orb_coll_t coll, const void *sendbuf, void *recvbuf,
                                 size_t count, orb_dtype_t dtype, orb_op_t op, int root, orb_stream_t stream);

#endif
