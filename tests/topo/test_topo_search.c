/* The ring search against an independent brute force on random link matrices (with many
 * ties, as real machines have), and the heuristic's claims of optimality checked by a
 * separate group count. No topology file needed. */
#include "topo_test.h"

static uint32_t rnd_state = 12345;
static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 8) & 0xffffff;
}

/* A machine-like random matrix: devices in `groups` clusters, fast inside, slow across,
 * with a few random faster or slower pairs. */
static void random_matrix(int n, int groups, uint32_t *bw, orb_topo_class_t *cls)
{
    static const orb_topo_class_t cl[] = {ORB_TOPO_NVL, ORB_TOPO_PIX, ORB_TOPO_PXB, ORB_TOPO_NODE,
                                          ORB_TOPO_PKG, ORB_TOPO_SYS};
    static const uint32_t bws[] = {50000, 15000, 15000, 15000, 12000, 10000};
    int g[32];
    for (int i = 0; i < n; i++)
        g[i] = (int)(rnd() % (unsigned)groups);
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++) {
            int k = i == j ? 0 : g[i] == g[j] ? (int)(rnd() % 4) : 4 + (int)(rnd() % 2);
            orb_topo_class_t c = i == j ? ORB_TOPO_LOC : cl[k];
            uint32_t b = i == j ? 1000000 : bws[k];
            cls[i * n + j] = cls[j * n + i] = c;
            bw[i * n + j] = bw[j * n + i] = b;
        }
}

int main(void)
{
    uint32_t bw[32 * 32];
    orb_topo_class_t cls[32 * 32];
    int order[32], again[32], ident[32], teeth = 0;
    for (int k = 0; k < 32; k++)
        ident[k] = k;
    /* Exact search: n = 3..10 against every ring. */
    for (int n = 3; n <= 10; n++) {
        int trials = n <= 7 ? 60 : n == 8 ? 12 : 3;
        for (int t = 0; t < trials; t++) {
            random_matrix(n, 1 + (int)(rnd() % 3), bw, cls);
            orb_topo_score_t s;
            int exact = orb_topo_ring_search(n, bw, cls, order, &s);
            CHECK_EQ_INT(exact, 1);
            CHECK(is_permutation(order, n));
            CHECK_EQ_INT(order[0], 0);
            judge_t got = judge_ring(n, bw, cls, order), best = judge_brute_force(n, bw, cls);
            CHECK_EQ_INT(got.bw, best.bw);
            CHECK_EQ_INT(got.cls, best.cls);
            CHECK_EQ_INT(got.hops, best.hops);
            CHECK_EQ_INT(s.bw, got.bw);
            CHECK_EQ_INT((int)s.cls, got.cls);
            CHECK_EQ_INT(s.hops, got.hops);
            CHECK_EQ_INT(s.lower_bound, best.hops);
            /* Count the cases where rank order is worse, so the comparison has teeth. */
            teeth += judge_better(best, judge_ring(n, bw, cls, ident));
            /* Deterministic: the same matrices give the same ring. */
            orb_topo_score_t s2;
            orb_topo_ring_search(n, bw, cls, again, &s2);
            CHECK(memcmp(order, again, (size_t)n * sizeof *order) == 0);
        }
    }
    CHECK(teeth >= 50);
    printf("exact search matched brute force; rank order was worse in %d cases\n", teeth);
    /* Heuristic: n = 13..24. Where it claims a least number of slow hops, check the claim:
     * the devices joined by better links must form that many groups. */
    for (int n = 13; n <= 24; n++)
        for (int t = 0; t < 10; t++) {
            random_matrix(n, 2 + (int)(rnd() % 3), bw, cls);
            orb_topo_score_t s;
            int exact = orb_topo_ring_search(n, bw, cls, order, &s);
            CHECK_EQ_INT(exact, 0);
            CHECK(is_permutation(order, n));
            judge_t got = judge_ring(n, bw, cls, order);
            CHECK_EQ_INT(s.hops, got.hops);
            if (s.lower_bound > 0) {
                int root[32], groups = 0;
                for (int i = 0; i < n; i++)
                    root[i] = i;
                for (int i = 0; i < n; i++)
                    for (int j = 0; j < n; j++)
                        if (i != j && judge_worse_hop(got.bw, got.cls, bw[i * n + j], (int)cls[i * n + j])) {
                            int a = i, b = j;
                            while (root[a] != a)
                                a = root[a];
                            while (root[b] != b)
                                b = root[b];
                            root[a] = b;
                        }
                for (int i = 0; i < n; i++)
                    groups += root[i] == i;
                CHECK_EQ_INT(s.lower_bound, groups);
                CHECK(s.hops >= groups);
            }
            /* Clustered machines: greedy + 2-opt must reach the group bound. */
            CHECK_EQ_INT(s.hops, s.lower_bound);
        }
    /* One and two devices. */
    bw[0] = 1000000;
    cls[0] = ORB_TOPO_LOC;
    orb_topo_score_t s;
    CHECK_EQ_INT(orb_topo_ring_search(1, bw, cls, order, &s), 1);
    CHECK_EQ_INT(order[0], 0);
    if (test_failures)
        fprintf(stderr, "%d check(s) failed\n", test_failures);
    return test_failures ? 1 : 0;
}
