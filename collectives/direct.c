/* Direct algorithms: every byte goes straight from its owner to its destination in one hop.
 * Point-to-point send/recv, and gather where each rank sends its block to the root. Data
 * is cut into chunks (and spread over channels) the same way as for the ring, so sender and
 * receiver agree step by step. */
#include "algos.h"

/* Calls fn(lane, beg, len, arg) for every chunk of channel c's share of [0, count). */
typedef void (*chunk_fn)(orb_lane_t *lane, orb_status_t *st, size_t beg, size_t len, const void *arg);

static orb_status_t for_each_chunk(orb_plan_t *plan, chunk_fn fn, const void *arg)
{
    const orb_plan_args_t *a = &plan->args;
    orb_status_t st = ORB_OK;
    for (int c = 0; c < a->nchannels; c++) {
        size_t beg, end;
        orb_split(a->count, a->nchannels, c, &beg, &end);
        for (size_t b0 = beg; b0 < end; b0 += a->chunk_elems) {
            size_t len = (end - b0 < a->chunk_elems) ? end - b0 : a->chunk_elems;
            fn(&plan->lanes[c], &st, b0, len, arg);
        }
    }
    return st;
}

/* The peer of send/recv is in args->root; talking to oneself has no matching call. */
static int peer_valid(const orb_plan_args_t *a) { return orb_root_valid(a) && a->root != a->rank; }

static void send_chunk(orb_lane_t *lane, orb_status_t *st, size_t beg, size_t len, const void *arg)
{
    const orb_plan_args_t *a = arg;
    orb_emit(lane, st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, a->root, -1, beg, 0, len, 0));
}

orb_status_t orb_direct_send(orb_plan_t *plan)
{
    if (!peer_valid(&plan->args))
        return ORB_ERR_INVALID_ARG;
    return for_each_chunk(plan, send_chunk, &plan->args);
}

static void recv_chunk(orb_lane_t *lane, orb_status_t *st, size_t beg, size_t len, const void *arg)
{
    const orb_plan_args_t *a = arg;
    orb_emit(lane, st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, a->root, 0, beg, len, 0));
}

orb_status_t orb_direct_recv(orb_plan_t *plan)
{
    if (!peer_valid(&plan->args))
        return ORB_ERR_INVALID_ARG;
    return for_each_chunk(plan, recv_chunk, &plan->args);
}

/* The root takes one chunk from every rank in rank order before the next chunk, so all
 * senders stream at once instead of waiting for the ranks before them to finish. */
static void gather_root_chunk(orb_lane_t *lane, orb_status_t *st, size_t beg, size_t len, const void *arg)
{
    const orb_plan_args_t *a = arg;
    for (int q = 0; q < a->nranks; q++) {
        size_t dst = (size_t)q * a->count + beg;
        if (q == a->rank) /* in place the input is this slot: a no-op */
            orb_emit(lane, st, orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, beg, dst, len, 0));
        else
            orb_emit(lane, st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, q, 0, dst, len, 0));
    }
}

orb_status_t orb_direct_gather(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    if (!orb_root_valid(a))
        return ORB_ERR_INVALID_ARG;
    return for_each_chunk(plan, a->rank == a->root ? gather_root_chunk : send_chunk, a);
}

/* All-reduce between two ranks as one exchange: each sends its chunk and reduces the peer's
 * into its own, one hop instead of the ring's two (reduce-scatter then all-gather). Both
 * ranks compute op(mine, theirs), which is the same value on both since every op is
 * commutative, so the outputs agree to the bit. Chunk by chunk, send before receive: never
 * more than one piece in flight each way, deadlock-free with one slot. For more than two
 * ranks an exchange would reduce in a different order on every rank, so the ring is used. */
static void exchange_chunk(orb_lane_t *lane, orb_status_t *st, size_t beg, size_t len, const void *arg)
{
    const orb_plan_args_t *a = arg;
    const int peer = 1 - a->rank;
    orb_emit(lane, st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, peer, -1, beg, 0, len, 0));
    orb_emit(lane, st, orb_step_make(ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_INPUT, -1, peer, beg, beg, len, ORB_STEP_POSTOP));
}

orb_status_t orb_direct_allreduce(orb_plan_t *plan)
{
    if (plan->args.nranks != 2)
        return orb_ring_allreduce(plan);
    return for_each_chunk(plan, exchange_chunk, &plan->args);
}

/* Scatter: the root hands every rank its chunk in rank order before the next chunk, so all
 * receivers stream at once (the mirror of the direct gather). */
static void scatter_root_chunk(orb_lane_t *lane, orb_status_t *st, size_t beg, size_t len, const void *arg)
{
    const orb_plan_args_t *a = arg;
    for (int q = 0; q < a->nranks; q++) {
        size_t src = (size_t)q * a->count + beg;
        if (q == a->rank) /* in place the output is this block: a no-op */
            orb_emit(lane, st, orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, src, beg, len, 0));
        else
            orb_emit(lane, st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, q, -1, src, 0, len, 0));
    }
}

static void scatter_leaf_chunk(orb_lane_t *lane, orb_status_t *st, size_t beg, size_t len, const void *arg)
{
    const orb_plan_args_t *a = arg;
    orb_emit(lane, st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, a->root, 0, beg, len, 0));
}

orb_status_t orb_direct_scatter(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    if (!orb_root_valid(a))
        return ORB_ERR_INVALID_ARG;
    return for_each_chunk(plan, a->rank == a->root ? scatter_root_chunk : scatter_leaf_chunk, a);
}
