/* Establishing the sockets of every remote pair. The lower rank of a pair connects and says
 * hello on each socket (secret, ranks, which socket, settings); the higher rank checks it
 * and answers with an ack. Both directions run in one poll loop, so ranks that connect to
 * some peers while accepting from others never wait on each other. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "transport/tcp/tcp_impl.h"

#define PENDING_TIMEOUT_S 5.0 /* an accepted socket must say hello within this */
#define CLOSED_GRACE_S 0.5    /* after a peer closed one of our sockets, wait this for its reason */

typedef struct {
    int fd;
    int peer;  /* index in net->peers; -1 for an accepted socket before its hello */
    int slot;  /* 0: control, 1 + ch * nsocks + k: data */
    int outgoing;
    double deadline;
    size_t got;
    orb_sockaddr_t from;
    union {
        orb_tcp_hello_t hello;
        orb_tcp_ack_t ack;
        char raw[sizeof(orb_tcp_hello_t) > sizeof(orb_tcp_ack_t) ? sizeof(orb_tcp_hello_t) : sizeof(orb_tcp_ack_t)];
    } u;
} pending_t;

typedef struct {
    int *fds;     /* per peer: [1 + nchannels * ORB_TCP_MAX_NSOCKS], -1 until established */
    int *missing; /* per peer: sockets still to establish (-1: the count is not known yet) */
} table_t;

static int slots_per_peer(const orb_tcp_t *net) { return 1 + net->nchannels * ORB_TCP_MAX_NSOCKS; }

static void card_addr(const orb_card_t *c, orb_sockaddr_t *a)
{
    memset(a, 0, sizeof *a);
    if (c->family == AF_INET) {
        struct sockaddr_in *s = (struct sockaddr_in *)&a->ss;
        s->sin_family = AF_INET;
        memcpy(&s->sin_addr, c->addr, 4);
        a->len = sizeof *s;
    } else {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&a->ss;
        s->sin6_family = AF_INET6;
        memcpy(&s->sin6_addr, c->addr, 16);
        a->len = sizeof *s;
    }
    orb_sockaddr_set_port(a, c->port);
}

static void drop(pending_t *p, const char *why)
{
    char b[96];
    ORB_WARN("tcp: dropped a connection from %s: %s", orb_sockaddr_str(&p->from, b, sizeof b), why);
    close(p->fd);
    p->fd = -1;
}

static void pending_close_all(pending_t *pend, int n)
{
    for (int i = 0; i < n; i++)
        if (pend[i].fd >= 0)
            close(pend[i].fd);
}

/* Connect every socket to the peers above us and say hello on each. */
static orb_status_t connect_up(orb_tcp_t *net, const orb_card_t *cards, pending_t *pend, int *npend,
                               double deadline, int *closed_rank, double *closed_at, char *err, size_t errlen)
{
    for (int i = 0; i < net->npeers; i++) {
        orb_tcp_peer_t *p = &net->peers[i];
        if (p->rank < net->rank)
            continue;
        const orb_card_t *cd = &cards[p->rank];
        if (cd->port == 0) {
            snprintf(err, errlen, "rank %d (%s) has no network listener: no interface matched "
                                  "ORBIT_SOCKET_IFNAME there (see its log)", p->rank, cd->hostname);
            return ORB_ERR_UNSUPPORTED;
        }
        orb_sockaddr_t a;
        card_addr(cd, &a);
        p->nsocks = net->nsocks_wanted;
        int nslot = 1 + net->nchannels * p->nsocks;
        for (int s = 0; s < nslot; s++) {
            int fd;
            /* Once the peer took one socket, a refusal means it gave up on us (a settings
             * mismatch, say): stop here and let the loop fetch its reason. */
            orb_status_t st = orb_sock_connect(&a, s == 0 ? deadline : orb_now() + 1.0, &fd);
            char b[96];
            if (st != ORB_OK && s > 0) {
                if (!*closed_rank)
                    *closed_rank = p->rank + 1, *closed_at = orb_now();
                break;
            }
            if (st != ORB_OK) {
                snprintf(err, errlen, "cannot connect to rank %d at %s (%s): %s; check that the hosts reach each "
                                      "other on that interface (ORBIT_SOCKET_IFNAME) and no firewall blocks it",
                         p->rank, orb_sockaddr_str(&a, b, sizeof b), cd->hostname,
                         st == ORB_ERR_TIMEOUT ? "timed out" : strerror(errno));
                return st;
            }
            orb_tcp_hello_t h = {
                .magic = ORB_TCP_HELLO_MAGIC, .version = ORB_TCP_VERSION, .from = net->rank, .to = p->rank,
                .nranks = net->nranks, .channel = s == 0 ? -1 : (s - 1) / p->nsocks,
                .stripe = s == 0 ? 0 : (s - 1) % p->nsocks, .nchannels = net->nchannels, .nsocks = p->nsocks,
                .nslots = net->nslots, .slot_bytes = net->slot_bytes,
            };
            memcpy(h.secret, net->secret, sizeof h.secret);
            st = orb_sock_send_all(fd, &h, sizeof h, deadline);
            if (st != ORB_OK) {
                close(fd);
                snprintf(err, errlen, "rank %d closed the connection before our hello", p->rank);
                return ORB_ERR_PEER_LOST;
            }
            pend[*npend] = (pending_t){.fd = fd, .peer = i, .slot = s, .outgoing = 1, .deadline = deadline, .from = a};
            (*npend)++;
        }
    }
    return ORB_OK;
}

static int find_peer(const orb_tcp_t *net, int rank)
{
    return rank >= 0 && rank < net->nranks ? net->peer_index[rank] : -1;
}

static void send_ack(int fd, int rank, orb_status_t st, const char *why)
{
    orb_tcp_ack_t a = {.magic = ORB_TCP_ACK_MAGIC, .status = st, .rank = rank};
    size_t n = strlen(why);
    if (n >= sizeof a.why)
        n = sizeof a.why - 1; /* the connector's own check says the rest */
    memcpy(a.why, why, n);
    (void)orb_sock_send_all(fd, &a, sizeof a, orb_now() + 1.0);
}

/* A complete hello arrived on an accepted socket. Returns ORB_OK (kept or dropped) or a
 * fatal status with err filled. */
static orb_status_t take_hello(orb_tcp_t *net, table_t *t, pending_t *p, char *err, size_t errlen)
{
    char why[256];
    const orb_tcp_hello_t *h = &p->u.hello;
    orb_status_t st = orb_tcp_hello_check(h, net->secret, net->rank, net->nranks, net->nchannels, net->nslots,
                                          net->slot_bytes, why, sizeof why);
    int i = st == ORB_ERR_PROTOCOL ? -1 : find_peer(net, h->from);
    if (st == ORB_ERR_MISMATCH && i >= 0) {
        send_ack(p->fd, net->rank, st, why);
        snprintf(err, errlen, "%s", why);
        return st;
    }
    if (st != ORB_OK || i < 0) {
        drop(p, st != ORB_OK ? why : "a rank that is not a remote peer of ours");
        return ORB_OK;
    }
    orb_tcp_peer_t *peer = &net->peers[i];
    if (peer->nsocks == 0) {
        peer->nsocks = h->nsocks;
        t->missing[i] = 1 + net->nchannels * h->nsocks;
    } else if (peer->nsocks != h->nsocks) {
        drop(p, "its sockets disagree on ORBIT_NSOCKS");
        return ORB_OK;
    }
    int slot = h->channel < 0 ? 0 : 1 + h->channel * peer->nsocks + h->stripe;
    int *fds = &t->fds[(size_t)i * (size_t)slots_per_peer(net)];
    if (fds[slot] >= 0 || (h->channel < 0 && h->stripe != 0)) {
        drop(p, "the same socket twice");
        return ORB_OK;
    }
    send_ack(p->fd, net->rank, ORB_OK, "");
    fds[slot] = p->fd;
    t->missing[i]--;
    p->fd = -1;
    return ORB_OK;
}

static orb_status_t take_ack(orb_tcp_t *net, table_t *t, pending_t *p, char *err, size_t errlen)
{
    const orb_tcp_ack_t *a = &p->u.ack;
    int rank = net->peers[p->peer].rank;
    if (a->magic != ORB_TCP_ACK_MAGIC || a->rank != rank) {
        snprintf(err, errlen, "rank %d's address answered like something else (magic %08x, rank %d): another "
                              "program took its port?", rank, a->magic, a->rank);
        return ORB_ERR_PROTOCOL;
    }
    if (a->status != ORB_OK) {
        snprintf(err, errlen, "rank %d refused our connection: %.*s", rank, (int)sizeof a->why, a->why);
        return (orb_status_t)a->status;
    }
    t->fds[(size_t)p->peer * (size_t)slots_per_peer(net) + (size_t)p->slot] = p->fd;
    t->missing[p->peer]--;
    p->fd = -1;
    return ORB_OK;
}

static void describe_missing(const orb_tcp_t *net, const table_t *t, char *err, size_t errlen)
{
    int n = snprintf(err, errlen, "TCP connections were not all made within the init timeout "
                                  "(ORBIT_INIT_TIMEOUT); missing from rank(s)");
    for (int i = 0, shown = 0; i < net->npeers && n < (int)errlen - 16; i++)
        if (t->missing[i] != 0) {
            n += snprintf(err + n, errlen - (size_t)n, "%s %d", shown ? "," : "", net->peers[i].rank);
            if (++shown == 16) {
                n += snprintf(err + n, errlen - (size_t)n, " ...");
                break;
            }
        }
    snprintf(err + n, errlen - (size_t)n, "; check that every host can reach the others' addresses "
                                          "(ORBIT_SOCKET_IFNAME, firewalls)");
}

/* Move the established sockets into net->socks: per peer the control socket, then the data
 * sockets in (channel, stripe) order. */
static orb_status_t adopt(orb_tcp_t *net, table_t *t)
{
    int total = 0;
    for (int i = 0; i < net->npeers; i++)
        total += 1 + net->nchannels * net->peers[i].nsocks;
    net->socks = calloc((size_t)total, sizeof *net->socks);
    if (!net->socks)
        return ORB_ERR_NO_MEMORY;
    int k = 0;
    for (int i = 0; i < net->npeers; i++) {
        orb_tcp_peer_t *p = &net->peers[i];
        int *fds = &t->fds[(size_t)i * (size_t)slots_per_peer(net)];
        int nslot = 1 + net->nchannels * p->nsocks;
        p->ctrl = k;
        atomic_store(&p->nopen, nslot);
        for (int s = 0; s < nslot; s++, k++) {
            orb_tcp_sock_t *so = &net->socks[k];
            so->fd = fds[s];
            fds[s] = -1;
            so->peer = i;
            so->channel = s == 0 ? -1 : (s - 1) / p->nsocks;
            so->stripe = s == 0 ? 0 : (s - 1) % p->nsocks;
        }
    }
    net->nsocks_total = total;
    return ORB_OK;
}

orb_status_t orb_tcp_handshake(orb_tcp_t *net, const orb_card_t *cards, double deadline, char *err, size_t errlen)
{
    size_t nslot = (size_t)net->npeers * (size_t)slots_per_peer(net);
    int maxpend = 64;
    for (int i = 0; i < net->npeers; i++)
        if (net->peers[i].rank > net->rank)
            maxpend += 1 + net->nchannels * net->nsocks_wanted;
    table_t t = {.fds = malloc(nslot * sizeof(int)), .missing = malloc((size_t)net->npeers * sizeof(int))};
    pending_t *pend = calloc((size_t)maxpend, sizeof *pend);
    struct pollfd *pfd = calloc((size_t)maxpend + 1, sizeof *pfd);
    orb_status_t st = ORB_ERR_NO_MEMORY;
    int npend = 0, closed_rank = 0;
    double closed_at = 0;
    if (!t.fds || !t.missing || !pend || !pfd)
        goto out;
    for (size_t i = 0; i < nslot; i++)
        t.fds[i] = -1;
    for (int i = 0; i < net->npeers; i++) {
        int up = net->peers[i].rank > net->rank;
        net->peers[i].nsocks = 0;
        t.missing[i] = up ? 1 + net->nchannels * net->nsocks_wanted : -1;
    }
    st = connect_up(net, cards, pend, &npend, deadline, &closed_rank, &closed_at, err, errlen);
    for (;;) {
        if (st != ORB_OK)
            goto out;
        int left = 0;
        for (int i = 0; i < net->npeers; i++)
            left += t.missing[i] != 0;
        if (!left)
            break;
        double now = orb_now();
        if (closed_rank && now - closed_at > CLOSED_GRACE_S) {
            snprintf(err, errlen, "rank %d closed our connection during the handshake (it died, or it does not "
                                  "know our secret: do both ranks belong to the same job?)", closed_rank - 1);
            st = ORB_ERR_PEER_LOST;
            goto out;
        }
        if (now >= deadline) {
            describe_missing(net, &t, err, errlen);
            st = ORB_ERR_TIMEOUT;
            goto out;
        }
        pfd[0] = (struct pollfd){.fd = net->listen_fd, .events = POLLIN};
        for (int i = 0; i < npend; i++)
            pfd[i + 1] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
        double wait = deadline - now;
        int rc = poll(pfd, (nfds_t)npend + 1, wait > 0.2 ? 200 : (int)(wait * 1000) + 1);
        if (rc < 0 && errno != EINTR) {
            snprintf(err, errlen, "poll failed during the TCP handshake: %s", strerror(errno));
            st = ORB_ERR_SYSTEM;
            goto out;
        }
        now = orb_now();
        for (int i = 0; i < npend && st == ORB_OK; i++) {
            pending_t *p = &pend[i];
            if (!pfd[i + 1].revents) {
                if (!p->outgoing && now > p->deadline)
                    drop(p, "said no valid hello within 5 s");
                continue;
            }
            size_t want = p->outgoing ? sizeof p->u.ack : sizeof p->u.hello;
            ssize_t n = recv(p->fd, p->u.raw + p->got, want - p->got, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (n <= 0) {
                if (!p->outgoing) {
                    drop(p, "closed before its hello");
                    continue;
                }
                /* Not fatal yet: a refusal with its reason may be on its way on another socket
                 * (the peer closes the rest as it gives up). */
                if (!closed_rank)
                    closed_rank = net->peers[p->peer].rank + 1, closed_at = now;
                close(p->fd);
                p->fd = -1;
                continue;
            }
            p->got += (size_t)n;
            if (p->got < want)
                continue;
            st = p->outgoing ? take_ack(net, &t, p, err, errlen) : take_hello(net, &t, p, err, errlen);
        }
        int k = 0;
        for (int i = 0; i < npend; i++)
            if (pend[i].fd >= 0)
                pend[k++] = pend[i];
        npend = k;
        if (st == ORB_OK && (pfd[0].revents & POLLIN)) {
            pending_t p = {.peer = -1, .deadline = now + PENDING_TIMEOUT_S};
            p.from.len = sizeof p.from.ss;
            p.fd = accept4(net->listen_fd, (struct sockaddr *)&p.from.ss, &p.from.len, SOCK_CLOEXEC);
            if (p.fd >= 0) {
                if (npend == maxpend) { /* a flood of strangers: the oldest of them goes */
                    int j = 0;
                    while (pend[j].outgoing)
                        j++; /* found: outgoing sockets fill at most maxpend - 64 entries */
                    drop(&pend[j], "too many connections waiting for their hello");
                    memmove(&pend[j], &pend[j + 1], sizeof pend[0] * (size_t)(maxpend - 1 - j));
                    npend--;
                }
                pend[npend++] = p;
            }
        }
    }
    st = adopt(net, &t);
out:
    pending_close_all(pend, npend);
    if (t.fds)
        for (size_t i = 0; i < nslot; i++)
            if (t.fds[i] >= 0)
                close(t.fds[i]);
    free(t.fds);
    free(t.missing);
    free(pend);
    free(pfd);
    return st;
}
