/* Connections between two ranks, one per (peer, channel, direction), behind an ops table.
 *
 * Every connection is a FIFO of slots; each slot is a 64-byte header followed by the payload.
 * The executor asks for a free slot to send into, saying how large the piece is (writing the
 * payload in place: the fused reduction writes straight into the peer's slot), posts it, and on
 * the other side takes a full slot and releases it, in order. Transports differ in where slots
 * live and how they move (shared memory keeps small pieces in a ring of small slots of their
 * own: transport/shm/shm.h). */
#ifndef ORB_TRANSPORT_TRANSPORT_H
#define ORB_TRANSPORT_TRANSPORT_H

#include <stdatomic.h>
#include <stdint.h>

#include "kernels/piece.h"
#include "orbit.h"

typedef struct orb_conn orb_conn_t;

/* A piece a receiver wants written straight into its buffer (orb_conn_ops_t.recv_place). */
typedef struct {
    uint64_t pos;  /* its FIFO position */
    uint64_t call; /* the call it carries data of (orb_slot_hdr_t.seq) */
    char *dst;
    uint64_t bytes; /* its payload */
} orb_place_t;

/* The data entries of one connection: the hot path, one indirection per piece. */
typedef struct {
    const char *name;
    /* A free slot to fill with a piece of `bytes` payload bytes (at most slot_bytes; a piece
     * sent as an address says its whole size: the receiver may read it into the slot), or NULL
     * when the FIFO has no room for it. The slot is the one send_post posts: acquire again
     * before posting a piece of another size. */
    orb_slot_hdr_t *(*send_acquire)(orb_conn_t *c, size_t bytes);
    void (*send_post)(orb_conn_t *c);
    /* The next full slot, or NULL when none has arrived. */
    orb_slot_hdr_t *(*recv_acquire)(orb_conn_t *c);
    void (*recv_release)(orb_conn_t *c);
    /* Send side, for transports whose connections read pieces themselves (ORB_ADDR_LOCAL;
     * NULL otherwise): copy every posted piece
     * that still travels as an address into its slot, so that nothing reads the caller's
     * buffer once the call has returned. The executor calls it when a call fails with such
     * pieces unsent; it may wait a moment for the transport's own thread, never for a peer. */
    void (*settle)(orb_conn_t *c);
    /* Receive side, for transports that copy each piece into its slot themselves (sockets;
     * NULL otherwise): the pieces at want[].pos, positions in [c->pos, c->pos + nslots), may be
     * written straight to want[].dst instead of into their slots, where they turn out to be
     * data of call want[].call of want[].bytes; recv_acquire returns those with
     * ORB_PIECE_PLACED and addr = dst. This saves the receiver's copy out of the slot. The
     * caller names only pieces it copies unchanged and leaves those bytes alone until it has
     * taken them; a later request for a position replaces an earlier one. n < 0 withdraws every
     * request: when it returns, nothing is written to them any more (a piece half written goes
     * on into its slot: only a failed call withdraws, and it leaves the communicator broken). */
    void (*recv_place)(orb_conn_t *c, const orb_place_t *want, int n);
    /* The send side's ctrl->tail counts the slots the receiver has taken (shared memory),
     * not those the transport has sent on (sockets, verbs): a sender can tell its piece
     * reached the peer's executor. */
    int tail_is_receivers;
} orb_conn_ops_t;

typedef struct {
    _Atomic uint64_t head; /* slots posted by the sender (shm: unused, the slot's stamp says) */
    char pad0[56];
    _Atomic uint64_t tail; /* slots released by the receiver */
    /* shm: of them, the small ring's and the large slots' (each stored before tail) */
    _Atomic uint64_t tail_small, tail_large;
    char pad1[40];
} orb_fifo_ctrl_t;
_Static_assert(sizeof(orb_fifo_ctrl_t) == 128, "head and tail on a cache line each");

/* How a sender writes pieces into a shared-memory peer's slots. Ordinary stores leave each
 * line in the sender's cache, so the receiver's read and the sender's next write of that slot
 * each fetch it from the other core: cheap between cores that share a cache, several times
 * dearer between cores that do not (another CCD or socket; a VM's vCPUs can land there and
 * move back within seconds). Stores past the caches cost a little between near cores and
 * save most of it between far ones; collectives/slot_stores.c chooses from timed copies. */
typedef struct {
    float floor_gbps;  /* ordinary copies slower than this: the peer is far (0: never stream) */
    uint8_t mode;      /* ORB_SLOT_STORES_AUTO, _CACHED or _STREAM (ORBIT_SLOT_STORES) */
    uint8_t far;       /* auto: streaming now */
    uint8_t n, next;   /* timed copies held in gbps[], and where the next one goes */
    uint32_t since;    /* pieces since the last timed one */
    uint64_t probe;    /* streaming: FIFO position + 1 of the next timed copy (0: none due) */
    float gbps[5];     /* the last timed ordinary copies, GB/s */
} orb_slot_stores_t;

#define ORB_SLOT_STORES_AUTO 0
#define ORB_SLOT_STORES_CACHED 1
#define ORB_SLOT_STORES_STREAM 2

struct orb_conn {
    const orb_conn_ops_t *ops;
    int peer;
    int channel;
    orb_fifo_ctrl_t *ctrl;
    char *slots;
    size_t slot_stride; /* header + payload */
    size_t slot_bytes;  /* payload capacity */
    uint32_t nslots;
    uint64_t pos;         /* my copy of head (send side) or tail (receive side) */
    uint64_t tail_seen;   /* send side, shm: the receiver's tail_large when last read */
    orb_slot_hdr_t *cur;  /* shm: the large slot of pos_large, moved along with it */
    /* shm: pieces that fit a small slot go through a ring of nsmall of them (0: none) */
    char *small;
    uint32_t nsmall;
    uint64_t pos_small, pos_large; /* of pos, the pieces that went through each */
    uint64_t small_seen;     /* send side: the receiver's tail_small when last read */
    orb_slot_hdr_t *cur_small; /* the small slot of pos_small */
    int in_small;            /* the slot the last acquire returned is a small one */
    /* Receive side, shm: the small ring's releases told to the sender (ctrl->tail_small, tail)
     * run up to batch - 1 behind pos while the sender's next piece is already in, and the
     * connection is then on its endpoint's list of those holding some back (held), which the
     * endpoint's flush tells (endpoint.h) */
    uint64_t told;
    uint32_t batch; /* 0 or 1: every release told at once */
    int waited;     /* the piece taken last was not in at the first look */
    int on_held;
    struct orb_held *held;
    void *wake;           /* transport-specific: whom to wake after post/release */
    /* Receive side of single-copy pieces (cma.h), same-host shared memory only: the peer's
     * pid, whose buffers pieces marked ORB_PIECE_REMOTE point into (0: none may come). */
    int32_t cma_pid;
    /* ... and the peer's windows mapped here (window.h): pieces from them are read in place */
    struct orb_peer_windows *windows;
    /* Send side: pieces of at least addr_min bytes may be posted as addresses in this process
     * (ORB_PIECE_REMOTE) instead of being copied into the slot, and addr_kind says who reads
     * them there (0: nobody, every piece is copied). */
    uint32_t addr_kind;
    size_t addr_min;
    /* Send side, shared memory: how pieces are written into the peer's slots (zero: with
     * ordinary stores, always; collectives/slot_stores.h) */
    orb_slot_stores_t stores;
};

/* Who reads a piece posted as an address. */
#define ORB_ADDR_PEER 1u  /* the receiver, with one copy (process_vm_readv, cma.h) */
#define ORB_ADDR_LOCAL 2u /* this rank's transport, as it puts the piece on the wire (tcp: sendmsg
                           * from the caller's buffer); the peer receives an ordinary piece */
#define ORB_ADDR_WINDOW 4u /* the receiver, in place: the piece lies in a window it maps (window.h) */

/* The slot of position seq of a FIFO. */
static inline orb_slot_hdr_t *orb_conn_slot(const orb_conn_t *c, uint64_t seq)
{
    return (orb_slot_hdr_t *)(c->slots + (seq % c->nslots) * c->slot_stride);
}

/* Send side of a connection that posts pieces as addresses: has the receiver (ORB_ADDR_PEER)
 * or the transport (ORB_ADDR_LOCAL) released every slot up to pos, so read everything posted
 * before? */
static inline int orb_conn_released(const orb_conn_t *c, uint64_t pos)
{
    return atomic_load_explicit(&c->ctrl->tail, memory_order_acquire) >= pos;
}

#endif
