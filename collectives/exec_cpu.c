#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "collectives/exec.h"
#include "collectives/slot_stores.h"
#include "core/clock.h"
#include "core/dtype.h"
#include "core/log.h"
#include "core/relax.h"
#include "kernels/copy_small.h"
#include "kernels/reduce.h"
#include "transport/cma.h"
#include "transport/window.h"

void orb_exec_describe_sig(const orb_slot_hdr_t *sig, char *buf, size_t len)
{
    orb_coll_t coll = (orb_coll_t)sig->coll;
    int rooted = orb_coll_rooted(coll), reduces = orb_coll_reduces(coll), p2p = orb_coll_p2p(coll);
    /* a send and its recv carry one signature: the sender's rank, and the tag where a
     * collective has its sequence number */
    int n = p2p ? snprintf(buf, len, "send/recv from rank %d (tag %llu, count %llu, %s", sig->root,
                           (unsigned long long)sig->seq, (unsigned long long)sig->count,
                           orb_dtype_name((orb_dtype_t)sig->dtype))
                : snprintf(buf, len, "%s #%llu (count %llu, %s", orb_coll_name(coll), (unsigned long long)sig->seq,
                           (unsigned long long)sig->count, orb_dtype_name((orb_dtype_t)sig->dtype));
    if (n < 0 || (size_t)n >= len)
        return;
    if (reduces)
        n += snprintf(buf + n, len - (size_t)n, ", %s", orb_op_name((orb_op_t)sig->op));
    if (rooted && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ", root %d", sig->root);
    if ((size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ")");
}

/* Why a lane is not moving, for timeouts and liveness checks. */
typedef struct {
    int peer;     /* -1: not blocked on a peer */
    int for_data; /* 1: waiting for data from peer; 0: for a free slot at peer */
    int by_group; /* waiting for an earlier call of the group to finish with a connection */
} blocked_t;

static int sync_pending(const orb_exec_op_t *o) { return o->sync_next >= 0 && !(o->sync_sent && o->sync_recvd); }

/* Does lane ch of op j (or its handshake) still use connection (peer, dir)? Only asked for groups. */
static int lane_uses(const orb_exec_op_t *o, int ch, int peer, int send_dir)
{
    if (ch == 0 && o->sync_next >= 0 &&
        ((send_dir && !o->sync_sent && o->sync_next == peer) || (!send_dir && !o->sync_recvd && o->sync_prev == peer)))
        return 1;
    const orb_lane_t *l = &o->plan->lanes[ch];
    for (size_t i = o->step[ch]; i < l->nsteps; i++) {
        int p = send_dir ? l->steps[i].send_peer : l->steps[i].recv_peer;
        if (p == peer)
            return 1;
    }
    return 0;
}

static int conn_free_for(const orb_exec_op_t *ops, int i, int ch, int peer, int send_dir)
{
    for (int j = 0; j < i; j++)
        if (((ch < ops[j].plan->nlanes && ops[j].step[ch] < ops[j].plan->lanes[ch].nsteps) ||
             (ch == 0 && sync_pending(&ops[j]))) &&
            lane_uses(&ops[j], ch, peer, send_dir))
            return 0;
    return 1;
}

static orb_status_t piece_mismatch(const orb_exec_env_t *env, const orb_slot_hdr_t *sig,
                                   const orb_slot_hdr_t *got, size_t want_bytes, int peer, char *err,
                                   size_t errlen)
{
    char mine[160], theirs[160], msg[512];
    orb_exec_describe_sig(sig, mine, sizeof mine);
    orb_exec_describe_sig(got, theirs, sizeof theirs);
    if (orb_exec_sig_equal(got, sig))
        snprintf(err, errlen, "rank %d: %s received a piece of %u bytes from rank %d where it expected %zu: "
                              "the ranks disagree on the algorithm or the pipeline settings "
                              "(ORBIT_ALGO, ORBIT_CHUNK_BYTES, ORBIT_NCHANNELS must match on every rank)",
                 env->rank, mine, got->nbytes, peer, want_bytes);
    else
        snprintf(err, errlen, "rank %d called %s but rank %d called %s: every rank must make the same "
                              "collective calls, with the same arguments, in the same order",
                 env->rank, mine, peer, theirs);
    snprintf(msg, sizeof msg, "rank %d called %s but rank %d called %s: every rank must make the same "
                              "collective calls, with the same arguments, in the same order",
             peer, theirs, env->rank, mine);
    if (env->post_error)
        env->post_error(env->ctx, peer, ORB_ERR_MISMATCH, msg);
    return ORB_ERR_MISMATCH;
}

/* This rank's call number seq where it sent to a vouching peer (ORB_VOUCH_TRUSTED: the history
 * in orb_exec_due_t), or NULL. */
static const orb_slot_hdr_t *sent_call(const orb_exec_env_t *env, uint64_t seq)
{
    const orb_exec_due_t *d = env->due;
    const int e = (int)(seq % ORB_EXEC_HIST_CAP);
    return d && seq && d->hist_sig[e].seq == seq ? &d->hist_sig[e] : NULL; /* (calls count from 1) */
}

/* This rank's signature to name beside a peer's piece got that does not match: its own call of
 * the piece's number where it sent in that call (two senders' pieces turn up in a later call),
 * else the call in hand, mine. */
static const orb_slot_hdr_t *mine_for(const orb_exec_env_t *env, const orb_slot_hdr_t *mine, const orb_slot_hdr_t *got)
{
    const orb_slot_hdr_t *h = got->seq != mine->seq && got->coll != ORB_COLL_SEND ? sent_call(env, got->seq) : NULL;
    return h ? h : mine;
}

orb_status_t orb_exec_data_mismatch(const orb_exec_env_t *env, const orb_slot_hdr_t *sig, const orb_slot_hdr_t *got,
                                    size_t want_bytes, int peer, char *err, size_t errlen)
{
    return piece_mismatch(env, mine_for(env, sig, got), got, want_bytes, peer, err, errlen);
}

/* rh, at the head of rc from peer, is a LATE handshake (ORB_PIECE_LATE). Held against the call
 * of its number among ops: a different signature, or the same where that call vouches too
 * (both ranks waiting to receive: they disagree on the algorithm), is a mismatch; else (this
 * rank sends in that call, or is past it: the peer's check of its data stands) it is dropped.
 * Returns 1 (taken) or a negative status. */
static int late_piece(const orb_exec_env_t *env, const orb_exec_op_t *ops, int nops, orb_conn_t *rc,
                      const orb_slot_hdr_t *rh, int peer, char *err, size_t errlen)
{
    for (int i = 0; i < nops; i++) {
        const orb_exec_op_t *o = &ops[i];
        if (o->sig.coll == ORB_COLL_SEND || o->sig.seq != rh->seq)
            continue;
        if (!orb_exec_sig_equal(rh, &o->sig) || o->vouch == ORB_VOUCH_CHECKS)
            return piece_mismatch(env, &o->sig, rh, 0, peer, err, errlen);
    }
    const orb_slot_hdr_t *h = sent_call(env, rh->seq);
    if (h && !orb_exec_sig_equal(rh, h))
        return piece_mismatch(env, h, rh, 0, peer, err, errlen);
    rc->ops->recv_release(rc);
    return 1;
}

/* The next piece from peer on rc past any LATE handshakes, which late_piece checks or drops:
 * every look at a FIFO but the streamlined pass's (which leaves them to this). NULL when none
 * is in, or on a mismatch (*st < 0; else *st is left alone). */
static orb_slot_hdr_t *recv_head(const orb_exec_env_t *env, const orb_exec_op_t *ops, int nops, orb_conn_t *rc,
                                 int peer, int *st, char *err, size_t errlen)
{
    orb_slot_hdr_t *rh;
    while ((rh = rc->ops->recv_acquire(rc)) && (rh->flags & ORB_PIECE_LATE)) {
        const int m = late_piece(env, ops, nops, rc, rh, peer, err, errlen);
        if (m < 0) {
            *st = m;
            return NULL;
        }
    }
    return rh;
}

/* Is a handshake piece of an earlier call still due from peer (channel 0)? It comes first. */
static int due_from(const orb_exec_env_t *env, int peer)
{
    const orb_exec_due_t *d = env->due;
    for (int i = 0; d && i < d->n; i++)
        if (d->peer[orb_exec_due_at(d, i)] == peer)
            return 1;
    return 0;
}

/* Entry i of d's ring leaves it; the later ones keep their order. */
static void due_remove(orb_exec_due_t *d, int i)
{
    if (d->n == 1)
        d->mixed = 0;
    if (i == 0) { /* the oldest: the usual case, where every entry is ring_prev's */
        d->head = orb_exec_due_at(d, 1);
        d->n--;
        return;
    }
    for (int j = i; j + 1 < d->n; j++) {
        const int to = orb_exec_due_at(d, j), from = orb_exec_due_at(d, j + 1);
        d->peer[to] = d->peer[from];
        d->sig[to] = d->sig[from];
    }
    d->n--;
}

/* Takes the due handshake pieces that are in, each peer's in order. Returns how many it took
 * (>= 0) or a negative status; the peers still owing one go to waiting. A peer whose oldest
 * entry is not in yet blocks its later ones, so those are not asked again: a root that ran
 * ahead has d->max entries of one peer due at every call. */
static int drain_due(const orb_exec_env_t *env, const orb_exec_op_t *ops, int nops, int *waiting, int *nwait,
                     char *err, size_t errlen)
{
    orb_exec_due_t *d = env->due;
    int blocked[ORB_EXEC_DUE_CAP], nblocked = 0; /* peers with an earlier entry still due */
    int taken = 0;
    for (int i = 0; i < d->n;) {
        if (nblocked && !d->mixed)
            break; /* one peer's entries only: all behind the oldest, which is not in */
        const int e = orb_exec_due_at(d, i), peer = d->peer[e];
        int behind = 0;
        for (int j = nblocked - 1; j >= 0 && !behind; j--)
            behind = blocked[j] == peer;
        if (!behind) {
            orb_conn_t *rc = &env->recv[(size_t)peer * (size_t)env->nchannels];
            int st = 0;
            orb_slot_hdr_t *rh = recv_head(env, ops, nops, rc, peer, &st, err, errlen);
            if (st < 0)
                return st;
            if (rh) {
                if (rh->nbytes != 0 || !orb_exec_sig_equal(rh, &d->sig[e]))
                    return piece_mismatch(env, &d->sig[e], rh, 0, peer, err, errlen);
                rc->ops->recv_release(rc);
                due_remove(d, i);
                taken++;
                continue; /* entry i is the next one now */
            }
            blocked[nblocked++] = peer;
            if (*nwait < 64)
                waiting[(*nwait)++] = peer;
        }
        i++;
    }
    return taken;
}

/* All of the run is done but handshake pieces that may stay due (sync_defer, sent already):
 * leave them to later runs and end now, as long as no more than d->max are due then (the
 * FIFOs' slots, 8 by default). A root runs that many calls ahead of its neighbour's
 * signature: with only one (before 2026-11-28), every rooted call of ranks that share cores
 * waited for the scheduler to run the whole chain once (docs/perf.md). */
static int defer_rest(const orb_exec_env_t *env, const orb_exec_op_t *ops, int nops)
{
    orb_exec_due_t *d = env->due;
    if (!d)
        return 0;
    int k = 0;
    for (int i = 0; i < nops; i++) { /* every lane of every call done, every handshake sent */
        const orb_exec_op_t *o = &ops[i];
        for (int ch = 0; ch < o->plan->nlanes; ch++)
            if (o->step[ch] < o->plan->lanes[ch].nsteps || o->cma_conn[ch])
                return 0;
        if (!sync_pending(o))
            continue;
        if (!o->sync_defer || !o->sync_sent)
            return 0;
        k++;
    }
    if (k == 0 || d->n + k > d->max)
        return 0;
    for (int i = 0; i < nops; i++)
        if (sync_pending(&ops[i])) {
            const int e = orb_exec_due_at(d, d->n++);
            d->mixed |= d->n > 1 && ops[i].sync_prev != d->peer[d->head];
            d->peer[e] = ops[i].sync_prev;
            d->sig[e] = ops[i].sig;
        }
    return 1;
}

/* Does lane 0 receive from peer at all? A rank whose plan does not would leave a piece of data
 * that carries the handshake where it is, and return: its caller disagrees with the sender. */
static int lane0_takes_from(const orb_exec_op_t *o, int peer)
{
    const orb_lane_t *l = o->plan->nlanes ? &o->plan->lanes[0] : NULL;
    for (size_t i = 0; l && i < l->nsteps; i++)
        if ((orb_step_props(l->steps[i].kind) & ORB_STEP_RECVS) && l->steps[i].recv_peer == peer)
            return 1;
    return 0;
}

/* Before a step of o writes [dst, dst + len): a lane's address pieces that may still wait to
 * leave from there are copied into their slots first (settle), so the transport sends what
 * the buffer held when they were posted. Only with guard_writes; a lane's pending pieces are on
 * one connection (cma_conn), and those on connections without settle (shared memory) come from
 * a buffer the call never writes, so no write lands on them. */
static void settle_under(orb_exec_op_t *o, const char *dst, size_t len)
{
    const uintptr_t lo = (uintptr_t)dst, hi = lo + len;
    for (int l = 0; l < o->plan->nlanes; l++) {
        if (o->addr_lo[l] >= hi || lo >= o->addr_hi[l]) /* also the empty span */
            continue;
        orb_conn_t *c = o->cma_conn[l];
        if (c && !orb_conn_released(c, o->cma_pos[l]) && c->ops->settle)
            c->ops->settle(c);
        o->addr_lo[l] = o->addr_hi[l] = 0;
    }
}

/* A handshake piece of its own for call o into sh: its signature, no data, no step. */
static void handshake_header(const orb_exec_env_t *env, const orb_exec_op_t *o, orb_slot_hdr_t *sh, uint32_t flags)
{
    orb_piece_hdr_put(sh, &o->sig);
    sh->nbytes = 0;
    sh->step = UINT32_MAX;
    sh->sender = env->rank;
    sh->flags |= flags;
}

/* The handshake: returns pieces moved (>= 0) or a negative status. */
static int sync_progress(const orb_exec_env_t *env, orb_exec_op_t *ops, int nops, int i, blocked_t *b, char *err,
                         size_t errlen)
{
    orb_exec_op_t *o = &ops[i];
    const size_t nch = (size_t)env->nchannels;
    int moved = 0;
    b->peer = -1;
    if (!o->sync_sent && !o->sync_merge && (nops == 1 || conn_free_for(ops, i, 0, o->sync_next, 1))) {
        orb_conn_t *sc = &env->send[(size_t)o->sync_next * nch];
        orb_slot_hdr_t *sh = sc->ops->send_acquire(sc, 0);
        if (sh) {
            handshake_header(env, o, sh, 0);
            sc->ops->send_post(sc);
            o->sync_sent = 1;
            moved++;
        } else {
            b->peer = o->sync_next;
            b->for_data = 0;
        }
    }
    if (!o->sync_recvd && o->sync_merge == ORB_SYNC_ON_FIRST && !o->sync_sent) {
        /* ours rides on lane 0's first piece, which goes later in this pass: out before
         * looking at the neighbour's, so that a disagreement reaches both ends (after a
         * receive, the neighbour's piece must come first; a disagreement there reaches every
         * rank through post_error) */
    } else if (!o->sync_recvd && due_from(env, o->sync_prev)) {
        b->peer = o->sync_prev;
        b->for_data = 1;
    } else if (!o->sync_recvd && (nops == 1 || conn_free_for(ops, i, 0, o->sync_prev, 0))) {
        orb_conn_t *rc = &env->recv[(size_t)o->sync_prev * nch];
        int st = 0;
        orb_slot_hdr_t *rh = recv_head(env, ops, nops, rc, o->sync_prev, &st, err, errlen);
        if (st < 0)
            return st;
        if (rh && (rh->flags & ORB_PIECE_SYNC)) { /* on a piece of data: lane 0 takes it and checks it */
            if (!lane0_takes_from(o, o->sync_prev))
                return piece_mismatch(env, mine_for(env, &o->sig, rh), rh, 0, o->sync_prev, err, errlen);
            o->sync_recvd = 1;
            moved++;
        } else if (rh) {
            if (rh->nbytes != 0 || !orb_exec_sig_equal(rh, &o->sig))
                return piece_mismatch(env, mine_for(env, &o->sig, rh), rh, 0, o->sync_prev, err, errlen);
            rc->ops->recv_release(rc);
            o->sync_recvd = 1;
            moved++;
        } else {
            b->peer = o->sync_prev;
            b->for_data = 1;
        }
    }
    return moved;
}

/* A finished step into the tracer's ring; the next step's timing starts from zero. */
static void trace_step(const orb_exec_env_t *env, const orb_exec_op_t *o, int ch, const orb_step_t *s, size_t esz,
                       orb_trace_step_time_t *tm)
{
    orb_trace_step_t *r = orb_trace_ring_push(&env->trace->ring);
    const unsigned props = orb_step_props(s->kind);
    *r = (orb_trace_step_t){.id = o->trace_id, .t_start = tm->t_start, .t_end = orb_trace_ticks(),
                            .move = tm->move, .reduce = tm->reduce, .bytes = s->count * esz,
                            .index = (int32_t)o->step[ch],
                            .send_peer = (props & ORB_STEP_SENDS) ? s->send_peer : -1,
                            .recv_peer = (props & ORB_STEP_RECVS) ? s->recv_peer : -1,
                            .channel = (int16_t)ch, .kind = (int16_t)s->kind};
    *tm = (orb_trace_step_time_t){0};
}

/* Where step s of o reads (READS_SRC) and writes (WRITES_DST), `done` elements in; NULL for
 * what it does not. */
static const char *step_src(const orb_exec_op_t *o, const orb_step_t *s, unsigned props, size_t done, size_t esz)
{
    if (!(props & ORB_STEP_READS_SRC))
        return NULL;
    const void *buf = s->src_buf == ORB_BUF_INPUT ? o->in : s->src_buf == ORB_BUF_OUTPUT ? o->out : o->scratch;
    return (const char *)buf + (s->src_off + done) * esz;
}

static char *step_dst(const orb_exec_op_t *o, const orb_step_t *s, unsigned props, size_t done, size_t esz)
{
    if (!(props & ORB_STEP_WRITES_DST))
        return NULL;
    return (char *)((s->flags & ORB_STEP_DST_SCRATCH) ? o->scratch : o->out) + (s->dst_off + done) * esz;
}

/* The elements of a step's next piece, `left` of the step still to go: what the slots of its
 * connections hold (the receiving one and the sending one; either may be NULL). A divide only
 * for pieces that fill a slot; place_ask cuts the pieces it asks for the same way. */
static inline size_t piece_elems(size_t left, const orb_conn_t *rc, const orb_conn_t *sc, size_t esz)
{
    if (rc && left * esz > rc->slot_bytes) /* (no overflow: the front end checked count * esz) */
        left = rc->slot_bytes / esz;
    if (sc && left * esz > sc->slot_bytes)
        left = sc->slot_bytes / esz;
    return left;
}

/* May a piece of `bytes` for sc, from a buffer whose pieces may travel as addresses on
 * connections of the kinds in `allowed` (orb_exec_op_t.addr_in / addr_out), go as its address
 * instead of being copied into the slot? When the receiver can read us, or the transport sends
 * from it itself, and this lane's previous such piece went on the same connection or was
 * read already (one pending connection a lane: cma_conn). */
static int as_address(const orb_exec_op_t *o, int ch, const orb_conn_t *sc, size_t bytes, unsigned allowed)
{
    return (sc->addr_kind & allowed) && bytes >= sc->addr_min &&
           (!o->cma_conn[ch] || o->cma_conn[ch] == sc || orb_conn_released(o->cma_conn[ch], o->cma_pos[ch]));
}

/* Pieces smaller than this are left in their slots, and a lane whose step moves less does not
 * look ahead at all: such a copy costs little next to a call's fixed costs, and the latency
 * path stays as it was. */
#define PLACE_MIN_BYTES 16384
#define PLACE_MAX 64 /* positions asked for at once, and steps looked at to find them */

/* Does a step of lane from `from` up to `to` (excluded) read or write [lo, hi)? */
static int lane_touches(const orb_exec_op_t *o, const orb_lane_t *lane, size_t from, size_t to, uintptr_t lo,
                        uintptr_t hi, size_t esz)
{
    for (size_t t = from; t < to; t++) {
        const orb_step_t *s = &lane->steps[t];
        const unsigned props = orb_step_props(s->kind);
        const uintptr_t src = (uintptr_t)step_src(o, s, props, 0, esz), dst = (uintptr_t)step_dst(o, s, props, 0, esz);
        const uintptr_t len = s->count * esz;
        if ((src && src < hi && lo < src + len) || (dst && dst < hi && lo < dst + len))
            return 1;
    }
    return 0;
}

/* As lane ch of o starts a step, ask rc's transport to write the pieces that will arrive on it
 * straight into this call's buffers (recv_place), saving the copy out of each slot: the pieces
 * of the steps that copy what they receive unchanged (RECV, and RECV_COPY_SEND, which passes
 * them on from there), among the next positions on rc.
 * The steps between run first, so a step's pieces may land only where none of them reads or
 * writes (each lane keeps to its own part of the buffers). One operation only: its lane alone
 * uses rc, so the positions follow from the steps (handshakes come before a step starts:
 * handshake_ahead). The caller asks only as a step of PLACE_MIN_BYTES or more starts. */
static void place_ask(const orb_exec_env_t *env, orb_exec_op_t *o, int nops, int ch, orb_conn_t *rc, size_t esz)
{
    if (!rc->ops->recv_place || nops != 1 || o->place_step[ch] == o->step[ch] + 1)
        return;
    o->place_step[ch] = o->step[ch] + 1;
    const orb_lane_t *lane = &o->plan->lanes[ch];
    const size_t nch = (size_t)env->nchannels;
    orb_place_t want[PLACE_MAX];
    int nw = 0;
    uint64_t pos = rc->pos;
    const uint64_t end = pos + (rc->nslots < PLACE_MAX ? rc->nslots : PLACE_MAX);
    const size_t last = o->step[ch] + PLACE_MAX < lane->nsteps ? o->step[ch] + PLACE_MAX : lane->nsteps;
    for (size_t t = o->step[ch]; t < last && pos < end; t++) {
        const orb_step_t *s = &lane->steps[t];
        const unsigned props = orb_step_props(s->kind);
        if (!(props & ORB_STEP_RECVS) || &env->recv[(size_t)s->recv_peer * nch + (size_t)ch] != rc)
            continue;
        const orb_conn_t *sc = (props & ORB_STEP_SENDS) ? &env->send[(size_t)s->send_peer * nch + (size_t)ch] : NULL;
        const size_t done = t == o->step[ch] ? o->done[ch] : 0;
        size_t left = s->count - done;
        char *dst = NULL;
        if ((props & ~ORB_STEP_SENDS) == (ORB_STEP_RECVS | ORB_STEP_WRITES_DST) &&
            piece_elems(SIZE_MAX / esz, rc, sc, esz) * esz >= PLACE_MIN_BYTES &&
            !((s->flags & ORB_STEP_POSTOP) && o->postdiv > 1)) {
            dst = step_dst(o, s, props, done, esz);
            if (lane_touches(o, lane, o->step[ch], t, (uintptr_t)dst, (uintptr_t)dst + left * esz, esz))
                break;
            if (o->guard_writes) /* address pieces from there go now, not after */
                settle_under(o, dst, left * esz);
        }
        do { /* a step of count 0 still takes its (empty) piece */
            const size_t n = piece_elems(left, rc, sc, esz);
            if (dst && n)
                want[nw++] = (orb_place_t){.pos = pos, .call = o->sig.seq, .dst = dst, .bytes = n * esz};
            if (dst)
                dst += n * esz;
            left -= n;
            pos++;
        } while (left && pos < end);
    }
    if (nw) {
        rc->ops->recv_place(rc, want, nw);
        o->place_conn[ch] = rc;
    }
}

/* Must step s of lane 0 wait for the call's handshake? Its piece goes first on its connections
 * (ring neighbours): a step receives from sync_prev only once the neighbour's handshake is in,
 * and sends to sync_next only once ours went (unless ours rides on this lane's first piece);
 * an earlier call's handshake still due from a peer goes before anything else from it.
 * Returns the neighbour waited for (*for_data: for its piece, not for room at it), or -1. */
static int handshake_ahead(const orb_exec_env_t *env, const orb_exec_op_t *o, const orb_step_t *s,
                           const orb_conn_t *rc, const orb_conn_t *sc, int *for_data)
{
    *for_data = 1;
    if (rc && o->sync_next >= 0 && !o->sync_recvd && s->recv_peer == o->sync_prev)
        return o->sync_prev;
    if (rc && due_from(env, s->recv_peer)) /* an earlier call's, still due */
        return s->recv_peer;
    *for_data = 0;
    if (sc && o->sync_next >= 0 && !o->sync_sent && !o->sync_merge && s->send_peer == o->sync_next)
        return o->sync_next;
    return -1;
}

/* A data piece's header: the call's signature, its size and origin, and on lane 0's first piece
 * the handshake when it rides there (sync_merge). */
static void data_header(const orb_exec_env_t *env, orb_exec_op_t *o, int ch, orb_slot_hdr_t *sh, size_t bytes)
{
    orb_piece_hdr_put(sh, &o->sig);
    sh->nbytes = (uint32_t)bytes;
    sh->step = (uint32_t)o->step[ch];
    sh->sender = env->rank;
    if (ch == 0 && o->sync_merge && !o->sync_sent) {
        sh->flags |= ORB_PIECE_SYNC;
        o->sync_sent = 1;
    }
}

/* dst = op(a, b) block by block through a buffer in L1, streamed from there to dst, and to
 * dst2 as well where given (the reduction kernels have no streaming stores of their own).
 * dst may be a, exactly. */
static void reduce_blocks(void *dst, void *dst2, const void *a, const void *b, size_t n, orb_dtype_t dt, orb_op_t op,
                          int pd)
{
    _Alignas(64) unsigned char tmp[16384];
    const size_t esz = orb_dtype_bytes(dt), per = sizeof tmp / esz;
    for (size_t i = 0; i < n; i += per) {
        const size_t m = n - i < per ? n - i : per;
        orb_kernel_reduce(tmp, NULL, (const char *)a + i * esz, (const char *)b + i * esz, m, dt, op, pd);
        orb_kernel_copy_stream((char *)dst + i * esz, NULL, tmp, m, dt, 0);
        if (dst2)
            orb_kernel_copy_stream((char *)dst2 + i * esz, NULL, tmp, m, dt, 0);
    }
}

/* dst = op(a, b) (and fwd, the next peer's slot) with dst written past the caches: the
 * result goes to the slot and is streamed from there, or goes block by block. */
static void reduce_streamed(void *dst, void *fwd, const void *a, const void *b, size_t n, orb_dtype_t dt,
                            orb_op_t op, int pd)
{
    if (fwd) {
        orb_kernel_reduce(fwd, NULL, a, b, n, dt, op, pd);
        orb_kernel_copy_stream(dst, NULL, fwd, n, dt, 0);
    } else
        reduce_blocks(dst, NULL, a, b, n, dt, op, pd);
}

/* A piece into the slot fwd past the caches (slot_stores.h), and into dst as well when the
 * step writes its output: there with ordinary stores (the output is read next), or past the
 * caches too where the call's output streams (out_stream). The slot first where both take a
 * copy: dst may be the source, in place. */
static void slot_streamed(void *dst, void *fwd, const void *src, const void *in, size_t n, const orb_exec_op_t *o,
                          unsigned props, int pd, int out_stream)
{
    const void *from = in ? in : src;
    if (!(props & ORB_STEP_REDUCES) && dst && out_stream) {
        orb_kernel_copy_stream(fwd, NULL, from, n, o->dtype, pd);
        orb_kernel_copy_stream(dst, NULL, from, n, o->dtype, pd);
    } else if (!(props & ORB_STEP_REDUCES))
        orb_kernel_copy_stream(fwd, dst, from, n, o->dtype, pd);
    else if (dst && out_stream)
        reduce_blocks(dst, fwd, src, in, n, o->dtype, o->op, pd);
    else if (dst) {
        orb_kernel_reduce(dst, NULL, src, in, n, o->dtype, o->op, pd);
        orb_kernel_copy_stream(fwd, NULL, dst, n, o->dtype, 0);
    } else
        reduce_blocks(fwd, NULL, src, in, n, o->dtype, o->op, pd);
}

/* A timed ordinary copy of bytes into sc's slot took secs; says so when the verdict changes. */
static void slot_copy_timed(const orb_exec_env_t *env, orb_conn_t *sc, size_t bytes, double secs)
{
    if (secs <= 0 || !orb_slot_stores_sample(&sc->stores, (double)bytes / secs * 1e-9))
        return;
    if (sc->stores.far)
        ORB_INFO("rank %d: copies into rank %d's slots (channel %d) ran at %.2f GB/s, under a third of the %.2f GB/s "
                 "calibrated for the link: its core is far from this one; writing them past the caches until "
                 "the copies speed up (ORBIT_SLOT_STORES)",
                 env->rank, sc->peer, sc->channel, orb_slot_stores_median(&sc->stores),
                 ORB_SLOT_STORES_FLOOR_SHARE * sc->stores.floor_gbps);
    else
        ORB_INFO("rank %d: copies into rank %d's slots (channel %d) run at %.2f GB/s again: ordinary stores",
                 env->rank, sc->peer, sc->channel, orb_slot_stores_median(&sc->stores));
}

/* A piece for sc's slot fwd (and for dst when the step writes its output), written with the
 * stores slot_stores.h picks; out_stream: the call's output streams past the caches. Returns
 * 0 where the caller is to write it with ordinary stores, as it always did. */
static int slot_write_picked(const orb_exec_env_t *env, orb_conn_t *sc, const orb_exec_op_t *o, unsigned props,
                             void *dst, void *fwd, const void *src, const void *in, size_t n, int pd, int out_stream)
{
    const size_t bytes = n * orb_dtype_bytes(o->dtype);
    switch (orb_slot_stores_pick(&sc->stores, bytes, !dst && !(props & ORB_STEP_REDUCES), sc->pos, sc->nslots)) {
    case ORB_SLOT_WRITE_STREAM:
        slot_streamed(dst, fwd, src, in, n, o, props, pd, out_stream);
        return 1;
    case ORB_SLOT_WRITE_TIMED: { /* a plain copy into the slot alone */
        const double t0 = orb_now();
        orb_kernel_copy(fwd, NULL, in ? in : src, n, o->dtype, pd);
        slot_copy_timed(env, sc, bytes, orb_now() - t0);
        return 1;
    }
    default:
        return 0;
    }
}

/* Every small piece is told here, inline, before a call (the latency calls' path: the call
 * and its return were some 50 instructions of a small call's 1400). */
static inline int slot_write(const orb_exec_env_t *env, orb_conn_t *sc, const orb_exec_op_t *o, unsigned props,
                             void *dst, void *fwd, const void *src, const void *in, size_t n, int pd, int out_stream)
{
    if (n * orb_dtype_bytes(o->dtype) < ORB_SLOT_STORES_MIN_PIECE && sc->stores.mode != ORB_SLOT_STORES_STREAM)
        return 0;
    return slot_write_picked(env, sc, o, props, dst, fwd, src, in, n, pd, out_stream);
}

/* A piece's copy to d1 (and d2): small ones inline (copy_small.h), the rest by the kernel. */
static inline void piece_copy(void *d1, void *d2, const void *src, size_t count, size_t bytes, orb_dtype_t dt, int pd)
{
    if (pd > 1 || bytes > ORB_COPY_SMALL_MAX) {
        orb_kernel_copy(d1, d2, src, count, dt, pd);
        return;
    }
    if (d1)
        orb_copy_small(d1, src, bytes);
    if (d2)
        orb_copy_small(d2, src, bytes);
}

/* What one lane may copy in one pass before the pass moves on to the next lane or operation.
 * A lane whose pieces keep coming would otherwise keep its rank to itself: of a send and a
 * receive grouped, the receive read piece after piece while the send, its own pieces posted
 * only between passes, left the peer with nothing to read (2 ranks, 16 MiB send/recv: each
 * rank read half the call while the other waited). Pieces sent as addresses copy nothing and
 * do not count. */
#define LANE_PASS_BYTES 65536

/* Move the pieces of one lane that can move now, up to LANE_PASS_BYTES copied. Returns the
 * number moved (>= 0), or a negative status. */
static int lane_progress(const orb_exec_env_t *env, orb_exec_op_t *ops, int nops, int i, int ch,
                         blocked_t *b, char *err, size_t errlen)
{
    orb_exec_op_t *o = &ops[i];
    const orb_lane_t *lane = &o->plan->lanes[ch];
    const size_t esz = orb_dtype_bytes(o->dtype);
    const int nch = env->nchannels;
    int moved = 0;
    size_t copied = 0;
    b->peer = -1;
    b->by_group = 0;
    orb_trace_step_time_t *tm = env->trace ? &env->trace->time[(size_t)i * ORB_TRACE_MAX_CHANNELS + (size_t)ch] : NULL;
    while (o->step[ch] < lane->nsteps && moved < 256 && copied < LANE_PASS_BYTES) {
        const orb_step_t *s = &lane->steps[o->step[ch]];
        if (tm && !tm->t_start)
            tm->t_start = orb_trace_ticks(); /* first tried: what it waits for counts from here */
        const int kind = s->kind;
        const unsigned props = orb_step_props(kind); /* what the step does: kernels/step.h */
        if (!props) {
            snprintf(err, errlen, "rank %d: plan step of unknown kind %d", env->rank, kind);
            return ORB_ERR_INTERNAL;
        }
        const int recv = (props & ORB_STEP_RECVS) != 0;
        const int send = (props & ORB_STEP_SENDS) != 0;
        const int pd = (s->flags & ORB_STEP_POSTOP) ? o->postdiv : 0;
        size_t done = o->done[ch];
        size_t n = s->count - done;
        orb_conn_t *rc = NULL, *sc = NULL;
        if (recv)
            rc = &env->recv[(size_t)s->recv_peer * (size_t)nch + (size_t)ch];
        if (send)
            sc = &env->send[(size_t)s->send_peer * (size_t)nch + (size_t)ch];
        n = piece_elems(n, rc, sc, esz);
        /* The handshake's piece goes first on its connections (channel 0, ring neighbours);
         * everything else moves while it travels: a rooted call costs one hop, not a
         * round trip before its first piece. A disagreement still shows on both ends: in
         * the handshake, or in the signature of the first piece. */
        int for_data;
        const int ahead = ch == 0 ? handshake_ahead(env, o, s, rc, sc, &for_data) : -1;
        if (ahead >= 0) {
            b->peer = ahead;
            b->for_data = for_data;
            break;
        }
        if (nops > 1) {
            if ((rc && !conn_free_for(ops, i, ch, s->recv_peer, 0)) ||
                (sc && !conn_free_for(ops, i, ch, s->send_peer, 1))) {
                b->by_group = 1;
                break;
            }
        }
        if (rc && (s->count - done) * esz >= PLACE_MIN_BYTES) /* (small calls never get this far) */
            place_ask(env, o, nops, ch, rc, esz);
        orb_slot_hdr_t *rh = NULL, *sh = NULL;
        int st = 0;
        if (rc && !(rh = recv_head(env, ops, nops, rc, s->recv_peer, &st, err, errlen))) {
            if (st < 0)
                return st;
            b->peer = s->recv_peer;
            b->for_data = 1;
            break;
        }
        if (sc && !(sh = sc->ops->send_acquire(sc, n * esz))) {
            b->peer = s->send_peer;
            b->for_data = 0;
            break;
        }
        if (rh && (rh->nbytes != n * esz || (env->check_signatures && !orb_exec_sig_equal(rh, &o->sig))))
            return piece_mismatch(env, mine_for(env, &o->sig, rh), rh, n * esz, s->recv_peer, err, errlen);
        /* A plain send of a large piece goes as its address (see as_address). */
        const int remote = sc && !rc && !(props & (ORB_STEP_REDUCES | ORB_STEP_WRITES_DST)) && pd <= 1 &&
                           as_address(o, ch, sc, n * esz,
                                      s->src_buf == ORB_BUF_INPUT    ? o->addr_in
                                      : s->src_buf == ORB_BUF_OUTPUT ? o->addr_out
                                                                     : 0u);

        const char *src = step_src(o, s, props, done, esz);
        char *dst = step_dst(o, s, props, done, esz);
        if (dst && o->guard_writes)
            settle_under(o, dst, n * esz);
        const void *in = rh ? (const void *)(rh + 1) : NULL;
        void *fwd = sh ? (void *)(sh + 1) : NULL;
        /* The value goes to dst and/or the outgoing piece: first wherever it is written. */
        void *d1 = dst ? (void *)dst : fwd, *d2 = dst ? fwd : NULL;
        const int stream = o->stream_out && dst && !(s->flags & ORB_STEP_DST_SCRATCH); /* d1 is the output */
        const int64_t k0 = tm ? orb_trace_ticks() : 0;
        int direct = 0; /* the piece was read straight into dst */
        int fwd_addr = 0; /* ... and goes on to the next rank as dst's address */
        if (rh && (rh->flags & ORB_PIECE_REMOTE)) {
            const void *win = rc->windows ? orb_peer_windows_find(rc->windows, rh->addr, n * esz) : NULL;
            if (win) {
                in = win; /* in the sender's window: read (or reduced) in place, as from the slot */
            } else if (!rc->cma_pid) {
                snprintf(err, errlen,
                         "rank %d: rank %d sent a piece as an address, but this rank cannot read it (%s)", env->rank,
                         s->recv_peer,
                         rc->windows ? "in none of that rank's windows this rank could map, and the pair has no single-copy reads"
                                     : "the ranks disagree on single-copy reads");
                return ORB_ERR_INTERNAL;
            } else {
                /* a plain copy lands in dst at once; anything else (a reduction) reads into the
                 * slot and goes on from there as usual */
                direct = dst && !(props & ORB_STEP_REDUCES) && pd <= 1;
                char cerr[200];
                orb_status_t cst = orb_cma_read(rc->cma_pid, direct ? (void *)dst : (void *)(rh + 1), rh->addr,
                                                n * esz, cerr, sizeof cerr);
                if (cst != ORB_OK) {
                    snprintf(err, errlen, "rank %d: the piece of rank %d: %s", env->rank, s->recv_peer, cerr);
                    return cst;
                }
            }
        } else if (rh && (rh->flags & ORB_PIECE_PLACED)) { /* the transport wrote it to dst already */
            if ((char *)(uintptr_t)rh->addr != dst || (props & ORB_STEP_REDUCES) || pd > 1) {
                snprintf(err, errlen,
                         "rank %d: a piece from rank %d (channel %d, step %zu) was received at %p, not at %p where "
                         "this step wanted it (a transport bug)",
                         env->rank, s->recv_peer, ch, o->step[ch], (void *)(uintptr_t)rh->addr, (void *)dst);
                return ORB_ERR_INTERNAL;
            }
            direct = 1;
            /* Passed on (a ring's all-gather): from dst itself, as a plain send from the output
             * would go, or else copied into the outgoing slot below. */
            fwd_addr = sh && !(s->flags & ORB_STEP_DST_SCRATCH) && as_address(o, ch, sc, n * esz, o->addr_out);
        }
        if (direct) {
            if (d2 && !fwd_addr)
                orb_kernel_copy(d2, NULL, dst, n, o->dtype, 0);
        } else if (remote) {
            /* nothing to write: the receiver reads src */
        } else if (fwd && slot_write(env, sc, o, props, dst, fwd, src, in, n, pd, stream)) {
            /* written, with the stores slot_stores.h picked */
        } else if ((props & ORB_STEP_REDUCES) && stream)
            reduce_streamed(dst, fwd, src, in, n, o->dtype, o->op, pd);
        else if (props & ORB_STEP_REDUCES)
            orb_kernel_reduce(d1, d2, src, in, n, o->dtype, o->op, pd);
        else if (in)
            (stream ? orb_kernel_copy_stream : orb_kernel_copy)(d1, d2, in, n, o->dtype, pd);
        else if (d1 != src || pd > 1) /* a local copy onto itself moves nothing */
            (stream ? orb_kernel_copy_stream : orb_kernel_copy)(d1, d2, src, n, o->dtype, pd);
        if (tm)
            *((props & ORB_STEP_REDUCES) ? &tm->reduce : &tm->move) += orb_trace_ticks() - k0;
        if (sh) {
            const char *as_addr = remote ? src : fwd_addr ? dst : NULL; /* the piece goes as this address */
            data_header(env, o, ch, sh, n * esz);
            if (as_addr) {
                sh->flags |= ORB_PIECE_REMOTE;
                sh->addr = (uint64_t)(uintptr_t)as_addr;
            }
            sc->ops->send_post(sc);
            if (as_addr) {
                o->cma_conn[ch] = sc;
                o->cma_pos[ch] = sc->pos;
                if (o->guard_writes) {
                    const uintptr_t lo = (uintptr_t)as_addr, hi = lo + n * esz;
                    const int empty = o->addr_lo[ch] == o->addr_hi[ch];
                    o->addr_lo[ch] = empty || lo < o->addr_lo[ch] ? lo : o->addr_lo[ch];
                    o->addr_hi[ch] = empty || hi > o->addr_hi[ch] ? hi : o->addr_hi[ch];
                }
            }
        }
        if (rh)
            rc->ops->recv_release(rc);
        if (!remote && !fwd_addr)
            copied += n * esz;
        o->done[ch] = done + n;
        if (o->done[ch] == s->count) {
            if (tm)
                trace_step(env, o, ch, s, esz, tm);
            o->step[ch]++;
            o->done[ch] = 0;
        }
        moved++;
    }
    return moved;
}

/* The first pass of a run whose calls each have one lane of pieces that fit their slots (the
 * 8 B-4 KiB latency calls, a grouped send and recv): what one_pass and lane_progress do for
 * them, without what such calls never need (step tracing, pieces sent as addresses,
 * outputs streamed past the caches, a piece in parts). The calls go in order, each as far as it can; the
 * first that cannot finish hands the run to the general loop, which goes on from where
 * everything stands (as one_pass would have left it: an earlier call of the group is done
 * before a later one touches its connections). Returns 1 when the run is done (handshakes
 * possibly left due, as defer_rest allows), 0 when it is not, or a negative status. */
static int quick_lane(const orb_exec_env_t *env, orb_exec_op_t *o, char *err, size_t errlen)
{
    const orb_lane_t *lane = &o->plan->lanes[0];
    const orb_step_t *steps = lane->steps;
    const size_t nsteps = lane->nsteps;
    const size_t esz = orb_dtype_bytes(o->dtype);
    const size_t nch = (size_t)env->nchannels;
    const orb_exec_due_t *due = env->due;
    /* The step in a local, written back on the way out: o is reached through pointers that
     * the copies below might alias, so each use of o->step[0] was a load (a small call's path). */
    size_t i = o->step[0];
    for (; i < nsteps; i++) {
        const orb_step_t *s = &steps[i];
        if (s->kind == ORB_STEP_COPY) { /* local: no peer, no handshake, no slot (a root's own block) */
            const int pd = (s->flags & ORB_STEP_POSTOP) ? o->postdiv : 0;
            const char *src = step_src(o, s, ORB_STEP_READS_SRC, 0, esz);
            char *dst = step_dst(o, s, ORB_STEP_WRITES_DST, 0, esz);
            piece_copy(dst, NULL, src, s->count, s->count * esz, o->dtype, pd);
            continue;
        }
        const unsigned props = orb_step_props(s->kind);
        const size_t bytes = s->count * esz;
        orb_conn_t *rc = NULL, *sc = NULL;
        if (props & ORB_STEP_RECVS) {
            rc = &env->recv[(size_t)s->recv_peer * nch];
            if (bytes > rc->slot_bytes)
                break;
        }
        if (props & ORB_STEP_SENDS) {
            sc = &env->send[(size_t)s->send_peer * nch];
            if (bytes > sc->slot_bytes)
                break;
        }
        if (!props)
            break; /* (the general loop names an unknown kind) */
        /* handshake_ahead's cases, asked only where one can hold */
        int for_data;
        if (((o->sync_next >= 0 && (!o->sync_recvd || (!o->sync_sent && !o->sync_merge))) || (rc && due && due->n)) &&
            handshake_ahead(env, o, s, rc, sc, &for_data) >= 0)
            break;
        orb_slot_hdr_t *rh = NULL, *sh = NULL;
        if (rc && (!(rh = rc->ops->recv_acquire(rc)) ||
                   (rh->flags & (ORB_PIECE_REMOTE | ORB_PIECE_LATE | ORB_PIECE_PLACED))))
            break; /* (the general loop reads an address piece, checks or drops a late handshake, takes a placed one) */
        if (sc && !(sh = sc->ops->send_acquire(sc, bytes)))
            break;
        if (rh && (rh->nbytes != bytes || (env->check_signatures && !orb_exec_sig_equal(rh, &o->sig)))) {
            o->step[0] = i;
            return piece_mismatch(env, mine_for(env, &o->sig, rh), rh, bytes, s->recv_peer, err, errlen);
        }
        const int pd = (s->flags & ORB_STEP_POSTOP) ? o->postdiv : 0;
        const char *src = step_src(o, s, props, 0, esz);
        char *dst = step_dst(o, s, props, 0, esz);
        const void *in = rh ? (const void *)(rh + 1) : NULL;
        void *fwd = sh ? (void *)(sh + 1) : NULL;
        void *d1 = dst ? (void *)dst : fwd, *d2 = dst ? fwd : NULL;
        if (sh && slot_write(env, sc, o, props, dst, fwd, src, in, s->count, pd, 0)) {
            /* written, with the stores slot_stores.h picked */
        } else if (props & ORB_STEP_REDUCES) {
            orb_kernel_reduce(d1, d2, src, in, s->count, o->dtype, o->op, pd);
        } else {
            piece_copy(d1, d2, in ? in : src, s->count, bytes, o->dtype, pd);
        }
        if (sh) {
            o->step[0] = i; /* (the header names the step) */
            data_header(env, o, 0, sh, bytes);
            sc->ops->send_post(sc);
        }
        if (rh)
            rc->ops->recv_release(rc);
    }
    o->step[0] = i;
    return i == nsteps;
}

static inline __attribute__((always_inline)) int quick_pass(const orb_exec_env_t *env, orb_exec_op_t *ops, int nops,
                                                          char *err, size_t errlen)
{
    orb_exec_due_t *d = env->due;
    if (d && d->n) {
        int waiting[64], nwait = 0;
        const int m = drain_due(env, ops, nops, waiting, &nwait, err, errlen);
        if (m < 0)
            return m;
    }
    for (int i = 0; i < nops; i++) {
        /* (a handshake that rides on the first piece, with nothing to receive: the lane's) */
        if (sync_pending(&ops[i]) && !(ops[i].sync_recvd && ops[i].sync_merge == ORB_SYNC_ON_FIRST)) {
            blocked_t b;
            const int m = sync_progress(env, ops, nops, i, &b, err, errlen);
            if (m < 0)
                return m;
        }
        const int m = quick_lane(env, &ops[i], err, errlen);
        if (m <= 0)
            return m;
        if (nops > 1 && sync_pending(&ops[i])) /* a later call may wait behind its handshake */
            return 0;
    }
    /* every call done; only a lone call can still wait for its handshake (a group's returned).
     * Handshakes of earlier calls still due: a rooted call may leave them (defer_rest), any
     * other waits for them in the general loop. */
    if (!sync_pending(&ops[nops - 1]) && !(d && d->n))
        return 1;
    return defer_rest(env, ops, nops);
}

static void describe_blocked(const orb_exec_env_t *env, const orb_exec_op_t *ops, int nops, char *buf,
                             size_t len)
{
    size_t n = 0;
    buf[0] = 0; /* (len: its one caller's 1024) */
    const orb_exec_due_t *d = env->due;
    if (nops == 0 && d && d->confirm_pos) { /* (orb_host_settle) */
        char sig[160];
        orb_exec_describe_sig(&d->hist_sig[d->confirm_seq % ORB_EXEC_HIST_CAP], sig, sizeof sig);
        n += (size_t)snprintf(buf, len, "%s (an earlier call): waits for rank %d to take its last piece", sig,
                              d->confirm_peer);
    }
    for (int i = 0; env->due && i < env->due->n && n < len; i++) {
        const int e = orb_exec_due_at(env->due, i);
        char sig[160];
        orb_exec_describe_sig(&env->due->sig[e], sig, sizeof sig);
        n += (size_t)snprintf(buf + n, len - n, "%s%s (an earlier call): signature handshake waits for rank %d",
                              n ? "; " : "", sig, env->due->peer[e]);
    }
    for (int i = 0; i < nops && n < len; i++) {
        const orb_exec_op_t *o = &ops[i];
        char sig[160];
        orb_exec_describe_sig(&o->sig, sig, sizeof sig);
        if (sync_pending(o)) {
            n += (size_t)snprintf(buf + n, len - n, "%s%s: signature handshake waits for rank %d", n ? "; " : "", sig,
                                  o->sync_sent ? o->sync_prev : o->sync_next);
            continue;
        }
        for (int ch = 0; ch < o->plan->nlanes && n < len; ch++) {
            const orb_lane_t *l = &o->plan->lanes[ch];
            if (o->step[ch] >= l->nsteps) {
                if (o->cma_conn[ch] && o->cma_conn[ch]->addr_kind == ORB_ADDR_LOCAL)
                    n += (size_t)snprintf(buf + n, len - n, "%s%s, channel %d: waits for its connection to rank %d "
                                          "to take its last piece (sent from the buffer)", n ? "; " : "", sig, ch,
                                          o->cma_conn[ch]->peer);
                else if (o->cma_conn[ch])
                    n += (size_t)snprintf(buf + n, len - n, "%s%s, channel %d: waits for rank %d to read its last "
                                          "piece (single copy)", n ? "; " : "", sig, ch, o->cma_conn[ch]->peer);
                continue;
            }
            const orb_step_t *s = &l->steps[o->step[ch]];
            size_t esz = orb_dtype_bytes(o->dtype);
            size_t piece = env->slot_bytes / esz;
            if (piece == 0)
                piece = 1;
            int peer = s->recv_peer >= 0 ? s->recv_peer : s->send_peer;
            n += (size_t)snprintf(buf + n, len - n,
                                  "%s%s %s, channel %d, step %zu of %zu (%s), chunk %zu of %zu: waits for rank %d",
                                  n ? "; " : "", sig, orb_algo_name(o->plan->args.algo), ch, o->step[ch] + 1,
                                  l->nsteps, orb_step_kind_name((orb_step_kind_t)s->kind),
                                  o->done[ch] / piece + 1, (s->count + piece - 1) / piece, peer);
        }
    }
}

/* A finished lane whose last piece sent as an address is not read yet keeps its call open:
 * the buffer must stay as it is until the receiver has it. */
static void cma_pending(orb_exec_op_t *o, int ch, int *unfinished, int *waiting, int *nwait)
{
    if (!o->cma_conn[ch])
        return;
    if (orb_conn_released(o->cma_conn[ch], o->cma_pos[ch])) {
        o->cma_conn[ch] = NULL;
        return;
    }
    (*unfinished)++;
    if (*nwait < 64)
        waiting[(*nwait)++] = o->cma_conn[ch]->peer;
}

/* Move everything that can move: each operation's handshake, then (once its signatures
 * agree) its lanes. Counts what moved and what is unfinished, and whom the blocked wait for. */
static orb_status_t one_pass(const orb_exec_env_t *env, orb_exec_op_t *ops, int nops, int *moved, int *unfinished,
                             int *waiting, int *nwait, char *err, size_t errlen)
{
    if (env->due && env->due->n) {
        int m = drain_due(env, ops, nops, waiting, nwait, err, errlen);
        if (m < 0)
            return (orb_status_t)m;
        *moved += m;
        *unfinished += env->due->n;
    }
    orb_exec_due_t *d = env->due;
    if (nops == 0 && d && d->confirm_pos) { /* the last call sent to a vouching peer: taken? */
        const orb_conn_t *sc = &env->send[(size_t)d->confirm_peer * (size_t)env->nchannels];
        if (orb_conn_released(sc, d->confirm_pos)) {
            d->confirm_pos = 0;
        } else {
            (*unfinished)++;
            if (*nwait < 64)
                waiting[(*nwait)++] = d->confirm_peer;
        }
    }
    for (int i = 0; i < nops; i++) {
        if (sync_pending(&ops[i])) {
            blocked_t b;
            int m = sync_progress(env, ops, nops, i, &b, err, errlen);
            if (m < 0)
                return (orb_status_t)m;
            *moved += m;
            if (sync_pending(&ops[i])) { /* the lanes go on meanwhile (lane_progress) */
                (*unfinished)++;
                if (b.peer >= 0 && *nwait < 64)
                    waiting[(*nwait)++] = b.peer;
            }
        }
        for (int ch = 0; ch < ops[i].plan->nlanes; ch++) {
            if (ops[i].step[ch] >= ops[i].plan->lanes[ch].nsteps) {
                cma_pending(&ops[i], ch, unfinished, waiting, nwait);
                continue;
            }
            blocked_t b;
            int m = lane_progress(env, ops, nops, i, ch, &b, err, errlen);
            if (m < 0)
                return (orb_status_t)m;
            *moved += m;
            if (ops[i].step[ch] < ops[i].plan->lanes[ch].nsteps) {
                (*unfinished)++;
                if (b.peer >= 0 && *nwait < 64)
                    waiting[(*nwait)++] = b.peer;
            } else {
                cma_pending(&ops[i], ch, unfinished, waiting, nwait);
            }
        }
    }
    return ORB_OK;
}

/* A vouching call that has waited ORB_EXEC_UNMERGE_S with nothing from its neighbour in: its
 * signature goes after all, LATE, once (two ranks that both wait to receive name each other
 * so). Returns whether it went. */
static int send_late(const orb_exec_env_t *env, orb_exec_op_t *o)
{
    const size_t nch = (size_t)env->nchannels;
    orb_conn_t *rc = &env->recv[(size_t)o->sync_prev * nch], *sc = &env->send[(size_t)o->sync_next * nch];
    orb_slot_hdr_t *sh;
    if (rc->ops->recv_acquire(rc) || !(sh = sc->ops->send_acquire(sc, 0)))
        return 0;
    handshake_header(env, o, sh, ORB_PIECE_LATE);
    sc->ops->send_post(sc);
    o->sync_merge = 0;
    return 1;
}

/* Handshakes that were to ride on a piece sent after a receive, where the run has waited
 * ORB_EXEC_UNMERGE_S and nothing from sync_prev is in: they go as pieces of their own. Ranks
 * that disagree could otherwise each wait for its neighbour's piece with none sent (every
 * rank a chain's forwarder for another root), where pieces of their own name the
 * disagreement. Returns whether one changed. */
static int unmerge(const orb_exec_env_t *env, orb_exec_op_t *ops, int nops)
{
    int changed = 0;
    for (int i = 0; i < nops; i++) {
        orb_exec_op_t *o = &ops[i];
        if (o->sync_merge == ORB_SYNC_VOUCH) {
            changed |= send_late(env, o);
            continue;
        }
        if (o->sync_merge != ORB_SYNC_AFTER_RECV || o->sync_sent)
            continue;
        orb_conn_t *rc = &env->recv[(size_t)o->sync_prev * (size_t)env->nchannels];
        if (!rc->ops->recv_acquire(rc)) {
            o->sync_merge = 0;
            changed = 1;
        }
    }
    return changed;
}

/* A rooted call whose rank that only receives checks the signature on every piece of its ring
 * neighbour before it anyway, and so sends no handshake to its neighbour after it, the rank that
 * only sends, which expects none (ORB_SYNC_VOUCH, ORB_VOUCH_*); the sender keeps its signature
 * for what may turn up later (orb_exec_due_t). Two such pairs:
 * - Two ranks over shared memory whose pieces go one way (ORB_VOUCH_TRUSTED): the sender's
 *   handshake rides on its first piece, after a local copy too, so the receiver takes it as in;
 *   a run that may not defer waits until the receiver took the sender's last piece.
 * - The hop that closes a chain (a rooted ring plan of 3 ranks or more, ORB_VOUCH_CHAIN): its last
 *   rank (a broadcast's or scatter's root-1; a reduce's or gather's root) and its first (the
 *   root; root+1). Each rank of the chain checks the one before it, so the last agrees with the
 *   first hop by hop; that handshake was a piece of its own on every call, a FIFO slot and a
 *   wake-up: with more ranks than CPUs a tenth to a third of a small chain call's time
 *   (docs/perf.md). The forwarder's handshake may still come on its own (it waited
 *   ORB_EXEC_UNMERGE_S for its own neighbour: unmerge), so the last rank keeps taking it.
 * Both ends decide from their own call alone (root, algorithm, their plan's moves; every channel
 * runs the one ring), so ranks that disagree decide apart, and each way is still found: two
 * senders return, and their pieces wait unreceived (found by the next call that receives from
 * the peer, by a run that may not defer, or by a sender blocked on a full FIFO: strays); a last
 * rank whose call receives nothing from its neighbour leaves that neighbour's piece due and
 * meets it at its next call; receivers that wait send LATE handshakes after ORB_EXEC_UNMERGE_S,
 * which the other end compares with its call of that number (the history). */
static inline void vouch_setup(const orb_exec_env_t *env, orb_exec_op_t *o)
{
    const unsigned m = o->plan->moves;
    const int sends_only = (m & ORB_PLAN_LANE0_SENDS) && !(m & ORB_PLAN_RECVS),
              recvs_only = (m & ORB_PLAN_LANE0_RECVS) && !(m & ORB_PLAN_SENDS);
    if (!sends_only && !recvs_only)
        return;
    const int two = env->nranks == 2;
    int first = 1, last = 1; /* two ranks: each is the other's neighbour both ways */
    if (two) {
        /* (the sender's last piece is confirmed taken through the receiver's tail) */
        if (!env->send[(size_t)o->sync_next * (size_t)env->nchannels].ops->tail_is_receivers)
            return;
    } else {
        const orb_plan_args_t *pa = &o->plan->args;
        const int away = pa->coll == ORB_COLL_BROADCAST || pa->coll == ORB_COLL_SCATTER; /* from the root */
        if (pa->algo != ORB_ALGO_RING || (!away && pa->coll != ORB_COLL_REDUCE && pa->coll != ORB_COLL_GATHER))
            return;
        first = away ? pa->rank == pa->root : o->sync_prev == pa->root;
        last = away ? o->sync_next == pa->root : pa->rank == pa->root;
    }
    if (sends_only && first) {
        o->vouch = two ? ORB_VOUCH_TRUSTED : ORB_VOUCH_CHAIN;
        o->sync_recvd = 1;
        if (two)
            o->sync_merge = ORB_SYNC_ON_FIRST; /* on lane 0's first piece, after a local copy too */
        orb_exec_vouched_call(env->due, &o->sig);
    } else if (recvs_only && last) {
        o->vouch = ORB_VOUCH_CHECKS;
        o->sync_merge = ORB_SYNC_VOUCH;
        o->sync_sent = 1;
        o->sync_recvd = two; /* a chain's forwarder may send its handshake on its own */
    }
}

/* A sender to a vouching peer that waits (a full FIFO, or a run that may not defer waiting for
 * the peer to take its pieces): a piece of the peer's that it never receives (any but a LATE
 * handshake) means the two disagreed, as two senders do. So too a chain's first rank
 * (ORB_VOUCH_CHAIN) waiting for room, and a piece of its last rank's, whose call takes nothing
 * from it. Returns 0 when there is nothing to see, or a negative status. */
static int strays(const orb_exec_env_t *env, const orb_exec_op_t *ops, int nops, char *err, size_t errlen)
{
    const orb_exec_due_t *d = env->due;
    int peer = -1;
    const orb_slot_hdr_t *mine = NULL;
    for (int i = 0; i < nops; i++)
        if (ops[i].vouch == ORB_VOUCH_TRUSTED || ops[i].vouch == ORB_VOUCH_CHAIN) {
            peer = ops[i].vouch == ORB_VOUCH_CHAIN ? ops[i].sync_prev : ops[i].sync_next;
            mine = &ops[i].sig;
        }
    if (nops == 0 && d && d->confirm_pos)
        peer = d->confirm_peer;
    if (peer < 0 || due_from(env, peer))
        return 0;
    orb_conn_t *rc = &env->recv[(size_t)peer * (size_t)env->nchannels];
    int st = 0;
    orb_slot_hdr_t *rh = recv_head(env, ops, nops, rc, peer, &st, err, errlen);
    if (!rh)
        return st;
    const orb_slot_hdr_t *h = mine ? mine_for(env, mine, rh) : sent_call(env, rh->seq);
    if (!h) /* (a run that may not defer: the peer's piece names a call this rank did not send in) */
        h = &d->hist_sig[d->confirm_seq % ORB_EXEC_HIST_CAP];
    return piece_mismatch(env, h, rh, 0, peer, err, errlen);
}

static inline __attribute__((always_inline)) orb_status_t run_ops_n(const orb_exec_env_t *env, orb_exec_op_t *ops,
                                                                   int nops, char *err, size_t errlen)
{
    for (int i = 0; i < nops; i++) { /* only the plan's lanes: nothing reads the others */
        orb_exec_op_t *o = &ops[i];
        for (int ch = 0; ch < o->plan->nlanes; ch++) {
            o->step[ch] = o->done[ch] = 0;
            o->cma_conn[ch] = NULL;
            o->addr_lo[ch] = o->addr_hi[ch] = 0;
            o->place_conn[ch] = NULL;
            o->place_step[ch] = 0;
        }
        o->sync_sent = o->sync_recvd = 0;
        const orb_step_t *first = o->plan->nlanes && o->plan->lanes[0].nsteps ? &o->plan->lanes[0].steps[0] : NULL;
        const unsigned props = first ? orb_step_props(first->kind) : 0;
        o->sync_merge = 0;
        if (nops == 1 && o->sync_next >= 0 && (props & ORB_STEP_SENDS) && first->send_peer == o->sync_next &&
            first->count > 0)
            o->sync_merge = !(props & ORB_STEP_RECVS)           ? ORB_SYNC_ON_FIRST
                            : first->recv_peer == o->sync_prev ? ORB_SYNC_AFTER_RECV
                                                               : 0;
        o->vouch = ORB_VOUCH_NONE;
        if (nops == 1 && o->sync_next >= 0 && o->sync_defer && env->due)
            vouch_setup(env, o);
    }

    /* Calls of one lane of small pieces: the first pass streamlined (most end in it) */
    int quick = !env->trace;
    for (int i = 0; i < nops && quick; i++)
        quick = ops[i].plan->nlanes == 1 && !ops[i].guard_writes && !ops[i].addr_in && !ops[i].addr_out &&
                !ops[i].stream_out;
    if (quick && nops) {
        const int q = quick_pass(env, ops, nops, err, errlen);
        if (q != 0)
            return q > 0 ? ORB_OK : (orb_status_t)q;
    }

    int may_defer = 0; /* a rooted call's handshake may be left due: otherwise no need to ask each pass */
    for (int i = 0; i < nops; i++)
        may_defer |= ops[i].sync_defer && ops[i].sync_next >= 0;
    int waiting[64];
    double idle_since = 0, last_check = 0;
    int idle_passes = 0;
    for (;;) {
        int moved = 0, unfinished = 0, nwait = 0;
        orb_status_t pst = one_pass(env, ops, nops, &moved, &unfinished, waiting, &nwait, err, errlen);
        if (pst != ORB_OK)
            return pst;
        if (!unfinished || (may_defer && defer_rest(env, ops, nops)))
            return ORB_OK;
        if (moved) {
            idle_passes = 0;
            continue;
        }
        if (idle_passes++ == 0) {
            if (env->flush)
                env->flush(env->ctx);
            idle_since = orb_now();
            continue;
        }
        if (idle_passes & env->idle_mask) {
            orb_cpu_relax();
            continue;
        }
        double now = orb_now();
        if (now - idle_since >= ORB_EXEC_UNMERGE_S && unmerge(env, ops, nops)) {
            idle_passes = 0;
            continue;
        }
        if (now - idle_since >= ORB_EXEC_UNMERGE_S) {
            const int m = strays(env, ops, nops, err, errlen);
            if (m < 0)
                return (orb_status_t)m;
        }
        if (now - idle_since < env->spin_s)
            continue;
        if (now - idle_since < env->spin_s + env->yield_s) {
            sched_yield();
            continue;
        }
        /* arm, then look once more: what a peer posts from now on, this look sees or the
         * peer rings for (transport/box.h) */
        const uint32_t seen = env->arm(env->ctx);
        moved = unfinished = nwait = 0;
        pst = one_pass(env, ops, nops, &moved, &unfinished, waiting, &nwait, err, errlen);
        if (pst != ORB_OK || moved || !unfinished || (may_defer && defer_rest(env, ops, nops))) {
            env->disarm(env->ctx);
            if (pst != ORB_OK)
                return pst;
            if (!moved)
                return ORB_OK;
            idle_passes = 0;
            continue;
        }
        double left = env->timeout_s - (now - idle_since);
        env->sleep(env->ctx, seen, left < 0.1 ? (left > 0 ? left : 0) : 0.1);
        now = orb_now();
        if (now - last_check >= 0.1 || now - idle_since >= env->timeout_s) {
            last_check = now;
            orb_status_t st = env->check(env->ctx, waiting, nwait, err, errlen);
            if (st != ORB_OK) {
                /* Data posted before the peer left is still ours to take: look once more. */
                int again = 0, still = 0, nw = 0;
                char err2[256];
                if (one_pass(env, ops, nops, &again, &still, waiting, &nw, err2, sizeof err2) != ORB_OK || !again)
                    return st;
                if (!still)
                    return ORB_OK;
                idle_passes = 0;
                continue;
            }
            if (now - idle_since >= env->timeout_s) {
                char what[1024];
                describe_blocked(env, ops, nops, what, sizeof what);
                snprintf(err, errlen, "rank %d: no progress for %g s (ORBIT_TIMEOUT): %s", env->rank,
                         env->timeout_s, what);
                return ORB_ERR_TIMEOUT;
            }
        }
    }
}

static inline __attribute__((always_inline)) orb_status_t exec_run_n(const orb_exec_env_t *env, orb_exec_op_t *ops,
                                                                    int nops, char *err, size_t errlen)
{
    orb_status_t st = run_ops_n(env, ops, nops, err, errlen);
    for (int i = 0; st == ORB_OK && i < nops; i++)
        if (ops[i].vouch == ORB_VOUCH_TRUSTED) /* its pieces are the peer's to take: see one_pass */
            orb_exec_vouched_end(env->due, ops[i].sync_next,
                                 env->send[(size_t)ops[i].sync_next * (size_t)env->nchannels].pos, ops[i].sig.seq);
    /* A failed call returns to a caller who may reuse its buffers at once: pieces that still
     * travel as addresses the transport has not sent yet are copied into their slots first
     * (connections without settle: shared memory, whose peer reads the address itself). */
    for (int i = 0; st != ORB_OK && i < nops; i++)
        for (int ch = 0; ch < ops[i].plan->nlanes; ch++) {
            orb_conn_t *c = ops[i].cma_conn[ch];
            if (c && c->ops->settle)
                c->ops->settle(c);
            /* and nothing may land in its buffers after it returns */
            if ((c = ops[i].place_conn[ch]))
                c->ops->recv_place(c, NULL, -1);
        }
    return st;
}

/* A call alone, the latency path, gets a copy built for one operation: its loops over the
 * run's calls and its nops == 1 tests fold away (some 20 instructions of a small call). */
orb_status_t orb_exec_run(const orb_exec_env_t *env, orb_exec_op_t *ops, int nops, char *err, size_t errlen)
{
    return nops == 1 ? exec_run_n(env, ops, 1, err, errlen) : exec_run_n(env, ops, nops, err, errlen);
}
