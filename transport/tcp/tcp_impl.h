/* Internals of the TCP transport (the public face is tcp.h).
 *
 * Every pair of ranks on different hosts has one control socket (handshake, error notices)
 * and nchannels x nsocks data sockets. Data socket (ch, k) carries stripe k of channel ch in
 * both directions. Each (peer, channel, direction) FIFO is a circular buffer of slots in local memory,
 * like a shm FIFO: the executor fills send slots and takes receive slots through the same
 * ops. Bytes move between FIFOs and sockets in two places: inline, on the executor's thread,
 * when it posts a slot or finds its receive FIFO empty (no thread hand-over on the latency
 * path), and on a progress thread that takes over whatever the executor left (a full socket
 * buffer, data arriving while the executor sleeps or computes, pending sends after a call
 * returned). A per-direction lock (try-only on both sides) keeps the two apart. */
#ifndef ORB_TRANSPORT_TCP_IMPL_H
#define ORB_TRANSPORT_TCP_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "transport/tcp/tcp.h"
#include "transport/sock.h"
#include "transport/tcp/tcp_wire.h"

#define ORB_TCP_STAGE_BYTES 4096 /* per socket: preambles and small payloads are read in batches */
/* Pieces this large are a bandwidth stream: the thread reading alongside the executor pays
 * for its wake-ups; below, the executor alone is faster (tcp_progress.c). */
#define ORB_TCP_BIG_BYTES (64u << 10)

typedef struct orb_tcp_chan orb_tcp_chan_t;

/* The receiver's request for one FIFO position (orb_conn_ops_t.recv_place): pos stored last
 * (UINT64_MAX: none). */
typedef struct {
    _Atomic uint64_t pos;
    uint64_t call, bytes;
    char *dst;
} orb_tcp_want_t;

/* One direction of one (peer, channel) FIFO. */
typedef struct {
    orb_fifo_ctrl_t ctrl; /* head: slots filled, tail: slots emptied */
    orb_tcp_chan_t *chan;
    char *slots;
    size_t stride;
    uint32_t nslots;
} orb_tcp_fifo_t;

/* One socket and where it stands in its two streams. */
typedef struct {
    int fd;
    int peer, channel, stripe; /* channel -1: control socket */
    /* Edge-triggered readiness: the thread counts epoll events; whoever hits EAGAIN notes the
     * count it had seen, so an event that lands meanwhile is never lost. */
    _Atomic uint32_t rd_ev, wr_ev;
    uint32_t rd_seen, wr_seen;
    int eof; /* everything the peer sent on it was read */
    /* sending (under the channel's tx lock): the frame in flight */
    uint64_t tx_seq; /* next slot this stripe has to write */
    size_t tx_done;  /* bytes of the frame written so far (preamble + payload) */
    int tx_busy;     /* a frame is in flight */
    orb_tcp_frame_t tx_frame;
    /* receiving (under the channel's rx lock): staged bytes, then a payload straight into its slot */
    char *stage;
    size_t stage_pos, stage_end;
    uint64_t rx_seq; /* slot of the frame being read */
    uint32_t rx_len, rx_left;
    char *rx_dst;
    int rx_busy; /* the preamble was taken, payload bytes are due */
} orb_tcp_sock_t;

/* Both FIFOs of one (peer, channel) and the sockets that carry them. */
struct orb_tcp_chan {
    orb_tcp_fifo_t tx, rx;
    atomic_flag tx_lock, rx_lock;
    /* The thread found the lock held and moved on: the holder must kick it after unlocking. */
    _Atomic int skipped_tx, skipped_rx;
    _Atomic int rx_wait; /* rx stopped for want of a free slot: the release must kick */
    /* The executor found the receive FIFO empty / the send FIFO full at its last look: if
     * the peer has left, that wait can never end. */
    _Atomic int want_rx, want_tx;
    orb_tcp_t *net;
    int peer; /* index in net->peers */
    int nsocks;
    orb_tcp_sock_t *socks; /* [nsocks], stripe order */
    /* receive bookkeeping (under rx lock) */
    uint64_t rx_head; /* slots published */
    uint64_t *tag;    /* per slot: the piece its byte count belongs to */
    uint32_t *got;    /* per slot: payload bytes arrived */
    orb_tcp_want_t *want; /* per slot: the receiver's request for a position there */
    uint64_t placed, pieces; /* pieces written straight to the receiver's buffer, of all taken */
};

typedef struct {
    int rank;
    int nsocks;
    int ctrl; /* index of its control socket in net->socks */
    _Atomic int nopen;  /* sockets not at EOF */
    _Atomic int bye;    /* it destroyed its communicator in good order */
    _Atomic int closed; /* its sockets are done with (EOF, error or nonsense): leave them alone */
    pthread_mutex_t ctrl_lock; /* post_error writes from the user's thread */
} orb_tcp_peer_t;

struct orb_tcp {
    int rank, nranks, nchannels;
    uint32_t nslots;
    size_t slot_bytes;
    uint8_t secret[ORB_SECRET_BYTES];
    orb_tcp_callbacks_t cb;
    int nsocks_wanted;
    int place; /* ORBIT_TCP_PLACE: receive pieces where the executor asks (recv_place) */

    int listen_fd;
    char ifname[64];
    char cc[16]; /* congestion control of our sockets */

    int npeers;
    orb_tcp_peer_t *peers;   /* [npeers] */
    int *peer_index;         /* rank -> index in peers, or -1 */
    orb_tcp_sock_t *socks;   /* per peer: control socket, then data sockets by (channel, stripe) */
    int nsocks_total;
    orb_tcp_chan_t *chans;   /* [npeers * nchannels] */

    int epfd, evfd;
    pthread_t thread;
    int thread_started;
    _Atomic int idle;      /* the thread sleeps (or is about to): kick it */
    /* Bumped by the executor whenever it looks at a tcp FIFO. While it keeps looking it reads
     * the sockets itself, and the thread stops listening for incoming data (tcp_progress.c). */
    _Atomic uint64_t exec_polls;
    _Atomic int big; /* the last piece posted or arrived was large (ORB_TCP_BIG_BYTES) */
    _Atomic int stop;      /* 1: flush and leave, 2: leave now */
    _Atomic int lost_rank; /* first peer found gone + 1, 0: none */
    _Atomic int aborted;
    _Atomic int errored;
};

extern const orb_conn_ops_t orb_tcp_conn_ops;

/* Wake the progress thread if it sleeps. */
void orb_tcp_kick(orb_tcp_t *net);
/* Establish every socket with the peers (tcp_handshake.c); fills net->socks. */
orb_status_t orb_tcp_handshake(orb_tcp_t *net, const orb_card_t *cards, double deadline, char *err, size_t errlen);
/* The progress thread (tcp_progress.c). */
void *orb_tcp_progress_main(void *arg);
/* Move what can move on a channel now, from whichever thread holds its lock (tcp_stream.c).
 * Return 1 if anything moved; *freed / *published tell whether tail / head advanced. */
int orb_tcp_tx(orb_tcp_chan_t *ch, int *freed);
int orb_tcp_rx(orb_tcp_chan_t *ch, int force, int *published);
/* Work on ch that no socket event will announce: frames to write on a writable socket /
 * bytes known to be readable, or a staged frame, while its FIFO has room. Lock held. */
int orb_tcp_tx_pending(orb_tcp_chan_t *ch);
int orb_tcp_rx_pending(orb_tcp_chan_t *ch);
/* Peer i's sockets ended: stop using them and tell the executor. Without a goodbye before
 * (or when fatal: it sent nonsense) the peer counts as lost at once; after one, only when
 * the executor waits for it (orb_tcp_check). */
void orb_tcp_peer_closed(orb_tcp_t *net, int i, const char *why, int fatal);

/* seq_cst (not acquire/release): a side that fails to take a lock goes to sleep, and the
 * holder looks at `idle` after unlocking to decide whether to wake it (tcp_progress.c). */
static inline int orb_tcp_trylock(atomic_flag *l) { return !atomic_flag_test_and_set(l); }
static inline void orb_tcp_unlock(atomic_flag *l) { atomic_flag_clear(l); }

#endif
