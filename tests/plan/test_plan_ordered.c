/* Deterministic mode, without processes: the checker tells a rank-order fold from any other
 * bracketing or order (and says so for ORB_ALGO_ORDERED plans only), and the tuner gives
 * reductions the ordered plan exactly when the communicator asks for it. The ordered plans
 * themselves are proven on 1..64 ranks by the plan-allreduce, plan-reduce and
 * plan-reduce_scatter tests with every other algorithm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/algos.h"
#include "collectives/plan_check.h"
#include "collectives/tuner.h"

#define N_MAX 8

static int failures;

#define CHECK(cond, ...)                                  \
    do {                                                  \
        if (!(cond)) {                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                 \
            fprintf(stderr, "\n");                        \
            failures++;                                   \
        }                                                 \
    } while (0)

typedef void (*mutate_fn)(orb_plan_t *plans, int n);

/* Builds every rank's plan from a, lets fn change them, checks them; want: NULL to expect
 * acceptance, else a fragment the rejection must contain. */
static void expect(const char *name, orb_plan_args_t a, mutate_fn fn, const char *want)
{
    orb_plan_t plans[N_MAX];
    const orb_plan_check_opts_t o = {.nslots = (size_t)orb_plan_min_slots(a.coll, a.algo), .slot_elems = a.chunk_elems};
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
    if (!want)
        CHECK(st == ORB_OK, "%s: rejected: %s", name, err);
    else
        CHECK(st != ORB_OK && strstr(err, want), "%s: %s where a rejection naming \"%s\" was due", name,
              st == ORB_OK ? "accepted" : err, want);
    printf("%s %s%s%s\n", failures ? "??" : "ok  ", name, want ? ": " : "", want ? err : "");
out:
    for (int r = 0; r < a.nranks; r++)
        orb_plan_free(&plans[r]);
}

/* Rank 1 owns shard 1 and takes the raw parts of ranks 2 and 3 in that order; swap them
 * (each FIFO still sees its pieces in order, so only the order of addition changes). */
static void m_swap_suffix(orb_plan_t *plans, int n)
{
    (void)n;
    orb_lane_t *l = &plans[1].lanes[0];
    for (size_t i = 0; i + 1 < l->nsteps; i++)
        if (l->steps[i].kind == ORB_STEP_RECV_REDUCE_COPY && l->steps[i].recv_peer == 2 &&
            l->steps[i + 1].recv_peer == 3) {
            l->steps[i].recv_peer = 3;
            l->steps[i + 1].recv_peer = 2;
            return;
        }
    fprintf(stderr, "FAIL m_swap_suffix: no receive from 2 then 3 on rank 1\n");
    failures++;
}

/* Plans that add in some other order, relabelled as ordered. */
static void m_claim_ordered(orb_plan_t *plans, int n)
{
    for (int r = 0; r < n; r++)
        plans[r].args.algo = ORB_ALGO_ORDERED;
}

/* reduce of one element to rank 0 over a chain 2 -> 1 -> 0: x0 + (x1 + x2). */
static void m_chain_down(orb_plan_t *plans, int n)
{
    (void)n;
    const orb_step_t s2 = {.kind = ORB_STEP_SEND, .send_peer = 1, .recv_peer = -1, .count = 1};
    const orb_step_t s1 = {.kind = ORB_STEP_RECV_REDUCE_SEND, .send_peer = 0, .recv_peer = 2, .count = 1};
    const orb_step_t s0 = {.kind = ORB_STEP_RECV_REDUCE_COPY, .send_peer = -1, .recv_peer = 1, .count = 1,
                           .flags = ORB_STEP_POSTOP};
    const orb_step_t *mine[3] = {&s0, &s1, &s2};
    for (int r = 0; r < 3; r++) {
        plans[r].lanes[0].nsteps = 0;
        plans[r].out_count = r == 0 ? 1 : 0;
        orb_lane_push(&plans[r].lanes[0], mine[r]);
    }
}

/* The same chain the other way, 0 -> 1 -> 2 -> back to 0: (x0 + x1) + x2. */
static void m_chain_up(orb_plan_t *plans, int n)
{
    (void)n;
    const orb_step_t s0a = {.kind = ORB_STEP_SEND, .send_peer = 1, .recv_peer = -1, .count = 1};
    const orb_step_t s0b = {.kind = ORB_STEP_RECV, .send_peer = -1, .recv_peer = 2, .count = 1};
    const orb_step_t s1 = {.kind = ORB_STEP_RECV_REDUCE_SEND, .send_peer = 2, .recv_peer = 0, .count = 1};
    const orb_step_t s2 = {.kind = ORB_STEP_RECV_REDUCE_SEND, .send_peer = 0, .recv_peer = 1, .count = 1,
                           .flags = ORB_STEP_POSTOP};
    for (int r = 0; r < 3; r++) {
        plans[r].lanes[0].nsteps = 0;
        plans[r].out_count = r == 0 ? 1 : 0;
    }
    orb_lane_push(&plans[0].lanes[0], &s0a);
    orb_lane_push(&plans[0].lanes[0], &s0b);
    orb_lane_push(&plans[1].lanes[0], &s1);
    orb_lane_push(&plans[2].lanes[0], &s2);
}

static void checker(void)
{
    orb_plan_args_t ar = {.coll = ORB_COLL_ALLREDUCE, .algo = ORB_ALGO_ORDERED, .nranks = 4, .count = 40,
                          .op = ORB_AVG, .chunk_elems = 4, .nchannels = 1};
    expect("ordered allreduce intact", ar, NULL, NULL);
    expect("owner adds rank 3 before rank 2", ar, m_swap_suffix, "out of rank order");
    orb_plan_args_t ring = ar;
    ring.algo = ORB_ALGO_RING;
    expect("ring allreduce as such", ring, NULL, NULL);
    expect("ring allreduce claiming rank order", ring, m_claim_ordered, "out of rank order");
    orb_plan_args_t tree = ar;
    tree.algo = ORB_ALGO_TREE;
    tree.nranks = 7;
    expect("tree allreduce claiming rank order", tree, m_claim_ordered, "out of rank order");

    /* x0 + (x1 + x2) is a correct sum but no left fold; (x0 + x1) + x2 is one. The
     * ring-built plans are only the carriers of args (3 ranks, reduce to 0, count 1). */
    orb_plan_args_t rd = {.coll = ORB_COLL_REDUCE, .algo = ORB_ALGO_RING, .nranks = 3, .root = 0, .count = 1,
                          .op = ORB_SUM, .chunk_elems = 1, .nchannels = 1};
    expect("x0 + (x1 + x2), unordered plan", rd, m_chain_down, NULL);
    rd.algo = ORB_ALGO_ORDERED;
    expect("x0 + (x1 + x2), ordered plan", rd, m_chain_down, "adds {ranks 2 element 0} to {ranks 1 element 0}");
    expect("(x0 + x1) + x2, ordered plan", rd, m_chain_up, NULL);
}

static void tuner(void)
{
    orb_tuner_choice_t t;
    const orb_coll_t reds[] = {ORB_COLL_ALLREDUCE, ORB_COLL_REDUCE, ORB_COLL_REDUCE_SCATTER};
    const size_t counts[] = {1, 1000, 1 << 24};
    for (int n = 1; n <= 64; n *= 2)
        for (size_t k = 0; k < 3; k++) {
            for (int c = 0; c < 3; c++) {
                /* one or two ranks: every plan adds op(x0, x1) once, the tuner takes the fastest */
                CHECK(orb_tuner_choose_det(reds[c], counts[k], 4, n, NULL, NULL, 1 << 18, 0, 4, 1, &t) == ORB_OK &&
                          (n <= 2 ? t.algo != ORB_ALGO_ORDERED && strstr(t.reason, "any plan adds in rank order")
                                  : t.algo == ORB_ALGO_ORDERED),
                      "deterministic %s n=%d: %s (%s)", orb_coll_name(reds[c]), n, orb_algo_name(t.algo), t.reason);
                CHECK(orb_tuner_choose_det(reds[c], counts[k], 4, n, NULL, NULL, 1 << 18, 0, 4, 0, &t) == ORB_OK &&
                          t.algo != ORB_ALGO_ORDERED,
                      "default %s n=%d picked the ordered plan", orb_coll_name(reds[c]), n);
            }
            CHECK(orb_tuner_choose_det(ORB_COLL_BROADCAST, counts[k], 4, n, NULL, NULL, 1 << 18, 0, 4, 1, &t) ==
                          ORB_OK &&
                      t.algo != ORB_ALGO_ORDERED,
                  "broadcast has no ordered plan");
        }
    setenv("ORBIT_ALGO", "ring", 1);
    CHECK(orb_tuner_choose_det(ORB_COLL_ALLREDUCE, 1000, 4, 4, NULL, NULL, 1 << 18, 0, 4, 1, &t) == ORB_OK &&
              t.algo == ORB_ALGO_ORDERED && strstr(t.reason, "ORBIT_ALGO=ring ignored"),
          "ORBIT_ALGO=ring in deterministic mode: %s (%s)", orb_algo_name(t.algo), t.reason);
    CHECK(orb_tuner_choose_det(ORB_COLL_ALLGATHER, 1000, 4, 4, NULL, NULL, 1 << 18, 0, 4, 1, &t) == ORB_OK &&
              t.algo == ORB_ALGO_RING,
          "ORBIT_ALGO=ring still applies to all-gather in deterministic mode");
    setenv("ORBIT_ALGO", "ordered", 1);
    CHECK(orb_tuner_choose_det(ORB_COLL_REDUCE, 1000, 4, 4, NULL, NULL, 1 << 18, 0, 4, 0, &t) == ORB_OK &&
              t.algo == ORB_ALGO_ORDERED,
          "ORBIT_ALGO=ordered: %s", orb_algo_name(t.algo));
    unsetenv("ORBIT_ALGO");
    printf("%s tuner: reductions ordered exactly in deterministic mode\n", failures ? "??" : "ok  ");
}

int main(void)
{
    unsetenv("ORBIT_ALGO");
    unsetenv("ORBIT_CHUNK_BYTES");
    checker();
    tuner();
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
