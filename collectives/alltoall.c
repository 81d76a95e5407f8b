/* All-to-all as a pairwise exchange: in round k (0..n-1) rank r trades blocks with rank
 * (k - r) mod n, which in that round trades with r: every round is a perfect matching, so
 * each pair only waits for itself and one slot per FIFO is enough. In the round where the
 * partner is r itself the rank copies its own block. Chunk by chunk a rank sends its block
 * for the partner before it receives the partner's block into the same position, so the
 * in-place form (sendbuf == recvbuf) needs no extra room: the outgoing chunk is in a slot
 * before the incoming one overwrites it. alltoallv runs the same rounds with each pair's
 * own counts and displacements. */
#include <stdint.h>

#include "algos.h"

/* Counts and displacements of one rank, as orb_plan_args_t.vec lays them out. */
typedef struct {
    const size_t *scount, *sdispl, *rcount, *rdispl;
} vec_t;

static vec_t vec_view(const orb_plan_args_t *a)
{
    const size_t n = (size_t)a->nranks;
    return (vec_t){a->vec, a->vec + n, a->vec + 2 * n, a->vec + 3 * n};
}

/* Exchange with peer on lane c: send scount elements from input[soff], receive rcount into
 * output[roff], each cut into the lane's share and then chunks (the peer cuts its side of
 * the same counts the same way). */
static void exchange(const orb_plan_args_t *a, orb_lane_t *lane, orb_status_t *st, int c, int peer, size_t soff,
                     size_t scount, size_t roff, size_t rcount)
{
    size_t sb, se, rb, re;
    orb_split(scount, a->nchannels, c, &sb, &se);
    orb_split(rcount, a->nchannels, c, &rb, &re);
    if (peer == a->rank) { /* in place the same memory: a no-op */
        for (size_t b0 = sb; b0 < se; b0 += a->chunk_elems) {
            size_t len = se - b0 < a->chunk_elems ? se - b0 : a->chunk_elems;
            orb_emit(lane, st, orb_step_make(ORB_STEP_COPY, ORB_BUF_INPUT, -1, -1, soff + b0, roff + b0, len, 0));
        }
        return;
    }
    size_t s0 = sb, r0 = rb;
    while (s0 < se || r0 < re) {
        if (s0 < se) {
            size_t len = se - s0 < a->chunk_elems ? se - s0 : a->chunk_elems;
            orb_emit(lane, st, orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, peer, -1, soff + s0, 0, len, 0));
            s0 += len;
        }
        if (r0 < re) {
            size_t len = re - r0 < a->chunk_elems ? re - r0 : a->chunk_elems;
            orb_emit(lane, st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, peer, 0, roff + r0, len, 0));
            r0 += len;
        }
    }
}

static int partner(const orb_plan_args_t *a, int k)
{
    int p = (k - a->rank) % a->nranks;
    return p < 0 ? p + a->nranks : p;
}

orb_status_t orb_direct_alltoall(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    orb_status_t st = ORB_OK;
    for (int c = 0; c < a->nchannels; c++)
        for (int k = 0; k < a->nranks; k++) {
            const int p = partner(a, k);
            const size_t mine = (size_t)p * a->count, theirs = mine; /* block p both ways */
            exchange(a, &plan->lanes[c], &st, c, p, mine, a->count, theirs, a->count);
        }
    return st;
}

orb_status_t orb_direct_alltoallv(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    if (!a->vec)
        return ORB_ERR_INVALID_ARG;
    const vec_t v = vec_view(a);
    if (v.scount[a->rank] != v.rcount[a->rank])
        return ORB_ERR_INVALID_ARG; /* its own block must fit where it goes */
    orb_status_t st = ORB_OK;
    for (int c = 0; c < a->nchannels; c++)
        for (int k = 0; k < a->nranks; k++) {
            const int p = partner(a, k);
            exchange(a, &plan->lanes[c], &st, c, p, v.sdispl[p], v.scount[p], v.rdispl[p], v.rcount[p]);
        }
    return st;
}

orb_status_t orb_plan_vec_sizes(int nranks, const size_t *vec, size_t *in_count, size_t *out_count)
{
    const size_t n = (size_t)nranks;
    size_t in = 0, out = 0;
    for (size_t j = 0; j < n; j++) {
        const size_t sc = vec[j], sd = vec[n + j], rc = vec[2 * n + j], rd = vec[3 * n + j];
        if (sd > SIZE_MAX - sc || rd > SIZE_MAX - rc)
            return ORB_ERR_INVALID_ARG;
        if (sc && sd + sc > in)
            in = sd + sc;
        if (rc && rd + rc > out)
            out = rd + rc;
    }
    *in_count = in;
    *out_count = out;
    return ORB_OK;
}

/* Bruck's all-to-all for small blocks: ceil(log2 n) messages per rank instead of n-1.
 * Index a block by its distance i = (destination - holder) mod n. Round k sends every block
 * whose i has bit k set to the rank 2^k ahead, which keeps it under the same index; after
 * the rounds, the block at index i of rank r came from rank r - i. Each round packs its
 * blocks into one contiguous message (the blocks of a round are not contiguous), sends it
 * while receiving the matching one from the rank 2^k behind, and unpacks that into the
 * work area. Scratch (per channel, a channel's share w of every block):
 *   work   [0, n*count)            block i at i*count
 *   out    [n*count, +M*count)     the packed message, M = the most blocks a round moves
 *   in     [n*count + M*count, +M*count)
 * A block is read from the input until a round has written its work slot, and the output
 * is written only by the final copies, so in place needs no care: every input element is
 * read before any output element is written. */
orb_status_t orb_bruck_alltoall(orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    const int n = a->nranks, r = a->rank, rounds = orb_bruck_rounds(n);
    const size_t cnt = a->count;
    size_t M = 0;
    for (int k = 0; k < rounds; k++)
        M = (size_t)orb_bruck_blocks(n, k) > M ? (size_t)orb_bruck_blocks(n, k) : M;
    plan->scratch_count = n > 1 ? ((size_t)n + 2 * M) * cnt : 0;
    orb_status_t st = ORB_OK;
    for (int c = 0; c < a->nchannels; c++) {
        orb_lane_t *lane = &plan->lanes[c];
        size_t cb, ce;
        orb_split(cnt, a->nchannels, c, &cb, &ce);
        const size_t w = ce - cb;
        if (w == 0)
            continue;
        const size_t pack = (size_t)n * cnt + M * cb, unpack = (size_t)n * cnt + M * cnt + M * cb;
        for (int k = 0; k < rounds; k++) {
            const int dist = 1 << k, to = (r + dist) % n, from = ((r - dist) % n + n) % n;
            size_t m = 0;
            for (int i = 1; i < n; i++) {
                if (!(i & dist))
                    continue;
                if (i & (dist - 1)) /* moved in an earlier round: in the work area */
                    orb_emit_copy(a, lane, &st, ORB_BUF_SCRATCH, (size_t)i * cnt + cb, ORB_STEP_DST_SCRATCH,
                                  pack + m * w, w);
                else /* still the input's block for rank r + i */
                    orb_emit_copy(a, lane, &st, ORB_BUF_INPUT, (size_t)((r + i) % n) * cnt + cb, ORB_STEP_DST_SCRATCH,
                                  pack + m * w, w);
                m++;
            }
            for (size_t b0 = 0; b0 < m * w; b0 += a->chunk_elems) { /* send a chunk, then take one */
                size_t len = m * w - b0 < a->chunk_elems ? m * w - b0 : a->chunk_elems;
                orb_emit(lane, &st, orb_step_make(ORB_STEP_SEND, ORB_BUF_SCRATCH, to, -1, pack + b0, 0, len, 0));
                orb_emit(lane, &st, orb_step_make(ORB_STEP_RECV, ORB_BUF_OUTPUT, -1, from, 0, unpack + b0, len,
                                                  ORB_STEP_DST_SCRATCH));
            }
            m = 0;
            for (int i = 1; i < n; i++)
                if (i & dist)
                    orb_emit_copy(a, lane, &st, ORB_BUF_SCRATCH, unpack + (m++) * w, ORB_STEP_DST_SCRATCH,
                                  (size_t)i * cnt + cb, w);
        }
        orb_emit_copy(a, lane, &st, ORB_BUF_INPUT, (size_t)r * cnt + cb, 0, (size_t)r * cnt + cb, w);
        for (int i = 1; i < n; i++)
            orb_emit_copy(a, lane, &st, ORB_BUF_SCRATCH, (size_t)i * cnt + cb, 0, (size_t)((r - i + n) % n) * cnt + cb,
                        w);
    }
    return st;
}
