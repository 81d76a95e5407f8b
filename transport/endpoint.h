/* What a transport offers the communicator: one const ops table per transport family
 * (rdma-core's verbs_device_ops habit). The communicator never branches on which transport a
 * peer uses: it creates every registered transport's endpoint, lets the first one that
 * reaches a peer connect it (in orb_transports order: host-local first), and asks every
 * endpoint for liveness and error delivery through the same entries. Adding a transport is a
 * folder under transport/ and one line in registry.c.
 *
 * Life of an endpoint: create (before the bootstrap: fill this rank's part of its card) ->
 * connect (after it: the cards of all ranks, the peers it won) -> ready (every rank
 * connected: names can go) -> post_error / check_alive / abort while calls run -> destroy. */
#ifndef ORB_TRANSPORT_ENDPOINT_H
#define ORB_TRANSPORT_ENDPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.h"
#include "transport/bootstrap.h"
#include "transport/box.h"
#include "transport/transport.h"

/* Cost of one link class for the tuner: alpha is the fixed cost of one step (a slot handed
 * over and noticed), beta the bandwidth one link sustains, shared by all channels on it;
 * l2_bytes the smallest L2 cache of the cores at its ends (0: unknown), which says how much
 * data a rank can pass over twice in one call for the price of once (collectives/tuner.c);
 * ranks_per_cpu the most ranks a CPU of their hosts has to run (a host's ranks over the CPUs
 * they may use; 0: unknown): above 1, a small call takes as long as all its ranks' work, not
 * its longest path. */
typedef struct {
    double alpha_us;
    double beta_gbps;
    double l2_bytes;
    double ranks_per_cpu;
} orb_link_cost_t;

typedef struct orb_endpoint orb_endpoint_t; /* a transport's state in one communicator */

typedef struct {
    int rank, nranks, nchannels;
    uint32_t nslots;
    size_t slot_bytes;
    uint32_t nsmall;           /* shm: small slots per FIFO (ORBIT_SHM_SMALL_SLOTS) */
    uint32_t release_batch;    /* shm: ORBIT_SHM_RELEASE_BATCH */
    const uint8_t *secret;     /* the job's: authenticates connections */
    const char *name;          /* this rank's shared-memory name prefix (card.shm_name) */
    orb_box_t *box;            /* this rank's box: wake it when data moves, post errors peers report */
    orb_box_t *const *boxes;   /* every rank's box as this rank maps it (NULL: another host) */
    orb_bootstrap_t *bs;       /* ready by connect: collective exchanges (every rank takes part) */
} orb_transport_args_t;

typedef struct orb_transport {
    const char *name;
    orb_link_cost_t link; /* what one of its links costs until measured (docs/transports.md) */
    /* This rank's endpoint; fills the transport's part of card (addresses, names). */
    orb_status_t (*create)(orb_endpoint_t **ep, const orb_transport_args_t *a, orb_card_t *card, char *err,
                           size_t errlen);
    /* Whether it can connect the ranks of these two cards. */
    int (*reaches)(const orb_card_t *me, const orb_card_t *peer);
    /* Connect peers[0..npeers) (the ranks it won, maybe none), every channel: fill
     * send/recv[peer * nchannels + ch]. Every rank calls it with its own list. A peer whose
     * send[peer * nchannels].ops stays NULL goes to the next transport that reaches it (the
     * transport must have agreed that with the peer). */
    orb_status_t (*connect)(orb_endpoint_t *ep, const orb_card_t *cards, const int *peers, int npeers,
                            orb_conn_t *send, orb_conn_t *recv, double deadline, char *err, size_t errlen);
    /* Every rank has connected (after a barrier): what was only needed to connect can go. */
    void (*ready)(orb_endpoint_t *ep);
    /* Tell a peer it connects that the job failed; best effort, non-blocking. */
    void (*post_error)(orb_endpoint_t *ep, int peer, orb_status_t st, const char *msg);
    /* Non-blocking health of the peers it connects, waiting_on[0..n) being those the executor
     * waits for. A lost peer: its status, *lost, err (what this rank reports) and note (what
     * to tell the others; empty when the loss was already told). */
    orb_status_t (*check_alive)(orb_endpoint_t *ep, const int *waiting_on, int n, int *lost, char *err,
                                char *note, size_t len);
    /* Optional (NULL: nothing to hold back): the executor is about to wait. Tell every sender
     * of the slots this rank has read and not told yet (shm holds some back while a sender's
     * next piece is already in), or a sender waiting for them could wait on this rank while it
     * waits on that sender. */
    void (*flush)(orb_endpoint_t *ep);
    /* Optional (NULL: nothing to do): the executor is about to sleep on its box until woken.
     * A transport whose arrivals wake nobody unless asked (verbs completion events) arms
     * them here; it wakes the box itself if something already arrived. */
    void (*idle)(orb_endpoint_t *ep);
    /* orb_comm_abort: destroy will not wait for anything. Async-signal-safe. */
    void (*abort)(orb_endpoint_t *ep);
    void (*destroy)(orb_endpoint_t *ep);
} orb_transport_t;

/* The registered transports, in order of preference, NULL-terminated (registry.c). */
extern const orb_transport_t *const orb_transports[];

extern const orb_transport_t orb_shm_transport;
extern const orb_transport_t orb_tcp_transport;
#ifdef ORB_HAVE_IB
extern const orb_transport_t orb_ib_transport;
#endif

#endif
