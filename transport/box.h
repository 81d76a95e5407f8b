/* A rank's doorbell and error box: one small shared-memory segment per rank, owned by its
 * communicator, whatever transports carry the data. Ranks on one host map each other's
 * boxes: a peer wakes it (the doorbell) after posting into or freeing one of our slots, and leaves
 * an error there (a mismatch, a lost rank) for our executor to find. A rank with nothing to do
 * sleeps on the doorbell's futex. The name goes once every peer has mapped it, so a crash
 * leaves nothing in /dev/shm. */
#ifndef ORB_TRANSPORT_BOX_H
#define ORB_TRANSPORT_BOX_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "orbit.h"

#define ORB_BOX_MSG_BYTES 500

typedef struct {
    uint32_t magic;
    uint32_t version;
    int32_t rank;
    int32_t nranks;
    char pad0[48];
    _Atomic uint32_t doorbell; /* own cache line: every peer wakes it */
    _Atomic uint32_t waiters;
    char pad1[56];
    _Atomic int32_t closed;     /* owner destroyed its communicator */
    _Atomic int32_t err_status; /* an error posted to this rank (orb_status_t) */
    int32_t err_from;
    char err_msg[ORB_BOX_MSG_BYTES];
} orb_box_t;

/* Create this rank's box under name (O_EXCL: a name in use is an error). */
orb_status_t orb_box_create(orb_box_t **box, const char *name, int rank, int nranks, char *err, size_t errlen);
/* Map peer's box by its name and check it is the peer's. */
orb_status_t orb_box_attach(orb_box_t **box, const char *name, int peer, int nranks, char *err, size_t errlen);
void orb_box_unlink(const char *name);
/* Unmap a box; close = 1 (its owner): mark it closed first. */
void orb_box_release(orb_box_t *box, int close);

void orb_box_wake(orb_box_t *box);
/* Sleep until the doorbell moves past seen or timeout_s passes. */
void orb_box_wait(orb_box_t *box, uint32_t seen, double timeout_s);
/* Leave an error in box (the first one wins) and wake its owner. */
void orb_box_post(orb_box_t *box, int from, orb_status_t st, const char *msg);
/* The posted error (ORB_OK: none yet), its message copied into msg. */
orb_status_t orb_box_error(const orb_box_t *box, char *msg, size_t len);

#endif
