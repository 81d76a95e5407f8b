/* Tuner: every choice is a plan that exists with a chunk inside the slot and a channel
 * count inside the limit; the overrides apply; the model picks what its formulas say in
 * the clear-cut cases (these check the model's arithmetic, not measured speed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/tuner.h"

static int failures;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                  \
            fputc('\n', stderr);                           \
            failures++;                                    \
        }                                                  \
    } while (0)

static orb_tuner_choice_t choose(orb_coll_t coll, size_t count, size_t esz, int n, size_t slot, int maxch)
{
    orb_tuner_choice_t t;
    memset(&t, 0, sizeof t);
    orb_status_t st = orb_tuner_choose(coll, count, esz, n, NULL, slot, maxch, &t);
    CHECK(st == ORB_OK, "%s count %zu esz %zu n %d slot %zu: %s", orb_coll_name(coll), count, esz, n, slot,
          orb_status_name(st));
    return t;
}

static void bounds(void)
{
    static const size_t counts[] = {0, 1, 7, 1000, 1 << 20, (size_t)1 << 26};
    static const size_t eszs[] = {1, 2, 4, 8};
    static const size_t slots[] = {8, 4096, 262144};
    for (int c = 0; c < ORB_NUM_COLLS; c++)
        for (int n = 1; n <= 64; n += (n < 8 ? 1 : 13))
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
                for (size_t e = 0; e < sizeof eszs / sizeof eszs[0]; e++)
                    for (size_t s = 0; s < sizeof slots / sizeof slots[0]; s++)
                        for (int maxch = 1; maxch <= ORB_MAX_CHANNELS; maxch *= 2) {
                            orb_tuner_choice_t t = choose((orb_coll_t)c, counts[k], eszs[e], n, slots[s], maxch);
                            CHECK(orb_plan_algo_supported((orb_coll_t)c, t.algo), "%s: no %s plan",
                                  orb_coll_name((orb_coll_t)c), orb_algo_name(t.algo));
                            CHECK(t.chunk_elems >= 1 && t.chunk_elems <= slots[s] / eszs[e],
                                  "chunk %zu outside 1..%zu", t.chunk_elems, slots[s] / eszs[e]);
                            CHECK(t.nchannels >= 1 && t.nchannels <= maxch, "%d channels, limit %d", t.nchannels,
                                  maxch);
                            CHECK(t.predicted_us >= 0 && isfinite(t.predicted_us), "predicted %g",
                                  t.predicted_us);
                            CHECK(t.reason[0] != '\0', "no reason");
                        }
}

static void model(void)
{
    /* 4 bytes to 64 ranks: 2*log2(64) tree hops beat 2*63 ring steps */
    orb_tuner_choice_t t = choose(ORB_COLL_ALLREDUCE, 1, 4, 64, 262144, 2);
    CHECK(t.algo == ORB_ALGO_TREE, "small allreduce on 64 ranks: %s (%s)", orb_algo_name(t.algo), t.reason);
    /* 256 MiB on 4 ranks: ring moves 2(n-1)/n S, the trees 3 S */
    t = choose(ORB_COLL_ALLREDUCE, (size_t)1 << 26, 4, 4, 262144, 2);
    CHECK(t.algo == ORB_ALGO_RING && t.nchannels == 2 && t.chunk_elems == 65536,
          "large allreduce on 4 ranks: %s chunk %zu ch %d (%s)", orb_algo_name(t.algo), t.chunk_elems, t.nchannels,
          t.reason);
    t = choose(ORB_COLL_GATHER, 1000, 4, 16, 262144, 2);
    CHECK(t.algo == ORB_ALGO_DIRECT, "gather: %s", orb_algo_name(t.algo));
    t = choose(ORB_COLL_SEND, 1000, 4, 2, 262144, 2);
    CHECK(t.algo == ORB_ALGO_DIRECT, "send: %s", orb_algo_name(t.algo));
    t = choose(ORB_COLL_ALLREDUCE, 1, 4, 8, 262144, 8);
    CHECK(t.nchannels == 1, "one element on %d channels", t.nchannels);
    /* a long chain wants chunks well below the slot so the pipeline fills fast */
    t = choose(ORB_COLL_BROADCAST, 1 << 18, 4, 64, 262144, 1);
    CHECK(t.algo != ORB_ALGO_RING || t.chunk_elems < 65536, "broadcast chain chunk %zu", t.chunk_elems);

    for (int c = 0; c < ORB_NUM_COLLS; c++)
        for (int al = 0; al < ORB_NUM_ALGOS; al++) {
            int has = orb_plan_algo_supported((orb_coll_t)c, (orb_algo_t)al);
            double p = orb_tuner_predict((orb_coll_t)c, (orb_algo_t)al, 1000, 4, 8, NULL, 256, 2);
            CHECK(has ? p > 0 : p < 0, "%s/%s predicted %g", orb_coll_name((orb_coll_t)c),
                  orb_algo_name((orb_algo_t)al), p);
            CHECK(!has || strchr(orb_tuner_formula((orb_coll_t)c, (orb_algo_t)al), '*'), "no formula for %s/%s",
                  orb_coll_name((orb_coll_t)c), orb_algo_name((orb_algo_t)al));
        }
}

static void overrides(void)
{
    setenv("ORBIT_ALGO", "ring", 1);
    orb_tuner_choice_t t = choose(ORB_COLL_ALLREDUCE, 1, 4, 64, 262144, 2);
    CHECK(t.algo == ORB_ALGO_RING && strstr(t.reason, "ORBIT_ALGO"), "ORBIT_ALGO=ring: %s", t.reason);
    setenv("ORBIT_ALGO", "TREE", 1);
    t = choose(ORB_COLL_ALLREDUCE, (size_t)1 << 26, 4, 4, 262144, 2);
    CHECK(t.algo == ORB_ALGO_TREE, "ORBIT_ALGO=TREE: %s", orb_algo_name(t.algo));
    t = choose(ORB_COLL_ALLGATHER, 100, 4, 4, 262144, 2); /* no tree allgather: the model decides */
    CHECK(t.algo == ORB_ALGO_RING && strstr(t.reason, "no plan"), "tree allgather: %s", t.reason);
    setenv("ORBIT_ALGO", "bogus", 1);
    t = choose(ORB_COLL_ALLREDUCE, 100, 4, 4, 262144, 2);
    CHECK(orb_plan_algo_supported(ORB_COLL_ALLREDUCE, t.algo), "ORBIT_ALGO=bogus");
    unsetenv("ORBIT_ALGO");

    setenv("ORBIT_CHUNK_BYTES", "1024", 1);
    t = choose(ORB_COLL_ALLREDUCE, 1 << 20, 4, 4, 262144, 2);
    CHECK(t.chunk_elems == 256 && strstr(t.reason, "ORBIT_CHUNK_BYTES"), "ORBIT_CHUNK_BYTES=1024: %zu",
          t.chunk_elems);
    setenv("ORBIT_CHUNK_BYTES", "100000000", 1);
    t = choose(ORB_COLL_ALLREDUCE, 1 << 20, 4, 4, 262144, 2);
    CHECK(t.chunk_elems == 65536, "ORBIT_CHUNK_BYTES beyond the slot: %zu", t.chunk_elems);
    setenv("ORBIT_CHUNK_BYTES", "3", 1);
    t = choose(ORB_COLL_ALLREDUCE, 1 << 20, 8, 4, 262144, 2);
    CHECK(t.chunk_elems == 1, "ORBIT_CHUNK_BYTES below one element: %zu", t.chunk_elems);
    unsetenv("ORBIT_CHUNK_BYTES");

    orb_tuner_choice_t u;
    CHECK(orb_tuner_choose(ORB_COLL_ALLREDUCE, 10, 8, 4, NULL, 4, 2, &u) == ORB_ERR_INVALID_ARG,
          "a slot smaller than one element");
    CHECK(orb_tuner_choose(ORB_COLL_ALLREDUCE, 10, 4, 0, NULL, 4096, 2, &u) == ORB_ERR_INVALID_ARG, "0 ranks");
}

int main(void)
{
    unsetenv("ORBIT_ALGO");
    unsetenv("ORBIT_CHUNK_BYTES");
    setenv("ORBIT_DEBUG", "NONE", 1); /* the bogus override warns; keep the log clean */
    bounds();
    model();
    overrides();
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    else
        printf("tuner: all checks passed\n");
    return failures ? 1 : 0;
}
