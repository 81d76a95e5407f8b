#include "bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/param.h"

/* ---- ids ------------------------------------------------------------------------------ */

orb_status_t orb_random_bytes(void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return ORB_ERR_SYSTEM;
        }
        p += n;
        len -= (size_t)n;
    }
    return ORB_OK;
}

orb_status_t orb_id_encode(orb_unique_id_t *id, const orb_sockaddr_t *addr, const uint8_t *secret)
{
    memset(id, 0, sizeof *id);
    orb_id_wire_t w = {0};
    w.magic = ORB_ID_MAGIC;
    w.version = ORB_BOOT_VERSION;
    w.family = addr->ss.ss_family;
    w.port = (uint16_t)orb_sockaddr_port(addr);
    if (w.family == AF_INET)
        memcpy(w.addr, &((const struct sockaddr_in *)&addr->ss)->sin_addr, 4);
    else if (w.family == AF_INET6)
        memcpy(w.addr, &((const struct sockaddr_in6 *)&addr->ss)->sin6_addr, 16);
    else
        return ORB_ERR_INVALID_ARG;
    memcpy(w.secret, secret, ORB_SECRET_BYTES);
    memcpy(id->internal, &w, sizeof w);
    return ORB_OK;
}

static void wire_to_addr(uint16_t family, uint16_t port, const uint8_t *a, orb_sockaddr_t *addr)
{
    memset(addr, 0, sizeof *addr);
    if (family == AF_INET) {
        struct sockaddr_in *s = (struct sockaddr_in *)&addr->ss;
        s->sin_family = AF_INET;
        memcpy(&s->sin_addr, a, 4);
        addr->len = sizeof *s;
    } else {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&addr->ss;
        s->sin6_family = AF_INET6;
        memcpy(&s->sin6_addr, a, 16);
        addr->len = sizeof *s;
    }
    orb_sockaddr_set_port(addr, port);
}

orb_status_t orb_id_decode(const orb_unique_id_t *id, orb_sockaddr_t *addr, uint8_t *secret)
{
    orb_id_wire_t w;
    memcpy(&w, id->internal, sizeof w);
    if (w.magic != ORB_ID_MAGIC || w.version != ORB_BOOT_VERSION ||
        (w.family != AF_INET && w.family != AF_INET6) || w.port == 0)
        return ORB_ERR_INVALID_ARG;
    wire_to_addr(w.family, w.port, w.addr, addr);
    memcpy(secret, w.secret, ORB_SECRET_BYTES);
    return ORB_OK;
}

/* ---- listeners bound by orb_get_unique_id ----------------------------------------------- */

#define MAX_LISTENERS 16
static pthread_mutex_t listeners_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint8_t secret[ORB_SECRET_BYTES];
    int fd;
} listeners[MAX_LISTENERS];
static int nlisteners;

void orb_bootstrap_register_listener(const orb_unique_id_t *id, int fd)
{
    orb_sockaddr_t a;
    uint8_t secret[ORB_SECRET_BYTES];
    if (orb_id_decode(id, &a, secret) != ORB_OK)
        return;
    pthread_mutex_lock(&listeners_lock);
    if (nlisteners == MAX_LISTENERS) { /* forget the oldest */
        close(listeners[0].fd);
        memmove(&listeners[0], &listeners[1], sizeof listeners[0] * (MAX_LISTENERS - 1));
        nlisteners--;
    }
    memcpy(listeners[nlisteners].secret, secret, ORB_SECRET_BYTES);
    listeners[nlisteners].fd = fd;
    nlisteners++;
    pthread_mutex_unlock(&listeners_lock);
}

static int take_listener(const uint8_t *secret)
{
    int fd = -1;
    pthread_mutex_lock(&listeners_lock);
    for (int i = 0; i < nlisteners; i++) {
        if (memcmp(listeners[i].secret, secret, ORB_SECRET_BYTES) == 0) {
            fd = listeners[i].fd;
            memmove(&listeners[i], &listeners[i + 1], sizeof listeners[0] * (size_t)(nlisteners - i - 1));
            nlisteners--;
            break;
        }
    }
    pthread_mutex_unlock(&listeners_lock);
    return fd;
}

/* ---- wire checks ------------------------------------------------------------------------ */

int orb_secret_equal(const uint8_t *a, const uint8_t *b)
{
    uint8_t d = 0; /* constant time: no early exit that leaks how much matched */
    for (int i = 0; i < ORB_SECRET_BYTES; i++)
        d |= (uint8_t)(a[i] ^ b[i]);
    return d == 0;
}

orb_status_t orb_boot_hdr_check(const orb_boot_hdr_t *h, uint16_t type, uint32_t max_len,
                                char *why, size_t whylen)
{
    if (h->magic != ORB_BOOT_MAGIC) {
        snprintf(why, whylen, "not an orbit message (magic 0x%08x)", h->magic);
        return ORB_ERR_PROTOCOL;
    }
    if (h->version != ORB_BOOT_VERSION) {
        snprintf(why, whylen, "protocol version %u, this rank speaks %u (mixed orbit builds?)",
                 h->version, ORB_BOOT_VERSION);
        return ORB_ERR_PROTOCOL;
    }
    if (h->type != type) {
        snprintf(why, whylen, "message type %u where %u was expected", h->type, type);
        return ORB_ERR_PROTOCOL;
    }
    if (h->len > max_len) {
        snprintf(why, whylen, "length %u exceeds the %u bytes allowed", h->len, max_len);
        return ORB_ERR_PROTOCOL;
    }
    return ORB_OK;
}

orb_status_t orb_boot_hello_check(const void *buf, size_t len, const uint8_t *secret, int nranks,
                                  char *why, size_t whylen)
{
    orb_boot_hello_t h;
    if (len != sizeof h) {
        snprintf(why, whylen, "hello of %zu bytes, expected %zu", len, sizeof h);
        return ORB_ERR_PROTOCOL;
    }
    memcpy(&h, buf, sizeof h);
    if (!orb_secret_equal(h.secret, secret)) {
        snprintf(why, whylen, "wrong secret (not from this job's unique id)");
        return ORB_ERR_PROTOCOL;
    }
    if (h.nranks != nranks) {
        snprintf(why, whylen, "rank %d believes the job has %d ranks, rank 0 has %d", h.card.rank,
                 h.nranks, nranks);
        return ORB_ERR_MISMATCH;
    }
    if (h.card.rank < 1 || h.card.rank >= nranks) {
        snprintf(why, whylen, "rank %d out of range 1..%d", h.card.rank, nranks - 1);
        return ORB_ERR_PROTOCOL;
    }
    if (memchr(h.card.hostname, 0, sizeof h.card.hostname) == NULL ||
        memchr(h.card.shm_name, 0, sizeof h.card.shm_name) == NULL) {
        snprintf(why, whylen, "unterminated strings in the rank card");
        return ORB_ERR_PROTOCOL;
    }
    if (h.card.family != AF_INET && h.card.family != AF_INET6) {
        snprintf(why, whylen, "unknown address family %u", h.card.family);
        return ORB_ERR_PROTOCOL;
    }
    return ORB_OK;
}

static orb_status_t send_msg(int fd, uint16_t type, const void *a, size_t alen, const void *b,
                             size_t blen, double deadline)
{
    orb_boot_hdr_t h = {ORB_BOOT_MAGIC, ORB_BOOT_VERSION, type, (uint32_t)(alen + blen), 0};
    orb_status_t st = orb_sock_send_all(fd, &h, sizeof h, deadline);
    if (st == ORB_OK && alen)
        st = orb_sock_send_all(fd, a, alen, deadline);
    if (st == ORB_OK && blen)
        st = orb_sock_send_all(fd, b, blen, deadline);
    return st;
}

static orb_status_t recv_msg(int fd, uint16_t type, void *buf, uint32_t len, double deadline,
                             char *why, size_t whylen)
{
    orb_boot_hdr_t h;
    orb_status_t st = orb_sock_recv_all(fd, &h, sizeof h, deadline);
    if (st != ORB_OK) {
        snprintf(why, whylen, "%s", st == ORB_ERR_TIMEOUT ? "timed out" : "connection closed");
        return st;
    }
    st = orb_boot_hdr_check(&h, type, len, why, whylen);
    if (st != ORB_OK)
        return st;
    if (h.len != len) {
        snprintf(why, whylen, "message of %u bytes, expected %u", h.len, len);
        return ORB_ERR_PROTOCOL;
    }
    st = orb_sock_recv_all(fd, buf, len, deadline);
    if (st != ORB_OK)
        snprintf(why, whylen, "%s", st == ORB_ERR_TIMEOUT ? "timed out" : "connection closed");
    return st;
}

/* ---- rendezvous at rank 0 ------------------------------------------------------------- */

#define PENDING_MAX 64
#define PENDING_TIMEOUT_S 5.0

typedef struct {
    int fd;
    double deadline;
    size_t got;
    orb_sockaddr_t from;
    union {
        struct {
            orb_boot_hdr_t hdr;
            orb_boot_hello_t hello;
        } m;
        uint8_t raw[sizeof(orb_boot_hdr_t) + sizeof(orb_boot_hello_t)];
    } u;
} pending_t;

static void drop_pending(pending_t *p, const char *why)
{
    char b[96];
    ORB_WARN("bootstrap: dropped a connection from %s: %s", orb_sockaddr_str(&p->from, b, sizeof b), why);
    close(p->fd);
    p->fd = -1;
}

static orb_status_t root_gather_hellos(orb_bootstrap_t *bs, int lfd, double deadline, char *err,
                                       size_t errlen)
{
    pending_t pend[PENDING_MAX];
    int npend = 0, arrived = 1;
    for (;;) {
        if (arrived == bs->nranks)
            break;
        double now = orb_now();
        if (now >= deadline) {
            int n = snprintf(err, errlen, "ranks never arrived at rank 0 within the init timeout "
                                          "(ORBIT_INIT_TIMEOUT):");
            for (int r = 1, shown = 0; r < bs->nranks && n < (int)errlen - 16; r++)
                if (bs->fds[r] < 0) {
                    n += snprintf(err + n, errlen - (size_t)n, "%s %d", shown ? "," : "", r);
                    if (++shown == 32) {
                        n += snprintf(err + n, errlen - (size_t)n, " ...");
                        break;
                    }
                }
            snprintf(err + n, errlen - (size_t)n, "; check that they started with the same id "
                                                  "(MASTER_ADDR/MASTER_PORT) and can reach it");
            for (int i = 0; i < npend; i++)
                close(pend[i].fd);
            return ORB_ERR_TIMEOUT;
        }
        struct pollfd pfd[PENDING_MAX + 1];
        pfd[0].fd = lfd;
        pfd[0].events = POLLIN;
        for (int i = 0; i < npend; i++) {
            pfd[i + 1].fd = pend[i].fd;
            pfd[i + 1].events = POLLIN;
        }
        double wait = deadline - now;
        for (int i = 0; i < npend; i++)
            if (pend[i].deadline - now < wait)
                wait = pend[i].deadline - now;
        int ms = wait > 0.5 ? 500 : (int)(wait * 1000) + 1;
        int rc = poll(pfd, (nfds_t)npend + 1, ms);
        if (rc < 0 && errno != EINTR) {
            snprintf(err, errlen, "rank 0: poll on the rendezvous socket failed: %s", strerror(errno));
            return ORB_ERR_SYSTEM;
        }
        now = orb_now();
        for (int i = 0; i < npend; i++) {
            pending_t *p = &pend[i];
            if (pfd[i + 1].revents) {
                size_t want = sizeof p->u.m.hdr;
                if (p->got >= want)
                    want += sizeof p->u.m.hello;
                ssize_t n = recv(p->fd, p->u.raw + p->got, want - p->got, MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                    drop_pending(p, "closed before it said hello");
                } else if (n > 0) {
                    p->got += (size_t)n;
                    char why[160];
                    if (p->got == sizeof p->u.m.hdr &&
                        orb_boot_hdr_check(&p->u.m.hdr, ORB_BOOT_HELLO, sizeof(orb_boot_hello_t), why,
                                           sizeof why) != ORB_OK) {
                        drop_pending(p, why);
                    } else if (p->got == sizeof p->u.m.hdr && p->u.m.hdr.len != sizeof(orb_boot_hello_t)) {
                        drop_pending(p, "hello of the wrong size");
                    } else if (p->got == sizeof p->u.raw) {
                        orb_status_t st = orb_boot_hello_check(&p->u.m.hello, sizeof p->u.m.hello,
                                                               bs->secret, bs->nranks, why, sizeof why);
                        int r = p->u.m.hello.card.rank;
                        if (st == ORB_OK && bs->fds[r] >= 0) {
                            snprintf(why, sizeof why, "rank %d joined twice; keeping the first", r);
                            st = ORB_ERR_PROTOCOL;
                        }
                        if (st == ORB_ERR_MISMATCH) {
                            snprintf(err, errlen, "%s: start every rank with the same world size", why);
                            drop_pending(p, why);
                            for (int j = 0; j < npend; j++)
                                if (pend[j].fd >= 0)
                                    close(pend[j].fd);
                            return ORB_ERR_MISMATCH;
                        }
                        if (st != ORB_OK) {
                            drop_pending(p, why);
                        } else {
                            bs->fds[r] = p->fd;
                            bs->cards[r] = p->u.m.hello.card;
                            p->fd = -1;
                            arrived++;
                            ORB_TRACE("bootstrap: rank %d arrived (%d/%d)", r, arrived, bs->nranks);
                        }
                    }
                }
            } else if (now > p->deadline) {
                drop_pending(p, "said nothing valid within 5 s");
            }
        }
        /* compact */
        int k = 0;
        for (int i = 0; i < npend; i++)
            if (pend[i].fd >= 0)
                pend[k++] = pend[i];
        npend = k;
        if (pfd[0].revents & POLLIN) {
            orb_sockaddr_t from;
            from.len = sizeof from.ss;
            int fd = accept4(lfd, (struct sockaddr *)&from.ss, &from.len, SOCK_CLOEXEC);
            if (fd >= 0) {
                if (npend == PENDING_MAX) { /* a flood: drop the oldest pending stranger */
                    drop_pending(&pend[0], "too many pending connections");
                    memmove(&pend[0], &pend[1], sizeof pend[0] * (PENDING_MAX - 1));
                    npend--;
                }
                orb_sock_tune(fd);
                pending_t *p = &pend[npend++];
                memset(p, 0, sizeof *p);
                p->fd = fd;
                p->from = from;
                p->deadline = now + PENDING_TIMEOUT_S;
            }
        }
    }
    return ORB_OK;
}

orb_status_t orb_bootstrap_init(orb_bootstrap_t *bs, const orb_unique_id_t *id, int nranks,
                                int rank, const orb_card_t *self, double timeout_s, char *err,
                                size_t errlen)
{
    memset(bs, 0, sizeof *bs);
    bs->rank = rank;
    bs->nranks = nranks;
    bs->root_fd = -1;
    orb_sockaddr_t root_addr;
    char ab[96];
    if (orb_id_decode(id, &root_addr, bs->secret) != ORB_OK) {
        snprintf(err, errlen, "the unique id is not valid (not made by orb_get_unique_id, or damaged in transit)");
        return ORB_ERR_INVALID_ARG;
    }
    bs->cards = calloc((size_t)nranks, sizeof *bs->cards);
    if (!bs->cards) {
        snprintf(err, errlen, "rank %d: out of memory for the cards of %d ranks; free memory", rank, nranks);
        return ORB_ERR_NO_MEMORY;
    }
    bs->cards[rank] = *self;
    double deadline = orb_now() + timeout_s;
    orb_status_t st;

    if (rank == 0) {
        bs->fds = malloc(sizeof(int) * (size_t)nranks);
        if (!bs->fds) {
            snprintf(err, errlen, "rank 0: out of memory for the sockets of %d ranks; free memory", nranks);
            st = ORB_ERR_NO_MEMORY;
            goto err_free;
        }
        for (int r = 0; r < nranks; r++)
            bs->fds[r] = -1;
        int lfd = take_listener(bs->secret);
        if (lfd < 0) {
            orb_sockaddr_t bind_addr = root_addr;
            if (!strcmp(orb_param_str(ORB_PARAM_S_BOOTSTRAP_BIND_ANY), "1")) {
                if (bind_addr.ss.ss_family == AF_INET)
                    ((struct sockaddr_in *)&bind_addr.ss)->sin_addr.s_addr = htonl(INADDR_ANY);
                else
                    ((struct sockaddr_in6 *)&bind_addr.ss)->sin6_addr = in6addr_any;
            }
            st = orb_sock_listen(&bind_addr, 128, &lfd);
            if (st != ORB_OK) {
                snprintf(err, errlen, "rank 0 cannot listen on %s (MASTER_ADDR/MASTER_PORT): the port "
                                      "is in use or the address is not on this host",
                         orb_sockaddr_str(&root_addr, ab, sizeof ab));
                goto err_free;
            }
        }
        st = root_gather_hellos(bs, lfd, deadline, err, errlen);
        close(lfd);
        if (st != ORB_OK)
            goto err_close;
        for (int r = 1; r < nranks; r++) {
            st = send_msg(bs->fds[r], ORB_BOOT_TABLE, bs->secret, ORB_SECRET_BYTES, bs->cards,
                          sizeof(orb_card_t) * (size_t)nranks, deadline);
            if (st != ORB_OK) {
                snprintf(err, errlen, "rank %d left during init (could not send it the table)", r);
                st = ORB_ERR_PEER_LOST;
                goto err_close;
            }
        }
        return ORB_OK;
    }

    st = orb_sock_connect(&root_addr, deadline, &bs->root_fd);
    if (st != ORB_OK) {
        snprintf(err, errlen, "rank %d could not reach rank 0 at %s within the init timeout "
                              "(ORBIT_INIT_TIMEOUT): is rank 0 running, with the same MASTER_ADDR/MASTER_PORT?",
                 rank, orb_sockaddr_str(&root_addr, ab, sizeof ab));
        goto err_close;
    }
    orb_boot_hello_t hello = {0};
    memcpy(hello.secret, bs->secret, ORB_SECRET_BYTES);
    hello.nranks = nranks;
    hello.card = *self;
    st = send_msg(bs->root_fd, ORB_BOOT_HELLO, &hello, sizeof hello, NULL, 0, deadline);
    if (st == ORB_OK) {
        size_t tlen = ORB_SECRET_BYTES + sizeof(orb_card_t) * (size_t)nranks;
        uint8_t *tbl = malloc(tlen);
        char why[160] = "";
        if (!tbl)
            snprintf(why, sizeof why, "out of memory for it (%zu bytes); free memory", tlen);
        st = tbl ? recv_msg(bs->root_fd, ORB_BOOT_TABLE, tbl, (uint32_t)tlen, deadline, why, sizeof why)
                 : ORB_ERR_NO_MEMORY;
        if (st == ORB_OK && !orb_secret_equal(tbl, bs->secret)) {
            snprintf(why, sizeof why, "rank 0 does not know the job's secret");
            st = ORB_ERR_PROTOCOL;
        }
        if (st == ORB_OK)
            memcpy(bs->cards, tbl + ORB_SECRET_BYTES, tlen - ORB_SECRET_BYTES);
        free(tbl);
        if (st != ORB_OK) {
            snprintf(err, errlen, "rank %d did not get the rank table from rank 0 at %s: %s%s", rank,
                     orb_sockaddr_str(&root_addr, ab, sizeof ab), why,
                     st == ORB_ERR_TIMEOUT ? " (other ranks missing? see rank 0's error)" : "");
            if (st == ORB_ERR_PEER_LOST) { /* rank 0 is up but hung up on us */
                snprintf(err, errlen, "rank %d was refused by rank 0 at %s (wrong secret, a different world "
                                      "size, or a duplicate rank: see rank 0's warnings)",
                         rank, orb_sockaddr_str(&root_addr, ab, sizeof ab));
                st = ORB_ERR_PROTOCOL;
            }
            goto err_close;
        }
    } else {
        snprintf(err, errlen, "rank %d could not say hello to rank 0 at %s (%s): is rank 0 still running? "
                              "see its error", rank, orb_sockaddr_str(&root_addr, ab, sizeof ab), orb_strerror(st));
        goto err_close;
    }
    return st;

err_close:
    orb_bootstrap_close(bs);
    return st;
err_free:
    free(bs->cards);
    free(bs->fds);
    bs->cards = NULL;
    bs->fds = NULL;
    return st;
}

orb_status_t orb_bootstrap_allgather(orb_bootstrap_t *bs, void *buf, size_t size, double deadline)
{
    char why[160];
    uint8_t *b = buf;
    orb_status_t st = ORB_OK;
    size_t total = size * (size_t)bs->nranks;
    if (bs->nranks == 1)
        return ORB_OK;
    if (bs->rank == 0) {
        for (int r = 1; r < bs->nranks && st == ORB_OK; r++) {
            st = recv_msg(bs->fds[r], ORB_BOOT_GATHER, b + (size_t)r * size, (uint32_t)size, deadline, why, sizeof why);
            if (st != ORB_OK)
                ORB_WARN("bootstrap all-gather: rank %d: %s", r, why);
        }
        for (int r = 1; r < bs->nranks && st == ORB_OK; r++)
            st = send_msg(bs->fds[r], ORB_BOOT_GATHER_ALL, b, total, NULL, 0, deadline);
        return st;
    }
    st = send_msg(bs->root_fd, ORB_BOOT_GATHER, b + (size_t)bs->rank * size, size, NULL, 0, deadline);
    if (st == ORB_OK) {
        st = recv_msg(bs->root_fd, ORB_BOOT_GATHER_ALL, b, (uint32_t)total, deadline, why, sizeof why);
        if (st != ORB_OK)
            ORB_WARN("bootstrap all-gather: rank 0: %s", why);
    }
    return st;
}

orb_status_t orb_bootstrap_barrier(orb_bootstrap_t *bs, double deadline)
{
    uint8_t *dummy = calloc((size_t)bs->nranks, 1);
    if (!dummy)
        return ORB_ERR_NO_MEMORY;
    orb_status_t st = orb_bootstrap_allgather(bs, dummy, 1, deadline);
    free(dummy);
    return st;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

orb_status_t orb_bootstrap_clock(orb_bootstrap_t *bs, int rounds, double deadline, int64_t *offset_ns,
                                 int64_t *err_ns)
{
    char why[160] = "connection closed";
    orb_status_t st = ORB_OK;
    *offset_ns = *err_ns = 0;
    if (bs->rank == 0) {
        for (int r = 1; r < bs->nranks && st == ORB_OK; r++) {
            int64_t best[2] = {0, INT64_MAX}; /* offset, half round trip */
            for (int k = 0; k < rounds && st == ORB_OK; k++) {
                int64_t t1 = mono_ns(), tr = 0;
                st = send_msg(bs->fds[r], ORB_BOOT_CLOCK, &t1, sizeof t1, NULL, 0, deadline);
                if (st == ORB_OK)
                    st = recv_msg(bs->fds[r], ORB_BOOT_CLOCK, &tr, sizeof tr, deadline, why, sizeof why);
                int64_t t2 = mono_ns();
                if (st == ORB_OK && (t2 - t1) / 2 < best[1]) {
                    best[0] = t1 + (t2 - t1) / 2 - tr;
                    best[1] = (t2 - t1) / 2;
                }
            }
            if (st == ORB_OK)
                st = send_msg(bs->fds[r], ORB_BOOT_CLOCK, best, sizeof best, NULL, 0, deadline);
            else
                ORB_WARN("bootstrap clock exchange: rank %d: %s", r, why);
        }
        return st;
    }
    for (int k = 0; k < rounds && st == ORB_OK; k++) {
        int64_t t1;
        st = recv_msg(bs->root_fd, ORB_BOOT_CLOCK, &t1, sizeof t1, deadline, why, sizeof why);
        int64_t now = mono_ns();
        if (st == ORB_OK)
            st = send_msg(bs->root_fd, ORB_BOOT_CLOCK, &now, sizeof now, NULL, 0, deadline);
    }
    int64_t best[2];
    if (st == ORB_OK)
        st = recv_msg(bs->root_fd, ORB_BOOT_CLOCK, best, sizeof best, deadline, why, sizeof why);
    if (st != ORB_OK) {
        ORB_WARN("bootstrap clock exchange: rank 0: %s", why);
        return st;
    }
    *offset_ns = best[0];
    *err_ns = best[1];
    return ORB_OK;
}

orb_status_t orb_bootstrap_check(orb_bootstrap_t *bs, int *lost)
{
    struct pollfd p;
    int n = bs->rank == 0 ? bs->nranks : 1;
    for (int i = 0; i < n; i++) {
        int fd = bs->rank == 0 ? bs->fds[i] : bs->root_fd;
        if (fd < 0)
            continue;
        p.fd = fd;
        p.events = POLLIN | POLLRDHUP;
        p.revents = 0;
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR))) {
            *lost = bs->rank == 0 ? i : 0;
            return ORB_ERR_PEER_LOST;
        }
    }
    return ORB_OK;
}

void orb_bootstrap_close(orb_bootstrap_t *bs)
{
    if (bs->root_fd >= 0)
        close(bs->root_fd);
    bs->root_fd = -1;
    if (bs->fds) {
        for (int r = 0; r < bs->nranks; r++)
            if (bs->fds[r] >= 0)
                close(bs->fds[r]);
        free(bs->fds);
        bs->fds = NULL;
    }
    free(bs->cards);
    bs->cards = NULL;
}
