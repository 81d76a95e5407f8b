/* The ordered (deterministic) reductions: every element is folded in rank order,
 * op(...op(op(x0, x1), x2)..., x_{n-1}), whatever the chunk, the channels or the ring.
 *
 * Each channel's share of the data is cut into n shards; rank s owns shard s and ends up
 * with its folded value. The fold of a shard cannot simply be gathered at its owner: in
 * place the owner's output is its own contribution x_s, which must stay intact until the
 * fold reaches position s, and there is no other room. So the prefix travels instead:
 *   - ranks 0..s-1 fold shard s along a chain 0 -> 1 -> ... -> s (each adds its own part
 *     to the running value and forwards it: recv-reduce-send), and the owner adds x_s as
 *     the prefix arrives (recv-reduce-copy into its output, which may be x_s itself);
 *   - ranks s+1..n-1 send their raw part to s, which adds them one by one, in rank order.
 * Every reduction is thus op(fold of 0..k-1, x_k) (the kernels' ops are commutative to the
 * bit, so which operand is "src" and which "in" does not matter), and the plan checker
 * proves that order. Each rank sends (n-1)/n of its data, as in the ring; receiving is
 * uneven (rank 1 takes (2n-3)/n, the last rank 1/n).
 * Then all-reduce sends each finished shard straight to every other rank, and reduce to
 * the root. Every rank cuts every shard into the same pieces; a round (one chunk of every
 * shard) empties every FIFO it fills, and no stage waits in a cycle, so one slot per FIFO
 * is enough whatever the pieces per step. */
#include <stdlib.h>

#include "algos.h"

/* Where shard s of a channel lives: its elements in the input, in the output (meaningful
 * for the owner, and every rank of all-reduce), and its length. */
typedef struct {
    size_t in, out, len;
} shard_t;

static shard_t shard_of(const orb_plan_args_t *a, size_t cbeg, size_t cend, int s)
{
    shard_t sh;
    if (a->coll == ORB_COLL_REDUCE_SCATTER) { /* shard s is block s; the output is the owner's block */
        sh.in = (size_t)s * a->count + cbeg;
        sh.out = cbeg;
        sh.len = cend - cbeg;
        return sh;
    }
    size_t b, e;
    orb_split(cend - cbeg, a->nranks, s, &b, &e);
    sh.in = sh.out = cbeg + b;
    sh.len = e - b;
    return sh;
}

/* Round k's piece of shard s: [k * chunk, ...) clipped to the shard (empty pieces are
 * dropped by orb_lane_push, on every rank alike). */
static size_t piece(const orb_plan_args_t *a, const shard_t *sh, size_t k, size_t *off)
{
    *off = k * a->chunk_elems;
    if (*off >= sh->len)
        return 0;
    return sh->len - *off < a->chunk_elems ? sh->len - *off : a->chunk_elems;
}

static void emit(orb_lane_t *lane, orb_status_t *st, orb_step_kind_t kind, orb_buf_t buf, int send, int recv,
                 size_t src, size_t dst, size_t len, unsigned flags)
{
    orb_emit(lane, st, orb_step_make(kind, buf, send, recv, src, dst, len, flags));
}

/* One round of the folding on rank r. The stages run in an order without cycles, so no
 * FIFO needs room for more than one piece: the chains (a path 0 -> 1 -> ... -> n-1: the
 * prefix of shard r from r-1, then the chains of the later shards, whose pieces come from
 * r-1 in shard order), then the raw parts down to the earlier owners, then this shard's
 * raw parts up from the later ranks in rank order. */
static void fold_round(const orb_plan_args_t *a, orb_lane_t *lane, orb_status_t *st, const shard_t *sh, size_t k)
{
    const int n = a->nranks, r = a->rank;
    const shard_t *me = &sh[r];
    size_t o, len;
    if ((len = piece(a, me, k, &o))) { /* the prefix arrives, or starts here */
        unsigned post = r == n - 1 ? ORB_STEP_POSTOP : 0;
        if (r == 0)
            emit(lane, st, ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, me->in + o, me->out + o, len, post);
        else
            emit(lane, st, ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_INPUT, -1, r - 1, me->in + o, me->out + o, len, post);
    }
    for (int s = r + 1; s < n; s++)
        if ((len = piece(a, &sh[s], k, &o))) {
            if (r == 0)
                emit(lane, st, ORB_STEP_SEND, ORB_BUF_INPUT, 1, -1, sh[s].in + o, 0, len, 0);
            else
                emit(lane, st, ORB_STEP_RECV_REDUCE_SEND, ORB_BUF_INPUT, r + 1, r - 1, sh[s].in + o, 0, len, 0);
        }
    for (int s = 0; s < r; s++)
        if ((len = piece(a, &sh[s], k, &o)))
            emit(lane, st, ORB_STEP_SEND, ORB_BUF_INPUT, s, -1, sh[s].in + o, 0, len, 0);
    if ((len = piece(a, me, k, &o)))
        for (int q = r + 1; q < n; q++)
            emit(lane, st, ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_OUTPUT, -1, q, me->out + o, me->out + o, len,
                 q == n - 1 ? ORB_STEP_POSTOP : 0);
}

static void recv_shard(const orb_plan_args_t *a, orb_lane_t *lane, orb_status_t *st, const shard_t *sh, size_t k,
                       int q)
{
    size_t o, len;
    if ((len = piece(a, &sh[q], k, &o)))
        emit(lane, st, ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, q, 0, sh[q].out + o, len, 0);
}

/* One round of the distribution: reduce sends every finished shard to the root, which
 * takes them in rank order; all-reduce sends it to every rank, after taking the shards of
 * the lower ranks and before those of the higher ones (no cycle, as above). */
static void spread_round(const orb_plan_args_t *a, orb_lane_t *lane, orb_status_t *st, const shard_t *sh, size_t k)
{
    const int n = a->nranks, r = a->rank;
    size_t o, len;
    if (a->coll == ORB_COLL_REDUCE_SCATTER || n == 1)
        return;
    const int all = a->coll == ORB_COLL_ALLREDUCE, root = all || r == a->root;
    for (int q = 0; q < r && root; q++)
        recv_shard(a, lane, st, sh, k, q);
    if ((len = piece(a, &sh[r], k, &o)))
        for (int d = 1; d < n; d++) {
            int q = (r + d) % n;
            if (all || q == a->root)
                emit(lane, st, ORB_STEP_SEND, ORB_BUF_OUTPUT, q, -1, sh[r].out + o, 0, len, 0);
        }
    for (int q = r + 1; q < n && root; q++)
        recv_shard(a, lane, st, sh, k, q);
}

orb_status_t orb_ordered_reduce(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    const int n = a->nranks;
    if (a->coll == ORB_COLL_REDUCE && !orb_root_valid(a))
        return ORB_ERR_INVALID_ARG;
    /* a non-root of reduce folds its shard in scratch of the call's size */
    if (a->coll == ORB_COLL_REDUCE && a->rank != a->root && n > 1)
        plan->out_count = a->count;
    shard_t *sh = malloc((size_t)n * sizeof *sh);
    if (!sh)
        return ORB_ERR_NO_MEMORY;
    orb_status_t st = ORB_OK;
    for (int c = 0; c < a->nchannels; c++) {
        size_t cbeg, cend;
        orb_split(a->count, a->nchannels, c, &cbeg, &cend);
        for (int s = 0; s < n; s++)
            sh[s] = shard_of(a, cbeg, cend, s);
        /* shard 0 is the longest (orb_split gives the remainder to the first) */
        const size_t rounds = (sh[0].len + a->chunk_elems - 1) / a->chunk_elems;
        for (size_t k = 0; k < rounds; k++) {
            fold_round(a, &plan->lanes[c], &st, sh, k);
            spread_round(a, &plan->lanes[c], &st, sh, k);
        }
    }
    free(sh);
    return st;
}
