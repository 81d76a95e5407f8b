/* Recursive doubling: all-reduce (and barrier) in log2 rounds of pairwise exchanges, for
 * small calls where the ring's 2(n-1) steps cost the most. With p the largest power of two
 * not above n and rem = n - p, the first 2 rem ring positions fold in pairs first: the even
 * one sends its input to the odd one and leaves. The p ranks left (index v) exchange with
 * v ^ 1, v ^ 2, ..., each round sending what it holds and reducing what arrives into its
 * output; last, each odd folding position sends the result back to its even partner.
 * Every round pairs two ranks that compute op(mine, theirs) and op(theirs, mine) from the
 * same two partial values, and every op of the kernels gives the same bits whichever
 * operand comes first, so all ranks end with the same bits (as the two-rank exchange in
 * direct.c). Partners are ring positions, so round 0 pairs the ring's neighbours.
 * Chunk by chunk, each exchange sends before it receives: a two-rank cycle per pair, so two
 * slots (orb_plan_min_slots). */
#include "algos.h"

/* log2 of the largest power of two not above n (n >= 1): 1 << it ranks exchange. */
static int log2_floor(int n)
{
    int k = 0;
    while ((2 << k) <= n)
        k++;
    return k;
}

int orb_doubling_rounds(int nranks)
{
    const int k = log2_floor(nranks);
    return k + (nranks > (1 << k) ? 2 : 0); /* the fold in and the result back out */
}

orb_status_t orb_doubling_allreduce(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    const int n = a->nranks, pos = orb_ring_pos(a, a->rank);
    if (pos < 0)
        return ORB_ERR_INVALID_ARG;
    if (n < 2)
        return orb_ring_allreduce(plan); /* one rank: a copy */
    const int p = 1 << log2_floor(n), rem = n - p;
    /* v: this rank's index among the p that exchange, -1 for a position that folds away */
    const int v = pos < 2 * rem ? ((pos & 1) ? pos / 2 : -1) : pos - rem;
    const size_t count = a->coll == ORB_COLL_BARRIER ? 1 : a->count;
    orb_status_t st = ORB_OK;

    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        size_t cbeg, cend;
        orb_split(count, a->nchannels, c, &cbeg, &cend);
        for (size_t b0 = cbeg; b0 < cend; b0 += a->chunk_elems) {
            const size_t len = (cend - b0 < a->chunk_elems) ? cend - b0 : a->chunk_elems;
            if (v < 0) { /* hand the input to the odd partner, take the result back */
                const int partner = orb_ring_rank(a, pos + 1);
                orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, partner, -1, b0, 0, len, 0));
                orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, partner, 0, b0, len, 0));
                continue;
            }
            const int folds = pos < 2 * rem;
            orb_buf_t held = ORB_BUF_INPUT;
            if (folds) {
                const int even = orb_ring_rank(a, pos - 1);
                orb_emit(lane, &st,
                         orb_step_make(ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_INPUT, -1, even, b0, b0, len, 0));
                held = ORB_BUF_OUTPUT;
            }
            for (int bit = 1; bit < p; bit <<= 1) {
                const int w = v ^ bit, wpos = w < rem ? 2 * w + 1 : w + rem;
                const int peer = orb_ring_rank(a, wpos);
                const unsigned last = 2 * bit >= p ? ORB_STEP_POSTOP : 0;
                orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, held, peer, -1, b0, 0, len, 0));
                orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV_REDUCE_COPY, held, -1, peer, b0, b0, len, last));
                held = ORB_BUF_OUTPUT;
            }
            if (folds)
                orb_emit(lane, &st,
                         orb_step_make(ORB_STEP_SEND, ORB_BUF_OUTPUT, orb_ring_rank(a, pos - 1), -1, b0, 0, len, 0));
        }
    }
    return st;
}
