/* Host buffers in, device buffers underneath: each stage_* call has the signature of the orb_*
 * call it wraps, copies the host regions it reads into device memory, runs the real call on
 * the device copies (with the thread's stream, or the NULL stream), and copies the output
 * region back. So the collective matrix of tests/coll/test_coll.c, whose orb_* calls are
 * redirected here, checks the device path with the CPU tests' own reference.
 *
 * Nothing here synchronises the device or uses the legacy stream: ranks that are threads of
 * one process must never wait for each other's kernels outside orbit. */
#ifndef ORB_TEST_GPU_STAGE_H
#define ORB_TEST_GPU_STAGE_H

#include <stddef.h>

#include "orbit.h"

typedef struct stage stage_t;

/* A staging context on the current device with two arenas of arena_bytes each; null_stream:
 * calls pass a NULL stream (the blocking form) instead of the context's stream. NULL and a
 * message in err on failure. */
stage_t *stage_create(size_t arena_bytes, int null_stream, char *err, size_t errlen);
void stage_destroy(stage_t *s);
/* The context the calling thread's stage_* calls use. */
void stage_bind(stage_t *s);
/* The stream of the context (a cudaStream_t). */
void *stage_stream(stage_t *s);

orb_status_t stage_allreduce(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_op_t op,
                             orb_comm_t comm, orb_stream_t stream);
orb_status_t stage_broadcast(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, int root,
                             orb_comm_t comm, orb_stream_t stream);
orb_status_t stage_reduce(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_op_t op,
                          int root, orb_comm_t comm, orb_stream_t stream);
orb_status_t stage_gather(const void *sendbuf, void *recvbuf, size_t sendcount, orb_dtype_t dtype, int root,
                          orb_comm_t comm, orb_stream_t stream);
orb_status_t stage_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, orb_dtype_t dtype,
                             orb_comm_t comm, orb_stream_t stream);
orb_status_t stage_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, orb_dtype_t dtype,
                                  orb_op_t op, orb_comm_t comm, orb_stream_t stream);
orb_status_t stage_alltoall(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_comm_t comm,
                            orb_stream_t stream);
orb_status_t stage_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
                             const size_t *recvcounts, const size_t *rdispls, orb_dtype_t dtype, orb_comm_t comm,
                             orb_stream_t stream);
orb_status_t stage_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, orb_dtype_t dtype, int root,
                           orb_comm_t comm, orb_stream_t stream);
orb_status_t stage_send(const void *buf, size_t count, orb_dtype_t dtype, int peer, orb_comm_t comm,
                        orb_stream_t stream);
orb_status_t stage_recv(void *buf, size_t count, orb_dtype_t dtype, int peer, orb_comm_t comm,
                        orb_stream_t stream);
orb_status_t stage_group_start(void);
orb_status_t stage_group_end(void);

/* 77 (after printing why) when this machine has no CUDA device, else 0. */
int stage_skip_without_device(void);
/* Arena bytes for the collective matrix's largest case at nranks: (1 Mi + 3) elements of
 * 8 bytes, times nranks for the gathers and all-to-alls, in-place spans included. */
size_t stage_arena_for(int nranks);

#endif
