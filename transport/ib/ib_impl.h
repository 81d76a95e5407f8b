/* The RDMA transport's insides (docs/transports.md, "ib").
 *
 * One reliable-connected QP per (peer, channel) carries both directions. The sender fills a
 * slot of its own registered send ring and posts RDMA WRITE WITH IMMEDIATE into the same slot
 * of the receiver's registered ring (inline when it fits the device's inline size); the
 * immediate says "data" and consumes one pre-posted receive, whose completion tells the
 * receiver. A released slot goes back as a zero-byte WRITE WITH IMMEDIATE carrying the
 * receiver's release count (a credit) once half the ring is released. One CQ per endpoint;
 * the executor polls it when a FIFO looks empty or full, and arms it for solicited events
 * just before it sleeps, so that a progress thread blocked on the completion channel (and
 * the async event queue) wakes the executor's box only when it is asleep. */
#ifndef ORB_TRANSPORT_IB_IMPL_H
#define ORB_TRANSPORT_IB_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "transport/endpoint.h"
#include "transport/ib/ib_verbs.h"
#include "transport/ib/ib_wire.h"

/* Immediate: 2 bits of kind, 30 bits of counter (low bits of a 64-bit count). */
enum { IMM_DATA = 0, IMM_CREDIT = 1, IMM_ERROR = 2, IMM_HELLO = 3 };
#define IMM_MASK 0x3fffffffu
enum { HELLO_TEST = 0, HELLO_PING = 1, HELLO_PONG = 2 }; /* the counter bits of IMM_HELLO */
/* wr_id: QP index << 8 | kind */
enum { WR_RECV = 1, WR_DATA, WR_CREDIT, WR_MISC, WR_HELLO };

typedef struct ib_ep ib_ep_t;

typedef struct {
    ib_ep_t *ep;
    struct ibv_qp *qp;
    int peer, channel, index;
    uint32_t psn;
    char *send_slots, *recv_slots, *mail_in, *mail_out; /* in the endpoint's registered arena */
    uint64_t r_recv_addr, r_mail_addr;                  /* the peer's */
    uint32_t r_rkey;
    orb_fifo_ctrl_t send_ctrl; /* tail: slots the peer released (credits) */
    orb_fifo_ctrl_t recv_ctrl; /* head: data writes arrived */
    _Atomic uint64_t send_done; /* data writes completed here (their send slots reusable) */
    _Atomic uint64_t released;  /* recv slots released by the executor */
    _Atomic uint64_t credit_sent; /* written under credit_lock; read without it to skip it */
    int credits_inflight;       /* under credit_lock */
    pthread_mutex_t credit_lock;
    atomic_int misc_inflight; /* probes, hello, error mail */
    atomic_int hello_in, hello_done;
    atomic_int failed;   /* 1: being told, 2: a work request failed and why says how */
    int fail_status;     /* enum ibv_wc_status */
    char why[160];
    /* heartbeats (check_alive, the executor's thread): pings sent, their times, answers */
    uint64_t pings;
    double ping_time[2];
    _Atomic uint64_t pongs;
    double last_ping;
} ib_qp_t;

struct ib_ep {
    const orb_ibv_t *v;
    int rank, nranks, nchannels;
    uint32_t nslots;
    size_t slot_bytes, stride;
    orb_box_t *box;
    orb_bootstrap_t *bs;
    const orb_card_t *cards;
    char off_why[256]; /* why this rank has no ib ("" when it has) */
    /* device */
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    char dev_name[64];
    int port;
    struct ibv_port_attr pattr;
    int gid_index;
    union ibv_gid gid;
    char gid_desc[96];
    uint32_t max_inline;
    /* connections */
    struct ibv_comp_channel *chan;
    struct ibv_cq *cq;
    struct ibv_mr *mr;
    char *arena;
    size_t arena_bytes;
    ib_qp_t *qps; /* nqps = npeers * nchannels */
    int nqps;
    int *qp_of_peer; /* first QP index of a peer, -1 when ib does not connect it */
    pthread_mutex_t poll_lock;
    pthread_t thread;
    int thread_started;
    int stop_fd;        /* eventfd: stops the progress thread */
    atomic_int fatal;   /* an async event made the device unusable */
    char fatal_why[200];
    atomic_int aborted;
    atomic_int armed; /* the CQ will raise an event for the next solicited arrival */
};

/* Open the device, port and GID this rank uses (ib_open.c); ORB_OK with off_why set when ib is
 * simply not available here. */
orb_status_t orb_ib_open(ib_ep_t *e, char *err, size_t errlen);
void orb_ib_close(ib_ep_t *e);

/* Queue pairs for the peers, exchange, test (ib_connect.c). */
orb_status_t orb_ib_connect(ib_ep_t *e, const int *peers, int npeers, orb_conn_t *send, orb_conn_t *recv,
                            double deadline, char *err, size_t errlen);
void orb_ib_teardown(ib_ep_t *e, int drain);

/* Data path and completions (ib_data.c). */
extern const orb_conn_ops_t orb_ib_conn_ops;
/* Drain the CQ (trylock: returns at once when another thread is at it). */
void orb_ib_poll(ib_ep_t *e);
/* A zero-or-more-byte RDMA write to the peer's mail area, optionally with an immediate. */
int orb_ib_post_misc(ib_qp_t *q, uint32_t len, int with_imm, uint32_t imm);
void orb_ib_qp_fail(ib_qp_t *q, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void orb_ib_idle(ib_ep_t *e);
orb_status_t orb_ib_thread_start(ib_ep_t *e, char *err, size_t errlen);
void orb_ib_thread_stop(ib_ep_t *e);

#endif
