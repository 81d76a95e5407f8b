/* Shared-memory transport: one POSIX segment per rank holds a header (doorbell, error box)
 * and the receive FIFOs of every (sender, channel). Senders write straight into the
 * receiver's slots. A rank that has nothing to do sleeps on the futex of its doorbell, which
 * every peer rings after posting into or releasing one of its slots. Segments are unlinked as
 * soon as every peer has attached, so a crash leaves nothing behind in /dev/shm. */
#ifndef ORB_TRANSPORT_SHM_H
#define ORB_TRANSPORT_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "orbit.h"
#include "transport/transport.h"

typedef struct {
    uint32_t magic;
    uint32_t version;
    int32_t rank;
    int32_t nranks;
    int32_t nchannels;
    uint32_t nslots;
    uint64_t slot_bytes;
    uint64_t fifo_bytes;
    char pad0[24];
    _Atomic uint32_t doorbell; /* own cache line: rung by every peer */
    _Atomic uint32_t waiters;
    char pad1[56];
    _Atomic int32_t closed;     /* owner destroyed its communicator */
    _Atomic int32_t err_status; /* an error a peer posted to this rank (orb_status_t) */
    int32_t err_from;
    char err_msg[500];
} orb_shm_hdr_t;

typedef struct {
    int rank, nranks, nchannels;
    uint32_t nslots;
    size_t slot_bytes;
    size_t fifo_bytes, seg_bytes;
    char name[64];
    int unlinked;
    orb_shm_hdr_t *self;
    orb_shm_hdr_t **peers; /* mapped segments; NULL for ranks on other hosts */
} orb_shm_t;

extern const orb_transport_ops_t orb_shm_ops;

orb_status_t orb_shm_create(orb_shm_t *s, const char *name, int rank, int nranks, int nchannels,
                            uint32_t nslots, size_t slot_bytes, char *err, size_t errlen);
orb_status_t orb_shm_attach(orb_shm_t *s, int peer, const char *peer_name, char *err, size_t errlen);
void orb_shm_unlink(orb_shm_t *s);
/* Fill the two connections between this rank and peer on channel ch. */
void orb_shm_connect(orb_shm_t *s, int peer, int ch, orb_conn_t *send, orb_conn_t *recv);
void orb_shm_destroy(orb_shm_t *s);

void orb_shm_ring(orb_shm_hdr_t *h);
/* Sleep until the doorbell moves past seen or timeout_s passes. */
void orb_shm_wait(orb_shm_t *s, uint32_t seen, double timeout_s);
/* Leave an error in peer's box (first one wins) and wake it. */
void orb_shm_post_error(orb_shm_t *s, int peer, orb_status_t st, const char *msg);

#endif
