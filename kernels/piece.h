/* The header every piece carries in its slot, host and device executors and every transport
 * alike (one cache line; valid C11 and C++): the call's signature, so a receiver can tell a
 * mismatched call, and the piece's own size and origin. */
#ifndef ORB_KERNELS_PIECE_H
#define ORB_KERNELS_PIECE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint64_t seq;   /* per-communicator call number */
    uint64_t count; /* the count the user passed */
    uint32_t coll;
    uint32_t dtype;
    uint32_t op;
    int32_t root;
    uint32_t nbytes; /* payload bytes of this piece */
    uint32_t step;   /* step index in the sender's lane (diagnostics) */
    int32_t sender;
    uint32_t flags; /* ORB_PIECE_REMOTE: no payload; the data is at addr in the sender.
                     * ORB_PIECE_SYNC: the call's signature handshake rides on this piece */
    uint64_t addr;
    /* shm: the FIFO position + 1 the piece went at, stored last, with release order: the
     * receiver polls the slot, not the FIFO's head, so a small piece costs it one line from
     * the sender's cache, not two in turn. Writers of a header leave it alone (orb_piece_hdr_put). */
    uint64_t stamp;
} orb_slot_hdr_t;

/* Writes a piece's header but its stamp, which belongs to the transport (another thread may be
 * polling it). */
static inline void orb_piece_hdr_put(orb_slot_hdr_t *dst, const orb_slot_hdr_t *src)
{
    memcpy(dst, src, offsetof(orb_slot_hdr_t, stamp));
}

#define ORB_PIECE_REMOTE 1u
#define ORB_PIECE_SYNC 2u
/* A handshake sent late: a rank that was to vouch for its neighbour by checking its data
 * (collectives/exec.h, ORB_SYNC_VOUCH) waited ORB_EXEC_UNMERGE_S without it and sent its own
 * signature after all. Whoever finds it checks it against its call of that number if it is in
 * that call, and drops it otherwise. */
#define ORB_PIECE_LATE 4u
/* Receive side only, never on the wire: the transport wrote the payload straight to addr in this
 * process, where the receiver asked for it (orb_conn_ops_t.recv_place); the slot holds only the
 * header. */
#define ORB_PIECE_PLACED 8u

#ifdef __cplusplus
static_assert(sizeof(orb_slot_hdr_t) == 64, "slot header is one cache line");
#else
_Static_assert(sizeof(orb_slot_hdr_t) == 64, "slot header is one cache line");
#endif

#endif
