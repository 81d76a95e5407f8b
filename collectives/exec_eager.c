/* The eager path (exec.h): small sends and receives, and two ranks' small rooted calls,
 * straight to and from the transport, past the plan and the general executor, as MPI's eager
 * sends go into the peer's fast box. The general executor's quick lane moves the same piece,
 * with the same header, but a grouped send and recv reached it through some 1500
 * instructions of queueing, planning and set-up, a broadcast's root through some 1250
 * (docs/perf.md, 2026-11-30). Only the case where all goes well is handled here; anything
 * else is left to the general executor, which starts where this stopped. */
#include <sched.h>
#include <string.h>

#include "collectives/exec.h"
#include "core/clock.h"
#include "core/relax.h"
#include "kernels/copy_small.h"
#include "kernels/reduce.h"

/* Is there an op before i, not done, on the same connection (peer and direction)? Then op i
 * waits: pieces on one FIFO go in issue order. */
static int behind(const orb_eager_op_t *ops, int i)
{
    for (int j = 0; j < i; j++)
        if (!ops[j].done && ops[j].peer == ops[i].peer && ops[j].sends == ops[i].sends)
            return 1;
    return 0;
}

static void copy_piece(void *dst, const void *src, size_t bytes)
{
    if (bytes <= ORB_COPY_SMALL_MAX)
        orb_copy_small(dst, src, bytes);
    else
        memcpy(dst, src, bytes);
}

/* One look at every op not done. Returns 1 when one of them must go to the general executor
 * (stuck), 0 otherwise, or a negative status (a mismatch, named in err); *left is how many
 * are not done. rooted: ops is one rooted call's (orb_eager_op_t.vouch set), else sends and
 * receives only, whose pass does without its tests. */
static inline __attribute__((always_inline)) int eager_pass(const orb_exec_env_t *env, orb_eager_op_t *ops, int n,
                                                            int *left, char *err, size_t errlen, const int rooted)
{
    const size_t nch = (size_t)env->nchannels;
    *left = 0;
    for (int i = 0; i < n; i++) {
        orb_eager_op_t *o = &ops[i];
        if (o->done)
            continue;
        if (n > 1 && behind(ops, i)) {
            ++*left;
            continue;
        }
        if (o->sends) {
            orb_conn_t *sc = &env->send[(size_t)o->peer * nch];
            orb_slot_hdr_t *sh;
            /* (a full FIFO: the general executor waits for a slot and names a peer that
             * disagrees meanwhile; streaming stores: its slot_stores.h writes those) */
            if (sc->stores.mode == ORB_SLOT_STORES_STREAM || !(sh = sc->ops->send_acquire(sc, o->bytes))) {
                ++*left;
                return 1;
            }
            copy_piece(sh + 1, o->src, o->bytes);
            orb_piece_hdr_put(sh, o->sig); /* as the quick lane's data_header writes it */
            sh->nbytes = o->bytes;
            sh->step = 0;
            sh->sender = env->rank;
            /* to a vouching peer: the handshake rides on the piece, whose check stands for the
             * call, and the bookkeeping is a run's (exec.h) */
            const int trusted = rooted && o->vouch == ORB_VOUCH_TRUSTED;
            if (trusted) {
                sh->flags |= ORB_PIECE_SYNC;
                orb_exec_vouched_call(env->due, o->sig);
            }
            sc->ops->send_post(sc);
            if (trusted)
                orb_exec_vouched_end(env->due, o->peer, sc->pos, o->sig->seq);
            if (rooted && o->own && o->own != o->mine)
                copy_piece(o->own, o->mine, o->bytes);
            o->done = 1;
            continue;
        }
        orb_conn_t *rc = &env->recv[(size_t)o->peer * nch];
        const orb_slot_hdr_t *rh = rc->ops->recv_acquire(rc);
        if (!rh) {
            ++*left;
            continue;
        }
        /* A piece with flags (a handshake, a late one, an address) is the general executor's
         * to take or check, but for the handshake a vouching receiver takes on its data; a data
         * piece of another call is named here, as its quick lane would */
        if (rh->flags & ~(rooted && o->vouch == ORB_VOUCH_CHECKS ? ORB_PIECE_SYNC : 0u)) {
            ++*left;
            return 1;
        }
        if (rh->nbytes != o->bytes || (env->check_signatures && !orb_exec_sig_equal(rh, o->sig)))
            return (int)orb_exec_data_mismatch(env, o->sig, rh, o->bytes, o->peer, err, errlen);
        if (rooted && o->own && o->own != o->mine)
            copy_piece(o->own, o->mine, o->bytes);
        if (rooted && o->reduces)
            orb_kernel_reduce(o->dst, NULL, o->mine, rh + 1, o->count, o->dtype, o->op, o->postdiv);
        else
            copy_piece(o->dst, rh + 1, o->bytes);
        rc->ops->recv_release(rc);
        o->done = 1;
    }
    return 0;
}

static inline __attribute__((always_inline)) int eager_run(const orb_exec_env_t *env, orb_eager_op_t *ops, int n,
                                                           char *err, size_t errlen, const int rooted)
{
    int left, m = eager_pass(env, ops, n, &left, err, errlen, rooted);
    if (m < 0)
        return m;
    if (m || !left)
        return left;
    /* Receives not in yet: spin, then yield, as the general executor's idle loop does; where
     * it would go to sleep (or check its peers' health), it takes over. */
    double idle_since = 0;
    for (unsigned passes = 1;; passes++) {
        if ((m = eager_pass(env, ops, n, &left, err, errlen, rooted)) < 0)
            return m;
        if (m || !left)
            return left;
        if (passes & env->idle_mask) {
            orb_cpu_relax();
            continue;
        }
        const double now = orb_now();
        if (idle_since == 0) {
            idle_since = now;
            continue;
        }
        if (now - idle_since >= env->spin_s + env->yield_s)
            return left;
        if (now - idle_since >= env->spin_s)
            sched_yield();
    }
}

/* Two copies: sends and receives, and a rooted call's one op */
int orb_exec_eager(const orb_exec_env_t *env, orb_eager_op_t *ops, int n, char *err, size_t errlen)
{
    return ops[0].vouch != ORB_VOUCH_NONE ? eager_run(env, ops, 1, err, errlen, 1) : eager_run(env, ops, n, err, errlen, 0);
}
