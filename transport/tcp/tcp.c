/* The network transport over TCP: net.h's entry points. Design notes in docs/transports.md. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/log.h"
#include "core/param.h"
#include "transport/tcp/tcp_impl.h"

/* Socket buffers: enough to keep a 10 Gb/s link busy across a 2 ms round trip. */
#define SOCK_BUF_BYTES (4 << 20)
/* The congestion control our sockets ask for, NULL for the system's: ORBIT_SOCKET_CC, cubic
 * unless it names another ("system", or set but empty: the host's default). Paced algorithms
 * (bbr) held one flow to well under the link rate in our measurements (docs/transports.md);
 * cubic does not pace. */
static const char *wanted_cc(void)
{
    if (orb_param_str_state(ORB_PARAM_S_SOCKET_CC) == ORB_PARAM_STATE_EMPTY)
        return NULL;
    const char *cc = orb_param_str(ORB_PARAM_S_SOCKET_CC);
    return !strcmp(cc, "system") ? NULL : cc;
}

/* Ask for our congestion control on fd; what it runs ends up in got. */
static void set_cc(int fd, char *got, size_t len)
{
    const char *cc = wanted_cc();
    if (cc)
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc));
    socklen_t n = (socklen_t)len;
    if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, got, &n) != 0)
        snprintf(got, len, "?");
    got[len - 1] = 0;
}

/* Sockets per channel when ORBIT_NSOCKS is 0: one flow reaches the link rate unless the
 * congestion control paces it, and then two did best (docs/transports.md). */
static int default_nsocks(const char *cc) { return !strcmp(cc, "cubic") || !strcmp(cc, "reno") ? 1 : 2; }

void orb_tcp_tune(int fd)
{
    orb_sock_tune(fd); /* TCP_NODELAY, keepalive */
    char cc[16];
    set_cc(fd, cc, sizeof cc);
    int buf = SOCK_BUF_BYTES;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    /* A host that vanishes without a FIN (power, cable) is noticed in about 25 s. */
    int idle = 10, intvl = 5, cnt = 3;
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

orb_status_t orb_tcp_create(orb_tcp_t **out, int rank, int nranks, int nchannels, uint32_t nslots,
                            size_t slot_bytes, const uint8_t *secret, const orb_tcp_callbacks_t *cb,
                            orb_card_t *card, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    *out = NULL;
    orb_tcp_t *net = calloc(1, sizeof *net);
    if (!net)
        return ORB_ERR_NO_MEMORY;
    net->rank = rank;
    net->nranks = nranks;
    net->nchannels = nchannels;
    net->nslots = nslots;
    net->slot_bytes = slot_bytes;
    memcpy(net->secret, secret, sizeof net->secret);
    net->cb = *cb;
    net->listen_fd = net->epfd = net->evfd = -1;

    /* The listener goes up before the bootstrap so its address travels in our card. Without a
     * usable interface we carry on: one-host jobs never need it, and a remote peer that does
     * is told why at connect time. */
    orb_sockaddr_t a;
    if (orb_sockaddr_local(&a, net->ifname, sizeof net->ifname) == ORB_OK) {
        orb_sockaddr_set_port(&a, 0);
        if (orb_sock_listen(&a, SOMAXCONN, &net->listen_fd) == ORB_OK) {
            set_cc(net->listen_fd, net->cc, sizeof net->cc); /* what our sockets will run */
            double ns = orb_param_num(ORB_PARAM_NSOCKS);
            net->nsocks_wanted = ns >= 1 ? (ns > ORB_TCP_MAX_NSOCKS ? ORB_TCP_MAX_NSOCKS : (int)ns)
                                         : default_nsocks(net->cc);
            card->family = a.ss.ss_family;
            card->port = (uint16_t)orb_sockaddr_port(&a);
            if (a.ss.ss_family == AF_INET)
                memcpy(card->addr, &((struct sockaddr_in *)&a.ss)->sin_addr, 4);
            else
                memcpy(card->addr, &((struct sockaddr_in6 *)&a.ss)->sin6_addr, 16);
            char b[96];
            ORB_INFO("tcp: listening on %s (interface %s, congestion control %s)", orb_sockaddr_str(&a, b, sizeof b),
                     net->ifname, net->cc);
        }
    }
    *out = net;
    return ORB_OK;
}

static void *map_slots(size_t bytes)
{
    /* Anonymous mappings: page aligned, and only the slots that carry data take memory. */
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The channels: FIFOs, bookkeeping, and their sockets (already in net->socks). */
static orb_status_t make_chans(orb_tcp_t *net)
{
    size_t nchans = (size_t)net->npeers * (size_t)net->nchannels;
    net->chans = calloc(nchans, sizeof *net->chans);
    if (!net->chans)
        return ORB_ERR_NO_MEMORY;
    size_t stride = sizeof(orb_slot_hdr_t) + net->slot_bytes;
    for (size_t c = 0; c < nchans; c++) {
        orb_tcp_chan_t *ch = &net->chans[c];
        int i = (int)(c / (size_t)net->nchannels), chn = (int)(c % (size_t)net->nchannels);
        orb_tcp_peer_t *p = &net->peers[i];
        ch->net = net;
        ch->peer = i;
        ch->nsocks = p->nsocks;
        ch->socks = &net->socks[p->ctrl + 1 + chn * p->nsocks];
        atomic_flag_clear(&ch->tx_lock);
        atomic_flag_clear(&ch->rx_lock);
        orb_tcp_fifo_t *fifos[2] = {&ch->tx, &ch->rx};
        for (int d = 0; d < 2; d++) {
            fifos[d]->chan = ch;
            fifos[d]->stride = stride;
            fifos[d]->nslots = net->nslots;
            fifos[d]->slots = map_slots(stride * net->nslots);
            if (!fifos[d]->slots)
                return ORB_ERR_NO_MEMORY;
        }
        ch->tag = malloc(sizeof *ch->tag * net->nslots);
        ch->got = calloc(net->nslots, sizeof *ch->got);
        ch->want = malloc(sizeof *ch->want * net->nslots);
        if (!ch->tag || !ch->got || !ch->want)
            return ORB_ERR_NO_MEMORY;
        for (uint32_t k = 0; k < net->nslots; k++) {
            ch->tag[k] = UINT64_MAX;
            atomic_init(&ch->want[k].pos, UINT64_MAX);
        }
    }
    return ORB_OK;
}

static orb_status_t start_sockets(orb_tcp_t *net, char *err, size_t errlen)
{
    net->epfd = epoll_create1(EPOLL_CLOEXEC);
    net->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (net->epfd < 0 || net->evfd < 0) {
        snprintf(err, errlen, "cannot create the TCP progress thread's epoll/eventfd: %s", strerror(errno));
        return ORB_ERR_SYSTEM;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    if (epoll_ctl(net->epfd, EPOLL_CTL_ADD, net->evfd, &ev) != 0)
        return ORB_ERR_SYSTEM;
    for (int k = 0; k < net->nsocks_total; k++) {
        orb_tcp_sock_t *s = &net->socks[k];
        s->stage = malloc(ORB_TCP_STAGE_BYTES);
        if (!s->stage)
            return ORB_ERR_NO_MEMORY;
        orb_sock_set_nonblock(s->fd, 1);
        orb_tcp_tune(s->fd);
        atomic_store(&s->rd_ev, 1); /* try both directions once before any event */
        atomic_store(&s->wr_ev, 1);
        ev = (struct epoll_event){.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.u32 = (uint32_t)k};
        if (epoll_ctl(net->epfd, EPOLL_CTL_ADD, s->fd, &ev) != 0) {
            snprintf(err, errlen, "epoll_ctl failed: %s", strerror(errno));
            return ORB_ERR_SYSTEM;
        }
    }
    return ORB_OK;
}

orb_status_t orb_tcp_connect(orb_tcp_t *net, const orb_card_t *cards, const int *peers, int npeers,
                             orb_conn_t *send, orb_conn_t *recv, double deadline, char *err, size_t errlen)
{
    if (npeers == 0) {
        if (net && net->listen_fd >= 0) {
            close(net->listen_fd);
            net->listen_fd = -1;
        }
        return ORB_OK;
    }
    if (net->listen_fd < 0) {
        snprintf(err, errlen, "rank %d must reach rank %d on another host (%s) but has no network interface to "
                              "listen on: ORBIT_SOCKET_IFNAME=\"%s\" matches nothing here (`ip addr` lists them)",
                 net->rank, peers[0], cards[peers[0]].hostname, orb_param_str(ORB_PARAM_S_SOCKET_IFNAME));
        return ORB_ERR_UNSUPPORTED;
    }
    net->npeers = npeers;
    net->peers = calloc((size_t)npeers, sizeof *net->peers);
    net->peer_index = malloc(sizeof(int) * (size_t)net->nranks);
    if (!net->peers || !net->peer_index)
        return ORB_ERR_NO_MEMORY;
    for (int r = 0; r < net->nranks; r++)
        net->peer_index[r] = -1;
    for (int i = 0; i < npeers; i++) {
        net->peers[i].rank = peers[i];
        net->peers[i].ctrl = -1;
        pthread_mutex_init(&net->peers[i].ctrl_lock, NULL);
        net->peer_index[peers[i]] = i;
    }
    orb_status_t st = orb_tcp_handshake(net, cards, deadline, err, errlen);
    close(net->listen_fd); /* every socket is made: nobody else may join */
    net->listen_fd = -1;
    if (st != ORB_OK)
        return st;
    st = make_chans(net);
    if (st == ORB_OK)
        st = start_sockets(net, err, errlen);
    if (st != ORB_OK) {
        if (!*err)
            snprintf(err, errlen, "cannot set up the TCP connections: %s", orb_strerror(st));
        return st;
    }
    /* a rank's own choice: its peers receive ordinary pieces either way */
    const double dv = orb_param_num(ORB_PARAM_TCP_DIRECT_BYTES);
    const size_t direct = dv >= 1 ? (size_t)dv : 0;
    net->place = orb_param_num(ORB_PARAM_TCP_PLACE) != 0;
    for (int i = 0; i < npeers; i++)
        for (int ch = 0; ch < net->nchannels; ch++) {
            size_t ci = (size_t)peers[i] * (size_t)net->nchannels + (size_t)ch;
            orb_tcp_chan_t *c = &net->chans[(size_t)i * (size_t)net->nchannels + (size_t)ch];
            orb_tcp_fifo_t *tx = &c->tx, *rx = &c->rx;
            send[ci] = (orb_conn_t){.ops = &orb_tcp_conn_ops, .peer = peers[i], .channel = ch, .ctrl = &tx->ctrl,
                                    .slots = tx->slots, .slot_stride = tx->stride, .slot_bytes = net->slot_bytes,
                                    .nslots = net->nslots, .pos = 0, .wake = tx,
                                    .addr_kind = direct ? ORB_ADDR_LOCAL : 0, .addr_min = direct};
            recv[ci] = (orb_conn_t){.ops = &orb_tcp_conn_ops, .peer = peers[i], .channel = ch, .ctrl = &rx->ctrl,
                                    .slots = rx->slots, .slot_stride = rx->stride, .slot_bytes = net->slot_bytes,
                                    .nslots = net->nslots, .pos = 0, .wake = rx};
        }
    if (pthread_create(&net->thread, NULL, orb_tcp_progress_main, net) != 0) {
        snprintf(err, errlen, "cannot start the TCP progress thread: %s", strerror(errno));
        return ORB_ERR_SYSTEM;
    }
    net->thread_started = 1;
    ORB_INFO("tcp: %d remote rank(s), %d channel(s) x %d socket(s) each (ORBIT_NSOCKS), via %s, %s", npeers,
             net->nchannels, net->peers[0].nsocks, net->ifname, net->cc);
    return ORB_OK;
}

orb_status_t orb_tcp_check(orb_tcp_t *net, int *lost)
{
    if (!net)
        return ORB_OK;
    int r = atomic_load(&net->lost_rank);
    if (r != 0) {
        *lost = r - 1;
        return ORB_ERR_PEER_LOST;
    }
    /* A peer that left in good order is lost to us only if we still wait for it. want_rx and
     * want_tx say what the executor found when it last looked, which may be stale: the peer's
     * last pieces may have been delivered since (they arrive before its sockets end), or the
     * thread may have written out the FIFO that was full. Only an empty receive FIFO or a
     * still full send FIFO means waiting. Reading closed first orders the thread's work before. */
    for (int i = 0; i < net->npeers; i++) {
        if (!atomic_load(&net->peers[i].closed))
            continue;
        for (int c = 0; c < net->nchannels; c++) {
            const orb_tcp_chan_t *ch = &net->chans[(size_t)i * (size_t)net->nchannels + (size_t)c];
            int rx_empty = atomic_load(&ch->rx.ctrl.head) == atomic_load(&ch->rx.ctrl.tail);
            int tx_full = atomic_load(&ch->tx.ctrl.head) - atomic_load(&ch->tx.ctrl.tail) >= ch->tx.nslots;
            if ((atomic_load(&ch->want_rx) && rx_empty) || (atomic_load(&ch->want_tx) && tx_full)) {
                *lost = net->peers[i].rank;
                return ORB_ERR_PEER_LOST;
            }
        }
    }
    return ORB_OK;
}

void orb_tcp_post_error(orb_tcp_t *net, int peer, orb_status_t st, const char *msg)
{
    if (!net || !net->peer_index || peer < 0 || peer >= net->nranks || net->peer_index[peer] < 0)
        return;
    orb_tcp_peer_t *p = &net->peers[net->peer_index[peer]];
    atomic_store(&net->errored, 1);
    if (p->ctrl < 0 || atomic_load(&p->closed))
        return;
    size_t len = strlen(msg);
    if (len > ORB_TCP_ERROR_MAX)
        len = ORB_TCP_ERROR_MAX;
    orb_tcp_error_t e = {.magic = ORB_TCP_ERROR_MAGIC, .status = st, .from = net->rank, .len = (uint32_t)len};
    struct iovec iov[2] = {{&e, sizeof e}, {(void *)msg, len}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
    /* The control socket carries nothing else, so its buffer has room: one call, no wait. */
    pthread_mutex_lock(&p->ctrl_lock);
    ssize_t n = sendmsg(net->socks[p->ctrl].fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    pthread_mutex_unlock(&p->ctrl_lock);
    if (n != (ssize_t)(sizeof e + len))
        ORB_INFO("tcp: could not tell rank %d about the error (%zd bytes of %zu sent)", peer, n, sizeof e + len);
}

void orb_tcp_set_aborted(orb_tcp_t *net)
{
    if (net)
        atomic_store(&net->aborted, 1);
}

void orb_tcp_destroy(orb_tcp_t *net)
{
    if (!net)
        return;
    int hurry = 1;
    if (net->thread_started) {
        /* A healthy job may still have pieces in our send FIFOs that the peers will read: let
         * them go first. After an error nobody may read them, so leave at once. */
        hurry = atomic_load(&net->aborted) || atomic_load(&net->errored) || atomic_load(&net->lost_rank);
        atomic_store(&net->stop, hurry ? 2 : 1);
        uint64_t one = 1;
        ssize_t n = write(net->evfd, &one, sizeof one);
        (void)n;
        pthread_join(net->thread, NULL);
        /* Everything we had to send is out: say so, so that our closing sockets do not read
         * as a crash to peers that are done with us too. */
        orb_tcp_error_t bye = {.magic = ORB_TCP_BYE_MAGIC};
        for (int i = 0; i < net->npeers && !hurry; i++)
            if (!atomic_load(&net->peers[i].closed))
                send(net->socks[net->peers[i].ctrl].fd, &bye, sizeof bye, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    for (int k = 0; k < net->nsocks_total; k++) {
        shutdown(net->socks[k].fd, SHUT_WR);
        close(net->socks[k].fd);
        free(net->socks[k].stage);
    }
    uint64_t placed = 0, pieces = 0;
    if (net->chans)
        for (size_t c = 0; c < (size_t)net->npeers * (size_t)net->nchannels; c++) {
            orb_tcp_chan_t *ch = &net->chans[c];
            placed += ch->placed;
            pieces += ch->pieces;
            if (ch->tx.slots)
                munmap(ch->tx.slots, ch->tx.stride * ch->tx.nslots);
            if (ch->rx.slots)
                munmap(ch->rx.slots, ch->rx.stride * ch->rx.nslots);
            free(ch->tag);
            free(ch->got);
            free(ch->want);
        }
    if (pieces)
        ORB_INFO("tcp: %llu of the %llu pieces received went straight into the callers' buffers",
                 (unsigned long long)placed, (unsigned long long)pieces);
    for (int i = 0; i < net->npeers && net->peers; i++)
        pthread_mutex_destroy(&net->peers[i].ctrl_lock);
    if (net->listen_fd >= 0)
        close(net->listen_fd);
    if (net->epfd >= 0)
        close(net->epfd);
    if (net->evfd >= 0)
        close(net->evfd);
    free(net->chans);
    free(net->socks);
    free(net->peers);
    free(net->peer_index);
    free(net);
}
