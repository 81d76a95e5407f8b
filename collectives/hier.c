/* Hierarchical (two-level) all-reduce for ranks spread over several hosts.
 *
 * With H hosts of L ranks each, every round of a lane (n*chunk elements, n = H*L) is cut
 * into n pieces, piece (i, j) for local index i and host j; shard i = pieces (i, 0..H-1).
 *   1. reduce-scatter inside each host: H ring passes among the host's L ranks, pass j
 *      leaving piece (i, j) summed over the host at local index i (in its output);
 *   2. all-reduce of shard i across hosts: a ring among the H ranks of local index i, one
 *      per local index, segment j = piece (i, j); POSTOP where a piece becomes final;
 *   3. all-gather inside each host: H ring passes that hand every final piece around.
 * Only phase 2 leaves the host, and it moves 2(H-1)/H of 1/L of the data per rank; its
 * alpha cost is 2(H-1) steps a round instead of the flat ring's 2(n-1) slow ones.
 *
 * Inside a host the order is args->ring restricted to the host, so the topology's ring
 * order holds; across hosts local index i talks to local index i of hosts h-1 and h+1
 * (host indices, cyclic). The phases run in sequence on each lane and every phase is a
 * ring, so the plan needs what a ring needs: two slots (orb_plan_min_slots). A rank that
 * finishes a phase early only leaves data in its peers' FIFOs for later phases; it never
 * holds back what a slower rank still needs from the earlier phase. */
#include <stdlib.h>

#include "algos.h"

orb_status_t orb_plan_ranks_per_host(int nranks, int nhosts, const int *host_of, int *per_host)
{
    if (!host_of || nhosts <= 1 || nranks < 1)
        return ORB_ERR_UNSUPPORTED;
    for (int r = 0; r < nranks; r++)
        if (host_of[r] < 0 || host_of[r] >= nhosts)
            return ORB_ERR_INVALID_ARG;
    if (nranks % nhosts != 0)
        return ORB_ERR_UNSUPPORTED;
    int *cnt = calloc((size_t)nhosts, sizeof *cnt);
    if (!cnt)
        return ORB_ERR_NO_MEMORY;
    const int L = nranks / nhosts;
    orb_status_t st = ORB_OK;
    for (int r = 0; r < nranks; r++)
        if (++cnt[host_of[r]] > L)
            st = ORB_ERR_UNSUPPORTED; /* with n = H*L, no host over L means all at L */
    free(cnt);
    if (st == ORB_OK)
        *per_host = L;
    return st;
}

typedef struct {
    int H, L;  /* hosts, ranks per host */
    int host;  /* this rank's host */
    int li;    /* this rank's local index */
    int lnext, lprev; /* neighbours on the host's ring */
    int xnext, xprev; /* same local index on hosts host+1 and host-1 */
} hier_t;

/* The rank of local index li on host h (the li-th of h along the ring); -1 when absent. */
static int local_rank(const orb_plan_args_t *a, int h, int li)
{
    for (int pos = 0, k = 0; pos < a->nranks; pos++) {
        int r = orb_ring_rank(a, pos);
        if (r >= 0 && r < a->nranks && a->host_of[r] == h && k++ == li)
            return r;
    }
    return -1;
}

static orb_status_t hier_layout(const orb_plan_args_t *a, hier_t *h)
{
    orb_status_t st = orb_plan_ranks_per_host(a->nranks, a->nhosts, a->host_of, &h->L);
    if (st != ORB_OK)
        return st;
    h->H = a->nhosts;
    h->host = a->host_of[a->rank];
    h->li = -1;
    for (int pos = 0, k = 0; pos < a->nranks && h->li < 0; pos++) {
        int r = orb_ring_rank(a, pos);
        if (r == a->rank)
            h->li = k;
        else if (r >= 0 && r < a->nranks && a->host_of[r] == h->host)
            k++;
    }
    if (h->li < 0)
        return ORB_ERR_INVALID_ARG; /* not on the ring */
    h->lnext = local_rank(a, h->host, (h->li + 1) % h->L);
    h->lprev = local_rank(a, h->host, (h->li + h->L - 1) % h->L);
    h->xnext = local_rank(a, (h->host + 1) % h->H, h->li);
    h->xprev = local_rank(a, (h->host + h->H - 1) % h->H, h->li);
    if (h->lnext < 0 || h->lprev < 0 || h->xnext < 0 || h->xprev < 0)
        return ORB_ERR_INVALID_ARG; /* a ring that is not a permutation */
    return ORB_OK;
}

/* One round of a lane: [b0, b0 + blk) cut into n = H*L pieces of ceil(blk / n) elements
 * (the last ones shorter or empty; every rank cuts the same way and drops the same empty
 * steps). Piece (i, j) is number i*H + j, so each shard is contiguous. */
typedef struct {
    size_t b0, blk, piece;
    int H, L;
} hier_round_t;

static void piece(const hier_round_t *r, int i, int j, size_t *off, size_t *len)
{
    i = ((i % r->L) + r->L) % r->L;
    j = ((j % r->H) + r->H) % r->H;
    size_t beg = (size_t)(i * r->H + j) * r->piece, end = beg + r->piece;
    if (beg > r->blk)
        beg = r->blk;
    if (end > r->blk)
        end = r->blk;
    *off = r->b0 + beg;
    *len = end - beg;
}

/* Phase 1, pass j: the partial of piece (i, j) starts at local index i+1, gains one rank
 * per hop and ends at i, which writes the host's sum to its output. The input is read only
 * in this phase, and the one piece written here is the one its own last step reads, so in
 * place is safe. */
static void intra_reduce_scatter(orb_lane_t *lane, orb_status_t *st, const hier_t *h, const hier_round_t *r,
                                 int j)
{
    size_t off, len;
    piece(r, h->li - 1, j, &off, &len);
    orb_emit(lane, st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, h->lnext, -1, off, 0, len, 0));
    for (int k = 1; k <= h->L - 2; k++) {
        piece(r, h->li - 1 - k, j, &off, &len);
        orb_emit(lane, st,
                 orb_step_make(ORB_STEP_RECV_REDUCE_SEND, ORB_BUF_INPUT, h->lnext, h->lprev, off, 0, len, 0));
    }
    piece(r, h->li, j, &off, &len);
    orb_emit(lane, st, orb_step_make(ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_INPUT, -1, h->lprev, off, off, len, 0));
}

/* Phase 2: ring all-reduce over the H hosts of shard li, segment j = piece (li, j). The
 * source is the host partial in the output, or the input itself with one rank per host. */
static void inter_allreduce(orb_lane_t *lane, orb_status_t *st, const hier_t *h, const hier_round_t *r)
{
    const orb_buf_t src = h->L > 1 ? ORB_BUF_OUTPUT : ORB_BUF_INPUT;
    const int p = h->host, i = h->li;
    size_t off, len;
    piece(r, i, p, &off, &len);
    orb_emit(lane, st, orb_step_make(ORB_STEP_SEND, src, h->xnext, -1, off, 0, len, 0));
    for (int k = 1; k <= h->H - 2; k++) {
        piece(r, i, p - k, &off, &len);
        orb_emit(lane, st, orb_step_make(ORB_STEP_RECV_REDUCE_SEND, src, h->xnext, h->xprev, off, 0, len, 0));
    }
    piece(r, i, p + 1, &off, &len);
    orb_emit(lane, st,
             orb_step_make(ORB_STEP_RECV_REDUCE_COPY_SEND, src, h->xnext, h->xprev, off, off, len, ORB_STEP_POSTOP));
    for (int k = 1; k <= h->H - 2; k++) {
        piece(r, i, p + 1 - k, &off, &len);
        orb_emit(lane, st, orb_step_make(ORB_STEP_RECV_COPY_SEND, ORB_BUF_OUTPUT, h->xnext, h->xprev, 0, off, len, 0));
    }
    piece(r, i, p + 2, &off, &len);
    orb_emit(lane, st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, h->xprev, 0, off, len, 0));
}

/* Phase 3, pass j: each rank sends its final piece (li, j) and forwards the others. */
static void intra_allgather(orb_lane_t *lane, orb_status_t *st, const hier_t *h, const hier_round_t *r, int j)
{
    size_t off, len;
    piece(r, h->li, j, &off, &len);
    orb_emit(lane, st, orb_step_make(ORB_STEP_SEND, ORB_BUF_OUTPUT, h->lnext, -1, off, 0, len, 0));
    for (int k = 1; k <= h->L - 2; k++) {
        piece(r, h->li - k, j, &off, &len);
        orb_emit(lane, st, orb_step_make(ORB_STEP_RECV_COPY_SEND, ORB_BUF_OUTPUT, h->lnext, h->lprev, 0, off, len, 0));
    }
    piece(r, h->li + 1, j, &off, &len);
    orb_emit(lane, st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, h->lprev, 0, off, len, 0));
}

orb_status_t orb_hier_allreduce(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    hier_t h;
    orb_status_t st = hier_layout(a, &h);
    if (st != ORB_OK)
        return st;
    const size_t n = (size_t)a->nranks, round = n * a->chunk_elems;
    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        size_t cbeg, cend;
        orb_split(a->count, a->nchannels, c, &cbeg, &cend);
        for (size_t b0 = cbeg; b0 < cend; b0 += round) {
            hier_round_t r = {.b0 = b0, .blk = (cend - b0 < round) ? cend - b0 : round, .H = h.H, .L = h.L};
            r.piece = (r.blk + n - 1) / n;
            if (h.L > 1)
                for (int j = 0; j < h.H; j++)
                    intra_reduce_scatter(lane, &st, &h, &r, j);
            inter_allreduce(lane, &st, &h, &r);
            if (h.L > 1)
                for (int j = 0; j < h.H; j++)
                    intra_allgather(lane, &st, &h, &r, j);
        }
    }
    return st;
}

/* Hierarchical all-to-all: H hosts of L ranks, rank (h, i) = local index i on host h.
 *   1. inside each host, a pairwise exchange over local indices (round k: i trades with
 *      (k - i) mod L): (h, i) hands (h, j) its blocks for every rank (g, j), g = 0..H-1, and
 *      parks what it gets in its workspace, grouped by destination host: stage[g][j'] is the
 *      block from (h, j') for (g, i);
 *   2. across hosts, a pairwise exchange among the ranks of local index i (round k: host h
 *      trades with (k - h) mod H): (h, i) sends stage[g][*], L blocks in one message, to
 *      (g, i) and unpacks what (g, i) sends into the output, block of rank (g, j') each.
 * Each rank crosses hosts H-1 times with L blocks instead of (H-1)L times with one, which pays
 * where a message between hosts costs much more than one inside. Workspace: stage and the
 * incoming messages, 2n blocks, a channel's share of every block side by side (its messages
 * contiguous). The input is read only in phase 1 and the output written only in phase 2, so
 * in place needs no care. */
orb_status_t orb_hier_alltoall(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    hier_t h;
    orb_status_t st = hier_layout(a, &h);
    if (st != ORB_OK)
        return st;
    const int H = h.H, L = h.L, me = h.host, li = h.li;
    const size_t n = (size_t)a->nranks, cnt = a->count;
    plan->scratch_count = 2 * n * cnt;
    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        size_t cb, ce;
        orb_split(cnt, a->nchannels, c, &cb, &ce);
        const size_t w = ce - cb, stage = n * cb, incoming = n * cnt + n * cb;
        if (w == 0)
            continue;
        for (int k = 0; k < L; k++) { /* phase 1: inside the host */
            const int j = ((k - li) % L + L) % L, peer = local_rank(a, me, j);
            for (int g = 0; g < H; g++) {
                const size_t src = (size_t)local_rank(a, g, j) * cnt + cb; /* my block for (g, j) */
                const size_t dst = stage + (size_t)(g * L + j) * w;          /* (h, j)'s block for (g, i) */
                if (j == li)
                    orb_emit_copy(a, lane, &st, ORB_BUF_INPUT, src, ORB_STEP_DST_SCRATCH, dst, w);
                else
                    orb_emit_trade(a, lane, &st, peer, ORB_BUF_INPUT, src, dst, w);
            }
        }
        for (int k = 0; k < H; k++) { /* phase 2: across hosts, one message of L blocks each way */
            const int g = ((k - me) % H + H) % H, peer = local_rank(a, g, li);
            size_t from = stage + (size_t)g * (size_t)L * w;
            if (g != me) {
                orb_emit_trade(a, lane, &st, peer, ORB_BUF_SCRATCH, from, incoming + (size_t)g * (size_t)L * w,
                        (size_t)L * w);
                from = incoming + (size_t)g * (size_t)L * w;
            }
            for (int j = 0; j < L; j++) /* (g, j)'s block for me */
                orb_emit_copy(a, lane, &st, ORB_BUF_SCRATCH, from + (size_t)j * w, 0,
                       (size_t)local_rank(a, g, j) * cnt + cb, w);
        }
    }
    return st;
}
