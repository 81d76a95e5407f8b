/* Bruck's all-gather for small blocks: ceil(log2 n) rounds where the ring takes n-1 steps,
 * each a hop the next one waits for (8 ranks: 3 against 7; Open MPI's tuned component picks
 * Bruck or recursive doubling for small all-gathers alike). Positions are ring positions, so
 * round 0 pairs ring neighbours. After round k a rank holds the blocks of the 2^(k+1)
 * positions from its own on, in a work area in that order: round k sends the first
 * m = min(2^k, n - 2^k) of them, one contiguous message, to the position 2^k behind, and
 * receives the m that the position 2^k ahead holds, which land right after its own. Last,
 * every block is copied to its rank's place in the output. Scratch (per channel c, a
 * channel's share w of every block, starting at its first element cb):
 *   work   [n*cb, n*cb + n*w)   slot j: the block of ring position pos + j
 * Round 0 sends straight from the input; the input is read before any output element is
 * written (the final copies), so in place needs no care. Chunk by chunk each round sends
 * before it receives, on a cycle of positions: two slots (orb_plan_min_slots). */
#include "algos.h"

orb_status_t orb_bruck_allgather(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    const int n = a->nranks, pos = orb_ring_pos(a, a->rank), rounds = orb_bruck_rounds(n);
    if (pos < 0)
        return ORB_ERR_INVALID_ARG;
    if (n < 2)
        return orb_ring_allgather(plan); /* one rank: a copy */
    const size_t cnt = a->count;
    plan->scratch_count = (size_t)n * cnt;
    orb_status_t st = ORB_OK;
    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        size_t cb, ce;
        orb_split(cnt, a->nchannels, c, &cb, &ce);
        const size_t w = ce - cb, work = (size_t)n * cb;
        if (w == 0)
            continue;
        for (int k = 0; k < rounds; k++) {
            const int dist = 1 << k, to = orb_ring_rank(a, pos - dist), from = orb_ring_rank(a, pos + dist);
            const size_t len = (size_t)orb_bruck_gather_blocks(n, k) * w;
            /* round 0's message is this rank's own block: from the input, copied to slot 0 after */
            const orb_buf_t src = k == 0 ? ORB_BUF_INPUT : ORB_BUF_SCRATCH;
            const size_t src_off = k == 0 ? cb : work;
            for (size_t b0 = 0; b0 < len; b0 += a->chunk_elems) { /* send a chunk, then take one */
                const size_t l = len - b0 < a->chunk_elems ? len - b0 : a->chunk_elems;
                orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, src, to, -1, src_off + b0, 0, l, 0));
                orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, from, 0,
                                                  work + (size_t)dist * w + b0, l, ORB_STEP_DST_SCRATCH));
            }
            if (k == 0 && rounds > 1)
                orb_emit_copy(a, lane, &st, ORB_BUF_INPUT, cb, ORB_STEP_DST_SCRATCH, work, w);
        }
        orb_emit_copy(a, lane, &st, ORB_BUF_INPUT, cb, 0, (size_t)a->rank * cnt + cb, w);
        for (int j = 1; j < n; j++)
            orb_emit_copy(a, lane, &st, ORB_BUF_SCRATCH, work + (size_t)j * w, 0,
                          (size_t)orb_ring_rank(a, pos + j) * cnt + cb, w);
    }
    return st;
}
