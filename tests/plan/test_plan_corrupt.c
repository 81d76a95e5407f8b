/* The checker must be able to say no: plans corrupted in the ways real bugs look (a step
 * dropped, peers swapped, an offset off by one, a POSTOP twice, a step too long, a read
 * after an in-place overwrite, too few slots for a ring) are all rejected, for the right
 * reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/algos.h"
#include "collectives/plan_check.h"

#define N_MAX 16

static int failures;

typedef void (*mutate_fn)(orb_plan_t *plans, int n);

/* Builds every rank's plan from a, corrupts them with fn and expects the checker to reject
 * them with a message containing every '|'-separated fragment of want (NULL: expects
 * acceptance). A fragment names where the damage shows and why, so a rejection for some
 * other reason fails. */
static int has_all(const char *err, const char *want)
{
    char frag[256];
    while (*want) {
        size_t len = strcspn(want, "|");
        if (len >= sizeof frag)
            return 0;
        memcpy(frag, want, len);
        frag[len] = '\0';
        if (!strstr(err, frag))
            return 0;
        want += len + (want[len] == '|');
    }
    return 1;
}

static void expect(const char *name, orb_plan_args_t a, orb_plan_check_opts_t o, mutate_fn fn, const char *want)
{
    orb_plan_t plans[N_MAX];
    char err[2048] = "";
    memset(plans, 0, sizeof plans);
    for (int r = 0; r < a.nranks; r++) {
        a.rank = r;
        if (orb_plan_build(&plans[r], &a) != ORB_OK) {
            fprintf(stderr, "FAIL %s: cannot build rank %d's plan\n", name, r);
            failures++;
            goto out;
        }
    }
    if (fn)
        fn(plans, a.nranks);
    orb_status_t st = orb_plan_check_plans(plans, a.nranks, &o, err, sizeof err);
    if (!want && st != ORB_OK) {
        fprintf(stderr, "FAIL %s: the intact plans were rejected: %s\n", name, err);
        failures++;
    } else if (want && st == ORB_OK) {
        fprintf(stderr, "FAIL %s: the corrupted plans were accepted\n", name);
        failures++;
    } else if (want && !has_all(err, want)) {
        fprintf(stderr, "FAIL %s: rejected, but not for \"%s\": %s\n", name, want, err);
        failures++;
    } else {
        printf("ok   %s%s%s\n", name, want ? ": " : "", want ? err : "");
    }
out:
    for (int r = 0; r < a.nranks; r++)
        orb_plan_free(&plans[r]);
}

static void drop_step(orb_plan_t *p, int r, int c, size_t i)
{
    orb_lane_t *l = &p[r].lanes[c];
    memmove(&l->steps[i], &l->steps[i + 1], (l->nsteps - i - 1) * sizeof *l->steps);
    l->nsteps--;
}

/* A middle step of rank 2's first lane vanishes. */
static void m_drop(orb_plan_t *p, int n)
{
    (void)n;
    drop_step(p, 2, 0, 3);
}

/* Rank 1 sends its first piece to the wrong neighbour (and that rank's peer swaps too). */
static void m_swap_peers(orb_plan_t *p, int n)
{
    (void)n;
    orb_step_t *s = &p[1].lanes[0].steps[0];
    s->send_peer = (s->send_peer + 1) % n == 1 ? (s->send_peer + 2) % n : (s->send_peer + 1) % n;
}

/* Rank 3 reads its input one element further than it should. */
static void m_offset(orb_plan_t *p, int n)
{
    (void)n;
    for (size_t i = 0; i < p[3].lanes[0].nsteps; i++) {
        orb_step_t *s = &p[3].lanes[0].steps[i];
        if (s->kind == ORB_STEP_RECV_REDUCE_SEND) {
            s->src_off += 1;
            return;
        }
    }
}

/* An all-gather-phase step of rank 0 applies the final transform again. */
static void m_double_postop(orb_plan_t *p, int n)
{
    (void)n;
    for (size_t i = 0; i < p[0].lanes[0].nsteps; i++) {
        orb_step_t *s = &p[0].lanes[0].steps[i];
        if (s->kind == ORB_STEP_RECV_COPY_SEND) {
            s->flags |= ORB_STEP_POSTOP;
            return;
        }
    }
}

/* POSTOP before the reduction is complete. */
static void m_early_postop(orb_plan_t *p, int n)
{
    (void)n;
    p[1].lanes[0].steps[1].flags |= ORB_STEP_POSTOP;
}

/* Two of rank 0's steps merged into one longer than chunk_elems (rank 1 still cuts two). */
static void m_too_long(orb_plan_t *p, int n)
{
    (void)n;
    orb_lane_t *l = &p[0].lanes[0];
    l->steps[0].count += l->steps[1].count;
    drop_step(p, 0, 0, 1);
}

/* The root writes one chunk past the end of its output. */
static void m_out_of_range(orb_plan_t *p, int n)
{
    orb_lane_t *l = &p[0].lanes[0];
    (void)n;
    l->steps[l->nsteps - 1].dst_off = p[0].out_count;
}

/* The root of a broadcast forgets its own copy. */
static void m_drop_copy(orb_plan_t *p, int n)
{
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < p[r].lanes[0].nsteps; i++)
            if (p[r].lanes[0].steps[i].kind == ORB_STEP_COPY) {
                drop_step(p, r, 0, i);
                return;
            }
}

/* A tree node takes its first child's partial from a rank that is not that child. */
static void m_tree_wrong_child(orb_plan_t *p, int n)
{
    for (int r = 0; r < n; r++) {
        orb_lane_t *l = &p[r].lanes[0];
        for (size_t i = 0; i < l->nsteps; i++)
            if (l->steps[i].kind == ORB_STEP_RECV_REDUCE_COPY && l->steps[i].recv_peer >= 0) {
                l->steps[i].recv_peer = (l->steps[i].recv_peer + 1) % n == r ? (r + 1) % n
                                                                              : (l->steps[i].recv_peer + 1) % n;
                return;
            }
    }
}

/* Rank 1 of a 2-rank all-reduce reduces first, then sends its input: right with separate
 * buffers, wrong in place, where the input it sends was already overwritten. */
static void m_inplace_order(orb_plan_t *p, int n)
{
    (void)n;
    orb_lane_t *l = &p[1].lanes[0];
    l->nsteps = 0;
    orb_step_t s0 = orb_step_make(ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_INPUT, -1, 0, 0, 0, 4, ORB_STEP_POSTOP);
    orb_step_t s1 = orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, 0, -1, 0, 0, 4, 0);
    orb_lane_push(l, &s0);
    orb_lane_push(l, &s1);
    l = &p[0].lanes[0];
    l->nsteps = 0;
    orb_step_t t0 = orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, 1, -1, 0, 0, 4, 0);
    orb_step_t t1 = orb_step_make(ORB_STEP_RECV_REDUCE_COPY, ORB_BUF_INPUT, -1, 1, 0, 0, 4, ORB_STEP_POSTOP);
    orb_lane_push(l, &t0);
    orb_lane_push(l, &t1);
}

/* One rank sends a piece nobody receives. */
static void m_extra_send(orb_plan_t *p, int n)
{
    (void)n;
    orb_step_t s = orb_step_make(ORB_STEP_SEND, ORB_BUF_INPUT, 1, -1, 0, 0, 1, 0);
    orb_lane_push(&p[0].lanes[0], &s);
}

static void tree_shape(void)
{
    for (int n = 1; n <= 64; n++) {
        int leaf_both = 0, inner_both = 0;
        for (int t = 0; t < 2; t++) {
            int roots = 0;
            for (int pos = 0; pos < n; pos++) {
                int par, c0, c1, depth = 0;
                orb_tree_links(n, pos, &par, &c0, &c1);
                roots += par < 0;
                for (int k = 0; k < 2; k++) {
                    int ch = k ? c1 : c0, pp, x0, x1;
                    if (ch < 0)
                        continue;
                    orb_tree_links(n, ch, &pp, &x0, &x1);
                    if (pp != pos || ch >= n) {
                        fprintf(stderr, "FAIL tree n=%d: child %d of %d names parent %d\n", n, ch, pos, pp);
                        failures++;
                    }
                }
                for (int x = pos; x >= 0 && depth <= 64; depth++)
                    orb_tree_links(n, x, &x, &c0, &c1);
                if (depth > 64 || (1 << (depth - 1)) > n) {
                    fprintf(stderr, "FAIL tree n=%d: position %d is %d levels deep\n", n, pos, depth);
                    failures++;
                }
            }
            if (roots != 1) {
                fprintf(stderr, "FAIL tree n=%d: %d roots\n", n, roots);
                failures++;
            }
        }
        /* tree 1 puts ring position p at tree position p + 1 */
        for (int p = 0; p < n; p++) {
            int par, c0, c1, leaf0, leaf1;
            orb_tree_links(n, p, &par, &c0, &c1);
            leaf0 = c0 < 0;
            orb_tree_links(n, (p + 1) % n, &par, &c0, &c1);
            leaf1 = c0 < 0;
            leaf_both += leaf0 && leaf1;
            inner_both += !leaf0 && !leaf1;
        }
        int want = (n % 2 == 1) ? 1 : 0; /* odd n: one more leaf than fits */
        if (leaf_both != want || inner_both != 0) {
            fprintf(stderr, "FAIL double tree n=%d: %d ranks leaves in both trees, %d interior in both\n", n,
                    leaf_both, inner_both);
            failures++;
        }
    }
    printf("ok   tree shapes 1..64: one root, consistent links, depth <= log2(n)+1, complementary trees\n");
}

int main(void)
{
    const orb_plan_check_opts_t o2 = {.nslots = 2, .slot_elems = 4}, o1 = {.nslots = 1, .slot_elems = 4};
    const orb_plan_check_opts_t in_place = {.nslots = 1, .slot_elems = 4, .inplace = 1};
    orb_plan_args_t ar = {.coll = ORB_COLL_ALLREDUCE, .algo = ORB_ALGO_RING, .nranks = 5, .count = 100,
                          .op = ORB_AVG, .chunk_elems = 4, .nchannels = 2};
    orb_plan_args_t bc = {.coll = ORB_COLL_BROADCAST, .algo = ORB_ALGO_RING, .nranks = 4, .root = 2, .count = 40,
                          .chunk_elems = 4, .nchannels = 1};
    orb_plan_args_t tr = {.coll = ORB_COLL_ALLREDUCE, .algo = ORB_ALGO_TREE, .nranks = 7, .count = 90,
                          .op = ORB_AVG, .chunk_elems = 4, .nchannels = 2};
    orb_plan_args_t g = {.coll = ORB_COLL_GATHER, .algo = ORB_ALGO_DIRECT, .nranks = 4, .root = 0, .count = 9,
                         .chunk_elems = 4, .nchannels = 1};
    orb_plan_args_t two = {.coll = ORB_COLL_ALLREDUCE, .algo = ORB_ALGO_RING, .nranks = 2, .count = 4,
                           .op = ORB_AVG, .chunk_elems = 4, .nchannels = 1};

    expect("ring allreduce intact", ar, o2, NULL, NULL);
    /* Rank 2 skips one ring step, so its next step takes the piece rank 1 sent for the
     * skipped one: element 16's partial arrives where element 12's is reduced. */
    expect("drop a step", ar, o2, m_drop,
           "rank 2 lane 0 step 3 (recv-reduce-copy-send of 4: input[12] from 1|"
           "reduces {ranks 2 element 12} with {ranks 0,1,4 element 16} (different elements)");
    /* Rank 1's first piece goes to rank 3 instead of rank 2; rank 2 then takes rank 1's
     * next piece, the partial of element 0, where element 4's was due. */
    expect("swap peers", ar, o2, m_swap_peers,
           "rank 2 lane 0 step 1 (recv-reduce-send of 4: input[4] from 1|"
           "reduces {ranks 2 element 4} with {ranks 0,1 element 0} (different elements)");
    expect("offset off by one", ar, o2, m_offset, "different elements");
    expect("POSTOP twice", ar, o2, m_double_postop, "already final");
    expect("POSTOP on a partial sum", ar, o2, m_early_postop, "partial reduction");
    expect("step longer than chunk_elems", ar, o2, m_too_long, "more than chunk_elems");
    expect("ring with one slot deadlocks", ar, o1, NULL, "deadlock");
    expect("send nobody receives", ar, o2, m_extra_send, "never received");
    expect("broadcast intact", bc, o1, NULL, NULL);
    expect("root skips its own copy", bc, o1, m_drop_copy, "never written");
    expect("gather past the output", g, o1, m_out_of_range, "past the end");
    expect("tree allreduce intact", tr, o1, NULL, NULL);
    /* A node's first-child receive now names another rank; the stream of tree links falls
     * out of step, and rank 1 gets rank 2's chunk of element 4 where element 0 is reduced
     * (rank 2 also counted twice: the checker names the first problem, different elements). */
    expect("tree node receives from a non-child", tr, o1, m_tree_wrong_child,
           "rank 1 lane 0 step 1 (recv-reduce-send of 4: output[0] from 2|"
           "reduces {ranks 1,2 element 0} with {ranks 2 element 4} (different elements)");
    expect("in-place order, separate buffers", two, o1, m_inplace_order, NULL);
    expect("in-place order, aliased buffers", two, in_place, m_inplace_order, "a rank counted twice");
    tree_shape();

    /* Builders refuse what they cannot plan. */
    orb_plan_t p;
    orb_plan_args_t bad = {.coll = ORB_COLL_BROADCAST, .algo = ORB_ALGO_RING, .nranks = 4, .root = 4,
                           .count = 8, .chunk_elems = 4, .nchannels = 1};
    orb_plan_args_t self = {.coll = ORB_COLL_SEND, .algo = ORB_ALGO_DIRECT, .nranks = 4, .rank = 1, .root = 1,
                            .count = 8, .chunk_elems = 4, .nchannels = 1};
    orb_plan_args_t none = {.coll = ORB_COLL_ALLGATHER, .algo = ORB_ALGO_TREE, .nranks = 4, .count = 8,
                            .chunk_elems = 4, .nchannels = 1};
    if (orb_plan_build(&p, &bad) != ORB_ERR_INVALID_ARG || orb_plan_build(&p, &self) != ORB_ERR_INVALID_ARG ||
        orb_plan_build(&p, &none) != ORB_ERR_UNSUPPORTED) {
        fprintf(stderr, "FAIL builders accept a root outside the communicator, a send to self "
                        "or a missing algorithm\n");
        failures++;
    }
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
