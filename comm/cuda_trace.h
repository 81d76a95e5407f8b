/* Device steps for the tracer (docs/profiling.md): with ORBIT_TRACE_STEPS=1, each launch of a
 * traced communicator gets a slot of stamps in host-mapped memory, where thread 0 of every
 * block writes when its lane starts and ends (exec_cuda.h). A slot is read once its launch's
 * event has completed and each lane becomes one `kernel` step, on the host's clock. Internal,
 * CUDA builds only. */
#ifndef ORB_COMM_CUDA_TRACE_H
#define ORB_COMM_CUDA_TRACE_H

#include <cuda_runtime_api.h>

#include "comm/coll_call.h"
#include "kernels/exec_cuda.h"

struct orb_comm;
struct orb_cuda_state;

/* The stamp ring and the clock offset, once per communicator: at setup when the communicator
 * is traced with steps by then (an allocation after setup can wait for a peer's spinning
 * kernel when ranks are threads on one GPU), else at its first traced launch. Failing only
 * warns: device steps are then not recorded. */
void orb_cuda_trace_prepare(struct orb_comm *c, struct orb_cuda_state *s);

/* A launch being staged: points L->stamps at a free slot and remembers which call and channel
 * each block runs, or leaves it NULL (not traced with steps, a graph being captured, or every
 * slot still in flight: then its lanes count as dropped steps). */
void orb_cuda_trace_stage(struct orb_comm *c, struct orb_cuda_state *s, const orb_prepared_t *k, int n,
                          orb_cuda_launch_t *L, int capturing);

/* After the launch of the staged slot was enqueued on stream (launched) or given up. */
void orb_cuda_trace_commit(struct orb_cuda_state *s, cudaStream_t stream, int launched);

/* Turns the slots of completed launches, oldest first, into step records; wait: wait for the
 * launches still running first. */
void orb_cuda_trace_collect(struct orb_comm *c, struct orb_cuda_state *s, int wait);

void orb_cuda_trace_free(struct orb_cuda_state *s);

#endif
