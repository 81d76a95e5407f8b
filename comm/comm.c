/* Communicator life cycle: unique ids, init (bootstrap, shared memory), destroy, abort,
 * errors, and the health checks the executor calls while it waits. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm_impl.h"
#include "comm/cuda_hooks.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/param.h"
#include "core/proc.h"

/* ---- errors ------------------------------------------------------------------------- */

static _Thread_local char thread_error[1536];

void orb_set_thread_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(thread_error, sizeof thread_error, fmt, ap);
    va_end(ap);
    ORB_WARN("%s", thread_error);
}

orb_status_t orb_comm_fail(struct orb_comm *c, orb_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->last_error, sizeof c->last_error, fmt, ap);
    va_end(ap);
    snprintf(thread_error, sizeof thread_error, "%s", c->last_error);
    ORB_WARN("%s: %s", orb_status_name(st), c->last_error);
    return st;
}

/* ---- live communicators: lets every call reject a destroyed or bogus handle ------------ */

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct orb_comm **live;
static size_t nlive, caplive;

static int live_add(struct orb_comm *c)
{
    pthread_mutex_lock(&live_lock);
    if (nlive == caplive) {
        size_t n = caplive ? 2 * caplive : 8;
        struct orb_comm **p = realloc(live, n * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&live_lock);
            return -1;
        }
        live = p;
        caplive = n;
    }
    live[nlive++] = c;
    pthread_mutex_unlock(&live_lock);
    return 0;
}

static void live_remove(struct orb_comm *c)
{
    pthread_mutex_lock(&live_lock);
    for (size_t i = 0; i < nlive; i++)
        if (live[i] == c) {
            live[i] = live[--nlive];
            break;
        }
    pthread_mutex_unlock(&live_lock);
}

orb_status_t orb_comm_check_handle(struct orb_comm *c, const char *fn)
{
    if (!c) {
        orb_set_thread_error("%s: comm is NULL: pass a communicator from orb_comm_init_rank/_env", fn);
        return ORB_ERR_INVALID_ARG;
    }
    int found = 0;
    pthread_mutex_lock(&live_lock);
    for (size_t i = 0; i < nlive && !found; i++)
        found = live[i] == c;
    pthread_mutex_unlock(&live_lock);
    if (!found) {
        orb_set_thread_error("%s: comm %p is not a live communicator (used after orb_comm_destroy?)", fn, (void *)c);
        return ORB_ERR_INVALID_ARG;
    }
    return ORB_OK;
}

const char *orb_comm_last_error(orb_comm_t comm)
{
    if (!comm)
        return thread_error;
    int found = 0;
    pthread_mutex_lock(&live_lock);
    for (size_t i = 0; i < nlive && !found; i++)
        found = live[i] == comm;
    pthread_mutex_unlock(&live_lock);
    return found ? comm->last_error : thread_error;
}

/* ---- executor callbacks ------------------------------------------------------------- */

static uint32_t cb_doorbell(void *ctx)
{
    struct orb_comm *c = ctx;
    return atomic_load(&c->shm.self->doorbell);
}

static void cb_sleep(void *ctx, uint32_t seen, double max_s)
{
    struct orb_comm *c = ctx;
    orb_shm_wait(&c->shm, seen, max_s);
}

static void tell_everyone(struct orb_comm *c, orb_status_t st, const char *msg)
{
    for (int r = 0; r < c->nranks; r++) {
        if (r == c->rank)
            continue;
        if (c->shm.peers[r])
            orb_shm_post_error(&c->shm, r, st, msg);
        else if (c->net)
            orb_net_post_error(c->net, r, st, msg);
    }
}

static void cb_net_wake(void *arg)
{
    struct orb_comm *c = arg;
    orb_shm_ring(c->shm.self);
}

static void cb_net_error(void *arg, int from, orb_status_t st, const char *msg)
{
    struct orb_comm *c = arg;
    (void)from;
    orb_shm_post_error(&c->shm, c->rank, st, msg); /* into our own box: the executor looks there */
}

/* A mismatch concerns every rank: those not talking to us directly would wait forever on
 * ranks that gave up. The peer gets its own wording; the others get the same facts. */
static void cb_post_error(void *ctx, int peer, orb_status_t st, const char *msg)
{
    struct orb_comm *c = ctx;
    if (c->shm.peers[peer])
        orb_shm_post_error(&c->shm, peer, st, msg);
    else if (c->net)
        orb_net_post_error(c->net, peer, st, msg);
    orb_shm_post_error(&c->shm, c->rank, st, msg); /* our box tells why we leave */
    tell_everyone(c, st, msg);
}

static orb_status_t cb_check(void *ctx, const int *waiting_on, int n, char *err, size_t errlen)
{
    struct orb_comm *c = ctx;
    if (atomic_load(&c->aborted)) {
        snprintf(err, errlen, "rank %d: orb_comm_abort was called on this communicator", c->rank);
        return ORB_ERR_ABORTED;
    }
    int32_t posted = atomic_load(&c->shm.self->err_status);
    if (posted != 0 && posted != ORB_ERR_IN_PROGRESS) {
        snprintf(err, errlen, "%s", c->shm.self->err_msg);
        return (orb_status_t)posted;
    }
    for (int i = 0; i < n; i++) {
        int p = waiting_on[i];
        orb_shm_hdr_t *h = c->shm.peers[p];
        if (h && atomic_load(&h->closed)) {
            snprintf(err, errlen, "rank %d (%s) destroyed its communicator while rank %d still waited for it: "
                                  "did it skip a collective call?",
                     p, c->bs.cards[p].hostname, c->rank);
            return ORB_ERR_PEER_LOST;
        }
    }
    for (int p = 0; p < c->nranks; p++) {
        if (p == c->rank || !c->shm.peers[p])
            continue;
        const orb_card_t *cd = &c->bs.cards[p];
        if (!atomic_load(&c->shm.peers[p]->closed) && !orb_proc_alive(cd->pid, cd->pid_start)) {
            /* A survivor that reported a loss and exited is not the loss: whoever noticed
             * first posted it to us before leaving, so the box names the rank that died. */
            posted = atomic_load(&c->shm.self->err_status);
            if (posted != 0 && posted != ORB_ERR_IN_PROGRESS) {
                snprintf(err, errlen, "%s", c->shm.self->err_msg);
                return (orb_status_t)posted;
            }
            /* ... or it left before its message reached us: its own box says why it left. */
            int32_t theirs = atomic_load(&c->shm.peers[p]->err_status);
            if (theirs != 0 && theirs != ORB_ERR_IN_PROGRESS) {
                snprintf(err, errlen, "%s", c->shm.peers[p]->err_msg);
                return (orb_status_t)theirs;
            }
            snprintf(err, errlen, "rank %d (pid %d on %s) died while rank %d waited in a collective", p,
                     cd->pid, cd->hostname, c->rank);
            char msg[512];
            snprintf(msg, sizeof msg, "rank %d (pid %d on %s) died (noticed by rank %d)", p, cd->pid,
                     cd->hostname, c->rank);
            orb_shm_post_error(&c->shm, c->rank, ORB_ERR_PEER_LOST, msg); /* our box tells why we leave */
            tell_everyone(c, ORB_ERR_PEER_LOST, msg);
            atomic_store(&c->async_error, ORB_ERR_PEER_LOST);
            return ORB_ERR_PEER_LOST;
        }
    }
    int lost = -1;
    if (c->net && orb_net_check(c->net, &lost) != ORB_OK && lost >= 0) {
        snprintf(err, errlen, "rank %d (on %s) closed its connection to rank %d: it died or left", lost,
                 c->bs.cards[lost].hostname, c->rank);
        char msg[512];
        snprintf(msg, sizeof msg, "rank %d (on %s) died or left (noticed by rank %d)", lost, c->bs.cards[lost].hostname,
                 c->rank);
        orb_shm_post_error(&c->shm, c->rank, ORB_ERR_PEER_LOST, msg);
        tell_everyone(c, ORB_ERR_PEER_LOST, msg);
        atomic_store(&c->async_error, ORB_ERR_PEER_LOST);
        return ORB_ERR_PEER_LOST;
    }
    /* Ranks on other hosts are watched by the network transport, which tells a crash from a
     * rank that finished first and left (the bootstrap socket cannot). */
    return ORB_OK;
}

/* ---- unique ids --------------------------------------------------------------------- */

orb_status_t orb_get_unique_id(orb_unique_id_t *id)
{
    if (!id) {
        orb_set_thread_error("orb_get_unique_id: id is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    orb_sockaddr_t addr;
    char ifname[64] = "";
    orb_status_t st = orb_sockaddr_local(&addr, ifname, sizeof ifname);
    if (st != ORB_OK) {
        orb_set_thread_error("orb_get_unique_id: no usable network interface (ORBIT_SOCKET_IFNAME=\"%s\")",
                             orb_param_str(ORB_PARAM_S_SOCKET_IFNAME));
        return st;
    }
    orb_sockaddr_set_port(&addr, 0);
    int fd;
    st = orb_sock_listen(&addr, 128, &fd);
    if (st != ORB_OK) {
        orb_set_thread_error("orb_get_unique_id: cannot listen on interface %s", ifname);
        return st;
    }
    uint8_t secret[ORB_SECRET_BYTES];
    if (orb_random_bytes(secret, sizeof secret) != ORB_OK) {
        close(fd);
        orb_set_thread_error("orb_get_unique_id: getrandom failed: %s", strerror(errno));
        return ORB_ERR_SYSTEM;
    }
    orb_id_encode(id, &addr, secret);
    orb_bootstrap_register_listener(id, fd);
    char b[96];
    ORB_INFO("unique id: rank 0 will listen on %s (interface %s)", orb_sockaddr_str(&addr, b, sizeof b), ifname);
    return ORB_OK;
}

orb_status_t orb_unique_id_to_string(const orb_unique_id_t *id, char *out, size_t outlen)
{
    if (!id || !out || outlen < ORB_UNIQUE_ID_STR_BYTES) {
        orb_set_thread_error("orb_unique_id_to_string: need an id and %d bytes of output", ORB_UNIQUE_ID_STR_BYTES);
        return ORB_ERR_INVALID_ARG;
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < ORB_UNIQUE_ID_BYTES; i++) {
        unsigned char b = (unsigned char)id->internal[i];
        out[2 * i] = hex[b >> 4];
        out[2 * i + 1] = hex[b & 15];
    }
    out[2 * ORB_UNIQUE_ID_BYTES] = 0;
    return ORB_OK;
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = tolower(ch);
    return (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10 : -1;
}

static int parse_hex(const char *s, uint8_t *out, size_t n)
{
    if (strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

orb_status_t orb_unique_id_from_string(const char *str, orb_unique_id_t *id)
{
    if (!str || !id || parse_hex(str, (uint8_t *)id->internal, ORB_UNIQUE_ID_BYTES) != 0) {
        orb_set_thread_error("orb_unique_id_from_string: expected %d hex digits", 2 * ORB_UNIQUE_ID_BYTES);
        return ORB_ERR_INVALID_ARG;
    }
    orb_sockaddr_t a;
    uint8_t secret[ORB_SECRET_BYTES];
    if (orb_id_decode(id, &a, secret) != ORB_OK) {
        orb_set_thread_error("orb_unique_id_from_string: not an orbit unique id");
        return ORB_ERR_INVALID_ARG;
    }
    return ORB_OK;
}

/* ---- init --------------------------------------------------------------------------- */

static void comm_free(struct orb_comm *c)
{
    for (int i = 0; i < ORB_PLAN_CACHE; i++)
        if (c->cache[i].valid)
            orb_plan_free(&c->cache[i].plan);
    orb_comm_topo_free(c);
    orb_net_destroy(c->net); /* first: its thread rings the doorbell in shm */
    c->net = NULL;
    orb_shm_destroy(&c->shm);
    orb_bootstrap_close(&c->bs);
    free(c->send);
    free(c->recv);
    free(c->ring);
    free(c->host_of);
    free(c->scratch);
    c->magic = 0;
    free(c);
}

static int read_int_param(orb_param_num_t id, int lo, int hi)
{
    double v = orb_param_num(id);
    if (v < lo)
        v = lo;
    if (v > hi)
        v = hi;
    return (int)v;
}

/* Rank order, grouped by host (hosts in order of their lowest rank), so that a ring crosses
 * between hosts once per host. */
static void ring_by_host(struct orb_comm *c)
{
    c->nhosts = 0;
    for (int r = 0; r < c->nranks; r++) {
        int h = -1;
        for (int q = 0; q < r && h < 0; q++)
            if (c->bs.cards[q].host_id == c->bs.cards[r].host_id)
                h = c->host_of[q];
        c->host_of[r] = h >= 0 ? h : c->nhosts++;
    }
    int k = 0;
    char *placed = calloc((size_t)c->nranks, 1);
    if (!placed) {
        for (int r = 0; r < c->nranks; r++)
            c->ring[r] = r;
        return;
    }
    for (int r = 0; r < c->nranks; r++) {
        if (placed[r])
            continue;
        for (int q = r; q < c->nranks; q++)
            if (!placed[q] && c->bs.cards[q].host_id == c->bs.cards[r].host_id) {
                c->ring[k++] = q;
                placed[q] = 1;
            }
    }
    free(placed);
}

/* How long a waiting rank spins before it yields. With more ranks on this host than CPUs
 * to run them, the peer a rank waits for is often queued behind it on its own core, and
 * every microsecond spent spinning delays that peer: then yield at once, as Open MPI does
 * when oversubscribed (4 ranks on 2 cores: 8-byte all-reduce 50 -> 10 us). The CPUs are the
 * union of the host's ranks' affinity masks as they arrive (exchanged: a launcher that pins
 * each rank to its own core leaves each mask one CPU wide, the union as wide as the ranks).
 * Collective: every rank exchanges its mask, whatever ORBIT_SPIN_US says. */
static orb_status_t spin_default(struct orb_comm *c, uint64_t host_id, double deadline, double *spin_s)
{
    cpu_set_t *masks = calloc((size_t)c->nranks, sizeof *masks);
    if (!masks)
        return ORB_ERR_NO_MEMORY;
    if (sched_getaffinity(0, sizeof masks[c->rank], &masks[c->rank]) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long k = 0; k < n && k < CPU_SETSIZE; k++)
            CPU_SET((int)k, &masks[c->rank]);
    }
    orb_status_t st = orb_bootstrap_allgather(&c->bs, masks, sizeof *masks, deadline);
    if (st != ORB_OK) {
        free(masks);
        return st;
    }
    cpu_set_t all;
    CPU_ZERO(&all);
    int nlocal = 0;
    for (int r = 0; r < c->nranks; r++)
        if (c->bs.cards[r].host_id == host_id) {
            CPU_OR(&all, &all, &masks[r]);
            nlocal++;
        }
    free(masks);
    const int ncpu = CPU_COUNT(&all);
    const char *set = getenv("ORBIT_SPIN_US");
    if (set && *set)
        *spin_s = orb_param_num(ORB_PARAM_SPIN_US) * 1e-6;
    else
        *spin_s = nlocal > ncpu && ncpu > 0 ? 0.0 : orb_param_num(ORB_PARAM_SPIN_US) * 1e-6;
    ORB_INFO("rank %d: %d ranks on this host, %d CPUs between them: spin %g us before yielding", c->rank, nlocal,
             ncpu, *spin_s * 1e6);
    return ORB_OK;
}

orb_status_t orb_comm_init_rank(orb_comm_t *out, int nranks, orb_unique_id_t id, int rank)
{
    if (!out) {
        orb_set_thread_error("orb_comm_init_rank: comm (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    *out = NULL;
    if (nranks < 1 || nranks > ORB_MAX_RANKS) {
        orb_set_thread_error("orb_comm_init_rank: nranks=%d is out of range 1..%d", nranks, ORB_MAX_RANKS);
        return ORB_ERR_INVALID_ARG;
    }
    if (rank < 0 || rank >= nranks) {
        orb_set_thread_error("orb_comm_init_rank: rank=%d is out of range 0..%d (nranks=%d)", rank, nranks - 1, nranks);
        return ORB_ERR_INVALID_ARG;
    }
    orb_log_set_rank(rank);
    struct orb_comm *c = calloc(1, sizeof *c);
    if (!c)
        return ORB_ERR_NO_MEMORY;
    c->rank = rank;
    c->nranks = nranks;
    c->nchannels = read_int_param(ORB_PARAM_NCHANNELS, 2, ORB_MAX_CHANNELS);
    c->nslots = (uint32_t)read_int_param(ORB_PARAM_SHM_SLOTS, 2, 1024); /* rings need 2 */
    c->slot_bytes = (size_t)read_int_param(ORB_PARAM_SHM_SLOT_BYTES, 64, 64 << 20) / 64 * 64;
    c->timeout_s = orb_param_num(ORB_PARAM_TIMEOUT);
    if (c->timeout_s <= 0)
        c->timeout_s = 1e9;
    c->check_signatures = orb_param_num(ORB_PARAM_CHECK) != 0;
    c->bs.root_fd = -1;
    char err[1024] = "";
    orb_status_t st;

    orb_sockaddr_t root_addr;
    uint8_t secret[ORB_SECRET_BYTES];
    if (orb_id_decode(&id, &root_addr, secret) != ORB_OK) {
        orb_set_thread_error("orb_comm_init_rank: rank %d: the unique id is not valid (not made by "
                             "orb_get_unique_id, or damaged in transit)", rank);
        free(c);
        return ORB_ERR_INVALID_ARG;
    }
    char shm_name[64];
    snprintf(shm_name, sizeof shm_name, "/orbit-%02x%02x%02x%02x%02x%02x-%d", secret[0], secret[1], secret[2],
             secret[3], secret[4], secret[5], rank);
    st = orb_shm_create(&c->shm, shm_name, rank, nranks, c->nchannels, c->nslots, c->slot_bytes, err, sizeof err);
    if (st != ORB_OK) {
        orb_set_thread_error("orb_comm_init_rank: rank %d: %s", rank, err);
        free(c);
        return st;
    }

    orb_card_t card = {0};
    card.rank = rank;
    card.pid = (int32_t)getpid();
    card.pid_start = orb_proc_start_time(getpid());
    card.host_id = orb_host_id();
    card.family = root_addr.ss.ss_family;
    gethostname(card.hostname, sizeof card.hostname - 1);
    snprintf(card.shm_name, sizeof card.shm_name, "%s", shm_name);
    orb_net_callbacks_t ncb = {.wake = cb_net_wake, .on_error = cb_net_error, .arg = c};
    st = orb_net_create(&c->net, rank, nranks, c->nchannels, c->nslots, c->slot_bytes, secret, &ncb, &card, err,
                        sizeof err);
    if (st != ORB_OK) {
        orb_set_thread_error("orb_comm_init_rank: rank %d: %s", rank, err);
        goto fail;
    }
    double init_timeout = orb_param_num(ORB_PARAM_INIT_TIMEOUT);
    st = orb_bootstrap_init(&c->bs, &id, nranks, rank, &card, init_timeout, err, sizeof err);
    if (st != ORB_OK) {
        orb_set_thread_error("orb_comm_init_rank: rank %d: %s", rank, err);
        goto fail;
    }
    for (int r = 0; r < nranks; r++) {
        if (r == rank || c->bs.cards[r].host_id != card.host_id)
            continue; /* other hosts: the network transport, below */
        st = orb_shm_attach(&c->shm, r, c->bs.cards[r].shm_name, err, sizeof err);
        if (st != ORB_OK) {
            orb_set_thread_error("orb_comm_init_rank: rank %d: %s", rank, err);
            goto fail;
        }
    }
    /* Every rank has mapped every segment: the names can go, so a crash leaves nothing. */
    st = orb_bootstrap_barrier(&c->bs, orb_now() + init_timeout);
    orb_shm_unlink(&c->shm);
    if (st != ORB_OK) {
        orb_set_thread_error("orb_comm_init_rank: rank %d: a rank left during init", rank);
        goto fail;
    }
    size_t nconn = (size_t)nranks * (size_t)c->nchannels;
    c->send = calloc(nconn, sizeof *c->send);
    c->recv = calloc(nconn, sizeof *c->recv);
    c->ring = malloc(sizeof(int) * (size_t)nranks);
    c->host_of = malloc(sizeof(int) * (size_t)nranks);
    if (!c->send || !c->recv || !c->ring || !c->host_of) {
        st = ORB_ERR_NO_MEMORY;
        goto fail;
    }
    int *remote = malloc(sizeof(int) * (size_t)nranks), nremote = 0;
    if (!remote) {
        st = ORB_ERR_NO_MEMORY;
        goto fail;
    }
    for (int r = 0; r < nranks; r++)
        if (r != rank && !c->shm.peers[r])
            remote[nremote++] = r;
    st = orb_net_connect(c->net, c->bs.cards, remote, nremote, c->send, c->recv, orb_now() + init_timeout, err,
                         sizeof err);
    free(remote);
    if (st != ORB_OK) {
        orb_set_thread_error("orb_comm_init_rank: rank %d: %s", rank, err);
        goto fail;
    }
    ring_by_host(c); /* refined by the topology below */
    double spin_s = 0;
    st = spin_default(c, card.host_id, orb_now() + init_timeout, &spin_s); /* before binding narrows our CPUs */
    if (st != ORB_OK) {
        orb_set_thread_error("orb_comm_init_rank: rank %d: a rank left while CPU masks were exchanged", rank);
        goto fail;
    }
    st = orb_comm_order_ranks(c, orb_now() + init_timeout, err, sizeof err);
    if (st != ORB_OK) {
        orb_set_thread_error("orb_comm_init_rank: rank %d: %s", rank, err);
        goto fail;
    }
    for (int i = 0; i < nranks; i++)
        if (c->ring[i] == rank) {
            c->ring_next = c->ring[(i + 1) % nranks];
            c->ring_prev = c->ring[(i + nranks - 1) % nranks];
        }
    for (int r = 0; r < nranks; r++) {
        if (r == rank || !c->shm.peers[r])
            continue;
        for (int ch = 0; ch < c->nchannels; ch++)
            orb_shm_connect(&c->shm, r, ch, &c->send[(size_t)r * (size_t)c->nchannels + (size_t)ch],
                            &c->recv[(size_t)r * (size_t)c->nchannels + (size_t)ch]);
    }
    c->env = (orb_exec_env_t){
        .rank = rank, .nranks = nranks, .nchannels = c->nchannels, .check_signatures = c->check_signatures,
        .send = c->send, .recv = c->recv, .ctx = c, .doorbell = cb_doorbell, .sleep = cb_sleep,
        .check = cb_check, .post_error = cb_post_error, .timeout_s = c->timeout_s, .slot_bytes = c->slot_bytes,
        .spin_s = spin_s, .yield_s = orb_param_num(ORB_PARAM_YIELD_US) * 1e-6,
    };
    if (live_add(c) != 0) {
        st = ORB_ERR_NO_MEMORY;
        goto fail;
    }
    c->magic = ORB_COMM_MAGIC;
    ORB_INFO("communicator ready: %d ranks, %d channels x %u slots x %zu bytes of shared memory per peer", nranks,
             c->nchannels, c->nslots, c->slot_bytes);
    *out = c;
    return ORB_OK;
fail:
    comm_free(c);
    return st;
}

static const char *env_first(const char *const *names, const char **which)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (v && *v) {
            if (which)
                *which = *names;
            return v;
        }
    }
    return NULL;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

orb_status_t orb_comm_init_env(orb_comm_t *comm)
{
    static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", NULL};
    static const char *const size_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", NULL};
    static const char *const local_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", NULL};
    if (!comm) {
        orb_set_thread_error("orb_comm_init_env: comm (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    *comm = NULL;
    const char *rv = NULL, *sv = NULL;
    const char *rs = env_first(rank_vars, &rv), *ss = env_first(size_vars, &sv);
    if (!rs || !ss) {
        orb_set_thread_error("orb_comm_init_env: no launcher environment: set RANK and WORLD_SIZE (torchrun), or run "
                             "under orbitrun, mpirun (OMPI_COMM_WORLD_*) or srun (SLURM_PROCID/SLURM_NTASKS)");
        return ORB_ERR_INVALID_ARG;
    }
    long rank, size, port = 29500;
    if (parse_int(ss, 1, ORB_MAX_RANKS, &size) != 0) {
        orb_set_thread_error("orb_comm_init_env: %s=\"%s\" is not a world size in 1..%d", sv, ss, ORB_MAX_RANKS);
        return ORB_ERR_INVALID_ARG;
    }
    if (parse_int(rs, 0, size - 1, &rank) != 0) {
        orb_set_thread_error("orb_comm_init_env: %s=\"%s\" is not a rank in 0..%ld", rv, rs, size - 1);
        return ORB_ERR_INVALID_ARG;
    }
    const char *ls = env_first(local_vars, NULL);
    long local = 0;
    if (ls)
        parse_int(ls, 0, ORB_MAX_RANKS, &local);
    const char *addr = getenv("MASTER_ADDR");
    if (!addr || !*addr) {
        /* One-host jobs need no address: everybody is on loopback. */
        const char *lsize = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        const char *nnodes = getenv("SLURM_NNODES");
        if ((lsize && !strcmp(lsize, ss)) || (nnodes && !strcmp(nnodes, "1")) || size == 1) {
            addr = "127.0.0.1";
        } else {
            orb_set_thread_error("orb_comm_init_env: rank %ld: MASTER_ADDR is not set: export MASTER_ADDR=<host of rank "
                                 "0> (and MASTER_PORT) on every rank (mpirun -x MASTER_ADDR -x MASTER_PORT)", rank);
            return ORB_ERR_INVALID_ARG;
        }
    }
    const char *ps = getenv("MASTER_PORT");
    if (ps && *ps && parse_int(ps, 1, 65535, &port) != 0) {
        orb_set_thread_error("orb_comm_init_env: rank %ld: MASTER_PORT=\"%s\" is not a port number", rank, ps);
        return ORB_ERR_INVALID_ARG;
    }
    orb_sockaddr_t a;
    if (orb_sockaddr_resolve(addr, (int)port, &a) != ORB_OK) {
        orb_set_thread_error("orb_comm_init_env: rank %ld: cannot resolve MASTER_ADDR=\"%s\"", rank, addr);
        return ORB_ERR_INVALID_ARG;
    }
    uint8_t secret[ORB_SECRET_BYTES];
    const char *sec = orb_param_str(ORB_PARAM_S_SECRET);
    if (*sec) {
        if (parse_hex(sec, secret, sizeof secret) != 0) {
            orb_set_thread_error("orb_comm_init_env: rank %ld: ORBIT_SECRET must be 32 hex digits", rank);
            return ORB_ERR_INVALID_ARG;
        }
    } else {
        /* No shared secret: derive one every rank can compute. Anyone who can reach the port
         * could join, so launchers should set ORBIT_SECRET (orbitrun does). */
        char buf[512];
        const char *job = getenv("SLURM_JOB_ID");
        if (!job)
            job = getenv("OMPI_MCA_ess_base_jobid");
        int n = snprintf(buf, sizeof buf, "%s:%ld:%ld:%s", addr, port, size, job ? job : "");
        uint64_t h1 = orb_hash64(buf, (size_t)n, 1), h2 = orb_hash64(buf, (size_t)n, 2);
        memcpy(secret, &h1, 8);
        memcpy(secret + 8, &h2, 8);
        ORB_INFO("ORBIT_SECRET is not set: the bootstrap secret is derived from MASTER_ADDR/MASTER_PORT");
    }
    orb_unique_id_t id;
    orb_id_encode(&id, &a, secret);
    orb_status_t st = orb_comm_init_rank(comm, (int)size, id, (int)rank);
    if (st == ORB_OK) {
        (*comm)->local_rank = (int)local;
        if (ls)
            orb_cuda_comm_bind_local_rank(*comm, (int)local); /* no CUDA call until a device buffer shows up */
    }
    return st;
}

typedef struct {
    orb_comm_t *slot;
    int n, rank;
    int device; /* -1: host rank */
    orb_unique_id_t id;
    orb_status_t st;
    char err[512];
} init_all_arg_t;

static void *init_all_thread(void *p)
{
    init_all_arg_t *a = p;
    a->st = orb_comm_init_rank(a->slot, a->n, a->id, a->rank);
    if (a->st == ORB_OK && a->device >= 0) {
        a->st = orb_cuda_comm_init_device(*a->slot, a->device, a->err, sizeof a->err);
        if (a->st != ORB_OK) {
            orb_comm_destroy(*a->slot);
            *a->slot = NULL;
        }
        return NULL;
    }
    if (a->st != ORB_OK)
        snprintf(a->err, sizeof a->err, "%s", orb_comm_last_error(NULL));
    return NULL;
}

orb_status_t orb_comm_init_all(orb_comm_t *comms, int ndev, const int *devices)
{
    if (!comms || ndev < 1 || ndev > 256) {
        orb_set_thread_error("orb_comm_init_all: need comms != NULL and ndev in 1..256 (ndev=%d)", ndev);
        return ORB_ERR_INVALID_ARG;
    }
#ifndef ORB_HAVE_CUDA
    if (devices) {
        for (int i = 0; i < ndev; i++)
            if (devices[i] >= 0) {
                orb_set_thread_error("orb_comm_init_all: devices[%d]=%d: this build of orbit has no CUDA support; "
                                     "pass devices=NULL (or -1 entries) for host ranks", i, devices[i]);
                return ORB_ERR_UNSUPPORTED;
            }
    }
#endif
    orb_unique_id_t id;
    orb_status_t st = orb_get_unique_id(&id);
    if (st != ORB_OK)
        return st;
    init_all_arg_t *args = calloc((size_t)ndev, sizeof *args);
    pthread_t *th = calloc((size_t)ndev, sizeof *th);
    if (!args || !th) {
        free(args);
        free(th);
        return ORB_ERR_NO_MEMORY;
    }
    for (int i = 0; i < ndev; i++) {
        args[i] = (init_all_arg_t){.slot = &comms[i], .n = ndev, .rank = i, .id = id,
                                   .device = devices ? devices[i] : -1};
        pthread_create(&th[i], NULL, init_all_thread, &args[i]);
    }
    st = ORB_OK;
    for (int i = 0; i < ndev; i++) {
        pthread_join(th[i], NULL);
        if (args[i].st != ORB_OK && st == ORB_OK) {
            st = args[i].st;
            snprintf(thread_error, sizeof thread_error, "%s", args[i].err);
        }
    }
    if (st != ORB_OK)
        for (int i = 0; i < ndev; i++)
            if (args[i].st == ORB_OK)
                orb_comm_destroy(comms[i]);
    free(args);
    free(th);
    return st;
}

/* ---- queries, abort, destroy ------------------------------------------------------- */

orb_status_t orb_comm_rank(orb_comm_t comm, int *rank)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_rank");
    if (st != ORB_OK)
        return st;
    if (!rank) {
        orb_set_thread_error("orb_comm_rank: rank (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    *rank = comm->rank;
    return ORB_OK;
}

orb_status_t orb_comm_size(orb_comm_t comm, int *size)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_size");
    if (st != ORB_OK)
        return st;
    if (!size) {
        orb_set_thread_error("orb_comm_size: size (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    *size = comm->nranks;
    return ORB_OK;
}

orb_status_t orb_comm_abort(orb_comm_t comm)
{
    /* Async-signal-safe: no locks, no allocation; an atomic store and a futex wake. */
    if (!comm || comm->magic != ORB_COMM_MAGIC)
        return ORB_ERR_INVALID_ARG;
    atomic_store(&comm->aborted, 1);
    atomic_store(&comm->async_error, ORB_ERR_ABORTED);
    if (comm->shm.self)
        orb_shm_ring(comm->shm.self);
    orb_cuda_comm_abort(comm);
    orb_net_set_aborted(comm->net); /* async-signal-safe: destroy will not wait to flush */
    return ORB_OK;
}

orb_status_t orb_comm_get_async_error(orb_comm_t comm, orb_status_t *async_error)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_get_async_error");
    if (st != ORB_OK)
        return st;
    if (!async_error) {
        orb_set_thread_error("orb_comm_get_async_error: async_error (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    *async_error = (orb_status_t)atomic_load(&comm->async_error);
    if (*async_error == ORB_OK)
        *async_error = orb_cuda_async_error(comm);
    return ORB_OK;
}

orb_status_t orb_comm_destroy(orb_comm_t comm)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_destroy");
    if (st != ORB_OK)
        return st;
    live_remove(comm);
    orb_cuda_comm_destroy(comm);
    comm_free(comm);
    return ORB_OK;
}
