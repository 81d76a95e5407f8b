/* The algorithm builders plan.c dispatches to. Each fills plan->lanes for plan->args.rank. */
#ifndef ORB_COLLECTIVES_ALGOS_H
#define ORB_COLLECTIVES_ALGOS_H

#include "plan.h"

/* Ring position helpers shared by the algorithm files. */
static inline int orb_ring_rank(const orb_plan_args_t *a, int pos)
{
    pos %= a->nranks;
    if (pos < 0)
        pos += a->nranks;
    return a->ring ? a->ring[pos] : pos;
}
int orb_ring_pos(const orb_plan_args_t *a, int rank);

/* Split [0, count) into nparts nearly equal contiguous ranges; range i is [*beg, *end). */
static inline void orb_split(size_t count, int nparts, int i, size_t *beg, size_t *end)
{
    size_t q = count / (size_t)nparts, r = count % (size_t)nparts;
    size_t ui = (size_t)i;
    *beg = ui * q + (ui < r ? ui : r);
    *end = *beg + q + (ui < r ? 1 : 0);
}

static inline orb_step_t orb_step_make(orb_step_kind_t kind, orb_buf_t src_buf, int send_peer,
                                       int recv_peer, size_t src_off, size_t dst_off, size_t count,
                                       unsigned flags)
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

/* Appends s to lane unless an earlier push failed; *st keeps the first failure. */
static inline void orb_emit(orb_lane_t *lane, orb_status_t *st, orb_step_t s)
{
    if (*st == ORB_OK)
        *st = orb_lane_push(lane, &s);
}

/* A local copy of len elements cut into steps of at most chunk_elems; flags may hold
 * ORB_STEP_DST_SCRATCH (dst in the plan's workspace). */
static inline void orb_emit_copy(const orb_plan_args_t *a, orb_lane_t *lane, orb_status_t *st, orb_buf_t src_buf,
                                 size_t src, unsigned flags, size_t dst, size_t len)
{
    for (size_t b0 = 0; b0 < len; b0 += a->chunk_elems) {
        size_t l = len - b0 < a->chunk_elems ? len - b0 : a->chunk_elems;
        orb_emit(lane, st, orb_step_make(ORB_STEP_COPY, src_buf, -1, -1, src + b0, dst + b0, l, flags));
    }
}

/* Trade len elements with peer, both sides alike: send a chunk from src_buf at src, then
 * receive the peer's chunk into the workspace at dst (all-to-all's packed messages). */
static inline void orb_emit_trade(const orb_plan_args_t *a, orb_lane_t *lane, orb_status_t *st, int peer,
                                  orb_buf_t src_buf, size_t src, size_t dst, size_t len)
{
    for (size_t b0 = 0; b0 < len; b0 += a->chunk_elems) {
        size_t l = len - b0 < a->chunk_elems ? len - b0 : a->chunk_elems;
        orb_emit(lane, st, orb_step_make(ORB_STEP_SEND, src_buf, peer, -1, src + b0, 0, l, 0));
        orb_emit(lane, st,
                 orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, peer, 0, dst + b0, l, ORB_STEP_DST_SCRATCH));
    }
}

/* Whether the chain scatter (orb_ring_scatter) sends the root's whole input, n blocks of
 * count, down the chain as one piece: three ranks or more, one channel, and n * count within
 * a chunk. The tuner's model prices the two shapes from the same test. */
static inline int orb_ring_scatter_packs(int n, size_t count, size_t chunk_elems, int nchannels)
{
    return n >= 3 && nchannels == 1 && count > 0 && count <= chunk_elems / (size_t)n;
}

/* Rooted collectives (and the peer of send/recv) need a root inside the communicator. */
static inline int orb_root_valid(const orb_plan_args_t *a)
{
    return a->root >= 0 && a->root < a->nranks;
}

/* In-order binary tree over positions 0..n-1 (see tree.c): the parent and up to two
 * children of pos, -1 where absent. Even positions are leaves, odd ones interior. */
void orb_tree_links(int n, int pos, int *parent, int *child0, int *child1);

/* Pipeline lag of the tree all-reduce: chunks a node sends up before it waits for the
 * first one to come back down (see tree.c). */
int orb_tree_lag(int n);

orb_status_t orb_ring_allreduce(orb_plan_t *plan);
orb_status_t orb_direct_allreduce(orb_plan_t *plan); /* 2 ranks: one exchange; more: the ring */
orb_status_t orb_ring_allgather(orb_plan_t *plan);
orb_status_t orb_ring_reduce_scatter(orb_plan_t *plan);
orb_status_t orb_ring_broadcast(orb_plan_t *plan);
orb_status_t orb_ring_reduce(orb_plan_t *plan);
orb_status_t orb_ring_gather(orb_plan_t *plan);

orb_status_t orb_direct_send(orb_plan_t *plan);
orb_status_t orb_direct_recv(orb_plan_t *plan);
orb_status_t orb_direct_gather(orb_plan_t *plan);

orb_status_t orb_tree_allreduce(orb_plan_t *plan);
orb_status_t orb_tree_broadcast(orb_plan_t *plan);
orb_status_t orb_tree_reduce(orb_plan_t *plan);

orb_status_t orb_hier_allreduce(orb_plan_t *plan);
orb_status_t orb_hier_alltoall(orb_plan_t *plan);

orb_status_t orb_ring_scatter(orb_plan_t *plan);
orb_status_t orb_direct_scatter(orb_plan_t *plan);
orb_status_t orb_direct_alltoall(orb_plan_t *plan);
orb_status_t orb_direct_alltoallv(orb_plan_t *plan);
orb_status_t orb_bruck_alltoall(orb_plan_t *plan);
orb_status_t orb_bruck_allgather(orb_plan_t *plan); /* allgather_bruck.c */
orb_status_t orb_doubling_allreduce(orb_plan_t *plan); /* all-reduce and barrier */
orb_status_t orb_doubling_reduce_scatter(orb_plan_t *plan); /* the all-reduce of all n blocks, into scratch */
/* Sequential exchanges of recursive doubling on nranks: log2 of the largest power of two not
 * above nranks, plus 2 (the fold in, the result out) when nranks is no power of two. */
int orb_doubling_rounds(int nranks);

/* Bruck's all-to-all and all-gather: ceil(log2 n) rounds. All-to-all's round k moves the
 * blocks whose index (distance to their destination) has bit k set: how many that is
 * (orb_bruck_blocks); all-gather's moves min(2^k, n - 2^k) (orb_bruck_gather_blocks). */
static inline int orb_bruck_rounds(int n)
{
    int k = 0;
    while (k < 30 && (1 << k) < n)
        k++;
    return k;
}
static inline int orb_bruck_blocks(int n, int k)
{
    int m = 0;
    for (int i = 1; i < n; i++)
        m += (i >> k) & 1;
    return m;
}
static inline int orb_bruck_gather_blocks(int n, int k)
{
    const int d = 1 << k;
    return d < n - d ? d : n - d;
}
/* allreduce, reduce, reduce_scatter folded in rank order (deterministic mode) */
orb_status_t orb_ordered_reduce(orb_plan_t *plan);

#endif
