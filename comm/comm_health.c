/* The executor's view of its communicator (orb_exec_env_t callbacks): the doorbell it sleeps
 * on, whether the job is still healthy while it waits, and how a failure reaches every rank.
 * Every transport is asked the same way; this file never knows which one a peer uses. */
#include <stdio.h>

#include "collectives/tuner.h"
#include "comm/comm_impl.h"
#include "core/param.h"

static uint32_t cb_arm(void *ctx)
{
    struct orb_comm *c = ctx;
    return orb_box_arm(c->box);
}

static void cb_disarm(void *ctx)
{
    struct orb_comm *c = ctx;
    orb_box_disarm(c->box);
}

static void cb_sleep(void *ctx, uint32_t seen, double max_s)
{
    struct orb_comm *c = ctx;
    for (int t = 0; orb_transports[t]; t++)
        if (orb_transports[t]->idle && c->ep[t])
            orb_transports[t]->idle(c->ep[t]);
    orb_box_wait(c->box, seen, max_s);
}

void orb_comm_flush_held(struct orb_comm *c)
{
    for (int t = 0; orb_transports[t]; t++)
        if (orb_transports[t]->flush && c->ep[t])
            orb_transports[t]->flush(c->ep[t]);
}

static void cb_flush(void *ctx) { orb_comm_flush_held(ctx); }

static void post_to(struct orb_comm *c, int peer, orb_status_t st, const char *msg)
{
    int t = c->tp_of[peer];
    if (t >= 0)
        orb_transports[t]->post_error(c->ep[t], peer, st, msg);
}

static void tell_everyone(struct orb_comm *c, orb_status_t st, const char *msg)
{
    for (int r = 0; r < c->nranks; r++)
        if (r != c->rank)
            post_to(c, r, st, msg);
}

/* A mismatch concerns every rank: those not talking to us directly would wait forever on
 * ranks that gave up. The peer gets its own wording; the others get the same facts. */
static void cb_post_error(void *ctx, int peer, orb_status_t st, const char *msg)
{
    struct orb_comm *c = ctx;
    post_to(c, peer, st, msg);
    orb_box_post(c->box, c->rank, st, msg); /* our box tells why we leave */
    tell_everyone(c, st, msg);
}

static orb_status_t cb_check(void *ctx, const int *waiting_on, int n, char *err, size_t errlen)
{
    struct orb_comm *c = ctx;
    if (atomic_load(&c->aborted)) {
        snprintf(err, errlen, "rank %d: orb_comm_abort was called on this communicator", c->rank);
        return ORB_ERR_ABORTED;
    }
    orb_status_t st = orb_box_error(c->box, err, errlen);
    if (st != ORB_OK)
        return st;
    char note[ORB_ERRMSG_BYTES]; /* what the other ranks are told; it ends up in their last error */
    for (int t = 0; orb_transports[t]; t++) {
        int lost = -1;
        st = orb_transports[t]->check_alive(c->ep[t], waiting_on, n, &lost, err, note, errlen < sizeof note ? errlen
                                                                                                          : sizeof note);
        if (st == ORB_OK)
            continue;
        if (note[0]) { /* a loss nobody has told yet */
            orb_box_post(c->box, c->rank, st, note); /* our box tells why we leave */
            tell_everyone(c, st, note);
            atomic_store(&c->async_error, st);
        }
        return st;
    }
    return ORB_OK;
}

void orb_comm_exec_env(struct orb_comm *c)
{
    c->env = (orb_exec_env_t){
        .rank = c->rank, .nranks = c->nranks, .nchannels = c->nchannels, .check_signatures = c->check_signatures,
        .send = c->send, .recv = c->recv, .ctx = c, .arm = cb_arm, .disarm = cb_disarm, .sleep = cb_sleep,
        .flush = cb_flush, .check = cb_check, .post_error = cb_post_error, .timeout_s = c->timeout_s, .slot_bytes = c->slot_bytes,
        .spin_s = c->wait.spin_s, .idle_mask = c->wait.idle_mask, .yield_s = orb_param_num(ORB_PARAM_YIELD_US) * 1e-6,
        .due = &c->due,
    };
    /* a root runs as many calls ahead as a FIFO holds small pieces: in its small ring, or in
     * its large slots where they are the deeper (or shared memory has no small ring) */
    c->due.max = orb_exec_due_max(c->nsmall > c->nslots ? c->nsmall : c->nslots);
    /* The eager path moves the one piece the plan would: never more than the tuner keeps in
     * one piece, a chunk (ORBIT_CHUNK_BYTES) or a slot holds, nor what the plan would send
     * from the caller's buffer (tcp) */
    const double want = orb_param_num(ORB_PARAM_EAGER_BYTES), chunk = orb_param_num(ORB_PARAM_CHUNK_BYTES);
    size_t e = want <= 0 ? 0 : want < ORB_TUNER_ONE_PIECE ? (size_t)want : ORB_TUNER_ONE_PIECE;
    if (chunk > 0 && chunk < (double)e)
        e = (size_t)chunk;
    if (e > c->slot_bytes)
        e = c->slot_bytes;
    if (c->local_send_bytes && e >= c->local_send_bytes)
        e = c->local_send_bytes - 1;
    c->eager_bytes = e;
    /* Two ranks' rooted calls take it only where the receiver vouches for the sender's piece
     * (exec.h: checks on, shared memory, one piece one way), and not where ORBIT_ALGO=ordered
     * plans a reduce of two ranks as pieces both ways */
    c->eager_colls = e ? 1u << ORB_COLL_SEND | 1u << ORB_COLL_RECV : 0;
    if (e && c->nranks == 2 && c->check_signatures &&
        c->send[(size_t)(1 - c->rank) * (size_t)c->nchannels].ops->tail_is_receivers &&
        orb_tuner_forced_algo(orb_param_str(ORB_PARAM_S_ALGO)) != ORB_ALGO_ORDERED)
        c->eager_colls |= 1u << ORB_COLL_BROADCAST | 1u << ORB_COLL_SCATTER | 1u << ORB_COLL_GATHER | 1u << ORB_COLL_REDUCE;
}
