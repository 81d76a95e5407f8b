/* Slots <-> byte streams: writing posted send slots to a channel's sockets as frames, and
 * reading frames from them straight into free receive slots. Runs on whichever thread holds
 * the channel's lock for that direction (tcp.h); never blocks. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "transport/tcp/tcp_impl.h"

static orb_slot_hdr_t *slot_at(const orb_tcp_fifo_t *r, uint64_t seq)
{
    return (orb_slot_hdr_t *)(r->slots + (seq % r->nslots) * r->stride);
}

static int peer_gone(const orb_tcp_chan_t *ch) { return atomic_load(&ch->net->peers[ch->peer].closed); }

/* ---- sending -------------------------------------------------------------------------- */

/* Write what can be written of one stripe's frames. */
static int tx_sock(orb_tcp_chan_t *ch, orb_tcp_sock_t *s)
{
    orb_tcp_fifo_t *r = &ch->tx;
    int moved = 0;
    for (;;) {
        if (!s->tx_busy) {
            uint64_t head = atomic_load_explicit(&r->ctrl.head, memory_order_acquire);
            if (s->tx_seq == head)
                break;
            const orb_slot_hdr_t *h = slot_at(r, s->tx_seq);
            uint32_t off, len;
            orb_tcp_stripe(h->nbytes, ch->nsocks, s->stripe, &off, &len);
            if (s->stripe != 0 && len == 0) { /* nothing of this slot goes on this stripe */
                s->tx_seq++;
                moved = 1;
                continue;
            }
            s->tx_frame = (orb_tcp_frame_t){.magic = ORB_TCP_FRAME_MAGIC, .len = len, .off = off,
                                            .seq = (uint32_t)s->tx_seq, .hdr = *h};
            /* a piece posted as an address arrives as an ordinary one */
            s->tx_frame.hdr.flags &= ~ORB_PIECE_REMOTE;
            s->tx_frame.hdr.addr = 0;
            s->tx_done = 0;
            s->tx_busy = 1;
        }
        uint32_t ev = atomic_load_explicit(&s->wr_ev, memory_order_acquire);
        if (ev == s->wr_seen)
            break; /* EAGAIN last time and no EPOLLOUT since */
        const size_t pre = sizeof s->tx_frame;
        /* read each time: settle (tcp_progress.c) may have moved an address piece into its slot */
        const orb_slot_hdr_t *h = slot_at(r, s->tx_seq);
        char *payload = ((h->flags & ORB_PIECE_REMOTE) ? (char *)(uintptr_t)h->addr : (char *)(h + 1)) + s->tx_frame.off;
        struct iovec iov[2];
        int niov = 0;
        if (s->tx_done < pre)
            iov[niov++] = (struct iovec){(char *)&s->tx_frame + s->tx_done, pre - s->tx_done};
        size_t pdone = s->tx_done > pre ? s->tx_done - pre : 0;
        if (s->tx_frame.len > pdone)
            iov[niov++] = (struct iovec){payload + pdone, s->tx_frame.len - pdone};
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
        ssize_t n = sendmsg(s->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                s->wr_seen = ev;
                break;
            }
            if (errno == EINTR)
                continue;
            orb_tcp_peer_closed(ch->net, ch->peer, strerror(errno), 0);
            return 1;
        }
        s->tx_done += (size_t)n;
        moved = 1;
        if (s->tx_done == pre + s->tx_frame.len) {
            s->tx_busy = 0;
            s->tx_seq++;
        }
    }
    return moved;
}

int orb_tcp_tx(orb_tcp_chan_t *ch, int *freed)
{
    if (peer_gone(ch))
        return 0;
    int moved = 0;
    for (int k = 0; k < ch->nsocks; k++)
        moved |= tx_sock(ch, &ch->socks[k]);
    /* The FIFO's tail: the first slot some stripe has not finished writing. */
    uint64_t tail = ch->socks[0].tx_seq;
    for (int k = 1; k < ch->nsocks; k++)
        if (ch->socks[k].tx_seq < tail)
            tail = ch->socks[k].tx_seq;
    if (tail != atomic_load_explicit(&ch->tx.ctrl.tail, memory_order_relaxed)) {
        atomic_store_explicit(&ch->tx.ctrl.tail, tail, memory_order_release);
        *freed = 1;
    }
    return moved;
}

int orb_tcp_tx_pending(orb_tcp_chan_t *ch)
{
    uint64_t head = atomic_load(&ch->tx.ctrl.head);
    for (int k = 0; k < ch->nsocks; k++) {
        const orb_tcp_sock_t *s = &ch->socks[k];
        if ((s->tx_busy || s->tx_seq != head) && atomic_load(&s->wr_ev) != s->wr_seen)
            return 1;
    }
    return 0;
}

/* ---- receiving ------------------------------------------------------------------------ */

static void sock_eof(orb_tcp_chan_t *ch, orb_tcp_sock_t *s)
{
    s->eof = 1;
    if (atomic_fetch_sub(&ch->net->peers[ch->peer].nopen, 1) == 1)
        orb_tcp_peer_closed(ch->net, ch->peer, "it closed every connection", 0);
}

/* recv with the outcomes sorted: > 0 bytes, 0 nothing now, -1 the stream ended (handled). */
static ssize_t sock_recv(orb_tcp_chan_t *ch, orb_tcp_sock_t *s, void *buf, size_t len, int mid_frame, int force)
{
    uint32_t ev = atomic_load_explicit(&s->rd_ev, memory_order_acquire);
    if (!force && ev == s->rd_seen)
        return 0;
    ssize_t n = recv(s->fd, buf, len, MSG_DONTWAIT);
    if (n > 0)
        return n;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (errno != EINTR)
            s->rd_seen = ev;
        return 0;
    }
    if (n == 0 && !mid_frame) {
        sock_eof(ch, s);
        return -1;
    }
    orb_tcp_peer_closed(ch->net, ch->peer, n == 0 ? "its connection closed in the middle of a message" : strerror(errno),
                        n == 0);
    return -1;
}

/* Publish the receive slots that are complete, in order. */
static int rx_publish(orb_tcp_chan_t *ch)
{
    orb_tcp_fifo_t *r = &ch->rx;
    uint64_t h0 = ch->rx_head;
    for (;;) {
        size_t i = ch->rx_head % r->nslots;
        if (ch->tag[i] != ch->rx_head || ch->got[i] != slot_at(r, ch->rx_head)->nbytes)
            break;
        ch->tag[i] = UINT64_MAX;
        ch->rx_head++;
    }
    if (ch->rx_head == h0)
        return 0;
    atomic_store_explicit(&r->ctrl.head, ch->rx_head, memory_order_release);
    return 1;
}

/* Where the payload of the piece at position seq goes, if the receiver asked for it elsewhere
 * (orb_conn_ops_t.recv_place): only a data piece of the call it named, of the size it expects,
 * carrying no flag but the handshake's (anything else stays in its slot for the executor to
 * judge). NULL: into its slot. */
static char *place_for(const orb_tcp_chan_t *ch, uint64_t seq, const orb_slot_hdr_t *hdr)
{
    const orb_tcp_want_t *w = &ch->want[seq % ch->rx.nslots];
    if (atomic_load_explicit(&w->pos, memory_order_acquire) != seq || w->bytes == 0)
        return NULL;
    if (hdr->seq != w->call || hdr->nbytes != w->bytes || (hdr->flags & ~ORB_PIECE_SYNC))
        return NULL;
    return w->dst;
}

/* The preamble at the front of the stage names a slot: take it if it is free. Returns 1 if
 * the payload can be read now, 0 if the slot is still in use, -1 on nonsense. */
static int rx_claim(orb_tcp_chan_t *ch, orb_tcp_sock_t *s)
{
    orb_tcp_fifo_t *r = &ch->rx;
    orb_tcp_frame_t f;
    memcpy(&f, s->stage + s->stage_pos, sizeof f);
    char why[192];
    if (orb_tcp_frame_check(&f, ch->net->slot_bytes, why, sizeof why) != ORB_OK) {
        orb_tcp_peer_closed(ch->net, ch->peer, why, 1);
        return -1;
    }
    int32_t ahead = (int32_t)(f.seq - (uint32_t)ch->rx_head);
    if (ahead < 0) {
        snprintf(why, sizeof why, "a frame for slot %u, which was already complete", f.seq);
        orb_tcp_peer_closed(ch->net, ch->peer, why, 1);
        return -1;
    }
    uint64_t seq = ch->rx_head + (uint64_t)ahead;
    if (seq >= atomic_load_explicit(&r->ctrl.tail, memory_order_acquire) + r->nslots) {
        atomic_store(&ch->rx_wait, 1); /* then look again: the executor may have just freed it */
        if (seq >= atomic_load(&r->ctrl.tail) + r->nslots)
            return 0;
        atomic_store(&ch->rx_wait, 0);
    }
    size_t i = seq % r->nslots;
    orb_slot_hdr_t *h = slot_at(r, seq);
    if (ch->tag[i] != seq) {
        ch->tag[i] = seq;
        ch->got[i] = 0;
        *h = f.hdr;
        char *to = place_for(ch, seq, &f.hdr);
        ch->pieces++;
        if (to) { /* the header says so to the executor, and to the piece's later stripes */
            h->flags |= ORB_PIECE_PLACED;
            h->addr = (uint64_t)(uintptr_t)to;
            ch->placed++;
        }
    } else if (h->nbytes != f.hdr.nbytes) {
        snprintf(why, sizeof why, "stripes of slot %u disagree on its size", f.seq);
        orb_tcp_peer_closed(ch->net, ch->peer, why, 1);
        return -1;
    }
    s->stage_pos += sizeof f;
    s->rx_seq = seq;
    s->rx_len = s->rx_left = f.len;
    int big = f.hdr.nbytes >= ORB_TCP_BIG_BYTES;
    if (atomic_load_explicit(&ch->net->big, memory_order_relaxed) != big)
        atomic_store_explicit(&ch->net->big, big, memory_order_relaxed);
    s->rx_dst = ((h->flags & ORB_PIECE_PLACED) ? (char *)(uintptr_t)h->addr : (char *)(h + 1)) + f.off;
    s->rx_busy = 1;
    return 1;
}

/* Read frames from one stripe while there is room and data. */
static int rx_sock(orb_tcp_chan_t *ch, orb_tcp_sock_t *s, int force, int *published)
{
    int moved = 0;
    while (!s->eof) {
        size_t have = s->stage_end - s->stage_pos;
        if (!s->rx_busy) {
            if (have >= sizeof(orb_tcp_frame_t)) {
                int c = rx_claim(ch, s);
                if (c <= 0)
                    return c < 0 ? 1 : moved;
                moved = 1;
                continue;
            }
            memmove(s->stage, s->stage + s->stage_pos, have);
            s->stage_pos = 0;
            s->stage_end = have;
            ssize_t n = sock_recv(ch, s, s->stage + have, ORB_TCP_STAGE_BYTES - have, have > 0, force);
            if (n <= 0)
                return n < 0 ? 1 : moved;
            s->stage_end += (size_t)n;
            moved = 1;
            continue;
        }
        if (s->rx_left && have) {
            size_t take = have < s->rx_left ? have : s->rx_left;
            memcpy(s->rx_dst, s->stage + s->stage_pos, take);
            s->stage_pos += take;
            s->rx_dst += take;
            s->rx_left -= (uint32_t)take;
        }
        if (s->rx_left) {
            ssize_t n;
            if (s->rx_left < ORB_TCP_STAGE_BYTES / 2) { /* small: fetch what follows in the same call */
                s->stage_pos = s->stage_end = 0;
                n = sock_recv(ch, s, s->stage, ORB_TCP_STAGE_BYTES, 1, force);
                if (n > 0)
                    s->stage_end = (size_t)n;
            } else { /* large: straight into the slot, no further copy */
                n = sock_recv(ch, s, s->rx_dst, s->rx_left, 1, force);
                if (n > 0) {
                    s->rx_dst += n;
                    s->rx_left -= (uint32_t)n;
                }
            }
            if (n <= 0)
                return n < 0 ? 1 : moved;
            moved = 1;
            continue;
        }
        s->rx_busy = 0;
        ch->got[s->rx_seq % ch->rx.nslots] += s->rx_len; /* counted once the bytes are in */
        *published |= rx_publish(ch);
        moved = 1;
    }
    return moved;
}

int orb_tcp_rx(orb_tcp_chan_t *ch, int force, int *published)
{
    if (peer_gone(ch))
        return 0;
    int moved = 0;
    for (int k = 0; k < ch->nsocks; k++)
        moved |= rx_sock(ch, &ch->socks[k], force, published);
    return moved;
}

int orb_tcp_rx_pending(orb_tcp_chan_t *ch)
{
    if (peer_gone(ch))
        return 0;
    int room = ch->rx_head < atomic_load(&ch->rx.ctrl.tail) + ch->rx.nslots;
    for (int k = 0; k < ch->nsocks; k++) {
        const orb_tcp_sock_t *s = &ch->socks[k];
        if (s->eof)
            continue;
        if (s->rx_busy && (s->stage_end > s->stage_pos || atomic_load(&s->rd_ev) != s->rd_seen))
            return 1; /* its slot is claimed: only bytes are needed */
        if (!s->rx_busy && atomic_load(&ch->rx_wait) == 0 && room &&
            (s->stage_end - s->stage_pos >= sizeof(orb_tcp_frame_t) || atomic_load(&s->rd_ev) != s->rd_seen))
            return 1;
    }
    return 0;
}
