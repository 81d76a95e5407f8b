/* The device path of one communicator: its CUDA state, set up on first use (cuda_comm.c),
 * and what the collective entry (coll_cuda.c) needs from it. Internal, CUDA builds only. */
#ifndef ORB_COMM_CUDA_COMM_H
#define ORB_COMM_CUDA_COMM_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "comm/comm_impl.h"
#include "kernels/exec_cuda.h"
#include "transport/cuda_ipc/cuda_ipc.h"

#define ORB_CUDA_LL_SLOT_BYTES 4096 /* LL payload per slot: 8 KiB of lines */
#define ORB_CUDA_LL_MAX_BYTES 65536 /* calls up to this size use LL (ORBIT_CUDA_PROTO overrides) */
#define ORB_CUDA_DPLANS 1024        /* device plans kept before the least used is retired */
#define ORB_CUDA_PLAN_ARENA_STEPS 65536 /* plan steps uploaded without an allocation (3 MiB) */

/* A plan's steps in device memory, keyed like the host plan cache plus the tuner's choice. */
typedef struct {
    orb_call_key_t key;
    orb_algo_t algo;
    size_t chunk_elems;
    int nlanes;
    orb_step_t *steps;
    uint32_t lane_off[ORB_MAX_CHANNELS], lane_n[ORB_MAX_CHANNELS];
    uint64_t used;
    int pinned; /* used while a stream was captured: a graph may launch it any time */
    int in_arena; /* steps live in the state's plan arena (never freed alone) */
} orb_cuda_dplan_t;

struct orb_cuda_state {
    int bound_device;  /* orb_cuda_comm_init_device, else -1 */
    int local_rank;    /* orb_cuda_comm_bind_local_rank, else -1 */
    int device;        /* once set up */
    int ready;
    int host_aborted;  /* orb_comm_abort was called */
    orb_status_t broken;
    char broken_msg[ORB_ERRMSG_BYTES / 2];
    orb_cuda_ipc_t ipc;
    cudaStream_t internal;    /* NULL-stream calls and uploads; never the legacy stream */
    cudaEvent_t last_done;    /* orders launches of this comm on different streams */
    cudaEvent_t legacy_done;  /* orders a NULL-stream call after the legacy default stream */
    cudaStream_t last_stream;
    int have_last;
    orb_cuda_conn_t *conns;   /* device */
    orb_cuda_ctrl_t **peer_ctrl; /* device array of device pointers */
    orb_cuda_devstate_t *devstate;
    orb_cuda_ctrl_t *ctrl;    /* this rank's control page, host view */
    int sm_count;  /* blocks that are surely resident at once: one per SM */
    int gpu_ranks; /* ranks of this communicator on this GPU, this one included */
    uint64_t stride[ORB_CUDA_NPROTOS];
    uint64_t timeout_ns;
    orb_cuda_dplan_t *plans;
    int nplans, capplans;
    /* Plans go up without an allocation or a host wait (either can deadlock against a peer's
     * spinning kernel): written into the pinned mirror, copied to the device arena on the
     * launch stream ahead of the kernel. Bump-allocated; full: the old way, with a warning. */
    orb_step_t *arena;        /* device */
    orb_step_t *arena_mirror; /* pinned host, same layout */
    size_t arena_used;        /* steps */
    uint64_t clock;
    char *scratch;
    size_t scratch_bytes;
    void **graveyard; /* device memory a launch in flight or a graph may still read: freed at destroy */
    size_t ngrave, capgrave;
    struct orb_cuda_trace *trace; /* device steps (cuda_trace.h), NULL until traced with steps */
    int trace_failed;             /* their setup failed: not tried again */
};

/* The state of c, created (device unset) when create is nonzero; NULL without it. */
struct orb_cuda_state *orb_cuda_state_of(struct orb_comm *c, int create);

/* The device a comm without one will use: bound, LOCAL_RANK modulo the count, hint (the
 * device of the first call's buffers, -1 if none) or the calling thread's current device. */
orb_status_t orb_cuda_state_pick_device(struct orb_cuda_state *s, int hint, int *device, char *err, size_t errlen);

/* Collective: regions, connection table, control pages on device (made current). Every rank
 * succeeds or every rank fails. */
orb_status_t orb_cuda_state_setup(struct orb_comm *c, struct orb_cuda_state *s, int device, char *err,
                                  size_t errlen);

/* Failures kernels left since the last look (this rank's, or one a peer raised): ORB_OK, or
 * the status with its description in err; the state is then broken for good. */
orb_status_t orb_cuda_state_check(struct orb_comm *c, struct orb_cuda_state *s, char *err, size_t errlen);

/* The device copy of plan, uploaded on first use by a copy queued on stream (the launch's, so
 * it lands before the kernel; nothing waits on the host). pin: a graph is being captured. */
orb_status_t orb_cuda_state_plan(struct orb_cuda_state *s, const orb_call_key_t *key, const orb_plan_t *plan,
                                 int pin, cudaStream_t stream, const orb_cuda_dplan_t **out, char *err,
                                 size_t errlen);

/* Device scratch of at least bytes (grows, in the order of stream unless a graph is being
 * captured; never shrinks while the comm lives). */
orb_status_t orb_cuda_state_scratch(struct orb_cuda_state *s, size_t bytes, cudaStream_t stream, int capturing,
                                    char **out, char *err, size_t errlen);

#endif
