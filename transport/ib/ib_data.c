/* The ib data path: slots out by RDMA WRITE WITH IMMEDIATE, credits back the same way, and
 * the completions that move the FIFO counters (ib_impl.h has the protocol). */
#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/log.h"
#include "transport/ib/ib_impl.h"

void orb_ib_qp_fail(ib_qp_t *q, int status, const char *fmt, ...)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&q->failed, &none, 1)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(q->why, sizeof q->why, fmt, ap);
        va_end(ap);
        q->fail_status = status;
        atomic_store(&q->failed, 2);
        ORB_INFO("ib: rank %d channel %d: %s", q->peer, q->channel, q->why);
    }
    orb_box_wake(q->ep->box);
}

static int post_write(ib_qp_t *q, uint64_t kind, void *local, uint32_t len, uint64_t remote, int with_imm,
                      uint32_t imm)
{
    ib_ep_t *e = q->ep;
    struct ibv_sge sge = {.addr = (uintptr_t)local, .length = len, .lkey = e->mr->lkey};
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = (uint64_t)q->index << 8 | kind;
    wr.sg_list = len ? &sge : NULL;
    wr.num_sge = len ? 1 : 0;
    wr.opcode = with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    /* Every write with immediate is solicited and the CQ is armed for solicited events only:
     * the progress thread wakes when something arrives, not for each local completion (those
     * precede the credits that matter to a waiting sender, and the executor drains them). */
    wr.send_flags = IBV_SEND_SIGNALED | (with_imm ? IBV_SEND_SOLICITED : 0) |
                    (len && len <= e->max_inline ? IBV_SEND_INLINE : 0);
    wr.imm_data = htobe32(imm);
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = q->r_rkey;
    return ibv_post_send(q->qp, &wr, &bad);
}

int orb_ib_post_misc(ib_qp_t *q, uint32_t len, int with_imm, uint32_t imm)
{
    atomic_fetch_add(&q->misc_inflight, 1);
    uint64_t kind = with_imm && imm == (uint32_t)IMM_HELLO << 30 ? WR_HELLO : WR_MISC;
    int rc = post_write(q, kind, q->mail_out, len, q->r_mail_addr, with_imm, imm);
    if (rc)
        atomic_fetch_sub(&q->misc_inflight, 1);
    return rc;
}

/* Give the peer the slots released since the last credit, once half the ring has been
 * released: a sender that waits has every slot full, so the receiver always gets there, and
 * a latency-bound exchange sends no credit at all. At most nslots credits in flight (the
 * send queue's share); the rest follow as credits complete. */
static void post_credit(ib_qp_t *q)
{
    const uint64_t batch = q->ep->nslots / 2 ? q->ep->nslots / 2 : 1;
    /* the common release owes no credit yet: no lock on the executor's hot path */
    if (atomic_load_explicit(&q->released, memory_order_relaxed) -
            atomic_load_explicit(&q->credit_sent, memory_order_relaxed) < batch)
        return;
    pthread_mutex_lock(&q->credit_lock);
    uint64_t rel = atomic_load_explicit(&q->released, memory_order_acquire);
    uint64_t sent = atomic_load_explicit(&q->credit_sent, memory_order_relaxed);
    if (rel - sent >= batch && q->credits_inflight < (int)q->ep->nslots && !atomic_load(&q->failed)) {
        int rc = post_write(q, WR_CREDIT, NULL, 0, q->r_mail_addr, 1,
                            (uint32_t)IMM_CREDIT << 30 | (uint32_t)(rel & IMM_MASK));
        if (rc == 0) {
            atomic_store_explicit(&q->credit_sent, rel, memory_order_relaxed);
            q->credits_inflight++;
        } else {
            pthread_mutex_unlock(&q->credit_lock);
            orb_ib_qp_fail(q, 0, "posting a credit to rank %d failed: %s", q->peer, strerror(rc));
            return;
        }
    }
    pthread_mutex_unlock(&q->credit_lock);
}

/* ---- the ops table ------------------------------------------------------------------ */

static char *slot_at(char *ring, const orb_conn_t *c) { return ring + (c->pos % c->nslots) * c->slot_stride; }

static orb_slot_hdr_t *ib_send_acquire(orb_conn_t *c, size_t bytes)
{
    (void)bytes; /* one ring of slots: any piece fits */
    ib_qp_t *q = c->wake;
    for (int pass = 0; pass < 2; pass++) {
        uint64_t credits = atomic_load_explicit(&q->send_ctrl.tail, memory_order_acquire);
        uint64_t done = atomic_load_explicit(&q->send_done, memory_order_acquire);
        if (c->pos - credits < c->nslots && c->pos - done < c->nslots)
            return (orb_slot_hdr_t *)slot_at(c->slots, c);
        if (pass == 0)
            orb_ib_poll(q->ep);
    }
    return NULL;
}

static void ib_send_post(orb_conn_t *c)
{
    ib_qp_t *q = c->wake;
    char *slot = slot_at(c->slots, c);
    uint32_t len = (uint32_t)sizeof(orb_slot_hdr_t) + ((const orb_slot_hdr_t *)slot)->nbytes;
    uint64_t remote = q->r_recv_addr + (c->pos % c->nslots) * c->slot_stride;
    int rc = post_write(q, WR_DATA, slot, len, remote, 1, (uint32_t)IMM_DATA << 30 | (uint32_t)(c->pos & IMM_MASK));
    if (rc)
        orb_ib_qp_fail(q, 0, "posting a write of %u bytes to rank %d failed: %s", len, q->peer, strerror(rc));
    c->pos++;
    atomic_store_explicit(&q->send_ctrl.head, c->pos, memory_order_release);
}

static orb_slot_hdr_t *ib_recv_acquire(orb_conn_t *c)
{
    ib_qp_t *q = c->wake;
    for (int pass = 0; pass < 2; pass++) {
        if (atomic_load_explicit(&q->recv_ctrl.head, memory_order_acquire) != c->pos)
            return (orb_slot_hdr_t *)slot_at(c->slots, c);
        if (pass == 0)
            orb_ib_poll(q->ep);
    }
    return NULL;
}

static void ib_recv_release(orb_conn_t *c)
{
    ib_qp_t *q = c->wake;
    c->pos++;
    atomic_store_explicit(&q->released, c->pos, memory_order_release);
    post_credit(q);
}

const orb_conn_ops_t orb_ib_conn_ops = {
    .name = "ib",
    .send_acquire = ib_send_acquire,
    .send_post = ib_send_post,
    .recv_acquire = ib_recv_acquire,
    .recv_release = ib_recv_release,
};

/* ---- completions -------------------------------------------------------------------- */

static const char *kind_name(uint64_t k)
{
    static const char *n[] = {"?", "receive", "data write", "credit", "probe", "test message"};
    return k < sizeof n / sizeof n[0] ? n[k] : "?";
}

static void on_arrival(ib_ep_t *e, ib_qp_t *q, const struct ibv_wc *wc)
{
    uint32_t imm = be32toh(wc->imm_data), val = imm & IMM_MASK;
    switch (imm >> 30) {
    case IMM_DATA: {
        uint64_t h = atomic_load_explicit(&q->recv_ctrl.head, memory_order_relaxed);
        if ((h & IMM_MASK) != val)
            orb_ib_qp_fail(q, 0, "rank %d wrote slot %u where %llu was due (protocol error)", q->peer, val,
                           (unsigned long long)(h & IMM_MASK));
        atomic_store_explicit(&q->recv_ctrl.head, h + 1, memory_order_release);
        break;
    }
    case IMM_CREDIT: { /* credits come in order: rebuild the 64-bit count from its low bits */
        uint64_t t = atomic_load_explicit(&q->send_ctrl.tail, memory_order_relaxed);
        uint64_t n = (t & ~(uint64_t)IMM_MASK) | val;
        if (n < t)
            n += (uint64_t)IMM_MASK + 1;
        atomic_store_explicit(&q->send_ctrl.tail, n, memory_order_release);
        break;
    }
    case IMM_ERROR: {
        char msg[ORB_IB_MAIL_BYTES];
        memcpy(msg, q->mail_in, sizeof msg);
        msg[sizeof msg - 1] = 0;
        orb_box_post(e->box, q->peer, val > 0 && val < 64 ? -(orb_status_t)val : ORB_ERR_INTERNAL, msg);
        break;
    }
    case IMM_HELLO: /* 0: the connection test; a heartbeat asks, and its answer comes back */
        if (val == HELLO_PING) {
            if (orb_ib_post_misc(q, 0, 1, (uint32_t)IMM_HELLO << 30 | HELLO_PONG) != 0)
                orb_ib_qp_fail(q, 0, "answering a heartbeat from rank %d failed", q->peer);
        } else if (val == HELLO_PONG) {
            atomic_fetch_add_explicit(&q->pongs, 1, memory_order_release);
        } else {
            atomic_store(&q->hello_in, 1);
        }
        break;
    }
    struct ibv_recv_wr wr = {.wr_id = wc->wr_id}, *bad;
    int rc = ibv_post_recv(q->qp, &wr, &bad);
    if (rc)
        orb_ib_qp_fail(q, 0, "reposting a receive for rank %d failed: %s", q->peer, strerror(rc));
}

static int drain(ib_ep_t *e)
{
    struct ibv_wc wc[32];
    int n, total = 0;
    while ((n = ibv_poll_cq(e->cq, 32, wc)) > 0) {
        total += n;
        for (int i = 0; i < n; i++) {
            int idx = (int)(wc[i].wr_id >> 8);
            uint64_t kind = wc[i].wr_id & 0xff;
            if (idx < 0 || idx >= e->nqps)
                continue;
            ib_qp_t *q = &e->qps[idx];
            if (wc[i].status != IBV_WC_SUCCESS) {
                if (!atomic_load(&e->aborted))
                    orb_ib_qp_fail(q, wc[i].status, "%s to rank %d failed: %s (%s)", kind_name(kind), q->peer,
                                   e->v->wc_status_str(wc[i].status),
                                   wc[i].status == IBV_WC_RETRY_EXC_ERR
                                       ? "no acknowledgement after every retry: the peer or its host is gone"
                                       : wc[i].status == IBV_WC_WR_FLUSH_ERR ? "the queue pair had failed before"
                                                                            : "see ibv_wc_status_str");
                if (kind == WR_CREDIT) {
                    pthread_mutex_lock(&q->credit_lock);
                    q->credits_inflight--;
                    pthread_mutex_unlock(&q->credit_lock);
                } else if (kind == WR_MISC || kind == WR_HELLO) {
                    atomic_fetch_sub(&q->misc_inflight, 1);
                }
                continue;
            }
            switch (kind) {
            case WR_RECV:
                on_arrival(e, q, &wc[i]);
                break;
            case WR_DATA:
                atomic_fetch_add_explicit(&q->send_done, 1, memory_order_release);
                break;
            case WR_CREDIT:
                pthread_mutex_lock(&q->credit_lock);
                q->credits_inflight--;
                pthread_mutex_unlock(&q->credit_lock);
                post_credit(q); /* releases that waited for room */
                break;
            case WR_HELLO:
                atomic_store(&q->hello_done, 1);
                /* fall through */
            case WR_MISC:
                atomic_fetch_sub(&q->misc_inflight, 1);
                break;
            }
        }
    }
    if (n < 0 && !atomic_load(&e->fatal)) {
        snprintf(e->fatal_why, sizeof e->fatal_why, "%s: polling the completion queue failed", e->dev_name);
        atomic_store(&e->fatal, 1);
    }
    return total;
}

void orb_ib_poll(ib_ep_t *e)
{
    if (!e->cq || pthread_mutex_trylock(&e->poll_lock) != 0)
        return; /* another thread is draining it */
    drain(e);
    pthread_mutex_unlock(&e->poll_lock);
}

/* ---- the progress thread: completions and async events while the executor sleeps ----- */

/* The executor is about to sleep on its box: arm the CQ so that the next arrival wakes the
 * progress thread (and through it the box), then drain what came before arming. While the
 * executor runs it polls the CQ itself, and no event costs a thread wake-up. */
void orb_ib_idle(ib_ep_t *e)
{
    if (!e->thread_started)
        return;
    if (!atomic_exchange(&e->armed, 1) && ibv_req_notify_cq(e->cq, 1) != 0)
        atomic_store(&e->armed, 0);
    if (pthread_mutex_trylock(&e->poll_lock) == 0) {
        int got = drain(e);
        pthread_mutex_unlock(&e->poll_lock);
        if (got)
            orb_box_wake(e->box); /* the sleep it is about to start must not happen */
    }
}

static void on_async(ib_ep_t *e)
{
    struct ibv_async_event ev;
    if (e->v->get_async_event(e->ctx, &ev) != 0)
        return;
    const char *what = e->v->event_type_str(ev.event_type);
    switch (ev.event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR: {
        ib_qp_t *q = ev.element.qp ? ev.element.qp->qp_context : NULL;
        if (q)
            orb_ib_qp_fail(q, 0, "the queue pair to rank %d failed: %s", q->peer, what);
        break;
    }
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_DEVICE_FATAL:
        if (!atomic_load(&e->fatal)) {
            snprintf(e->fatal_why, sizeof e->fatal_why, "%s port %d: %s", e->dev_name, e->port, what);
            atomic_store(&e->fatal, 1);
        }
        orb_box_wake(e->box);
        break;
    default:
        ORB_INFO("ib: %s port %d: %s", e->dev_name, e->port, what);
    }
    e->v->ack_async_event(&ev);
}

static void *progress(void *arg)
{
    ib_ep_t *e = arg;
    struct pollfd fds[3] = {{.fd = e->chan->fd, .events = POLLIN},
                            {.fd = e->ctx->async_fd, .events = POLLIN},
                            {.fd = e->stop_fd, .events = POLLIN}};
    for (;;) {
        int n = poll(fds, 3, 1000); /* the timeout is a safety net: a missed event costs 1 s */
        if (n > 0 && fds[2].revents)
            break;
        if (n > 0 && (fds[0].revents & POLLIN)) {
            struct ibv_cq *cq;
            void *ctx;
            if (e->v->get_cq_event(e->chan, &cq, &ctx) == 0) {
                e->v->ack_cq_events(cq, 1);
                atomic_store(&e->armed, 0); /* the executor arms again before it next sleeps */
                pthread_mutex_lock(&e->poll_lock);
                drain(e);
                pthread_mutex_unlock(&e->poll_lock);
                orb_box_wake(e->box);
            }
        } else if (n == 0) { /* the safety net: a completion nobody was told about */
            pthread_mutex_lock(&e->poll_lock);
            int got = drain(e);
            pthread_mutex_unlock(&e->poll_lock);
            if (got)
                orb_box_wake(e->box);
        }
        if (n > 0 && (fds[1].revents & POLLIN))
            on_async(e);
    }
    return NULL;
}

orb_status_t orb_ib_thread_start(ib_ep_t *e, char *err, size_t errlen)
{
    fcntl(e->chan->fd, F_SETFL, fcntl(e->chan->fd, F_GETFL) | O_NONBLOCK);
    fcntl(e->ctx->async_fd, F_SETFL, fcntl(e->ctx->async_fd, F_GETFL) | O_NONBLOCK);
    e->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (e->stop_fd < 0 || pthread_create(&e->thread, NULL, progress, e) != 0) {
        snprintf(err, errlen, "rank %d: cannot start the RDMA progress thread", e->rank);
        return ORB_ERR_SYSTEM;
    }
    e->thread_started = 1;
    return ORB_OK;
}

void orb_ib_thread_stop(ib_ep_t *e)
{
    if (e->thread_started) {
        uint64_t one = 1;
        if (write(e->stop_fd, &one, sizeof one) < 0)
            ORB_WARN("ib: cannot stop the progress thread");
        pthread_join(e->thread, NULL);
        e->thread_started = 0;
    }
    if (e->stop_fd > 0)
        close(e->stop_fd);
    e->stop_fd = -1;
}
