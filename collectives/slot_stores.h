/* Which stores write a piece into a shared-memory slot (orb_slot_stores_t in
 * transport/transport.h says why it matters). In auto mode the sender times one ordinary
 * copy in 8 (a clock read each side of a copy of 32 KiB or more: well under 1% of it) and
 * streams, past the caches, while the median of the last five timed copies is under the
 * connection's floor (a third of the link rate the calibration measured;
 * comm/comm_slot_stores.c says why). While streaming, one piece in 128 still goes with
 * ordinary stores, timed, so that the sender notices when the cores are near again: such a
 * copy into a far core's slot costs about 12 streamed ones, so probing 1 in 32 cost the
 * sender a third more; 1 in 128 costs a tenth, and turning back takes 384 pieces (tens of
 * MiB) where a far spell lasts tens of seconds. The receiver reads either kind alike. */
#ifndef ORB_COLLECTIVES_SLOT_STORES_H
#define ORB_COLLECTIVES_SLOT_STORES_H

#include <stddef.h>

#include "transport/transport.h"

#define ORB_SLOT_STORES_MIN_PIECE ((size_t)32 << 10) /* smaller copies: ordinary, untimed */
#define ORB_SLOT_STORES_NEAR_EVERY 8                 /* a timed copy every N pieces while near */
#define ORB_SLOT_STORES_FAR_EVERY 128                /* ... and while streaming */

typedef enum {
    ORB_SLOT_WRITE_CACHED, /* ordinary stores */
    ORB_SLOT_WRITE_TIMED,  /* ordinary stores, timed: orb_slot_stores_sample after */
    ORB_SLOT_WRITE_STREAM  /* non-temporal stores */
} orb_slot_write_t;

/* How to write the next piece of bytes into the slot; copy: the piece is a plain copy, which
 * alone may be timed (a reduction's rate says as much about its arithmetic and second source). */
orb_slot_write_t orb_slot_stores_pick(orb_slot_stores_t *s, size_t bytes, int copy);

/* A timed ordinary copy ran at gbps. Returns 1 when the verdict (s->far) changed. */
int orb_slot_stores_sample(orb_slot_stores_t *s, double gbps);

/* The median of the timed copies held (0 if none). */
double orb_slot_stores_median(const orb_slot_stores_t *s);

#endif
