/* orbit: collective communication over host and GPU memory.
 *
 * Every call returns an orb_status_t (0 = ok, negative = error). When a call on a
 * communicator fails, orb_comm_last_error(comm) holds the detail: which rank, which
 * argument or peer, and what to do about it. */
#ifndef ORBIT_H
#define ORBIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* liborbit exports these declarations and nothing else: the library is built with hidden
 * visibility, so its own calls between files are direct calls, not through the PLT. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define ORBIT_VERSION_MAJOR 0
#define ORBIT_VERSION_MINOR 1

/* One status enum for the whole library. Generated from one list so that the
 * names and messages never drift apart (libuv's habit). */
#define ORB_STATUS_MAP(X)                                                                   \
    X(ORB_OK, 0, "success")                                                                 \
    X(ORB_ERR_INVALID_ARG, -1, "invalid argument")                                          \
    X(ORB_ERR_NO_MEMORY, -2, "out of memory")                                               \
    X(ORB_ERR_SYSTEM, -3, "system call failed")                                             \
    X(ORB_ERR_TIMEOUT, -4, "operation timed out")                                           \
    X(ORB_ERR_PEER_LOST, -5, "a peer rank died or disconnected")                            \
    X(ORB_ERR_MISMATCH, -6, "ranks called mismatched collectives")                          \
    X(ORB_ERR_ABORTED, -7, "communicator was aborted")                                      \
    X(ORB_ERR_PROTOCOL, -8, "malformed or unauthenticated message")                         \
    X(ORB_ERR_UNSUPPORTED, -9, "not supported in this build or on this machine")            \
    X(ORB_ERR_CUDA, -10, "CUDA error")                                                      \
    X(ORB_ERR_INTERNAL, -11, "internal error (a bug in orbit)")                             \
    X(ORB_ERR_IN_PROGRESS, -12, "operation still in progress")

typedef enum {
#define ORB_STATUS_ENUM_(name, value, msg) name = value,
    ORB_STATUS_MAP(ORB_STATUS_ENUM_)
#undef ORB_STATUS_ENUM_
} orb_status_t;

typedef enum {
    ORB_INT8 = 0,
    ORB_UINT8,
    ORB_INT32,
    ORB_UINT32,
    ORB_INT64,
    ORB_UINT64,
    ORB_FLOAT16,
    ORB_BFLOAT16,
    ORB_FLOAT32,
    ORB_FLOAT64,
    ORB_NUM_DTYPES
} orb_dtype_t;

typedef enum { ORB_SUM = 0, ORB_PROD, ORB_MIN, ORB_MAX, ORB_AVG, ORB_NUM_OPS } orb_op_t;

/* Opaque communicator. Like NCCL's: one thread at a time issues calls on it, and every rank
 * issues the same collective calls in the same order. Different communicators may be driven
 * from different threads at once. */
typedef struct orb_comm *orb_comm_t;

/* Rendezvous id: address, port and a random 128-bit secret. Treat as opaque bytes;
 * pass it to every rank (MPI_Bcast, a file, ...). */
#define ORB_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[ORB_UNIQUE_ID_BYTES];
} orb_unique_id_t;

/* Opaque stream: a cudaStream_t for device buffers, NULL for host buffers (the call
 * then blocks until the result is in recvbuf). */
typedef void *orb_stream_t;

const char *orb_strerror(orb_status_t status);
const char *orb_status_name(orb_status_t status);
const char *orb_dtype_name(orb_dtype_t dtype);
const char *orb_op_name(orb_op_t op);
size_t orb_dtype_size(orb_dtype_t dtype); /* 0 for an unknown dtype */

/* Called on one rank; binds the rendezvous socket at once, so the id is valid until
 * the communicator built from it is destroyed or the process exits. */
orb_status_t orb_get_unique_id(orb_unique_id_t *id);
/* Text form of an id (hex, NUL-terminated, ORB_UNIQUE_ID_STR_BYTES with the NUL). */
#define ORB_UNIQUE_ID_STR_BYTES (2 * ORB_UNIQUE_ID_BYTES + 1)
orb_status_t orb_unique_id_to_string(const orb_unique_id_t *id, char *out, size_t outlen);
orb_status_t orb_unique_id_from_string(const char *str, orb_unique_id_t *id);

orb_status_t orb_comm_init_rank(orb_comm_t *comm, int nranks, orb_unique_id_t id, int rank);
/* From the launcher's environment: torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
 * MASTER_PORT), Open MPI (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK) or Slurm
 * (SLURM_PROCID/NTASKS/LOCALID). See docs/env.md. */
orb_status_t orb_comm_init_env(orb_comm_t *comm);
/* Several ranks as threads of one process, one per entry of devices (NULL: host). */
orb_status_t orb_comm_init_all(orb_comm_t *comms, int ndev, const int *devices);
/* Frees a live comm, whatever it returns. It first takes the signature handshakes the last rooted
 * call left due (docs/errors.md): ORB_ERR_MISMATCH if a neighbour disagreed with that call
 * (the text in orb_comm_last_error(NULL)). */
orb_status_t orb_comm_destroy(orb_comm_t comm);
/* Safe from any thread; every blocked or later call on comm returns ORB_ERR_ABORTED. */
orb_status_t orb_comm_abort(orb_comm_t comm);
orb_status_t orb_comm_rank(orb_comm_t comm, int *rank);
orb_status_t orb_comm_size(orb_comm_t comm, int *size);
/* Sub-communicators (ncclCommSplit semantics): every rank of comm calls it; the ranks that
 * pass the same color form one new communicator, ranked by key (ties by their rank in comm).
 * ORB_SPLIT_NOCOLOR joins no group and gets *newcomm = NULL. The child has its own
 * connections and settings inherited from comm, and is destroyed on its own. */
#define ORB_SPLIT_NOCOLOR (-1)
orb_status_t orb_comm_split(orb_comm_t comm, int color, int key, orb_comm_t *newcomm);
/* A new communicator with the same ranks as comm (a split with one color, ranks kept). */
orb_status_t orb_comm_dup(orb_comm_t comm, orb_comm_t *newcomm);
/* Deterministic reductions on comm (default: ORBIT_DETERMINISTIC): when on, all-reduce,
 * reduce and reduce-scatter add every element's contributions in rank order 0..n-1, so the
 * result is bitwise the same whatever algorithm, chunking, channels, ring order or transport
 * runs the call, and for host and device buffers alike. Every rank must set the same value
 * before its next collective. */
orb_status_t orb_comm_set_deterministic(orb_comm_t comm, int on);
orb_status_t orb_comm_get_deterministic(orb_comm_t comm, int *on);
/* Seconds a call on comm may wait without progress before it fails with ORB_ERR_TIMEOUT
 * (default ORBIT_TIMEOUT; 0 or less: never). Local to this rank; a split or dup inherits it. */
orb_status_t orb_comm_set_timeout(orb_comm_t comm, double seconds);
orb_status_t orb_comm_get_timeout(orb_comm_t comm, double *seconds);
/* Tracing (docs/profiling.md): from now on every call on comm is recorded (collective,
 * count, dtype, op, root, bytes, algorithm, channels, transports, start and end on a clock
 * common to all ranks) and, with steps != 0, each plan step per channel (start, wait, move,
 * reduce), in memory; orb_comm_trace_stop, orb_comm_destroy, the process's exit and the first
 * error that ends the communicator write it to dir/orbit-<comm>-r<rank>.trace, which the
 * orbit-trace tool merges. Local to this rank (ORBIT_TRACE=dir starts it at init on every
 * rank). Call from the thread that makes comm's calls. */
orb_status_t orb_comm_trace_start(orb_comm_t comm, const char *dir, int steps);
orb_status_t orb_comm_trace_stop(orb_comm_t comm);
/* The calls the running trace holds, oldest first: how many, and call i's start and end
 * (this process's CLOCK_MONOTONIC, ns) and bytes (nccl-tests' size of the call). For programs
 * that put orbit's own timing of each call into a profile of their own (orbit-train). */
orb_status_t orb_comm_trace_ncalls(orb_comm_t comm, size_t *n);
orb_status_t orb_comm_trace_call(orb_comm_t comm, size_t i, int64_t *t_start_ns, int64_t *t_end_ns, size_t *bytes);
/* Detail of the last failed call on comm ("" if none). Never NULL. */
const char *orb_comm_last_error(orb_comm_t comm);
/* An error raised in the background (peer lost, abort), ORB_OK if none. */
orb_status_t orb_comm_get_async_error(orb_comm_t comm, orb_status_t *async_error);

/* Host memory that ranks on the same host read in place (as ncclMemAlloc's): a collective
 * whose buffer lies inside one window sends its pieces there as addresses, and a peer maps the
 * window once and reads (or reduces) them with ordinary loads, instead of a copy through the
 * shared-memory slots or the kernel's single copy. Any host buffer still works in every call;
 * this one is faster to share. bytes > 0; at most 250 windows per process; freeing a window
 * that a call still uses is the caller's error, as for any buffer. Errors say why in
 * orb_comm_last_error(NULL). */
orb_status_t orb_mem_alloc(void **ptr, size_t bytes);
orb_status_t orb_mem_free(void *ptr);

/* Collectives. In-place when sendbuf == recvbuf; for gather/allgather when sendbuf is the
 * rank's own slot of recvbuf (recvbuf + rank * sendcount), for reduce_scatter when recvbuf is
 * the rank's block of sendbuf (sendbuf + rank * recvcount), as in NCCL. Host buffers take a
 * NULL stream, and the call returns when the result is in place. */
orb_status_t orb_allreduce(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype,
                           orb_op_t op, orb_comm_t comm, orb_stream_t stream);
orb_status_t orb_broadcast(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype,
                           int root, orb_comm_t comm, orb_stream_t stream);
orb_status_t orb_reduce(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype,
                        orb_op_t op, int root, orb_comm_t comm, orb_stream_t stream);
orb_status_t orb_gather(const void *sendbuf, void *recvbuf, size_t sendcount, orb_dtype_t dtype,
                        int root, orb_comm_t comm, orb_stream_t stream);
orb_status_t orb_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                           orb_dtype_t dtype, orb_comm_t comm, orb_stream_t stream);
orb_status_t orb_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                orb_dtype_t dtype, orb_op_t op, orb_comm_t comm,
                                orb_stream_t stream);
/* All-to-all: block j (count elements) of rank i's sendbuf lands in block i of rank j's
 * recvbuf; both buffers hold nranks * count elements. In place when sendbuf == recvbuf. */
orb_status_t orb_alltoall(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype,
                          orb_comm_t comm, orb_stream_t stream);
/* MPI_Alltoallv, counts and displacements in elements: rank i sends sendcounts[j] elements
 * from sendbuf + sdispls[j] to rank j, which receives them at recvbuf + rdispls[i]; rank j's
 * recvcounts[i] must equal rank i's sendcounts[j] (a pair that disagrees fails on both ranks,
 * naming them and the counts). Not in place: sendbuf and recvbuf must not overlap. */
orb_status_t orb_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                           void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                           orb_dtype_t dtype, orb_comm_t comm, orb_stream_t stream);
/* Scatter: block i (recvcount elements) of the root's sendbuf lands in rank i's recvbuf.
 * sendbuf is read on the root only. In place on the root when recvbuf is its own block of
 * sendbuf (sendbuf + root * recvcount), as in NCCL. */
orb_status_t orb_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, orb_dtype_t dtype,
                         int root, orb_comm_t comm, orb_stream_t stream);
orb_status_t orb_barrier(orb_comm_t comm);
orb_status_t orb_send(const void *buf, size_t count, orb_dtype_t dtype, int peer, orb_comm_t comm,
                      orb_stream_t stream);
orb_status_t orb_recv(void *buf, size_t count, orb_dtype_t dtype, int peer, orb_comm_t comm,
                      orb_stream_t stream);
/* Send and recv with a tag (orb_send/orb_recv use tag 0), as torch.distributed's and MPI's.
 * Messages between two ranks still pair up in the order they are posted: the tag does not
 * pick among waiting messages, it is checked, so a recv whose tag (or count, or dtype)
 * differs from the send it meets fails on both ranks with ORB_ERR_MISMATCH naming both. */
orb_status_t orb_send_tagged(const void *buf, size_t count, orb_dtype_t dtype, int peer, uint32_t tag,
                             orb_comm_t comm, orb_stream_t stream);
orb_status_t orb_recv_tagged(void *buf, size_t count, orb_dtype_t dtype, int peer, uint32_t tag,
                             orb_comm_t comm, orb_stream_t stream);

/* Calls between start and end are queued and progress together at end (for example a
 * send and a recv that would deadlock one after the other, or many small all-reduces).
 * Groups nest. Calls on one communicator progress together; the calls of several
 * communicators in one group run one communicator after another. */
orb_status_t orb_group_start(void);
orb_status_t orb_group_end(void);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* ORBIT_H */
