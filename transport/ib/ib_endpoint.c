/* The ib transport as the communicator sees it: the endpoint ops table over ib_open.c (which
 * device), ib_connect.c (queue pairs) and ib_data.c (data path, completions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "transport/ib/ib_impl.h"

static void ib_ep_destroy(orb_endpoint_t *ep)
{
    ib_ep_t *e = (ib_ep_t *)ep;
    if (!e)
        return;
    orb_ib_teardown(e, !atomic_load(&e->aborted));
    orb_ib_close(e);
    pthread_mutex_destroy(&e->poll_lock);
    free(e);
}

static orb_status_t ib_ep_create(orb_endpoint_t **out, const orb_transport_args_t *a, orb_card_t *card, char *err,
                                 size_t errlen)
{
    *out = NULL;
    ib_ep_t *e = calloc(1, sizeof *e);
    if (!e)
        return ORB_ERR_NO_MEMORY;
    e->rank = a->rank;
    e->nranks = a->nranks;
    e->nchannels = a->nchannels;
    e->nslots = a->nslots;
    e->slot_bytes = a->slot_bytes;
    e->stride = sizeof(orb_slot_hdr_t) + a->slot_bytes;
    e->box = a->box;
    e->bs = a->bs;
    e->stop_fd = -1;
    pthread_mutex_init(&e->poll_lock, NULL);
    orb_status_t st = orb_ib_open(e, err, errlen);
    if (st != ORB_OK) {
        ib_ep_destroy((orb_endpoint_t *)e);
        return st;
    }
    if (e->pd)
        card->caps |= ORB_CARD_IB;
    *out = (orb_endpoint_t *)e;
    return ORB_OK;
}

/* Hosts apart, both with a working port; same-host pairs belong to shm (or set ORBIT_HOSTID
 * per rank to make ranks of one host talk as if apart). */
static int ib_ep_reaches(const orb_card_t *me, const orb_card_t *peer)
{
    return (me->caps & ORB_CARD_IB) && (peer->caps & ORB_CARD_IB) && me->host_id != peer->host_id;
}

static orb_status_t ib_ep_connect(orb_endpoint_t *ep, const orb_card_t *cards, const int *peers, int npeers,
                                  orb_conn_t *send, orb_conn_t *recv, double deadline, char *err, size_t errlen)
{
    ib_ep_t *e = (ib_ep_t *)ep;
    e->cards = cards;
    /* Whether any pair in the job uses ib, decided from the cards alike on every rank: the
     * exchange is collective, so all ranks join it or none does. */
    int any = 0, first = -1;
    for (int r = 0; r < e->nranks && !any; r++)
        if (cards[r].caps & ORB_CARD_IB) {
            if (first < 0)
                first = r;
            else if (ib_ep_reaches(&cards[first], &cards[r]))
                any = 1;
        }
    if (!any)
        return ORB_OK;
    return orb_ib_connect(e, peers, npeers, send, recv, deadline, err, errlen);
}

static void ib_ep_ready(orb_endpoint_t *ep) { (void)ep; }

static void ib_ep_post_error(orb_endpoint_t *ep, int peer, orb_status_t st, const char *msg)
{
    ib_ep_t *e = (ib_ep_t *)ep;
    if (!e->qp_of_peer || peer < 0 || peer >= e->nranks || e->qp_of_peer[peer] < 0)
        return;
    ib_qp_t *q = &e->qps[e->qp_of_peer[peer]];
    if (atomic_load(&q->failed))
        return;
    size_t len = strlen(msg) + 1;
    if (len > ORB_IB_MAIL_BYTES)
        len = ORB_IB_MAIL_BYTES;
    memcpy(q->mail_out, msg, len);
    q->mail_out[len - 1] = 0;
    orb_ib_post_misc(q, (uint32_t)len, 1, (uint32_t)IMM_ERROR << 30 | (uint32_t)(-st & 63));
}

/* A peer we wait for is lost when a work request to it fails (the retry counter exceeded:
 * it or its host is gone), or when it leaves a heartbeat unanswered for HEARTBEAT_S. The
 * heartbeat is a zero-byte write with immediate that the peer's progress thread answers, so
 * a busy peer still answers; it does not rest on the device's retry timer, which Soft-RoCE
 * does not fire for a destroyed QP. Heartbeats go only while someone waits: idle costs nothing. */
#define PING_EVERY_S 0.5
#define HEARTBEAT_S 3.0
static orb_status_t ib_ep_check_alive(orb_endpoint_t *ep, const int *waiting_on, int n, int *lost, char *err,
                                      char *note, size_t len)
{
    ib_ep_t *e = (ib_ep_t *)ep;
    note[0] = 0;
    if (!e->nqps)
        return ORB_OK;
    if (atomic_load(&e->fatal)) {
        *lost = e->rank;
        snprintf(err, len, "rank %d: its RDMA device failed: %s", e->rank, e->fatal_why);
        snprintf(note, len, "rank %d (on %s) lost its RDMA device: %s", e->rank, e->cards[e->rank].hostname,
                 e->fatal_why);
        return ORB_ERR_SYSTEM;
    }
    const double now = orb_now();
    for (int i = 0; i < n; i++) {
        int p = waiting_on[i];
        if (p < 0 || p >= e->nranks || e->qp_of_peer[p] < 0)
            continue;
        for (int ch = 0; ch < e->nchannels; ch++) {
            ib_qp_t *q = &e->qps[e->qp_of_peer[p] + ch];
            if (atomic_load(&q->failed) != 2)
                continue;
            *lost = p;
            int gone = q->fail_status == IBV_WC_RETRY_EXC_ERR || q->fail_status == IBV_WC_RNR_RETRY_EXC_ERR;
            snprintf(err, len, "rank %d: RDMA to rank %d (on %s, channel %d): %s", e->rank, p, e->cards[p].hostname,
                     ch, q->why);
            snprintf(note, len, "rank %d (on %s) %s (seen by rank %d over RDMA: %s)", p, e->cards[p].hostname,
                     gone ? "died or left" : "cannot be reached", e->rank, q->why);
            return gone ? ORB_ERR_PEER_LOST : ORB_ERR_SYSTEM;
        }
        ib_qp_t *q0 = &e->qps[e->qp_of_peer[p]];
        uint64_t pongs = atomic_load_explicit(&q0->pongs, memory_order_acquire);
        if (q0->pings > pongs && now - q0->ping_time[pongs % 2] > HEARTBEAT_S) {
            *lost = p;
            /* its QPs are dead too: destroy must not wait for writes to it to complete */
            for (int ch = 0; ch < e->nchannels; ch++)
                orb_ib_qp_fail(&e->qps[e->qp_of_peer[p] + ch], IBV_WC_RETRY_EXC_ERR,
                               "no answer to RDMA heartbeats for %.0f s", HEARTBEAT_S);
            snprintf(err, len, "rank %d: rank %d (on %s) left an RDMA heartbeat unanswered for %.1f s: it died, or "
                     "its host or the network failed", e->rank, p, e->cards[p].hostname, now - q0->ping_time[pongs % 2]);
            snprintf(note, len, "rank %d (on %s) died or left (no RDMA heartbeat answer to rank %d for %.0f s)", p,
                     e->cards[p].hostname, e->rank, HEARTBEAT_S);
            return ORB_ERR_PEER_LOST;
        }
        if (now - q0->last_ping >= PING_EVERY_S && q0->pings - pongs < 2 &&
            orb_ib_post_misc(q0, 0, 1, (uint32_t)IMM_HELLO << 30 | HELLO_PING) == 0) {
            q0->ping_time[q0->pings % 2] = now;
            q0->pings++;
            q0->last_ping = now;
        }
    }
    return ORB_OK;
}

static void ib_ep_idle(orb_endpoint_t *ep) { orb_ib_idle((ib_ep_t *)ep); }

static void ib_ep_abort(orb_endpoint_t *ep) { atomic_store(&((ib_ep_t *)ep)->aborted, 1); }

/* One 100 Gb/s class port until measured. */
const orb_transport_t orb_ib_transport = {
    .name = "ib",
    .link = {.alpha_us = 4.0, .beta_gbps = 10.0},
    .create = ib_ep_create,
    .reaches = ib_ep_reaches,
    .connect = ib_ep_connect,
    .ready = ib_ep_ready,
    .post_error = ib_ep_post_error,
    .check_alive = ib_ep_check_alive,
    .idle = ib_ep_idle,
    .abort = ib_ep_abort,
    .destroy = ib_ep_destroy,
};
