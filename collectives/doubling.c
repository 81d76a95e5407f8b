/* Recursive doubling: all-reduce (and barrier; and reduce-scatter, as the all-reduce of its
 * whole input) in log2 rounds of pairwise exchanges, for small calls where the ring's 2(n-1)
 * steps (n-1 for reduce-scatter) cost the most. With p the largest power of two
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

/* The exchanges over total elements; the result lands in the output (all-reduce) or, with
 * into_scratch, in the plan's workspace (reduce-scatter, whose output holds one block). One
 * rank has nothing to exchange: alone builds its plan (a copy). */
static orb_status_t doubling(orb_plan_t *plan, size_t total, int into_scratch, orb_status_t (*alone)(orb_plan_t *))
{
    const orb_plan_args_t *a = &plan->args;
    const int n = a->nranks, pos = orb_ring_pos(a, a->rank);
    if (pos < 0)
        return ORB_ERR_INVALID_ARG;
    if (n < 2)
        return alone(plan);
    if (into_scratch)
        plan->scratch_count = total;
    const int p = 1 << log2_floor(n), rem = n - p;
    /* v: this rank's index among the p that exchange, -1 for a position that folds away */
    const int v = pos < 2 * rem ? ((pos & 1) ? pos / 2 : -1) : pos - rem;
    const orb_buf_t res = into_scratch ? ORB_BUF_SCRATCH : ORB_BUF_OUTPUT;
    const unsigned to_res = into_scratch ? ORB_STEP_DST_SCRATCH : 0;
    orb_status_t st = ORB_OK;

    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        size_t cbeg, cend;
        orb_split(total, a->nchannels, c, &cbeg, &cend);
        for (size_t b0 = cbeg; b0 < cend; b0 += a->chunk_elems) {
            const size_t len = (cend - b0 < a->chunk_elems) ? cend - b0 : a->chunk_elems;
            if (v < 0) { /* hand the input to the odd partner, take the result back */
                const int partner = orb_ring_rank(a, pos + 1);
                orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, partner, -1, b0, 0, len, 0));
                orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, partner, 0, b0, len, to_res));
                continue;
            }
            const int folds = pos < 2 * rem;
            orb_buf_t held = ORB_BUF_INPUT;
            if (folds) {
                const int even = orb_ring_rank(a, pos - 1);
                orb_emit(lane, &st,
                         orb_step_make(ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_INPUT, -1, even, b0, b0, len, to_res));
                held = res;
            }
            for (int bit = 1; bit < p; bit <<= 1) {
                const int w = v ^ bit, wpos = w < rem ? 2 * w + 1 : w + rem;
                const int peer = orb_ring_rank(a, wpos);
                const unsigned last = 2 * bit >= p ? ORB_STEP_POSTOP : 0;
                orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, held, peer, -1, b0, 0, len, 0));
                orb_emit(lane, &st,
                         orb_step_make(ORB_STEP_RECV_REDUCE_COPY, held, -1, peer, b0, b0, len, last | to_res));
                held = res;
            }
            if (folds)
                orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, res, orb_ring_rank(a, pos - 1), -1, b0, 0, len, 0));
        }
        if (into_scratch) { /* this lane's share of the rank's own block, to the output */
            const size_t own = (size_t)a->rank * a->count, lo = cbeg > own ? cbeg : own,
                         hi = cend < own + a->count ? cend : own + a->count;
            if (lo < hi)
                orb_emit_copy(a, lane, &st, ORB_BUF_SCRATCH, lo, 0, lo - own, hi - lo);
        }
    }
    return st;
}

orb_status_t orb_doubling_allreduce(orb_plan_t *plan)
{
    return doubling(plan, plan->args.coll == ORB_COLL_BARRIER ? 1 : plan->args.count, 0, orb_ring_allreduce);
}

/* Reduce-scatter: the all-reduce of the whole input (n blocks) into the workspace, then each
 * rank copies its own block out; log2 rounds of n blocks against the ring's n-1 steps of one,
 * for small blocks. The input is read by the first round only (and a folding rank's send),
 * and the output written last, so in place (the output is the input's own block) is safe. */
orb_status_t orb_doubling_reduce_scatter(orb_plan_t *plan)
{
    return doubling(plan, (size_t)plan->args.nranks * plan->args.count, 1, orb_ring_reduce_scatter);
}
