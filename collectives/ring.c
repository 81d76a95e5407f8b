/* Ring algorithms. All-reduce = reduce-scatter then all-gather around the ring, chunked so
 * that several chunks are in flight, with the reduction fused into the forwarding step.
 * All-gather and reduce-scatter are the two halves on their own. Rooted collectives are a
 * pipelined chain along the ring: from the root (broadcast) or towards it (reduce, gather).
 *
 * Every rank of a ring injects one piece before it receives one, so with all FIFOs full
 * nobody could move: rings need two slots per FIFO (orb_plan_min_slots). Chains have no
 * cycle and run with one. */
#include <stdlib.h>

#include "algos.h"

int orb_ring_pos(const orb_plan_args_t *a, int rank)
{
    if (!a->ring)
        return rank;
    for (int i = 0; i < a->nranks; i++)
        if (a->ring[i] == rank)
            return i;
    return -1;
}

/* Segment s (mod n) of a round's block [b0, b0 + blk). */
static void segment(size_t b0, size_t blk, int n, int s, size_t *off, size_t *len)
{
    s %= n;
    if (s < 0)
        s += n;
    size_t segsz = (blk + (size_t)n - 1) / (size_t)n;
    size_t beg = (size_t)s * segsz, end = beg + segsz;
    if (beg > blk)
        beg = blk;
    if (end > blk)
        end = blk;
    *off = b0 + beg;
    *len = end - beg;
}

orb_status_t orb_ring_allreduce(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    const int n = a->nranks;
    const size_t count = (a->coll == ORB_COLL_BARRIER) ? 1 : a->count;
    const int p = orb_ring_pos(a, a->rank);
    if (p < 0)
        return ORB_ERR_INVALID_ARG;
    const int next = orb_ring_rank(a, p + 1), prev = orb_ring_rank(a, p - 1);
    orb_status_t st = ORB_OK;

    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        size_t cbeg, cend;
        orb_split(count, a->nchannels, c, &cbeg, &cend);
        if (n == 1) {
            for (size_t b0 = cbeg; b0 < cend; b0 += a->chunk_elems) {
                size_t len = (cend - b0 < a->chunk_elems) ? cend - b0 : a->chunk_elems;
                orb_emit(lane, &st,
                         orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, b0, b0, len, ORB_STEP_POSTOP));
            }
            continue;
        }
        const size_t round = (size_t)n * a->chunk_elems;
        for (size_t b0 = cbeg; b0 < cend; b0 += round) {
            size_t blk = (cend - b0 < round) ? cend - b0 : round;
            size_t off, len;
            /* reduce-scatter */
            segment(b0, blk, n, p, &off, &len);
            orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, next, -1, off, 0, len, 0));
            for (int k = 1; k <= n - 2; k++) {
                segment(b0, blk, n, p - k, &off, &len);
                orb_emit(lane, &st,
                         orb_step_make(ORB_STEP_RECV_REDUCE_SEND, ORB_BUF_INPUT, next, prev, off, 0, len, 0));
            }
            segment(b0, blk, n, p + 1, &off, &len);
            orb_emit(lane, &st,
                     orb_step_make(ORB_STEP_RECV_REDUCE_COPY_SEND, ORB_BUF_INPUT, next, prev, off, off, len,
                                   ORB_STEP_POSTOP));
            /* all-gather */
            for (int k = 1; k <= n - 2; k++) {
                segment(b0, blk, n, p + 1 - k, &off, &len);
                orb_emit(lane, &st,
                         orb_step_make(ORB_STEP_RECV_COPY_SEND, ORB_BUF_OUTPUT, next, prev, 0, off, len, 0));
            }
            segment(b0, blk, n, p + 2, &off, &len);
            orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, prev, 0, off, len, 0));
        }
    }
    return st;
}

/* The pieces a channel moves of each rank's block: [*b0, *b0 + *len) for every round of
 * chunk_elems inside the channel's share of [0, count). Iterate with ring_round_next. */
typedef struct {
    size_t b0, len, end, chunk;
} ring_round_t;

static void ring_round_first(const orb_plan_args_t *a, size_t count, int c, ring_round_t *r)
{
    size_t beg;
    orb_split(count, a->nchannels, c, &beg, &r->end);
    r->chunk = a->chunk_elems;
    r->b0 = beg;
    r->len = (r->end - beg < r->chunk) ? r->end - beg : r->chunk;
}

static int ring_round_more(const ring_round_t *r) { return r->b0 < r->end; }

static void ring_round_next(ring_round_t *r)
{
    r->b0 += r->len;
    r->len = (r->end - r->b0 < r->chunk) ? r->end - r->b0 : r->chunk;
}

/* Block of rank q inside an nranks*count buffer. */
static size_t block(const orb_plan_args_t *a, int q) { return (size_t)q * a->count; }

/* Each round every rank sends its own piece to next, forwards n-2 pieces it receives and
 * keeps the last one: the piece of the rank k positions back arrives at step k. */
orb_status_t orb_ring_allgather(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    const int n = a->nranks, p = orb_ring_pos(a, a->rank);
    if (p < 0)
        return ORB_ERR_INVALID_ARG;
    const int next = orb_ring_rank(a, p + 1), prev = orb_ring_rank(a, p - 1);
    const size_t own = block(a, a->rank);
    orb_status_t st = ORB_OK;

    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        ring_round_t r;
        for (ring_round_first(a, a->count, c, &r); ring_round_more(&r); ring_round_next(&r)) {
            /* Send first, then the local copy (a no-op in place: the input is the rank's own
             * block): the next rank starts on the piece while this one copies. */
            if (n > 1)
                orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, next, -1, r.b0, 0, r.len, 0));
            orb_emit(lane, &st, orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, r.b0, own + r.b0, r.len, 0));
            if (n == 1)
                continue;
            for (int k = 1; k <= n - 2; k++) {
                size_t dst = block(a, orb_ring_rank(a, p - k)) + r.b0;
                orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV_COPY_SEND, ORB_BUF_OUTPUT, next, prev, 0, dst,
                                                  r.len, 0));
            }
            size_t dst = block(a, orb_ring_rank(a, p + 1)) + r.b0;
            orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, prev, 0, dst, r.len, 0));
        }
    }
    return st;
}

/* The partial sum of block q starts at the rank after q on the ring and travels n-1 hops,
 * ending at q: each rank starts the block of its predecessor and finishes its own. The own
 * input block is read only by that last step, so in place (output == own input block)
 * nothing is read after it was overwritten. */
orb_status_t orb_ring_reduce_scatter(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    const int n = a->nranks, p = orb_ring_pos(a, a->rank);
    if (p < 0)
        return ORB_ERR_INVALID_ARG;
    const int next = orb_ring_rank(a, p + 1), prev = orb_ring_rank(a, p - 1);
    orb_status_t st = ORB_OK;

    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        ring_round_t r;
        for (ring_round_first(a, a->count, c, &r); ring_round_more(&r); ring_round_next(&r)) {
            if (n == 1) {
                orb_emit(lane, &st,
                         orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, r.b0, r.b0, r.len, ORB_STEP_POSTOP));
                continue;
            }
            size_t src = block(a, orb_ring_rank(a, p - 1)) + r.b0;
            orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, next, -1, src, 0, r.len, 0));
            for (int k = 1; k <= n - 2; k++) {
                src = block(a, orb_ring_rank(a, p - 1 - k)) + r.b0;
                orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV_REDUCE_SEND, ORB_BUF_INPUT, next, prev, src, 0,
                                                  r.len, 0));
            }
            src = block(a, a->rank) + r.b0;
            orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_INPUT, -1, prev, src, r.b0,
                                              r.len, ORB_STEP_POSTOP));
        }
    }
    return st;
}

/* Distance of this rank from the root along the ring (0 at the root). */
static int chain_dist(const orb_plan_args_t *a, int p)
{
    int d = p - orb_ring_pos(a, a->root);
    return d < 0 ? d + a->nranks : d;
}

/* Chain root -> next -> ... -> the rank before the root; each chunk is forwarded as soon
 * as it arrives. */
orb_status_t orb_ring_broadcast(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    const int n = a->nranks, p = orb_ring_pos(a, a->rank);
    if (p < 0 || !orb_root_valid(a))
        return ORB_ERR_INVALID_ARG;
    const int next = orb_ring_rank(a, p + 1), prev = orb_ring_rank(a, p - 1);
    const int d = chain_dist(a, p);
    orb_status_t st = ORB_OK;

    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        ring_round_t r;
        for (ring_round_first(a, a->count, c, &r); ring_round_more(&r); ring_round_next(&r)) {
            if (d == 0) {
                if (n > 1) /* send first: the copy is local and would delay the chain */
                    orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, next, -1, r.b0, 0, r.len, 0));
                orb_emit(lane, &st, orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, r.b0, r.b0, r.len, 0));
            } else if (d < n - 1) {
                orb_emit(lane, &st,
                         orb_step_make(ORB_STEP_RECV_COPY_SEND, ORB_BUF_OUTPUT, next, prev, 0, r.b0, r.len, 0));
            } else {
                orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, prev, 0, r.b0, r.len, 0));
            }
        }
    }
    return st;
}

/* Chain from the rank after the root around to the root; each rank adds its input to the
 * partial result passing through. */
orb_status_t orb_ring_reduce(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    const int n = a->nranks, p = orb_ring_pos(a, a->rank);
    if (p < 0 || !orb_root_valid(a))
        return ORB_ERR_INVALID_ARG;
    const int next = orb_ring_rank(a, p + 1), prev = orb_ring_rank(a, p - 1);
    const int d = chain_dist(a, p);
    orb_status_t st = ORB_OK;

    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        ring_round_t r;
        for (ring_round_first(a, a->count, c, &r); ring_round_more(&r); ring_round_next(&r)) {
            orb_step_t s;
            if (n == 1)
                s = orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, r.b0, r.b0, r.len, ORB_STEP_POSTOP);
            else if (d == 0)
                s = orb_step_make(ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_INPUT, -1, prev, r.b0, r.b0, r.len,
                                  ORB_STEP_POSTOP);
            else if (d == 1)
                s = orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, next, -1, r.b0, 0, r.len, 0);
            else
                s = orb_step_make(ORB_STEP_RECV_REDUCE_SEND, ORB_BUF_INPUT, next, prev, r.b0, 0, r.len, 0);
            orb_emit(lane, &st, s);
        }
    }
    return st;
}

/* Chain towards the root: the rank at distance d sends its own piece, then forwards the
 * pieces of distances d-1 .. 1 as they arrive. A non-root has no output, so the forwarded
 * pieces pass through a scratch output of count elements (orb_plan_out_is_scratch); they
 * are only written there, never read back. */
orb_status_t orb_ring_gather(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    const int n = a->nranks, p = orb_ring_pos(a, a->rank);
    if (p < 0 || !orb_root_valid(a))
        return ORB_ERR_INVALID_ARG;
    const int next = orb_ring_rank(a, p + 1), prev = orb_ring_rank(a, p - 1);
    const int d = chain_dist(a, p);
    orb_status_t st = ORB_OK;

    if (d >= 2)
        plan->out_count = a->count;
    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        ring_round_t r;
        for (ring_round_first(a, a->count, c, &r); ring_round_more(&r); ring_round_next(&r)) {
            if (d == 0) {
                orb_emit(lane, &st, orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, r.b0,
                                                  block(a, a->rank) + r.b0, r.len, 0));
                for (int k = n - 1; k >= 1; k--) {
                    size_t dst = block(a, orb_ring_rank(a, p + k)) + r.b0;
                    orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, prev, 0, dst, r.len, 0));
                }
                continue;
            }
            orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, next, -1, r.b0, 0, r.len, 0));
            for (int k = 1; k < d; k++)
                orb_emit(lane, &st,
                         orb_step_make(ORB_STEP_RECV_COPY_SEND, ORB_BUF_OUTPUT, next, prev, 0, r.b0, r.len, 0));
        }
    }
    return st;
}

/* Scatter along the chain root -> next -> ...: where the root's whole input fits one chunk on
 * one channel (orb_ring_scatter_packs) it travels as one piece; otherwise each round the root
 * sends the pieces of the farthest rank first, so a rank at distance d forwards the pieces of
 * distances n-1 .. d+1 as they pass and keeps the last one, its own. A forwarded piece is
 * written to the rank's own output on its way (RECV_COPY_SEND needs a destination) and
 * overwritten by the rank's own piece, which arrives after all of them: a scatter non-root has
 * exactly that output. */
orb_status_t orb_ring_scatter(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    const int n = a->nranks, p = orb_ring_pos(a, a->rank);
    if (p < 0 || !orb_root_valid(a))
        return ORB_ERR_INVALID_ARG;
    const int next = orb_ring_rank(a, p + 1), prev = orb_ring_rank(a, p - 1);
    const int d = chain_dist(a, p);
    orb_status_t st = ORB_OK;

    if (orb_ring_scatter_packs(n, a->count, a->chunk_elems, a->nchannels)) {
        /* The root's whole input in one piece down the chain (contiguous whatever the root and
         * the ring): n - 1 pieces in all, where the blocks one by one are n(n-1)/2. Each rank
         * takes its block from the piece as it passes through its scratch. */
        orb_lane_t *lane = &plan->lanes[0];
        const size_t all = (size_t)n * a->count;
        if (d == 0) {
            orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, next, -1, 0, 0, all, 0));
            orb_emit(lane, &st,
                     orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, block(a, a->rank), 0, a->count, 0));
            return st;
        }
        plan->scratch_count = all;
        const orb_step_kind_t k = d < n - 1 ? ORB_STEP_RECV_COPY_SEND : ORB_STEP_RECV;
        orb_emit(lane, &st,
                 orb_step_make(k, ORB_BUF_OUTPUT, d < n - 1 ? next : -1, prev, 0, 0, all, ORB_STEP_DST_SCRATCH));
        orb_emit(lane, &st,
                 orb_step_make(ORB_STEP_COPY, ORB_BUF_SCRATCH, -1, -1, block(a, a->rank), 0, a->count, 0));
        return st;
    }

    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        ring_round_t r;
        for (ring_round_first(a, a->count, c, &r); ring_round_more(&r); ring_round_next(&r)) {
            if (d == 0) {
                for (int k = n - 1; k >= 1; k--) {
                    size_t src = block(a, orb_ring_rank(a, p + k)) + r.b0;
                    orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, next, -1, src, 0, r.len, 0));
                }
                orb_emit(lane, &st, orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, block(a, a->rank) + r.b0,
                                                  r.b0, r.len, 0));
                continue;
            }
            for (int k = n - 1; k > d; k--)
                orb_emit(lane, &st,
                         orb_step_make(ORB_STEP_RECV_COPY_SEND, ORB_BUF_OUTPUT, next, prev, 0, r.b0, r.len, 0));
            orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, prev, 0, r.b0, r.len, 0));
        }
    }
    return st;
}
