/* Communicator life cycle: init in two phases (bootstrap, then build from the bootstrap),
 * and destroy. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm_impl.h"
#include "comm/comm_trace.h"
#include "comm/cuda_hooks.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/param.h"
#include "core/proc.h"
#include "transport/window.h"

void orb_comm_free(struct orb_comm *c)
{
    for (int i = 0; i < ORB_PLAN_CACHE; i++)
        if (c->cache[i].valid)
            orb_plan_free(&c->cache[i].plan);
    for (int i = 0; i < ORB_PLAN_CACHE; i++)
        free(c->cache[i].vec);
    orb_comm_trace_teardown(c);
    orb_comm_topo_free(c);
    /* Endpoints first: their threads wake us through our box. */
    for (int t = 0; orb_transports[t]; t++)
        if (c->ep[t])
            orb_transports[t]->destroy(c->ep[t]);
    if (c->box_linked)
        orb_box_unlink(c->box_name);
    if (c->box)
        atomic_store(&c->box->closed, 1);
    if (c->boxes) {
        for (int r = 0; r < c->nranks; r++)
            if (c->boxes[r] && r != c->rank) {
                orb_box_wake(c->boxes[r]); /* wake anyone still waiting on us */
                orb_box_release(c->boxes[r], 0);
            }
        free(c->boxes);
    }
    orb_box_release(c->box, 0);
    orb_bootstrap_close(&c->bs);
    for (int r = 0; c->peer_windows && r < c->nranks; r++)
        orb_peer_windows_close(c->peer_windows[r]);
    free(c->peer_windows);
    free(c->tp_of);
    free(c->send);
    free(c->recv);
    free(c->ring);
    free(c->host_of);
    free(c->scratch);
    free(c->vec);
    free(c->vec_peer);
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

/* err for a step whose helper returned a status without text of its own: the step, the
 * status and what to do. Text a helper did leave stays. */
static orb_status_t step_failed(orb_status_t st, char *err, size_t errlen, const char *step, ...)
    __attribute__((format(printf, 4, 5)));
static orb_status_t step_failed(orb_status_t st, char *err, size_t errlen, const char *step, ...)
{
    if (st == ORB_OK || err[0])
        return st;
    char what[160];
    va_list ap;
    va_start(ap, step);
    vsnprintf(what, sizeof what, step, ap);
    va_end(ap);
    const char *todo = st == ORB_ERR_NO_MEMORY ? "free memory, or lower ORBIT_SHM_SLOTS / ORBIT_SHM_SLOT_BYTES"
                       : st == ORB_ERR_TIMEOUT ? "a rank is late or gone: see the other ranks' errors, or raise "
                                                 "ORBIT_INIT_TIMEOUT"
                                               : "see the other ranks' errors (ORBIT_DEBUG=INFO tells more)";
    snprintf(err, errlen, "%s: %s; %s", what, orb_strerror(st), todo);
    return st;
}

void orb_comm_settings_from_params(struct orb_comm *c)
{
    c->nchannels = read_int_param(ORB_PARAM_NCHANNELS, 2, ORB_MAX_CHANNELS);
    c->nslots = (uint32_t)read_int_param(ORB_PARAM_SHM_SLOTS, 2, 1024); /* a FIFO needs 2 */
    c->slot_bytes = (size_t)read_int_param(ORB_PARAM_SHM_SLOT_BYTES, 64, 64 << 20) / 64 * 64;
    c->nsmall = (uint32_t)read_int_param(ORB_PARAM_SHM_SMALL_SLOTS, 0, 1024);
    c->release_batch = (uint32_t)read_int_param(ORB_PARAM_SHM_RELEASE_BATCH, 0, 1024);
    c->timeout_s = orb_param_num(ORB_PARAM_TIMEOUT);
    if (c->timeout_s <= 0)
        c->timeout_s = 1e9;
    c->check_signatures = orb_param_num(ORB_PARAM_CHECK) != 0;
    c->deterministic = orb_param_num(ORB_PARAM_DETERMINISTIC) != 0;
}

orb_status_t orb_comm_bootstrap(struct orb_comm *c, const orb_unique_id_t *id, char *err, size_t errlen)
{
    const int rank = c->rank, nranks = c->nranks;
    err[0] = 0;
    c->bs.root_fd = -1;

    orb_sockaddr_t root_addr;
    uint8_t secret[ORB_SECRET_BYTES];
    if (orb_id_decode(id, &root_addr, secret) != ORB_OK) {
        snprintf(err, errlen, "the unique id is not valid (not made by orb_get_unique_id, or damaged in transit)");
        return ORB_ERR_INVALID_ARG;
    }
    c->boxes = calloc((size_t)nranks, sizeof *c->boxes);
    c->tp_of = malloc((size_t)nranks);
    if (!c->boxes || !c->tp_of)
        return step_failed(ORB_ERR_NO_MEMORY, err, errlen, "the tables of every rank's box and transport");
    snprintf(c->box_name, sizeof c->box_name, "/orbit-%02x%02x%02x%02x%02x%02x-%d", secret[0], secret[1], secret[2],
             secret[3], secret[4], secret[5], rank);
    orb_status_t st = orb_box_create(&c->box, c->box_name, rank, nranks, err, errlen);
    if (st != ORB_OK)
        return st;
    c->box_linked = 1;
    c->boxes[rank] = c->box;

    orb_card_t card = {0};
    card.rank = rank;
    card.pid = (int32_t)getpid();
    card.pid_start = orb_proc_start_time(getpid());
    card.host_id = orb_host_id();
    card.family = root_addr.ss.ss_family;
    gethostname(card.hostname, sizeof card.hostname - 1);
    snprintf(card.shm_name, sizeof card.shm_name, "%s", c->box_name);
    card.nchannels = c->nchannels;
    card.nslots = c->nslots;
    card.nsmall = c->nsmall;
    card.slot_bytes = c->slot_bytes;
    orb_transport_args_t ta = {.rank = rank, .nranks = nranks, .nchannels = c->nchannels, .nslots = c->nslots,
                               .slot_bytes = c->slot_bytes, .nsmall = c->nsmall, .release_batch = c->release_batch,
                               .secret = secret, .name = c->box_name, .box = c->box, .boxes = c->boxes, .bs = &c->bs};
    for (int t = 0; orb_transports[t]; t++) {
        st = orb_transports[t]->create(&c->ep[t], &ta, &card, err, errlen);
        if (st != ORB_OK)
            return step_failed(st, err, errlen, "the %s transport", orb_transports[t]->name);
    }
    st = orb_bootstrap_init(&c->bs, id, nranks, rank, &card, orb_param_num(ORB_PARAM_INIT_TIMEOUT), err, errlen);
    return step_failed(st, err, errlen, "the rendezvous with rank 0");
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
    c->host_ranks = 0;
    for (int r = 0; r < c->nranks; r++)
        c->host_ranks += c->host_of[r] == c->host_of[c->rank];
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

/* Each peer goes to the first transport that reaches it; then every transport connects its
 * peers (maybe none: it still learns that it has nothing to do). */
static orb_status_t connect_transports(struct orb_comm *c, double deadline, char *err, size_t errlen)
{
    const orb_card_t *me = &c->bs.cards[c->rank];
    int *peers = malloc(sizeof(int) * (size_t)c->nranks);
    if (!peers)
        return step_failed(ORB_ERR_NO_MEMORY, err, errlen, "the list of peers to connect");
    for (int r = 0; r < c->nranks; r++) {
        c->tp_of[r] = -1;
        for (int t = 0; orb_transports[t] && r != c->rank && c->tp_of[r] < 0; t++)
            if (orb_transports[t]->reaches(me, &c->bs.cards[r]))
                c->tp_of[r] = (int8_t)t;
    }
    orb_status_t st = ORB_OK;
    for (int t = 0; orb_transports[t] && st == ORB_OK; t++) {
        int n = 0;
        for (int r = 0; r < c->nranks; r++)
            if (c->tp_of[r] == t)
                peers[n++] = r;
        st = orb_transports[t]->connect(c->ep[t], c->bs.cards, peers, n, c->send, c->recv, deadline, err, errlen);
        if (st != ORB_OK)
            step_failed(st, err, errlen, "the %s transport", orb_transports[t]->name);
        /* peers it could not carry (both ends agreed): the next transport that reaches them */
        for (int i = 0; i < n && st == ORB_OK; i++) {
            int r = peers[i];
            if (c->send[(size_t)r * (size_t)c->nchannels].ops)
                continue;
            c->tp_of[r] = -1;
            for (int u = t + 1; orb_transports[u] && c->tp_of[r] < 0; u++)
                if (orb_transports[u]->reaches(me, &c->bs.cards[r]))
                    c->tp_of[r] = (int8_t)u;
            if (c->tp_of[r] < 0)
                st = step_failed(ORB_ERR_INTERNAL, err, errlen, "no transport left for rank %d", r);
        }
    }
    free(peers);
    return st;
}

/* Every rank's FIFOs have the same geometry, told from the cards before anything is mapped:
 * every rank sees the same cards, so each fails alike and names the settings, where a peer's
 * segment checked at attach would leave the rank that attaches last to find it gone. */
static orb_status_t same_geometry(const struct orb_comm *c, char *err, size_t errlen)
{
    const orb_card_t *me = &c->bs.cards[c->rank];
    for (int r = 0; r < c->nranks; r++) {
        const orb_card_t *o = &c->bs.cards[r];
        if (o->nchannels == me->nchannels && o->nslots == me->nslots && o->slot_bytes == me->slot_bytes &&
            o->nsmall == me->nsmall)
            continue;
        snprintf(err, errlen, "rank %d was started with %d channels x %u slots x %llu bytes and %u small slots, rank %d "
                              "with %d x %u x %llu and %u: set ORBIT_NCHANNELS / ORBIT_SHM_SLOTS / "
                              "ORBIT_SHM_SLOT_BYTES / ORBIT_SHM_SMALL_SLOTS alike on every rank",
                 r, o->nchannels, o->nslots, (unsigned long long)o->slot_bytes, o->nsmall, c->rank, me->nchannels,
                 me->nslots, (unsigned long long)me->slot_bytes, me->nsmall);
        return ORB_ERR_MISMATCH;
    }
    return ORB_OK;
}

orb_status_t orb_comm_build(struct orb_comm *c, char *err, size_t errlen)
{
    const int rank = c->rank, nranks = c->nranks;
    const double init_timeout = orb_param_num(ORB_PARAM_INIT_TIMEOUT);
    const uint64_t host_id = c->bs.cards[rank].host_id;
    orb_status_t st;
    err[0] = 0;
    if ((st = same_geometry(c, err, errlen)) != ORB_OK)
        return st;
    for (int r = 0; r < nranks; r++) {
        if (r == rank || c->bs.cards[r].host_id != host_id)
            continue; /* other hosts: no box to map */
        st = orb_box_attach(&c->boxes[r], c->bs.cards[r].shm_name, r, nranks, err, errlen);
        if (st != ORB_OK)
            return st;
    }
    size_t nconn = (size_t)nranks * (size_t)c->nchannels;
    c->send = calloc(nconn, sizeof *c->send);
    c->recv = calloc(nconn, sizeof *c->recv);
    c->ring = malloc(sizeof(int) * (size_t)nranks);
    c->host_of = malloc(sizeof(int) * (size_t)nranks);
    if (!c->send || !c->recv || !c->ring || !c->host_of)
        return step_failed(ORB_ERR_NO_MEMORY, err, errlen, "the connection tables");
    st = connect_transports(c, orb_now() + init_timeout, err, errlen);
    if (st != ORB_OK)
        return st;
    /* Every rank has mapped every segment: the names can go, so a crash leaves nothing. */
    st = orb_bootstrap_barrier(&c->bs, orb_now() + init_timeout);
    orb_box_unlink(c->box_name);
    c->box_linked = 0;
    for (int t = 0; orb_transports[t]; t++)
        orb_transports[t]->ready(c->ep[t]);
    if (st != ORB_OK)
        return step_failed(st, err, errlen, "the barrier after every rank connected");
    ring_by_host(c); /* refined by the topology below */
    st = orb_comm_wait_setup(c, orb_now() + init_timeout); /* before binding narrows our CPUs */
    if (st != ORB_OK)
        return step_failed(st, err, errlen, "the exchange of CPU masks");
    st = orb_comm_order_ranks(c, orb_now() + init_timeout, err, errlen);
    if (st != ORB_OK)
        return step_failed(st, err, errlen, "ordering the ranks by topology");
    for (int i = 0; i < nranks; i++)
        if (c->ring[i] == rank) {
            c->ring_next = c->ring[(i + 1) % nranks];
            c->ring_prev = c->ring[(i + nranks - 1) % nranks];
        }
    st = orb_comm_calibrate(c, c->wait.spin_s, orb_now() + init_timeout, err, errlen);
    if (st != ORB_OK)
        return step_failed(st, err, errlen, "calibrating the links");
    st = orb_comm_price_links(c, orb_now() + init_timeout, err, errlen);
    if (st != ORB_OK)
        return step_failed(st, err, errlen, "agreeing on the link costs");
    /* Rank 0's clock against ours, for traces on one timeline: always, since a trace may
     * start at any call (orb_comm_trace_start), and it costs a few round trips. */
    st = orb_bootstrap_clock(&c->bs, 6, orb_now() + init_timeout, &c->clock_offset_ns, &c->clock_err_ns);
    if (st != ORB_OK)
        return step_failed(st, err, errlen, "the exchange of clocks with rank 0");
    st = orb_comm_cma_setup(c, orb_now() + init_timeout, err, errlen);
    if (st != ORB_OK)
        return step_failed(st, err, errlen, "agreeing on single-copy reads");
    orb_comm_stream_setup(c);
    st = orb_comm_slot_stores_setup(c, err, errlen);
    if (st != ORB_OK)
        return step_failed(st, err, errlen, "choosing how to write into shared-memory slots");
    orb_comm_exec_env(c);
    orb_comm_trace_setup(c);
    return ORB_OK;
}

orb_status_t orb_comm_start(struct orb_comm *c, const orb_unique_id_t *id, char *err, size_t errlen)
{
    orb_status_t st = orb_comm_bootstrap(c, id, err, errlen);
    if (st == ORB_OK)
        st = orb_comm_build(c, err, errlen);
    if (st == ORB_OK && orb_comm_live_add(c) != 0)
        st = step_failed(ORB_ERR_NO_MEMORY, err, errlen, "the registry of live communicators");
    if (st != ORB_OK) {
        if (!err[0])
            snprintf(err, errlen, "%s", orb_strerror(st));
        orb_comm_free(c);
        return st;
    }
    c->magic = ORB_COMM_MAGIC;
    ORB_INFO("communicator ready: %d ranks, %d channels x %u slots x %zu bytes and %u small slots of shared memory "
             "per peer", c->nranks, c->nchannels, c->nslots, c->slot_bytes, c->nsmall);
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
    if (!c) {
        orb_set_thread_error("orb_comm_init_rank: rank %d: out of memory for the communicator", rank);
        return ORB_ERR_NO_MEMORY;
    }
    c->rank = rank;
    c->nranks = nranks;
    orb_comm_settings_from_params(c);
    char err[ORB_ERRMSG_BYTES] = "";
    orb_status_t st = orb_comm_start(c, &id, err, sizeof err);
    if (st != ORB_OK) {
        orb_set_thread_error("orb_comm_init_rank: rank %d: %s", rank, err);
        return st;
    }
    *out = c;
    return ORB_OK;
}

orb_status_t orb_comm_destroy(orb_comm_t comm)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_destroy");
    if (st != ORB_OK)
        return st;
    /* The last rooted call's neighbours may not have answered yet: a disagreement there is
     * still reported, here (its message names that call). A communicator that failed or was
     * aborted has reported already. */
    if (!comm->broken && !atomic_load(&comm->aborted))
        st = orb_host_settle(comm);
    orb_comm_live_remove(comm);
    orb_cuda_comm_destroy(comm);
    orb_comm_free(comm);
    return st;
}
