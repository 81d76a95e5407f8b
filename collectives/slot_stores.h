/* Which stores write a piece into a shared-memory slot (orb_slot_stores_t in
 * transport/transport.h says why it matters). In auto mode the sender times one ordinary
 * copy in 8 (a clock read each side of a copy of 32 KiB or more: well under 1% of it) and
 * streams, past the caches, while the median of the last five timed copies is under the
 * connection's floor (a third of the link rate the calibration measured;
 * comm/comm_slot_stores.c says why). While streaming, one piece in 128 goes with ordinary
 * stores, and the piece one lap later into the same slot (nslots positions on) with ordinary
 * stores again, timed: the first finds the slot's lines where streaming left them, in memory,
 * and runs fast between far cores too (10-18 GB/s here against 2.3-2.5 in the steady state,
 * which turned the verdict back and forth); the second meets them as every ordinary copy does,
 * last read by the receiver. Between far cores such a pair costs about 14 streamed pieces
 * (a streamed copy ran at ~29 GB/s, the pair's at ~13 and ~2.4), so 1 in 128 costs the sender
 * about a tenth; turning back takes three pairs, where a far spell lasts tens of seconds. The
 * receiver reads either kind alike. */
#ifndef ORB_COLLECTIVES_SLOT_STORES_H
#define ORB_COLLECTIVES_SLOT_STORES_H

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

#define ORB_SLOT_STORES_MIN_PIECE ((size_t)32 << 10) /* smaller copies: ordinary, untimed */
#define ORB_SLOT_STORES_FLOOR_SHARE 3                /* the floor: the calibrated link rate / this */
#define ORB_SLOT_STORES_NEAR_EVERY 8                 /* a timed copy every N pieces while near */
#define ORB_SLOT_STORES_FAR_EVERY 128                /* ... and while streaming */

typedef enum {
    ORB_SLOT_WRITE_CACHED, /* ordinary stores */
    ORB_SLOT_WRITE_TIMED,  /* ordinary stores, timed: orb_slot_stores_sample after */
    ORB_SLOT_WRITE_STREAM  /* non-temporal stores */
} orb_slot_write_t;

/* How to write the next piece of bytes into the slot at FIFO position pos (of nslots); copy:
 * the piece is a plain copy, which alone may be timed (a reduction's rate says as much about
 * its arithmetic and second source). */
orb_slot_write_t orb_slot_stores_pick(orb_slot_stores_t *s, size_t bytes, int copy, uint64_t pos, uint32_t nslots);

/* A timed ordinary copy ran at gbps. Returns 1 when the verdict (s->far) changed. */
int orb_slot_stores_sample(orb_slot_stores_t *s, double gbps);

/* The median of the timed copies held (0 if none). */
double orb_slot_stores_median(const orb_slot_stores_t *s);

#endif
