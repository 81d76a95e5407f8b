/* Shared-memory transport between ranks on one host: one POSIX segment per rank holds the
 * receive FIFOs of every (sender, channel). Senders write straight into the receiver's slots
 * and wake the receiver through its box (box.h) after posting into or freeing a slot. Segments are
 * unlinked as soon as every peer has attached, so a crash leaves nothing behind in /dev/shm.
 * Peers' health comes from their boxes (closed when they destroy their communicator) and
 * their pids. The communicator reaches it through orb_shm_transport (endpoint.h). */
#ifndef ORB_TRANSPORT_SHM_SHM_H
#define ORB_TRANSPORT_SHM_SHM_H

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
} orb_shm_hdr_t;

extern const orb_conn_ops_t orb_shm_conn_ops;

#endif
