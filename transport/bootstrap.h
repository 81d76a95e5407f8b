/* Bootstrap: a TCP rendezvous at rank 0 that authenticates every rank with the id's secret,
 * collects each rank's card (address, host, pid, shared-memory segment) and hands out the
 * table. Rank 0 keeps one socket per rank afterwards for barriers, small all-gathers and
 * liveness (a closed socket = a lost rank). */
#ifndef ORB_TRANSPORT_BOOTSTRAP_H
#define ORB_TRANSPORT_BOOTSTRAP_H

#include <stdint.h>

#include "orbit.h"
#include "transport/sock.h"

#define ORB_BOOT_MAGIC 0x4f524242u /* "ORBB" */
#define ORB_BOOT_VERSION 1
#define ORB_ID_MAGIC 0x4f524249u /* "ORBI" */
#define ORB_SECRET_BYTES 16
#define ORB_MAX_RANKS 4096
#define ORB_CARD_IB 1u /* an RDMA port that works (transport/ib) */

/* What the opaque orb_unique_id_t holds. */
typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t family;
    uint16_t port;
    uint16_t pad;
    uint8_t addr[16];
    uint8_t secret[ORB_SECRET_BYTES];
} orb_id_wire_t;

/* One rank's card, as exchanged on the wire (fixed layout, little-endian hosts only). */
typedef struct {
    int32_t rank;
    int32_t pid;
    uint64_t pid_start; /* start time of pid, so a recycled pid is not taken for the rank */
    uint64_t host_id;   /* ranks with the same host_id share memory */
    uint16_t family;
    uint16_t port;
    uint32_t caps; /* ORB_CARD_*: what this rank offers beyond shared memory and TCP */
    uint8_t addr[16];
    char hostname[64];
    char shm_name[64];
    /* the FIFO geometry the rank was started with (ORBIT_NCHANNELS, ORBIT_SHM_*): every rank
     * must agree, and each checks every card before it maps anything (comm_init.c) */
    int32_t nchannels;
    uint32_t nslots, nsmall, pad2;
    uint64_t slot_bytes;
} orb_card_t;

typedef struct {
    int rank, nranks;
    int root_fd;    /* non-root: the socket to rank 0 */
    int *fds;       /* rank 0: socket per rank (-1 for itself) */
    orb_card_t *cards;
    uint8_t secret[ORB_SECRET_BYTES];
} orb_bootstrap_t;

orb_status_t orb_id_encode(orb_unique_id_t *id, const orb_sockaddr_t *addr, const uint8_t *secret);
orb_status_t orb_id_decode(const orb_unique_id_t *id, orb_sockaddr_t *addr, uint8_t *secret);
/* Whether two secrets are equal, in constant time (no early exit that leaks how much matched). */
int orb_secret_equal(const uint8_t *a, const uint8_t *b);
/* Fill buf with random bytes (getrandom). */
orb_status_t orb_random_bytes(void *buf, size_t len);

/* Remember a listening socket bound for an id made in this process (orb_get_unique_id). */
void orb_bootstrap_register_listener(const orb_unique_id_t *id, int fd);

/* Rendezvous. self->rank must be set. err gets the reason on failure. */
orb_status_t orb_bootstrap_init(orb_bootstrap_t *bs, const orb_unique_id_t *id, int nranks,
                                int rank, const orb_card_t *self, double timeout_s, char *err,
                                size_t errlen);
/* Every rank's `size` bytes (mine at buf + rank*size) end up at every rank. */
orb_status_t orb_bootstrap_allgather(orb_bootstrap_t *bs, void *buf, size_t size, double deadline);
orb_status_t orb_bootstrap_barrier(orb_bootstrap_t *bs, double deadline);
/* Collective: how far this rank's CLOCK_MONOTONIC is from rank 0's. Rank 0 trades `rounds`
 * time stamps with each rank in turn and keeps the exchange of least round trip (Cristian's
 * method): rank 0's time = mine + *offset_ns, within +- *err_ns (half that round trip). */
orb_status_t orb_bootstrap_clock(orb_bootstrap_t *bs, int rounds, double deadline, int64_t *offset_ns,
                                 int64_t *err_ns);
/* Non-blocking: ORB_ERR_PEER_LOST with *lost set when a bootstrap socket closed. */
orb_status_t orb_bootstrap_check(orb_bootstrap_t *bs, int *lost);
void orb_bootstrap_close(orb_bootstrap_t *bs);

/* Wire parsers, exposed for the fuzz harness: validate a message header / hello body. */
typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t len;
    uint32_t pad;
} orb_boot_hdr_t;
enum { ORB_BOOT_HELLO = 1, ORB_BOOT_TABLE, ORB_BOOT_GATHER, ORB_BOOT_GATHER_ALL, ORB_BOOT_CLOCK };
typedef struct {
    uint8_t secret[ORB_SECRET_BYTES];
    int32_t nranks;
    int32_t pad;
    orb_card_t card;
} orb_boot_hello_t;
/* ORB_OK if hdr is well formed, of type `type` and at most max_len long. */
orb_status_t orb_boot_hdr_check(const orb_boot_hdr_t *hdr, uint16_t type, uint32_t max_len,
                                char *why, size_t whylen);
/* ORB_OK if a hello (len bytes) is authentic and consistent with nranks. */
orb_status_t orb_boot_hello_check(const void *buf, size_t len, const uint8_t *secret, int nranks,
                                  char *why, size_t whylen);

#endif
