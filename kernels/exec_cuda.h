/* The device executor: runs plans (collectives/plan.h) inside one CUDA kernel launch.
 *
 * One launch runs one call, or the calls of a group on one communicator. Each thread block
 * runs one lane (one channel of one call): the steps in order, piece by piece, exactly as the
 * CPU executor cuts them. Pieces move through FIFOs of nslots slots per (sender, receiver,
 * channel), living in the receiver's memory (device memory mapped by CUDA IPC or P2P, or
 * pinned host shared memory when the two GPUs cannot reach each other):
 *
 *   simple  a slot = 64-byte piece header + 8-byte ready word + payload. The sender fills the
 *           payload and header, fences at system scope and stores ready = position + 1.
 *   LL      a slot = lines of 16 bytes {data 4, flag 4, data 4, flag 4}, 8 bytes of payload
 *           per line, the first 8 lines carrying the piece header. Each line is one 16-byte
 *           store whose flags are the position: the receiver polls the lines themselves and
 *           needs no fence and no separate ready word. For small messages.
 *
 * For both, the receiver hands a slot back by storing done = position + 1 into a per-slot
 * word in the sender's memory; the sender reuses a slot once it sees the previous use done.
 * Per-slot words (not one head/tail pair) let the lanes of several calls of a group use one
 * connection at the same time, each at the positions the calls before it leave free.
 *
 * Positions live in device memory and only kernels advance them, so launches need no host
 * bookkeeping and can be captured in a CUDA graph and replayed. Every spin is bounded by
 * the timeout and watches an abort word in host-mapped memory; the first error of a rank is
 * recorded in its control page (orb_cuda_ctrl_t), which its host reads on the next call,
 * and the rank raises the abort word of every peer so that no kernel waits forever.
 *
 * All blocks of all ranks that talk to each other must be resident on their GPUs at once
 * (a waiting block spins; it never yields its SM): launches use one block per lane. */
#ifndef ORB_KERNELS_EXEC_CUDA_H
#define ORB_KERNELS_EXEC_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "kernels/piece.h"
#include "kernels/step.h"
#ifdef __cplusplus
}
#endif

#include "orbit.h"

#define ORB_CUDA_THREADS 512      /* threads per block (one lane) */
#define ORB_CUDA_MAX_OPS 16       /* calls per launch: the launch record is a kernel parameter */
#define ORB_CUDA_MAX_RANKS 256    /* one host's ranks; positions are per-block shared memory */
#define ORB_CUDA_SLOT_HDR 128     /* simple slot: header, ready word, padding to 128 */
#define ORB_CUDA_LL_LINE 16
#define ORB_CUDA_LL_HDR_LINES 8   /* the 64-byte piece header, 8 bytes per line */
#define ORB_CUDA_CTRL_BYTES 4096  /* the control page at the start of each rank's host segment */

enum { ORB_CUDA_PROTO_SIMPLE = 0, ORB_CUDA_PROTO_LL = 1, ORB_CUDA_NPROTOS = 2 };


/* One direction of one FIFO. fifo: nslots slots of the protocol's stride, in the receiver's
 * memory. done: nslots words in the sender's memory, done[s] = last position consumed + 1. */
typedef struct {
    char *fifo;
    uint64_t *done;
} orb_cuda_fifo_t;

/* Both directions between this rank and one peer on one channel, indexed
 * [peer * nchannels + channel]. Pointers are valid in this rank's CUDA context. */
typedef struct {
    orb_cuda_fifo_t send[ORB_CUDA_NPROTOS]; /* fifo remote (peer's), done local */
    orb_cuda_fifo_t recv[ORB_CUDA_NPROTOS]; /* fifo local, done remote */
    unsigned long long send_pos[ORB_CUDA_NPROTOS], recv_pos[ORB_CUDA_NPROTOS];
    unsigned long long send_pend[ORB_CUDA_NPROTOS], recv_pend[ORB_CUDA_NPROTOS]; /* this launch */
} orb_cuda_conn_t;

/* What a kernel leaves for its host when it fails (first failure of the rank wins). */
enum { ORB_CUDA_WAIT_NONE = 0, ORB_CUDA_WAIT_DATA = 1, ORB_CUDA_WAIT_SLOT = 2 };
typedef struct {
    int32_t status; /* orb_status_t; written last */
    int32_t rank;
    int32_t peer;
    int32_t waiting; /* ORB_CUDA_WAIT_*: what the lane waited for (timeouts) */
    int32_t op_index;
    int32_t channel;
    uint32_t step;
    uint32_t piece;
    uint32_t want_nbytes;
    int32_t proto;
    orb_slot_hdr_t want;
    orb_slot_hdr_t got;
} orb_cuda_err_t;

/* Start of each rank's host segment, mapped by the rank's peers too. abort_status != 0 makes
 * every kernel of the rank bail out; a peer that fails sets it (and abort_from). */
typedef struct {
    int32_t abort_status;
    int32_t abort_from;
    int32_t pad[14];
    orb_cuda_err_t err;
} orb_cuda_ctrl_t;

/* Device-local scratch words of a communicator. */
typedef struct {
    unsigned int blocks_done; /* the last block of a launch folds the pending positions */
    int err_claim;            /* first error of the rank: the one recorded */
} orb_cuda_devstate_t;

/* One call of a launch. */
typedef struct {
    const orb_step_t *steps;               /* device copy of every lane, lane after lane */
    uint32_t lane_off[ORB_MAX_CHANNELS];   /* first step of lane ch in steps */
    uint32_t lane_n[ORB_MAX_CHANNELS];
    const char *in;                        /* input buffer, device-accessible */
    char *out;                             /* output buffer (or scratch), device-accessible */
    char *scratch;                         /* the plan's workspace (ORB_BUF_SCRATCH), or NULL */
    orb_slot_hdr_t sig;                    /* signature every piece carries */
    uint32_t esize;
    int32_t postdiv;                       /* POSTOP divisor (avg: nranks), else 0 */
    uint32_t piece_elems;                  /* elements per piece: slot payload / esize */
    int32_t sync_next, sync_prev;          /* signature handshake on channel 0, -1: none */
    uint8_t proto;
    uint8_t nlanes;
    uint8_t typed;                         /* reduces or divides: uses the launch's dtype/op */
    uint8_t pad;
} orb_cuda_op_t;

/* Everything a launch needs, passed by value as the kernel parameter. */
typedef struct {
    orb_cuda_conn_t *conns;
    orb_cuda_ctrl_t *ctrl;              /* this rank's control page (device pointer) */
    orb_cuda_ctrl_t *const *peer_ctrl;  /* device array [nranks] of every rank's page */
    orb_cuda_devstate_t *dev;
    uint64_t stride[ORB_CUDA_NPROTOS];  /* bytes per slot */
    uint64_t timeout_ns;
    int32_t rank, nranks, nchannels;
    uint32_t nslots;
    int32_t check_signatures;
    int32_t nops;
    int32_t dtype, op;                  /* of the typed calls (one pair per launch) */
    /* NULL: off. Else 2 words per block, in host-mapped memory: [2b] when block b starts its
     * lane, [2b+1] when it has run it (before the position bookkeeping); %globaltimer ns. */
    unsigned long long *stamps;
    orb_cuda_op_t ops[ORB_CUDA_MAX_OPS];
} orb_cuda_launch_t;

/* Payload bytes of a slot of stride bytes. */
static inline size_t orb_cuda_slot_payload(int proto, size_t stride)
{
    return proto == ORB_CUDA_PROTO_LL
               ? (stride / ORB_CUDA_LL_LINE - ORB_CUDA_LL_HDR_LINES) * 8
               : stride - ORB_CUDA_SLOT_HDR;
}

/* Stride of a slot that holds payload bytes (a multiple of 64 for simple, of 8 for LL). */
static inline size_t orb_cuda_slot_stride(int proto, size_t payload)
{
    return proto == ORB_CUDA_PROTO_LL
               ? (payload / 8 + ORB_CUDA_LL_HDR_LINES) * ORB_CUDA_LL_LINE
               : ORB_CUDA_SLOT_HDR + payload;
}

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueue the launch on stream: one block per lane of every op. ORB_ERR_INVALID_ARG for a
 * dtype/op pair with no kernel, ORB_ERR_CUDA when the launch fails (message in err). */
orb_status_t orb_cuda_exec_launch(const orb_cuda_launch_t *launch, cudaStream_t stream, char *err,
                                  size_t errlen);

/* Blocks of one launch (the co-residency requirement is per launch and rank). */
int orb_cuda_exec_blocks(const orb_cuda_launch_t *launch);

/* Enqueues one thread storing the device clock (%globaltimer, ns; the emulator's:
 * CLOCK_REALTIME) into *stamp, a device pointer to mapped host memory: the tracer reads it
 * around a synchronisation to place the kernels' stamps on the host's CLOCK_MONOTONIC. */
orb_status_t orb_cuda_exec_clock(unsigned long long *stamp, cudaStream_t stream, char *err, size_t errlen);

/* Loads every kernel of the device executor into the current device's context (call at setup,
 * before any of them runs): with lazy loading, a first launch while a peer's kernel spins
 * could wait for it forever. */
orb_status_t orb_cuda_exec_load(char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
