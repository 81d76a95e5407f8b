/* Tree algorithms.
 *
 * The tree is an in-order binary tree over ring positions, so tree neighbours are mostly
 * ring neighbours (close in the topology). In 1-based position q with lowest set bit b, the
 * children of q are q - b/2 and q + b/2 (or the nearest q + b/4, q + b/8 ... that exists);
 * odd q are leaves and the root is the highest power of two <= n:
 *
 *        positions 1..7          4             (0-based: 3)
 *                              /   \
 *                             2     6
 *                            / \   / \
 *                           1   3 5   7
 *
 * All-reduce runs two such trees at once (NCCL's double binary tree): tree 1 is tree 0
 * shifted by one position, so the leaves of one (even 0-based positions) are the interior
 * nodes of the other. With an even n that holds for every rank; with an odd n one rank is
 * a leaf in both. Lane c runs tree c % 2 over its share of the data: with one channel a
 * single tree carries everything, an even channel count balances the two trees.
 *
 * A node reduces chunk j up (its input plus what its children send) and later passes the
 * result of chunk j down. The lane holds `lag` chunks going up before it waits for the
 * first to come down: up(0 .. lag-1), then down(j), up(j + lag) for each j. Every node uses
 * the same order, so when a node has received down(j) its parent has already consumed its
 * up(j + lag - 1): the FIFO towards the parent is empty and up(j + lag) can go, with any
 * number of slots. The root keeps reduce and send-down as separate steps for the same
 * reason (a fused root would block on a child that is still sending up). */
#include "algos.h"

void orb_tree_links(int n, int pos, int *parent, int *child0, int *child1)
{
    const int q = pos + 1, b = q & -q;
    *child0 = *child1 = -1;
    if (b > 1) {
        *child0 = q - b / 2 - 1;
        for (int h = b / 2; h >= 1; h /= 2)
            if (q + h <= n) {
                *child1 = q + h - 1;
                break;
            }
    }
    int root = 1;
    while (root * 2 <= n)
        root *= 2;
    if (q == root) {
        *parent = -1;
        return;
    }
    /* Walk up the infinite in-order tree until a node that exists: it adopted q. */
    int x = q, c = b;
    do {
        x = ((x / c) % 4 == 1) ? x + c : x - c;
        c *= 2;
    } while (x > n);
    *parent = x - 1;
}

static int tree_levels(int n)
{
    int levels = 1;
    while ((1 << levels) <= n)
        levels++;
    return levels;
}

int orb_tree_lag(int n) { return 2 * tree_levels(n); }

/* Tree neighbours as ranks. The rank at ring position p sits at tree position p + shift. */
typedef struct {
    int parent, child[2]; /* ranks, -1 where absent */
} tree_node_t;

static tree_node_t tree_node(const orb_plan_args_t *a, int shift)
{
    const int n = a->nranks;
    const int p = orb_ring_pos(a, a->rank);
    int tp = ((p + shift) % n + n) % n, links[3];
    orb_tree_links(n, tp, &links[0], &links[1], &links[2]);
    for (int i = 0; i < 3; i++)
        if (links[i] >= 0)
            links[i] = orb_ring_rank(a, links[i] - shift);
    tree_node_t t = {links[0], {links[1], links[2]}};
    return t;
}

/* Position of the in-order tree's root (0-based): rooted collectives shift it onto root. */
static int tree_root_pos(int n)
{
    int root = 1;
    while (root * 2 <= n)
        root *= 2;
    return root - 1;
}

static tree_node_t rooted_node(const orb_plan_args_t *a)
{
    return tree_node(a, tree_root_pos(a->nranks) - orb_ring_pos(a, a->root));
}

/* Chunk j of a lane: [beg + j*chunk, ...) clipped to end. */
typedef struct {
    size_t beg, end, chunk, nchunks;
} lane_chunks_t;

static lane_chunks_t lane_chunks(const orb_plan_args_t *a, int c)
{
    lane_chunks_t l;
    orb_split(a->count, a->nchannels, c, &l.beg, &l.end);
    l.chunk = a->chunk_elems;
    l.nchunks = (l.end - l.beg + l.chunk - 1) / l.chunk;
    return l;
}

static void chunk_range(const lane_chunks_t *l, size_t j, size_t *off, size_t *len)
{
    *off = l->beg + j * l->chunk;
    *len = (l->end - *off < l->chunk) ? l->end - *off : l->chunk;
}

/* Reduce one chunk up: input plus children's partials, to the parent (or, at the root,
 * into the output with the final transform). A node with two children keeps the first
 * partial in its output (scratch for reduce's non-roots). */
static void emit_up(orb_lane_t *lane, orb_status_t *st, const tree_node_t *t, size_t off, size_t len)
{
    const int c0 = t->child[0], c1 = t->child[1], par = t->parent;
    if (par < 0) {
        if (c0 < 0)
            orb_emit(lane, st,
                     orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, off, off, len, ORB_STEP_POSTOP));
        else if (c1 < 0)
            orb_emit(lane, st, orb_step_make(ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_INPUT, -1, c0, off, off, len,
                                             ORB_STEP_POSTOP));
        else {
            orb_emit(lane, st, orb_step_make(ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_INPUT, -1, c0, off, off, len, 0));
            orb_emit(lane, st, orb_step_make(ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_OUTPUT, -1, c1, off, off, len,
                                             ORB_STEP_POSTOP));
        }
        return;
    }
    if (c0 < 0)
        orb_emit(lane, st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, par, -1, off, 0, len, 0));
    else if (c1 < 0)
        orb_emit(lane, st, orb_step_make(ORB_STEP_RECV_REDUCE_SEND, ORB_BUF_INPUT, par, c0, off, 0, len, 0));
    else {
        orb_emit(lane, st, orb_step_make(ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_INPUT, -1, c0, off, off, len, 0));
        orb_emit(lane, st, orb_step_make(ORB_STEP_RECV_REDUCE_SEND, ORB_BUF_OUTPUT, par, c1, off, 0, len, 0));
    }
}

/* Pass one chunk down: from the parent into the output and on to the children; the root
 * sends what it holds in src (its output for all-reduce, its input for broadcast). */
static void emit_down(orb_lane_t *lane, orb_status_t *st, const tree_node_t *t, orb_buf_t root_src, size_t off,
                      size_t len)
{
    const int c0 = t->child[0], c1 = t->child[1], par = t->parent;
    orb_buf_t src = ORB_BUF_OUTPUT;
    if (par < 0) {
        src = root_src;
        if (c0 >= 0)
            orb_emit(lane, st, orb_step_make(ORB_STEP_SEND, src, c0, -1, off, 0, len, 0));
    } else if (c0 < 0) {
        orb_emit(lane, st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, par, 0, off, len, 0));
    } else {
        orb_emit(lane, st, orb_step_make(ORB_STEP_RECV_COPY_SEND, ORB_BUF_OUTPUT, c0, par, 0, off, len, 0));
    }
    if (c1 >= 0)
        orb_emit(lane, st, orb_step_make(ORB_STEP_SEND, src, c1, -1, off, 0, len, 0));
}

orb_status_t orb_tree_allreduce(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    if (orb_ring_pos(a, a->rank) < 0)
        return ORB_ERR_INVALID_ARG;
    const size_t lag = (size_t)orb_tree_lag(a->nranks);
    orb_status_t st = ORB_OK;

    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        const tree_node_t t = tree_node(a, c % 2);
        const lane_chunks_t l = lane_chunks(a, c);
        size_t off, len;
        for (size_t j = 0; j < lag && j < l.nchunks; j++) {
            chunk_range(&l, j, &off, &len);
            emit_up(lane, &st, &t, off, len);
        }
        for (size_t j = 0; j < l.nchunks; j++) {
            chunk_range(&l, j, &off, &len);
            emit_down(lane, &st, &t, ORB_BUF_OUTPUT, off, len);
            if (j + lag < l.nchunks) {
                chunk_range(&l, j + lag, &off, &len);
                emit_up(lane, &st, &t, off, len);
            }
        }
    }
    return st;
}

orb_status_t orb_tree_broadcast(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    if (orb_ring_pos(a, a->rank) < 0 || !orb_root_valid(a))
        return ORB_ERR_INVALID_ARG;
    const tree_node_t t = rooted_node(a);
    orb_status_t st = ORB_OK;

    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        const lane_chunks_t l = lane_chunks(a, c);
        for (size_t j = 0; j < l.nchunks; j++) {
            size_t off, len;
            chunk_range(&l, j, &off, &len);
            emit_down(lane, &st, &t, ORB_BUF_INPUT, off, len);
            if (t.parent < 0) /* in place the input is the output: a no-op */
                orb_emit(lane, &st, orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, off, off, len, 0));
        }
    }
    return st;
}

orb_status_t orb_tree_reduce(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    if (orb_ring_pos(a, a->rank) < 0 || !orb_root_valid(a))
        return ORB_ERR_INVALID_ARG;
    const tree_node_t t = rooted_node(a);
    orb_status_t st = ORB_OK;

    if (t.parent >= 0 && t.child[1] >= 0)
        plan->out_count = a->count; /* scratch for the first child's partial */
    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        const lane_chunks_t l = lane_chunks(a, c);
        for (size_t j = 0; j < l.nchunks; j++) {
            size_t off, len;
            chunk_range(&l, j, &off, &len);
            emit_up(lane, &st, &t, off, len);
        }
    }
    return st;
}
