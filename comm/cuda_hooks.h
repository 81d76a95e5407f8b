/* What the communicator's life cycle (comm_init.c, comm_env.c, comm_threads.c, comm_query.c)
 * calls into the device path; the calls themselves go through coll_cuda.h. Built with CUDA
 * (ORB_HAVE_CUDA, set by comm/meson.build) these are cuda_comm.c; without it, the inline
 * stubs below. */
#ifndef ORB_COMM_CUDA_HOOKS_H
#define ORB_COMM_CUDA_HOOKS_H

#include <stddef.h>

#include "collectives/plan.h"
#include "orbit.h"

struct orb_comm;

#ifdef ORB_HAVE_CUDA

/* orb_comm_init_all with devices: bind the rank to device and set the device path up now,
 * in the rank's init thread (collective: every rank's thread calls it). */
orb_status_t orb_cuda_comm_init_device(struct orb_comm *c, int device, char *err, size_t errlen);
/* orb_comm_init_env: the device will be local_rank modulo the device count. Touches no CUDA:
 * the device path is set up by the first call on device buffers. */
void orb_cuda_comm_bind_local_rank(struct orb_comm *c, int local_rank);
/* The device path's setup (also done lazily by the first device call of every rank). */
orb_status_t orb_cuda_comm_setup(struct orb_comm *c, char *err, size_t errlen);
/* orb_comm_split: the child uses its parent's device (the one bound or set up, and the
 * LOCAL_RANK hint). Touches no CUDA: the child's device path is set up by its first device
 * call, as after orb_comm_init_env. */
void orb_cuda_comm_inherit(struct orb_comm *child, struct orb_comm *parent);
/* orb_comm_abort: this rank's kernels stop, its peers' kernels stop waiting for it. */
void orb_cuda_comm_abort(struct orb_comm *c);
/* orb_comm_destroy, before the bootstrap and shared memory go: frees the device path. */
void orb_cuda_comm_destroy(struct orb_comm *c);
/* orb_comm_get_async_error: a failure a kernel reported since the last call, else ORB_OK. */
orb_status_t orb_cuda_async_error(struct orb_comm *c);
/* Before the trace is written: device steps of completed launches into the tracer's ring
 * (wait: of every launch, waiting for those still running). */
void orb_cuda_trace_flush(struct orb_comm *c, int wait);

#else

static inline orb_status_t orb_cuda_comm_init_device(struct orb_comm *c, int device, char *err, size_t errlen)
{
    (void)c, (void)err, (void)errlen, (void)device;
    return ORB_ERR_UNSUPPORTED;
}
static inline void orb_cuda_comm_bind_local_rank(struct orb_comm *c, int local_rank) { (void)c, (void)local_rank; }
static inline orb_status_t orb_cuda_comm_setup(struct orb_comm *c, char *err, size_t errlen)
{
    (void)c, (void)err, (void)errlen;
    return ORB_ERR_UNSUPPORTED;
}
static inline void orb_cuda_comm_inherit(struct orb_comm *child, struct orb_comm *parent) { (void)child, (void)parent; }
static inline void orb_cuda_comm_abort(struct orb_comm *c) { (void)c; }
static inline void orb_cuda_comm_destroy(struct orb_comm *c) { (void)c; }
static inline orb_status_t orb_cuda_async_error(struct orb_comm *c)
{
    (void)c;
    return ORB_OK;
}
static inline void orb_cuda_trace_flush(struct orb_comm *c, int wait) { (void)c, (void)wait; }

#endif

#endif
