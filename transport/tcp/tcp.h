/* The TCP transport between ranks on different hosts. Same connection model as shm
 * (transport.h): each (peer, channel, direction) is a FIFO of slots; here the slots are local
 * staging memory and a progress thread moves them over sockets. After delivering a piece or
 * freeing a slot it calls wake(arg), which wakes the rank (its box's doorbell) so a sleeping executor
 * looks again. The communicator reaches it through orb_tcp_transport (endpoint.h). */
#ifndef ORB_TRANSPORT_TCP_TCP_H
#define ORB_TRANSPORT_TCP_TCP_H

#include "transport/bootstrap.h"
#include "transport/transport.h"

typedef struct orb_tcp orb_tcp_t;

/* Open this rank's listener on the interface ORBIT_SOCKET_IFNAME selects (see sock.h) and
 * write its address into card (family, port, addr). */
typedef struct {
    void (*wake)(void *arg); /* data arrived or a slot freed: wake the executor */
    /* a peer reported an error for the job (mismatch, lost rank): keep it for the executor */
    void (*on_error)(void *arg, int from, orb_status_t st, const char *msg);
    void *arg;
} orb_tcp_callbacks_t;

orb_status_t orb_tcp_create(orb_tcp_t **net, int rank, int nranks, int nchannels, uint32_t nslots,
                            size_t slot_bytes, const uint8_t *secret, const orb_tcp_callbacks_t *cb,
                            orb_card_t *card, char *err, size_t errlen);
/* Connect to each rank in peers[0..npeers) (the ranks on other hosts), every channel, and fill
 * send/recv[peer * nchannels + ch]. Every rank calls it with its own list; connections are
 * authenticated with the job's secret. */
orb_status_t orb_tcp_connect(orb_tcp_t *net, const orb_card_t *cards, const int *peers, int npeers,
                             orb_conn_t *send, orb_conn_t *recv, double deadline, char *err,
                             size_t errlen);
/* Tell a remote peer the job failed (delivered to its on_error); best effort, non-blocking. */
void orb_tcp_post_error(orb_tcp_t *net, int peer, orb_status_t st, const char *msg);
/* Non-blocking: ORB_ERR_PEER_LOST with *lost set when a peer's socket closed or failed. */
orb_status_t orb_tcp_check(orb_tcp_t *net, int *lost);
/* The job was aborted (orb_comm_abort): destroy will not wait for queued sends to drain.
 * Async-signal-safe. */
void orb_tcp_set_aborted(orb_tcp_t *net);
void orb_tcp_destroy(orb_tcp_t *net);

#endif
