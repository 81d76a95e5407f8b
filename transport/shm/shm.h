/* Shared-memory transport between ranks on one host: one POSIX segment per rank holds the
 * receive FIFOs of every (sender, channel). Senders write straight into the receiver's slots
 * and wake the receiver through its box (box.h) after posting into or freeing a slot.
 *
 * A FIFO has two rings: ORBIT_SHM_SLOTS large slots of ORBIT_SHM_SLOT_BYTES, and
 * ORBIT_SHM_SMALL_SLOTS small slots of 1 KiB for pieces that fit one (the small calls, the
 * handshakes). A piece goes through one or the other by its size, and every
 * piece carries its place in the FIFO's one order (its stamp), so the receiver takes them in
 * order from both. Small pieces then run as far ahead as the small ring is deep, without the
 * memory and the cache footprint of as many large slots (docs/transports.md). Segments are
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
    uint32_t nsmall;
} orb_shm_hdr_t;

/* A small slot: its header and 1 KiB of payload. Not 1 KiB in all: with a stride of 16 cache
 * lines the ring's headers would fall into 4 of the L1's 64 sets, and 64 slots' headers and
 * first payload lines overflow those (stride 17 lines: every set once; 2 ranks, 8-64 B calls,
 * 21 alternating runs, about 6% faster than 16; docs/perf.md 2026-11-30). */
#define ORB_SHM_SMALL_BYTES 1024
#define ORB_SHM_SMALL_STRIDE (64 + ORB_SHM_SMALL_BYTES)

extern const orb_conn_ops_t orb_shm_conn_ops;

#endif
