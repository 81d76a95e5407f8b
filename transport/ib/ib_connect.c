/* Connecting over ib: one RC QP per (peer, channel), records exchanged through the bootstrap
 * (no extra port), every QP tested with a message before it carries data, and the verdict
 * agreed by both ends: a pair whose test failed goes to TCP (or fails init under
 * ORBIT_NET=ib), never half to each. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/param.h"
#include "transport/ib/ib_impl.h"

#define HELLO_S 5.0 /* a tested QP answers within this, or the pair is not usable over ib */

static size_t qp_bytes(const ib_ep_t *e) { return 2 * (size_t)e->nslots * e->stride + 2 * ORB_IB_MAIL_BYTES; }
static uint32_t send_depth(const ib_ep_t *e) { return 2 * e->nslots + 6; } /* data + credits + misc */
static uint32_t recv_depth(const ib_ep_t *e) { return 2 * e->nslots + 4; }

static void nap(void)
{
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
}

static orb_status_t make_qp(ib_ep_t *e, ib_qp_t *q, char *err, size_t errlen)
{
    struct ibv_qp_init_attr ia;
    memset(&ia, 0, sizeof ia);
    ia.send_cq = ia.recv_cq = e->cq;
    ia.qp_type = IBV_QPT_RC;
    ia.qp_context = q; /* async events name the QP */
    ia.cap.max_send_wr = send_depth(e);
    ia.cap.max_recv_wr = recv_depth(e);
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    ia.cap.max_inline_data = e->max_inline;
    q->qp = e->v->create_qp(e->pd, &ia);
    if (!q->qp && e->max_inline) { /* some devices have no inline data */
        ia.cap.max_inline_data = 0;
        q->qp = e->v->create_qp(e->pd, &ia);
    }
    if (!q->qp) {
        snprintf(err, errlen, "rank %d: %s: cannot create a queue pair for rank %d: %s", e->rank, e->dev_name, q->peer,
                 strerror(errno));
        return ORB_ERR_SYSTEM;
    }
    e->max_inline = ia.cap.max_inline_data; /* what the device granted; the same for every QP */
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = (uint8_t)e->port;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    int rc = e->v->modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    for (uint32_t i = 0; rc == 0 && i < recv_depth(e); i++) {
        struct ibv_recv_wr wr = {.wr_id = (uint64_t)q->index << 8 | WR_RECV}, *bad;
        rc = ibv_post_recv(q->qp, &wr, &bad);
    }
    if (rc) {
        snprintf(err, errlen, "rank %d: %s: cannot prepare the queue pair for rank %d: %s", e->rank, e->dev_name,
                 q->peer, strerror(rc));
        return ORB_ERR_SYSTEM;
    }
    uint32_t r;
    orb_random_bytes(&r, sizeof r);
    q->psn = r & 0xffffff;
    return ORB_OK;
}

/* INIT -> RTR -> RTS toward the peer's record; 0 or an errno with why. */
static int bring_up(ib_ep_t *e, ib_qp_t *q, const orb_ib_head_t *h, const orb_ib_qprec_t *r)
{
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = e->pattr.active_mtu < h->mtu ? e->pattr.active_mtu : (enum ibv_mtu)h->mtu;
    a.dest_qp_num = r->qpn;
    a.rq_psn = r->psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12; /* 0.64 ms before a sender retries a write that found no receive posted */
    a.ah_attr.port_num = (uint8_t)e->port;
    if (e->pattr.link_layer == IBV_LINK_LAYER_ETHERNET) {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, h->gid, 16);
        a.ah_attr.grh.sgid_index = (uint8_t)e->gid_index;
        a.ah_attr.grh.hop_limit = 64;
    } else {
        a.ah_attr.dlid = h->lid;
    }
    int rc = e->v->modify_qp(q->qp, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc) {
        snprintf(q->why, sizeof q->why, "moving the queue pair to ready-to-receive failed: %s", strerror(rc));
        return rc;
    }
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = (uint8_t)orb_param_num(ORB_PARAM_IB_TIMEOUT);
    a.retry_cnt = 7;
    a.rnr_retry = 7; /* 7: retry forever; a receiver that has not reposted is slow, not gone */
    a.sq_psn = q->psn;
    a.max_rd_atomic = 1;
    rc = e->v->modify_qp(q->qp, &a,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                             IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc)
        snprintf(q->why, sizeof q->why, "moving the queue pair to ready-to-send failed: %s", strerror(rc));
    return rc;
}

static orb_status_t setup_local(ib_ep_t *e, const int *peers, int npeers, char *err, size_t errlen)
{
    e->nqps = npeers * e->nchannels;
    e->qps = calloc((size_t)e->nqps, sizeof *e->qps);
    e->qp_of_peer = malloc(sizeof(int) * (size_t)e->nranks);
    if (!e->qps || !e->qp_of_peer)
        return ORB_ERR_NO_MEMORY;
    for (int r = 0; r < e->nranks; r++)
        e->qp_of_peer[r] = -1;
    e->arena_bytes = (qp_bytes(e) * (size_t)e->nqps + 4095) / 4096 * 4096;
    e->arena = mmap(NULL, e->arena_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (e->arena == MAP_FAILED) {
        e->arena = NULL;
        snprintf(err, errlen, "rank %d: cannot map %zu bytes for RDMA slots", e->rank, e->arena_bytes);
        return ORB_ERR_NO_MEMORY;
    }
    e->mr = e->v->reg_mr(e->pd, e->arena, e->arena_bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!e->mr) {
        snprintf(err, errlen,
                 "rank %d: %s: cannot register %zu bytes of slots: %s (raise the locked-memory limit: ulimit -l "
                 "unlimited, or lower ORBIT_SHM_SLOT_BYTES)",
                 e->rank, e->dev_name, e->arena_bytes, strerror(errno));
        return ORB_ERR_SYSTEM;
    }
    struct ibv_device_attr da;
    int cqe = e->nqps * (int)(send_depth(e) + recv_depth(e)) + 16;
    if (e->v->query_device(e->ctx, &da) == 0 && cqe > da.max_cqe)
        cqe = da.max_cqe;
    e->chan = e->v->create_comp_channel(e->ctx);
    e->cq = e->chan ? e->v->create_cq(e->ctx, cqe, NULL, e->chan, 0) : NULL;
    if (!e->cq) {
        snprintf(err, errlen, "rank %d: %s: cannot create a completion queue of %d entries: %s", e->rank, e->dev_name,
                 cqe, strerror(errno));
        return ORB_ERR_SYSTEM;
    }
    e->max_inline = 256;
    for (int i = 0; i < npeers; i++) {
        e->qp_of_peer[peers[i]] = i * e->nchannels;
        for (int ch = 0; ch < e->nchannels; ch++) {
            ib_qp_t *q = &e->qps[i * e->nchannels + ch];
            char *base = e->arena + (size_t)(i * e->nchannels + ch) * qp_bytes(e);
            q->ep = e;
            q->peer = peers[i];
            q->channel = ch;
            q->index = i * e->nchannels + ch;
            q->send_slots = base;
            q->recv_slots = base + (size_t)e->nslots * e->stride;
            q->mail_in = q->recv_slots + (size_t)e->nslots * e->stride;
            q->mail_out = q->mail_in + ORB_IB_MAIL_BYTES;
            pthread_mutex_init(&q->credit_lock, NULL);
            orb_status_t st = make_qp(e, q, err, errlen);
            if (st != ORB_OK)
                return st;
        }
    }
    return ORB_OK;
}

static void fill_record(ib_ep_t *e, void *rec)
{
    orb_ib_head_t h;
    memset(&h, 0, sizeof h);
    h.magic = ORB_IB_MAGIC;
    h.version = ORB_IB_VERSION;
    h.link_layer = e->pattr.link_layer == IBV_LINK_LAYER_ETHERNET ? 2 : 1;
    h.rank = e->rank;
    h.nranks = e->nranks;
    h.nchannels = e->nchannels;
    h.nslots = e->nslots;
    h.slot_stride = e->stride;
    h.rkey = e->mr->rkey;
    h.lid = e->pattr.lid;
    h.port = (uint8_t)e->port;
    h.mtu = (uint8_t)e->pattr.active_mtu;
    h.gid_index = e->gid_index;
    memcpy(h.gid, e->gid.raw, 16);
    memcpy(rec, &h, sizeof h);
    for (int i = 0; i < e->nqps; i++) {
        ib_qp_t *q = &e->qps[i];
        orb_ib_qprec_t r = {.qpn = q->qp->qp_num, .psn = q->psn, .recv_addr = (uintptr_t)q->recv_slots,
                            .mail_addr = (uintptr_t)q->mail_in};
        memcpy(orb_ib_rec_entry(rec, e->nchannels, q->peer, q->channel), &r, sizeof r);
    }
}

/* Tested: the peer's hello arrived and ours was acknowledged. */
static int qp_tested(ib_qp_t *q) { return atomic_load(&q->hello_in) && atomic_load(&q->hello_done); }

/* Send a hello on every QP and wait for every peer's; a QP that fails or stays silent marks
 * its peer unusable (why in the QP). */
static void test_qps(ib_ep_t *e, double deadline)
{
    for (int i = 0; i < e->nqps; i++)
        if (!atomic_load(&e->qps[i].failed) && orb_ib_post_misc(&e->qps[i], 0, 1, (uint32_t)IMM_HELLO << 30) != 0)
            orb_ib_qp_fail(&e->qps[i], 0, "posting the test message failed");
    for (;;) {
        orb_ib_poll(e);
        int pending = 0;
        for (int i = 0; i < e->nqps; i++) {
            ib_qp_t *q = &e->qps[i];
            pending += !atomic_load(&q->failed) && !qp_tested(q);
        }
        if (!pending)
            return;
        if (orb_now() > deadline) {
            for (int i = 0; i < e->nqps; i++) {
                ib_qp_t *q = &e->qps[i];
                if (!atomic_load(&q->failed) && !qp_tested(q))
                    orb_ib_qp_fail(q, 0, "the test message %s within %.0f s",
                                   atomic_load(&q->hello_done) ? "from it did not arrive" : "to it was not acknowledged",
                                   HELLO_S);
            }
            return;
        }
        nap();
    }
}

orb_status_t orb_ib_connect(ib_ep_t *e, const int *peers, int npeers, orb_conn_t *send, orb_conn_t *recv,
                            double deadline, char *err, size_t errlen)
{
    const size_t rb = orb_ib_rec_bytes(e->nranks, e->nchannels);
    orb_status_t st = ORB_OK;
    if (npeers > 0)
        st = setup_local(e, peers, npeers, err, errlen);
    /* Every rank takes part in the exchanges below, with or without peers: the status of a
     * failed setup travels with them so no rank waits for one that gave up. */
    uint8_t *all = calloc((size_t)e->nranks, rb > (size_t)e->nranks ? rb : (size_t)e->nranks);
    if (!all)
        return ORB_ERR_NO_MEMORY;
    if (st == ORB_OK && npeers > 0)
        fill_record(e, all + (size_t)e->rank * rb);
    orb_status_t bst = orb_bootstrap_allgather(e->bs, all, rb, deadline);
    if (st == ORB_OK && bst != ORB_OK) {
        st = bst;
        snprintf(err, errlen, "rank %d: exchanging RDMA connection records failed: %s", e->rank, orb_strerror(bst));
    }
    for (int i = 0; i < npeers && st == ORB_OK; i++) {
        int p = peers[i];
        const uint8_t *rec = all + (size_t)p * rb;
        const orb_ib_head_t *h = (const orb_ib_head_t *)rec;
        char why[256];
        st = orb_ib_rec_check(rec, rb, p, e->rank, e->nranks, e->nchannels, e->nslots, e->stride, 1, why, sizeof why);
        if (st != ORB_OK) {
            snprintf(err, errlen, "rank %d: %s", e->rank, why);
            break;
        }
        for (int ch = 0; ch < e->nchannels; ch++) {
            ib_qp_t *q = &e->qps[e->qp_of_peer[p] + ch];
            orb_ib_qprec_t r;
            memcpy(&r, orb_ib_rec_entry((void *)(uintptr_t)rec, e->nchannels, e->rank, ch), sizeof r);
            q->r_recv_addr = r.recv_addr;
            q->r_mail_addr = r.mail_addr;
            q->r_rkey = h->rkey;
            if (bring_up(e, q, h, &r) != 0)
                atomic_store(&q->failed, 1);
        }
    }
    /* Every QP is ready to receive before anyone tests: a test sent to a QP still in INIT
     * would be dropped and retried into a false failure. */
    bst = orb_bootstrap_barrier(e->bs, deadline);
    if (st == ORB_OK && bst != ORB_OK) {
        st = bst;
        snprintf(err, errlen, "rank %d: the barrier before the RDMA connection test failed: %s", e->rank,
                 orb_strerror(bst));
    }
    if (st == ORB_OK && npeers > 0)
        test_qps(e, orb_now() + HELLO_S < deadline ? orb_now() + HELLO_S : deadline);
    /* Both ends' verdicts: byte p of rank r's row is 1 when r's QPs to p all passed. */
    memset(all, 0, (size_t)e->nranks * (size_t)e->nranks);
    uint8_t *mine = all + (size_t)e->rank * (size_t)e->nranks;
    for (int i = 0; i < npeers && st == ORB_OK; i++) {
        int ok = 1;
        for (int ch = 0; ch < e->nchannels; ch++)
            ok &= !atomic_load(&e->qps[i * e->nchannels + ch].failed);
        mine[peers[i]] = (uint8_t)ok;
    }
    bst = orb_bootstrap_allgather(e->bs, all, (size_t)e->nranks, deadline);
    if (st == ORB_OK && bst != ORB_OK) {
        st = bst;
        snprintf(err, errlen, "rank %d: exchanging the RDMA connection test results failed: %s", e->rank,
                 orb_strerror(bst));
    }
    const int forced = strcmp(orb_param_str(ORB_PARAM_S_NET), "ib") == 0;
    int nib = 0;
    for (int i = 0; i < npeers && st == ORB_OK; i++) {
        int p = peers[i];
        if (mine[p] && all[(size_t)p * (size_t)e->nranks + (size_t)e->rank]) {
            for (int ch = 0; ch < e->nchannels; ch++) {
                ib_qp_t *q = &e->qps[i * e->nchannels + ch];
                orb_conn_t *s = &send[(size_t)p * (size_t)e->nchannels + (size_t)ch];
                orb_conn_t *r = &recv[(size_t)p * (size_t)e->nchannels + (size_t)ch];
                *s = (orb_conn_t){.ops = &orb_ib_conn_ops, .peer = p, .channel = ch, .ctrl = &q->send_ctrl,
                                  .slots = q->send_slots, .slot_stride = e->stride, .slot_bytes = e->slot_bytes,
                                  .nslots = e->nslots, .wake = q};
                *r = *s;
                r->ctrl = &q->recv_ctrl;
                r->slots = q->recv_slots;
            }
            nib++;
            continue;
        }
        const char *why = "its end of the test failed";
        for (int ch = 0; ch < e->nchannels; ch++)
            if (atomic_load(&e->qps[i * e->nchannels + ch].failed))
                why = e->qps[i * e->nchannels + ch].why;
        if (forced) {
            snprintf(err, errlen, "rank %d: ORBIT_NET=ib, but RDMA to rank %d (on %s) does not work: %s", e->rank, p,
                     e->cards[p].hostname, why);
            st = ORB_ERR_PEER_LOST;
            break;
        }
        ORB_WARN("ib: rank %d (on %s) over %s failed its connection test (%s): TCP carries this pair", p,
                 e->cards[p].hostname, e->dev_name, why);
        e->qp_of_peer[p] = -1;
    }
    free(all);
    if (st == ORB_OK && nib > 0) {
        ORB_INFO("ib: %d of %d peer(s) on other hosts connected over %s port %d (%d channel(s), %u slots of %zu "
                 "bytes, inline up to %u bytes)",
                 nib, npeers, e->dev_name, e->port, e->nchannels, e->nslots, e->slot_bytes, e->max_inline);
        st = orb_ib_thread_start(e, err, errlen);
    }
    return st;
}

void orb_ib_teardown(ib_ep_t *e, int drain)
{
    /* Data this rank posted must reach the peer before its QP goes: a finished call only
     * posted its last writes. Bounded: a dead peer fails them within the retry timeout. */
    double until = orb_now() + 5.0;
    while (drain && e->cq && !atomic_load(&e->aborted) && orb_now() < until) {
        int busy = 0;
        orb_ib_poll(e);
        for (int i = 0; i < e->nqps; i++) {
            ib_qp_t *q = &e->qps[i];
            busy |= !atomic_load(&q->failed) && q->qp && e->qp_of_peer[q->peer] >= 0 &&
                    (atomic_load(&q->send_done) != q->send_ctrl.head || atomic_load(&q->misc_inflight) > 0);
        }
        if (!busy)
            break;
        nap();
    }
    orb_ib_thread_stop(e);
    for (int i = 0; i < e->nqps; i++) {
        if (e->qps[i].qp)
            e->v->destroy_qp(e->qps[i].qp);
        pthread_mutex_destroy(&e->qps[i].credit_lock);
    }
    free(e->qps);
    e->qps = NULL;
    e->nqps = 0;
    free(e->qp_of_peer);
    e->qp_of_peer = NULL;
    if (e->cq)
        e->v->destroy_cq(e->cq);
    if (e->chan)
        e->v->destroy_comp_channel(e->chan);
    if (e->mr)
        e->v->dereg_mr(e->mr);
    if (e->arena)
        munmap(e->arena, e->arena_bytes);
    e->cq = NULL;
    e->chan = NULL;
    e->mr = NULL;
    e->arena = NULL;
}
