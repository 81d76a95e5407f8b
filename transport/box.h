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
    /* 1: the owner fences for its wakers when it goes to sleep (membarrier), so a waker in a
     * process registered for it (orb_box_wake) needs no fence of its own */
    _Atomic int32_t light;
    char pad0[44];
    _Atomic uint32_t doorbell; /* own cache line: rung only while the owner is armed */
    _Atomic uint32_t waiters;  /* the owner's threads armed to sleep */
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

/* After posting into or freeing one of the box owner's slots (or posting an error): ring the
 * doorbell if the owner is armed to sleep.
 *
 * The owner arms (orb_box_arm), looks at its connections once more, and sleeps
 * (orb_box_wait) only if that look found nothing; a waker posts, then looks whether the owner
 * is armed. Either the owner's look sees the post or the waker sees the owner armed and rings
 * (a store then a load on each side: each needs a full fence between them). A locked add on
 * every post and release was that fence on the waker's side, and it waits for every store
 * before it, the slot's lines a far core owns among them: with the two vCPUs of the 2-core
 * Intel VM 130-320 ns apart it was a large part of a small call (docs/perf.md, 2026-12-06).
 * So where the kernel offers membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) the owner, which is
 * about to sleep anyway, makes every CPU running a registered process fence before its look,
 * and wakers of registered processes skip theirs; elsewhere (no membarrier, a box whose owner
 * could not register, a waker that could not) the waker fences as before. */
void orb_box_wake(orb_box_t *box);
/* Arm to sleep: the doorbell's value to sleep on. Then look at everything a wake-up could be
 * about once more, and sleep (orb_box_wait) or disarm (orb_box_disarm). */
uint32_t orb_box_arm(orb_box_t *box);
void orb_box_disarm(orb_box_t *box);
/* Sleep until the doorbell moves past seen or timeout_s passes, then disarm. */
void orb_box_wait(orb_box_t *box, uint32_t seen, double timeout_s);
/* Leave an error in box (the first one wins) and wake its owner. */
void orb_box_post(orb_box_t *box, int from, orb_status_t st, const char *msg);
/* The posted error (ORB_OK: none yet), its message copied into msg. */
orb_status_t orb_box_error(const orb_box_t *box, char *msg, size_t len);

#endif
