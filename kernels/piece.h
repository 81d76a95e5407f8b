/* The header every piece carries in its slot, host and device executors and every transport
 * alike (one cache line; valid C11 and C++): the call's signature, so a receiver can tell a
 * mismatched call, and the piece's own size and origin. */
#ifndef ORB_KERNELS_PIECE_H
#define ORB_KERNELS_PIECE_H

#include <stdint.h>

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
    uint32_t pad[2];
} orb_slot_hdr_t;

#define ORB_PIECE_REMOTE 1u
#define ORB_PIECE_SYNC 2u

#ifdef __cplusplus
static_assert(sizeof(orb_slot_hdr_t) == 64, "slot header is one cache line");
#else
_Static_assert(sizeof(orb_slot_hdr_t) == 64, "slot header is one cache line");
#endif

#endif
