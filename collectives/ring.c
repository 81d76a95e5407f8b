/* Ring algorithms. All-reduce = reduce-scatter then all-gather around the ring, chunked so
 * that several chunks are in flight, with the reduction fused into the forwarding step. */
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

static orb_step_t step(orb_step_kind_t kind, orb_buf_t src_buf, int send_peer, int recv_peer,
                       size_t src_off, size_t dst_off, size_t count, unsigned flags)
{
    orb_step_t s = {0};
    s.kind = (uint8_t)kind;
    s.src_buf = (uint8_t)src_buf;
    s.flags = (uint8_t)flags;
    s.send_peer = send_peer;
    s.recv_peer = recv_peer;
    s.src_off = src_off;
    s.dst_off = dst_off;
    s.count = count;
    return s;
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

    for (int c = 0; c < a->nchannels && st == ORB_OK; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        size_t cbeg, cend;
        orb_split(count, a->nchannels, c, &cbeg, &cend);
        if (n == 1) {
            orb_step_t s = step(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, cbeg, cbeg, cend - cbeg, ORB_STEP_POSTOP);
            st = orb_lane_push(lane, &s);
            continue;
        }
        const size_t round = (size_t)n * a->chunk_elems;
        for (size_t b0 = cbeg; b0 < cend && st == ORB_OK; b0 += round) {
            size_t blk = (cend - b0 < round) ? cend - b0 : round;
            size_t off, len;
            orb_step_t s;
            /* reduce-scatter */
            segment(b0, blk, n, p, &off, &len);
            s = step(ORB_STEP_SEND, ORB_BUF_INPUT, next, -1, off, 0, len, 0);
            st |= orb_lane_push(lane, &s);
            for (int k = 1; k <= n - 2; k++) {
                segment(b0, blk, n, p - k, &off, &len);
                s = step(ORB_STEP_RECV_REDUCE_SEND, ORB_BUF_INPUT, next, prev, off, 0, len, 0);
                st |= orb_lane_push(lane, &s);
            }
            segment(b0, blk, n, p + 1, &off, &len);
            s = step(ORB_STEP_RECV_REDUCE_COPY_SEND, ORB_BUF_INPUT, next, prev, off, off, len, ORB_STEP_POSTOP);
            st |= orb_lane_push(lane, &s);
            /* all-gather */
            for (int k = 1; k <= n - 2; k++) {
                segment(b0, blk, n, p + 1 - k, &off, &len);
                s = step(ORB_STEP_RECV_COPY_SEND, ORB_BUF_OUTPUT, next, prev, 0, off, len, 0);
                st |= orb_lane_push(lane, &s);
            }
            segment(b0, blk, n, p + 2, &off, &len);
            s = step(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, prev, 0, off, len, 0);
            st |= orb_lane_push(lane, &s);
        }
    }
    return st ? ORB_ERR_NO_MEMORY : ORB_OK;
}
