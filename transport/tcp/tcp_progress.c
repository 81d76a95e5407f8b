/* The ops the executor calls (same contract as shm: never block) and the progress thread.
 *
 * The executor moves bytes itself where that saves a thread hand-over: a posted slot is
 * written at once, and an empty receive FIFO makes it read the channel's sockets. The
 * progress thread sleeps in epoll_wait on every socket (edge-triggered) and takes over what
 * is left: frames that did not fit the socket buffer, data that arrives while the executor
 * sleeps or computes, error notices on the control sockets. The executor kicks it through
 * an eventfd only when it sleeps and work was left for it. While the executor polls and the
 * pieces are small the thread does not even listen for incoming data ("deaf", below). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "transport/tcp/tcp_impl.h"

#define FLUSH_IDLE_S 5.0 /* destroy waits this long for a peer that takes none of our data */
#define EV_KICK UINT32_MAX
/* While the executor polls, the thread checks this often whether it still does. */
#define DEAF_TICK_MS 1

/* ---- the ops table -------------------------------------------------------------------- */

static orb_tcp_chan_t *chan_of(const orb_conn_t *c) { return ((const orb_tcp_fifo_t *)c->wake)->chan; }

void orb_tcp_kick(orb_tcp_t *net)
{
    if (atomic_load(&net->idle) && atomic_exchange(&net->idle, 0)) {
        uint64_t one = 1;
        ssize_t n = write(net->evfd, &one, sizeof one);
        (void)n; /* the counter cannot overflow at one per sleep */
    }
}

/* The executor is here (single writer: a plain increment, no locked instruction). */
static void polled(orb_tcp_t *net)
{
    atomic_store_explicit(&net->exec_polls, atomic_load_explicit(&net->exec_polls, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Only the executor writes these; a store only when the value changes keeps the line clean. */
static void want(_Atomic int *flag, int v)
{
    if (atomic_load_explicit(flag, memory_order_relaxed) != v)
        atomic_store_explicit(flag, v, memory_order_relaxed);
}

static orb_slot_hdr_t *tcp_send_acquire(orb_conn_t *c, size_t bytes)
{
    (void)bytes; /* one ring of slots: any piece fits */
    uint64_t tail = atomic_load_explicit(&c->ctrl->tail, memory_order_acquire);
    int full = c->pos - tail >= c->nslots;
    want(&chan_of(c)->want_tx, full);
    if (full)
        return NULL;
    return orb_conn_slot(c, c->pos);
}

static void tcp_send_post(orb_conn_t *c)
{
    orb_tcp_chan_t *ch = chan_of(c);
    polled(ch->net);
    int big = orb_conn_slot(c, c->pos)->nbytes >= ORB_TCP_BIG_BYTES;
    if (atomic_load_explicit(&ch->net->big, memory_order_relaxed) != big)
        atomic_store_explicit(&ch->net->big, big, memory_order_relaxed);
    /* seq_cst: pairs with the thread's store of idle before it looks at head once more */
    atomic_store(&c->ctrl->head, ++c->pos);
    if (orb_tcp_trylock(&ch->tx_lock)) {
        int freed = 0;
        orb_tcp_tx(ch, &freed);
        int left = orb_tcp_tx_pending(ch); /* not counting stripes that wait for EPOLLOUT */
        orb_tcp_unlock(&ch->tx_lock);
        if (!left && !atomic_exchange(&ch->skipped_tx, 0))
            return;
    }
    orb_tcp_kick(ch->net);
}

static orb_slot_hdr_t *tcp_recv_acquire(orb_conn_t *c)
{
    uint64_t head = atomic_load_explicit(&c->ctrl->head, memory_order_acquire);
    polled(chan_of(c)->net);
    if (head == c->pos) {
        /* Nothing here yet: read the sockets ourselves rather than wait for the thread. */
        orb_tcp_chan_t *ch = chan_of(c);
        int published = 0;
        if (orb_tcp_trylock(&ch->rx_lock)) {
            orb_tcp_rx(ch, 1, &published);
            orb_tcp_unlock(&ch->rx_lock);
            if (atomic_exchange(&ch->skipped_rx, 0))
                orb_tcp_kick(ch->net);
        }
        if (published)
            head = atomic_load_explicit(&c->ctrl->head, memory_order_acquire);
        want(&ch->want_rx, head == c->pos);
        if (head == c->pos)
            return NULL;
    } else {
        want(&chan_of(c)->want_rx, 0);
    }
    return orb_conn_slot(c, c->pos);
}

static void tcp_recv_release(orb_conn_t *c)
{
    orb_tcp_chan_t *ch = chan_of(c);
    atomic_store(&c->ctrl->tail, ++c->pos);
    if (atomic_load(&ch->rx_wait)) { /* the thread stopped reading for want of this slot */
        atomic_store(&ch->rx_wait, 0);
        orb_tcp_kick(ch->net);
    }
}

/* A failed call's pieces still posted as addresses (ORB_ADDR_LOCAL) are copied into their slots
 * while the channel's tx lock is held: the writer reads each slot's flag again before every
 * write, so the caller's buffer is free once this returns. The other holder of the lock only
 * ever makes non-blocking writes: the wait is short. */
static void tcp_settle(orb_conn_t *c)
{
    orb_tcp_chan_t *ch = chan_of(c);
    while (!orb_tcp_trylock(&ch->tx_lock))
        sched_yield();
    for (uint64_t seq = atomic_load(&c->ctrl->tail); seq < c->pos; seq++) {
        orb_slot_hdr_t *h = orb_conn_slot(c, seq);
        if (h->flags & ORB_PIECE_REMOTE) {
            memcpy(h + 1, (const void *)(uintptr_t)h->addr, h->nbytes);
            h->flags &= ~ORB_PIECE_REMOTE;
            h->addr = 0;
        }
    }
    orb_tcp_unlock(&ch->tx_lock);
    if (atomic_exchange(&ch->skipped_tx, 0))
        orb_tcp_kick(ch->net);
}

/* A request needs no lock: the reader of an entry (rx_claim, as a piece's first bytes come)
 * takes its position with acquire order, after the fields; the entry of a position always says
 * the same, and is written again for a later position only once that one was taken (the
 * FIFO holds nslots). A withdrawal takes the rx lock, which the thread only ever holds for
 * non-blocking reads (a short wait), and points each stripe still writing into the caller's
 * buffer at the slot. */
static void tcp_recv_place(orb_conn_t *c, const orb_place_t *want, int n)
{
    orb_tcp_chan_t *ch = chan_of(c);
    if (!ch->net->place) /* ORBIT_TCP_PLACE=0: every piece through its slot */
        return;
    for (int k = 0; k < n; k++) {
        orb_tcp_want_t *w = &ch->want[want[k].pos % ch->rx.nslots];
        if (atomic_load_explicit(&w->pos, memory_order_relaxed) == want[k].pos)
            continue;
        w->call = want[k].call;
        w->dst = want[k].dst;
        w->bytes = want[k].bytes;
        atomic_store_explicit(&w->pos, want[k].pos, memory_order_release);
    }
    if (n >= 0)
        return;
    while (!orb_tcp_trylock(&ch->rx_lock))
        sched_yield();
    for (uint32_t i = 0; i < ch->rx.nslots; i++)
        atomic_store_explicit(&ch->want[i].pos, UINT64_MAX, memory_order_relaxed);
    for (int k = 0; k < ch->nsocks; k++) {
        orb_tcp_sock_t *s = &ch->socks[k];
        const orb_slot_hdr_t *h = (orb_slot_hdr_t *)(ch->rx.slots + (s->rx_seq % ch->rx.nslots) * ch->rx.stride);
        if (s->rx_busy && (h->flags & ORB_PIECE_PLACED))
            s->rx_dst = (char *)(h + 1) + (s->rx_dst - (char *)(uintptr_t)h->addr);
    }
    for (uint32_t i = 0; i < ch->rx.nslots; i++) /* pieces begun: their stripes still to come go to the slot */
        if (ch->tag[i] != UINT64_MAX)
            ((orb_slot_hdr_t *)(ch->rx.slots + i * ch->rx.stride))->flags &= ~ORB_PIECE_PLACED;
    orb_tcp_unlock(&ch->rx_lock);
    if (atomic_exchange(&ch->skipped_rx, 0))
        orb_tcp_kick(ch->net);
}

const orb_conn_ops_t orb_tcp_conn_ops = {
    .name = "tcp",
    .send_acquire = tcp_send_acquire,
    .send_post = tcp_send_post,
    .recv_acquire = tcp_recv_acquire,
    .recv_release = tcp_recv_release,
    .settle = tcp_settle,
    .recv_place = tcp_recv_place,
};

/* ---- failures ------------------------------------------------------------------------- */

void orb_tcp_peer_closed(orb_tcp_t *net, int i, const char *why, int fatal)
{
    orb_tcp_peer_t *p = &net->peers[i];
    if (atomic_exchange(&p->closed, 1))
        return;
    int left = atomic_load(&p->bye) && !fatal;
    ORB_INFO("tcp: rank %d %s: %s", p->rank, left ? "left" : "is gone", why);
    if (!left) {
        int zero = 0;
        atomic_compare_exchange_strong(&net->lost_rank, &zero, p->rank + 1);
    }
    net->cb.wake(net->cb.arg);
}

/* ---- control sockets: error notices from the peer, and its end ------------------------ */

static int ctrl_progress(orb_tcp_t *net, orb_tcp_sock_t *s)
{
    int moved = 0;
    while (!s->eof) {
        size_t have = s->stage_end - s->stage_pos;
        orb_tcp_error_t e;
        if (have >= sizeof e) {
            memcpy(&e, s->stage + s->stage_pos, sizeof e);
            if (e.magic == ORB_TCP_BYE_MAGIC && e.len == 0) {
                s->stage_pos += sizeof e;
                atomic_store(&net->peers[s->peer].bye, 1);
                moved = 1;
                continue;
            }
            if (e.magic != ORB_TCP_ERROR_MAGIC || e.len > ORB_TCP_ERROR_MAX) {
                orb_tcp_peer_closed(net, s->peer, "nonsense on its control connection", 1);
                return 1;
            }
            if (have >= sizeof e + e.len) {
                char msg[ORB_TCP_ERROR_MAX + 1];
                memcpy(msg, s->stage + s->stage_pos + sizeof e, e.len);
                msg[e.len] = 0;
                s->stage_pos += sizeof e + e.len;
                atomic_store(&net->errored, 1);
                net->cb.on_error(net->cb.arg, net->peers[s->peer].rank, (orb_status_t)e.status, msg);
                moved = 1;
                continue;
            }
        }
        uint32_t ev = atomic_load(&s->rd_ev);
        if (ev == s->rd_seen)
            break;
        memmove(s->stage, s->stage + s->stage_pos, have);
        s->stage_pos = 0;
        s->stage_end = have;
        ssize_t n = recv(s->fd, s->stage + have, ORB_TCP_STAGE_BYTES - have, MSG_DONTWAIT);
        if (n > 0) {
            s->stage_end += (size_t)n;
            moved = 1;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            s->rd_seen = ev;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            s->eof = 1;
            if (n < 0 || have > 0)
                orb_tcp_peer_closed(net, s->peer, n < 0 ? strerror(errno) : "its control connection ended mid-message",
                                    0);
            else if (atomic_fetch_sub(&net->peers[s->peer].nopen, 1) == 1)
                orb_tcp_peer_closed(net, s->peer, "it closed every connection", 0);
            return 1;
        }
    }
    return moved;
}

/* ---- the thread ----------------------------------------------------------------------- */

/* Take a channel lock, or leave word for its holder that we passed by. */
static int lock_or_note(atomic_flag *lock, _Atomic int *skipped)
{
    if (orb_tcp_trylock(lock))
        return 1;
    atomic_store(skipped, 1);
    if (!orb_tcp_trylock(lock)) /* still held: the holder will see the note after its unlock */
        return 0;
    atomic_store(skipped, 0);
    return 1;
}

/* One pass over everything (deaf: the executor does the reading, leave it the rx locks). */
static int pass(orb_tcp_t *net, int deaf)
{
    int moved = 0, woke = 0;
    for (int i = 0; i < net->npeers; i++)
        if (!atomic_load(&net->peers[i].closed))
            moved |= ctrl_progress(net, &net->socks[net->peers[i].ctrl]);
    for (int c = 0; c < net->npeers * net->nchannels; c++) {
        orb_tcp_chan_t *ch = &net->chans[c];
        if (atomic_load(&net->peers[ch->peer].closed))
            continue;
        if (lock_or_note(&ch->tx_lock, &ch->skipped_tx)) {
            moved |= orb_tcp_tx(ch, &woke);
            orb_tcp_unlock(&ch->tx_lock);
        }
        if (!deaf && lock_or_note(&ch->rx_lock, &ch->skipped_rx)) {
            moved |= orb_tcp_rx(ch, 0, &woke);
            orb_tcp_unlock(&ch->rx_lock);
        }
    }
    if (woke)
        net->cb.wake(net->cb.arg);
    return moved;
}

/* After a pass that moved nothing: work that no socket event will announce? */
static int work_left(orb_tcp_t *net, int deaf, int *unsent)
{
    int left = 0;
    *unsent = 0;
    for (int c = 0; c < net->npeers * net->nchannels && !left; c++) {
        orb_tcp_chan_t *ch = &net->chans[c];
        if (atomic_load(&net->peers[ch->peer].closed))
            continue;
        if (lock_or_note(&ch->tx_lock, &ch->skipped_tx)) {
            uint64_t head = atomic_load(&ch->tx.ctrl.head);
            for (int k = 0; k < ch->nsocks; k++)
                if (ch->socks[k].tx_busy || ch->socks[k].tx_seq != head)
                    *unsent = 1;
            left = orb_tcp_tx_pending(ch);
            orb_tcp_unlock(&ch->tx_lock);
        } else {
            *unsent = 1;
        }
        if (!left && !deaf && lock_or_note(&ch->rx_lock, &ch->skipped_rx)) {
            left = orb_tcp_rx_pending(ch);
            orb_tcp_unlock(&ch->rx_lock);
        }
    }
    return left;
}

/* Listen for incoming data on the data sockets, or not (EPOLLOUT and a peer's FIN always). */
static void listen_data(orb_tcp_t *net, int on)
{
    for (int k = 0; k < net->nsocks_total; k++) {
        orb_tcp_sock_t *s = &net->socks[k];
        if (s->channel < 0 || atomic_load(&net->peers[s->peer].closed))
            continue;
        struct epoll_event ev = {.events = EPOLLOUT | EPOLLRDHUP | EPOLLET | (on ? EPOLLIN : 0u),
                                 .data.u32 = (uint32_t)k};
        epoll_ctl(net->epfd, EPOLL_CTL_MOD, s->fd, &ev); /* on: pending data raises an event now */
    }
}

void *orb_tcp_progress_main(void *arg)
{
    orb_tcp_t *net = arg;
    orb_log_set_rank(net->rank);
    struct epoll_event ev[64];
    double last_move = orb_now();
    int was_stopping = 0;
    /* Deaf: the executor is polling and reads its sockets itself, so being woken by every
     * arriving frame would only cost a context switch (and, on a busy machine, the
     * executor's core). The thread then wakes every DEAF_TICK_MS to see whether the executor
     * is still there, and listens again once it is not (it sleeps, computes or returned). */
    int deaf = 0;
    double tick_at = 0;
    uint64_t seen_polls = atomic_load(&net->exec_polls);
    for (;;) {
        int stop = atomic_load(&net->stop);
        if (stop == 2)
            break;
        if (stop && !was_stopping) { /* the flush's patience counts from the destroy */
            was_stopping = 1;
            last_move = orb_now();
        }
        int moved = pass(net, deaf);
        double now = orb_now();
        if (moved) {
            last_move = now;
            continue;
        }
        atomic_store(&net->idle, 1);
        int unsent = 0;
        if (work_left(net, deaf, &unsent)) {
            atomic_store(&net->idle, 0);
            continue;
        }
        if (stop == 1 && (!unsent || now - last_move > FLUSH_IDLE_S))
            break; /* flushed, or the peers stopped reading */
        uint64_t polls = atomic_load_explicit(&net->exec_polls, memory_order_relaxed);
        int big = atomic_load_explicit(&net->big, memory_order_relaxed);
        if (!deaf) {
            if (polls != seen_polls && !big && !stop) {
                deaf = 1;
                tick_at = now;
                listen_data(net, 0);
            }
            seen_polls = polls;
        } else if (stop || big || now - tick_at >= DEAF_TICK_MS * 1e-3) {
            if (stop || big || polls == seen_polls) { /* a stream, or a whole tick without the executor */
                deaf = 0;
                listen_data(net, 1);
                atomic_store(&net->idle, 0);
                continue; /* what arrived meanwhile is announced by now */
            }
            seen_polls = polls;
            tick_at = now;
        }
        int n = epoll_wait(net->epfd, ev, 64, stop ? 100 : deaf ? DEAF_TICK_MS : -1);
        atomic_store(&net->idle, 0);
        for (int i = 0; i < n; i++) {
            uint32_t k = ev[i].data.u32;
            if (k == EV_KICK) {
                uint64_t v;
                ssize_t r = read(net->evfd, &v, sizeof v);
                (void)r;
                continue;
            }
            orb_tcp_sock_t *s = &net->socks[k];
            if (ev[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                atomic_fetch_add_explicit(&s->rd_ev, 1, memory_order_release);
            if (ev[i].events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
                atomic_fetch_add_explicit(&s->wr_ev, 1, memory_order_release);
        }
    }
    return NULL;
}
